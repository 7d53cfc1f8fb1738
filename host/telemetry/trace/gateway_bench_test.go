//go:build !wasip1

package trace_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/telemetry/trace"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkGatewayTracing is BenchmarkOverhead's request (the 4 KB agent
// request, OpenAI in and out, client-observed at concurrency 1) through two
// identical gateways with 8 no-op layers, one tracing every request to a
// batching exporter that drops the spans, one not, their requests
// interleaved so the machine's noise falls on both alike. Reported: each
// one's p50 and the difference (what tracing adds, client-observed).
func BenchmarkGatewayTracing(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(key))
	defer fake.Close()
	var layers strings.Builder
	for i := range 8 {
		fmt.Fprintf(&layers, "[[layer]]\nname = \"noop-%d\"\nplugin = \"noop.wasm\"\ntrusted = true\non_error = \"fail-open\"\n\n", i)
	}
	toml := layers.String() + testgateway.FakeProviders(fake.URL())
	env := testgateway.Options{Env: map[string]string{"UP_KEY": key}}
	off := testgateway.Start(b, toml, env)
	on := testgateway.Start(b, toml, env)
	tr, err := trace.New(trace.Config{Exporter: discard{}, SampleRatio: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	if os.Getenv("BARDO_BENCH_AA") == "" {
		on.Daemon.Gateway.Tracer = tr // before its first request
	}

	body := fixtures.AgentRequestOpenAI(false)
	client := &fasthttp.Client{}
	do := func(url string) time.Duration {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.SetRequestURI(url + "/v1/chat/completions")
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
		t0 := time.Now()
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
		return took
	}
	for range 200 { // warm pools, connections and caches
		do(off.URL)
		do(on.URL)
	}
	var latOff, latOn []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			latOff = append(latOff, do(off.URL))
			latOn = append(latOn, do(on.URL))
		} else {
			latOn = append(latOn, do(on.URL))
			latOff = append(latOff, do(off.URL))
		}
	}
	b.StopTimer()
	slices.Sort(latOff)
	slices.Sort(latOn)
	p50off, p50on := latOff[len(latOff)/2], latOn[len(latOn)/2]
	b.ReportMetric(float64(p50off.Microseconds()), "p50-off-µs")
	b.ReportMetric(float64(p50on.Microseconds()), "p50-on-µs")
	b.ReportMetric(float64((p50on-p50off).Nanoseconds())/1000, "added-p50-µs")
}
