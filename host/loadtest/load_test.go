package loadtest_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// envDuration reads a duration knob (BARDO_LOAD_DURATION=60s for the
// issue's full run); def when unset.
func envDuration(t testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// startShipped serves the repository's shipped layers in front of the fake
// upstream (OpenAI models on "up", Claude on "claude"). edit, when set,
// rewrites the layers' TOML first.
func startShipped(t testing.TB, fakeURL string, edit func(string) string) *testgateway.Gateway {
	t.Helper()
	layers := testgateway.ShippedLayers(t)
	if edit != nil {
		layers = edit(layers)
	}
	return testgateway.Start(t, layers+testgateway.FakeProviders(fakeURL), testgateway.Options{Env: testgateway.FakeProviderEnv()})
}

// startBare serves the same providers with no layer.
func startBare(t testing.TB, fakeURL string) *testgateway.Gateway {
	t.Helper()
	return testgateway.Start(t, testgateway.FakeProviders(fakeURL), testgateway.Options{Env: testgateway.FakeProviderEnv()})
}

var layerFailed = regexp.MustCompile(`msg="layer failed" layer=(\w+) phase=(\w+).*?err="([^"]*)"`)

// layerFailures counts the log's "layer failed" lines by layer/phase, with
// one example error each.
func layerFailures(log string) (int, map[string]string) {
	n, ex := 0, map[string]string{}
	for _, m := range layerFailed.FindAllStringSubmatch(log, -1) {
		n++
		if k := m[1] + "/" + m[2]; ex[k] == "" {
			ex[k] = m[3]
		}
	}
	return n, ex
}

// lateCalls reports the trusted layers' calls over their time budget (kept,
// not failures: docs/abi.md), by layer.
func lateCalls(g *testgateway.Gateway) string {
	var parts []string
	for _, l := range g.Manager.Peek().Layers {
		if n := g.Metrics.Value("bardo_plugin_late_calls_total", "plugin", l.Spec.Name); n > 0 {
			parts = append(parts, l.Spec.Name+"="+strconv.Itoa(int(n)))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// check fails t on any error, wrong or stale answer, skipped layer, or
// layer failure in the log.
func check(t *testing.T, g *testgateway.Gateway, res *loadtest.Result) {
	t.Helper()
	t.Logf("%s", res)
	t.Logf("trusted calls over budget (kept): %s", lateCalls(g))
	for _, f := range res.Failures {
		t.Logf("failure: %s", f)
	}
	n, ex := layerFailures(g.LogLines.String())
	for k, e := range ex {
		t.Logf("layer failure %s: %s", k, e)
	}
	if res.Requests == 0 || res.Errors+res.Wrong+res.Stale+res.Skipped+n > 0 {
		t.Fatalf("under load: %d requests, %d errors, %d wrong answers, %d stale, %d layer-skipped, %d layer failures in the log",
			res.Requests, res.Errors, res.Wrong, res.Stale, res.Skipped, n)
	}
}

// TestShippedPipelineUnderLoad: 64 concurrent clients (half streaming, both
// dialects, 30 % repeated prompts) through the shipped layers while the
// upstream is healthy: every answer is the right one, none is stale, no
// layer is skipped or fails. BARDO_LOAD_DURATION sets the time (default
// 10s; the run is 60s).
func TestShippedPipelineUnderLoad(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	g := startShipped(t, fake.URL(), nil)
	res := loadtest.Run(context.Background(), g.URL, loadtest.Mix{
		Clients: 64, Duration: envDuration(t, "BARDO_LOAD_DURATION", 10*time.Second),
		StreamShare: 0.5, RepeatShare: 0.3, Seed: 1,
	})
	check(t, g, res)
	if res.Cache["hash-hit"] == 0 {
		t.Errorf("no repeated prompt was a hash hit: %v", res.Cache)
	}
}

// TestSemanticIndexFillsUp: unique questions into one tenant's semantic
// index until it evicts, half of them number-only variants of one question
// (they share a vector, and the cache's guard must not answer one number
// with another's), each sent twice at about the same moment (both may miss
// and store it: the index's replace path). Every answer must be its own
// question's. The run is 100k requests against the
// shipped index size (BARDO_LOAD_INDEX_REQUESTS=100000); by default 3000,
// with the index cut to a third of that so eviction happens.
func TestSemanticIndexFillsUp(t *testing.T) {
	n := envInt(t, "BARDO_LOAD_INDEX_REQUESTS", 3000)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	g := startShipped(t, fake.URL(), func(layers string) string {
		if n >= 100000 {
			return layers
		}
		return regexp.MustCompile(`index_max_entries = \d+`).ReplaceAllString(layers, "index_max_entries = "+strconv.Itoa(n/3))
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go forget(ctx, fake)
	res := loadtest.Run(ctx, g.URL, loadtest.Mix{
		Clients: 64, Requests: n, StreamShare: 0.5, Seed: 2,
		// Each question goes out twice in a row, usually from two clients
		// at once: both may miss and store it, the index's replace path.
		Prompt: func(i int, _ *rand.Rand) string {
			k := (i + 1) / 2
			if k%2 == 0 {
				return fmt.Sprintf("What was the closing price of token %d on day %d?", k, k%28+1)
			}
			return loadtest.Words(k, rand.New(rand.NewPCG(2, uint64(k))))
		},
	})
	check(t, g, res)
}

// forget empties the fake upstream's record of requests now and then, so a
// long run does not keep every body it sent.
func forget(ctx context.Context, fake *fakeupstream.Server) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fake.Reset()
		}
	}
}

// TestUpstreamDropsIdleConnections: the upstream (here a proxy in front of
// the fake, as a load balancer would be) closes connections idle for 2 s,
// and the clients pause about that long between requests, so the gateway
// keeps reaching for pooled connections the upstream is closing. No
// request may fail for it, and the provider must stay in service.
// BARDO_LOAD_IDLE_DURATION sets the time (default 15s).
func TestUpstreamDropsIdleConnections(t *testing.T) {
	const idle = 2 * time.Second
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	lb := loadtest.NewIdleProxy(t, strings.TrimPrefix(fake.URL(), "http://"), idle)
	g := startShipped(t, "http://"+lb.Addr(), nil)
	res := loadtest.Run(context.Background(), g.URL, loadtest.Mix{
		Clients: 16, Duration: envDuration(t, "BARDO_LOAD_IDLE_DURATION", 15*time.Second),
		StreamShare: 0.5, Idle: idle, Seed: 3,
	})
	t.Logf("the proxy closed %d idle upstream connections", lb.Closed())
	check(t, g, res)
	if lb.Closed() == 0 {
		t.Errorf("the proxy never closed an idle connection: the test did not test")
	}
}

// TestHealthzFalseWhileRequestsCannotBeServed: a layer whose only instance
// is held (as by a lock a panic left held, or a stuck plugin) stops every
// request behind it; /healthz must then say the gateway cannot serve, and
// say it can again once the requests flow. Before the liveness fix it
// answered 200 throughout.
// The liveness canaries (host/server) report a stuck pool within about 10 s;
// the instance is held for 20.
func TestHealthzFalseWhileRequestsCannotBeServed(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	const hold = 20 * time.Second
	g := startShipped(t, fake.URL(), func(layers string) string {
		return `
[[layer]]
name = "stuck"
plugin = "slow.wasm"
trusted = true
pool = 1
timeout = "100ms"
on_error = "fail-open"
` + layers
	})
	healthy := func() (bool, string) {
		resp, err := http.Get(g.URL + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200, fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	if ok, s := healthy(); !ok {
		t.Fatalf("/healthz before the stall: %s", s)
	}
	ask := func(prompt string) {
		body := loadtest.Simple(loadtest.OpenAI, prompt, false)
		resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	began := time.Now()
	go ask(fmt.Sprintf("sleep %s", hold)) // holds the layer's only instance
	time.Sleep(200 * time.Millisecond)
	for i := range 8 {
		go ask(fmt.Sprintf("stuck behind the sleeper %d", i))
	}
	var said []string
	sawFalse := false
	for time.Since(began) < hold-time.Second {
		time.Sleep(500 * time.Millisecond)
		ok, s := healthy()
		said = append(said, fmt.Sprintf("+%.1fs %s", time.Since(began).Seconds(), s))
		sawFalse = sawFalse || !ok
	}
	t.Logf("/healthz while every request waited:\n%s", strings.Join(said, "\n"))
	if !sawFalse {
		t.Errorf("/healthz said ok throughout %v in which no request could be served", hold)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, s := healthy()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still false after the requests flowed again: %s", s)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
