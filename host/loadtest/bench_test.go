package loadtest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// BenchmarkThroughput: requests per second through the gateway with no
// layer and with the shipped layers, at 16 and 64 concurrent clients, with
// the load test's mix (half streaming, both dialects, 30 % repeats).
//
//	go test -run '^$' -bench Throughput -benchtime 3000x ./host/loadtest/
func BenchmarkThroughput(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	b.Cleanup(fake.Close)
	for _, gw := range []struct {
		name  string
		start func(testing.TB, string) *testgateway.Gateway
	}{
		{"layers=none", startBare},
		{"layers=shipped", func(tb testing.TB, u string) *testgateway.Gateway { return startShipped(tb, u, nil) }},
	} {
		g := gw.start(b, fake.URL())
		for _, conns := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/conns=%d", gw.name, conns), func(b *testing.B) {
				res := loadtest.Run(context.Background(), g.URL, loadtest.Mix{
					Clients: conns, Requests: b.N, StreamShare: 0.5, RepeatShare: 0.3, Seed: uint64(time.Now().UnixNano()),
				})
				if res.Errors+res.Wrong > 0 {
					b.Fatalf("%s; failures: %q", res, res.Failures)
				}
				b.ReportMetric(res.RPS(), "req/s")
				b.ReportMetric(float64(res.Percentile(50).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(res.Percentile(99).Microseconds())/1000, "p99-ms")
				fake.Reset() // what it recorded
			})
		}
	}
}

// BenchmarkAgentTTFB: the time to first byte of a Claude Code-sized
// streamed request (85 KB, 18 tools; a new prompt each time, so every layer
// works) through the shipped layers against the same gateway with none,
// one client, the two alternating so both see the same machine. added-p50
// is the median of the per-pair differences.
//
//	go test -run '^$' -bench AgentTTFB -benchtime 200x ./host/loadtest/
func BenchmarkAgentTTFB(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	b.Cleanup(fake.Close)
	bare := startBare(b, fake.URL())
	shipped := startShipped(b, fake.URL(), nil)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	size := len(loadtest.ClaudeCode("x", true))
	// Warm both (instances, the compilation of the layers' first calls).
	for i := range 5 {
		ttfb(b, client, bare.URL, fmt.Sprintf("warm %d", i))
		ttfb(b, client, shipped.URL, fmt.Sprintf("warm %d", i))
	}
	var none, with, added []time.Duration
	run := time.Now().UnixNano()
	b.ResetTimer()
	for i := range b.N {
		prompt := fmt.Sprintf("Rename the field %d of run %d and update its callers", i, run)
		n := ttfb(b, client, bare.URL, prompt)
		w := ttfb(b, client, shipped.URL, prompt)
		none, with, added = append(none, n), append(with, w), append(added, w-n)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(size)/1024, "body-KiB")
	b.ReportMetric(ms(loadtest.Percentile(none, 50)), "none-p50-ms")
	b.ReportMetric(ms(loadtest.Percentile(with, 50)), "shipped-p50-ms")
	b.ReportMetric(ms(loadtest.Percentile(added, 50)), "added-p50-ms")
	b.ReportMetric(ms(loadtest.Percentile(added, 90)), "added-p90-ms")
	fake.Reset()
}

// ttfb posts a ClaudeCode request and returns the time to the first byte of
// its body; the stream must end cleanly.
func ttfb(b *testing.B, client *http.Client, base, prompt string) time.Duration {
	req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(loadtest.ClaudeCode(prompt, true)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	st := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err != nil {
		b.Fatal(err)
	}
	took := time.Since(st)
	rest, _ := io.ReadAll(br)
	if resp.StatusCode != 200 || !strings.Contains(string(rest), "message_stop") || strings.Contains(string(rest), "event: error") {
		b.Fatalf("status %d: %.500s", resp.StatusCode, rest)
	}
	return took
}

// BenchmarkAgentTTFBByLayer splits BenchmarkAgentTTFB's added time by layer:
// each shipped layer alone (with the models it may use) against no layer.
//
//	go test -run '^$' -bench AgentTTFBByLayer -benchtime 60x ./host/loadtest/
func BenchmarkAgentTTFBByLayer(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	b.Cleanup(fake.Close)
	bare := startBare(b, fake.URL())
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	shipped := testgateway.ShippedLayers(b)
	for _, name := range layerNames(shipped) {
		g := startShipped(b, fake.URL(), func(layers string) string { return onlyLayer(layers, name) })
		b.Run("layer="+name, func(b *testing.B) {
			for i := range 3 {
				ttfb(b, client, g.URL, fmt.Sprintf("warm %s %d", name, i))
			}
			var added []time.Duration
			run := time.Now().UnixNano()
			for i := range b.N {
				prompt := fmt.Sprintf("Rename the field %d of run %d and update its callers", i, run)
				n := ttfb(b, client, bare.URL, prompt)
				added = append(added, ttfb(b, client, g.URL, prompt)-n)
			}
			b.ReportMetric(float64(loadtest.Percentile(added, 50).Microseconds())/1000, "added-p50-ms")
			b.ReportMetric(float64(loadtest.Percentile(added, 90).Microseconds())/1000, "added-p90-ms")
			fake.Reset()
		})
	}
}

// layerNames lists the [[layer]] names of a pipeline's TOML, in order.
func layerNames(layers string) []string {
	var names []string
	for _, blk := range strings.Split(layers, "\n[[layer]]")[1:] {
		if m := regexp.MustCompile(`(?m)^name = "([^"]+)"`).FindStringSubmatch(blk); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// onlyLayer keeps the part before the first [[layer]] (the models) and the
// one layer named name.
func onlyLayer(layers, name string) string {
	blks := strings.Split(layers, "\n[[layer]]")
	out := blks[0]
	for _, blk := range blks[1:] {
		if strings.Contains(blk, "\nname = \""+name+"\"") {
			out += "\n[[layer]]" + blk
		}
	}
	return out
}
