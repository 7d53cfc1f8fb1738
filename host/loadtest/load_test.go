package loadtest_test

import (
	"context"
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
