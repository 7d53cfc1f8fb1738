//go:build !wasip1

package telemetry_test

// End to end: the gateway in-process with the hashcache layer, two
// OpenAI-compatible providers for gpt-* (the first scripted to fail) and an
// Anthropic one, called over HTTP in both dialects, streaming, with a cache
// hit and a failover; then GET /metrics is parsed with Prometheus' parser.

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["hashcache.wasm"] = "plugins/layers/hashcache" }

const key = testgateway.FakeUpstreamKey

func pipelineTOML(first, backup string) string {
	return testgateway.FailoverPipeline(first, backup, false)
}

func call(t *testing.T, g *testgateway.Gateway, path, body string) http.Header {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if path == "/v1/messages" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return resp.Header
}

func chat(model, text string, stream bool) string {
	s := ""
	if stream {
		s = `"stream":true,`
	}
	return `{"model":"` + model + `",` + s + `"temperature":0,"max_tokens":200,"messages":[{"role":"user","content":"` + text + `"}]}`
}

const question = "Summarize the risk of my Aave position in two sentences, considering ETH volatility and the health factor."

func TestScrapeAfterMixedRun(t *testing.T) {
	first := fakeupstream.New(fakeupstream.WithAPIKey(key))
	t.Cleanup(first.Close)
	backup := fakeupstream.New(fakeupstream.WithAPIKey(key))
	t.Cleanup(backup.Close)
	g := testgateway.Start(t, pipelineTOML(first.URL(), backup.URL()), testgateway.Options{Env: map[string]string{"UP_KEY": key}})

	const path = "/v1/chat/completions"
	if h := call(t, g, path, chat("gpt-4o", question, false)); h.Get("X-Bardo-Cache") != "miss" {
		t.Fatalf("first: cache %q", h.Get("X-Bardo-Cache"))
	}
	if h := call(t, g, path, chat("gpt-4o", question, false)); h.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatalf("second: cache %q", h.Get("X-Bardo-Cache"))
	}
	call(t, g, "/v1/messages", `{"model":"claude-sonnet-4","max_tokens":200,"messages":[{"role":"user","content":"`+question+` In Anthropic."}]}`)
	call(t, g, path, chat("gpt-4o", question+" Streamed.", true))
	first.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	h := call(t, g, path, chat("gpt-4o", question+" Failed over.", false))
	if h.Get("X-Bardo-Provider") != "backup" || h.Get("X-Bardo-Fallback") == "" {
		t.Fatalf("no failover: provider %q, fallback %q", h.Get("X-Bardo-Provider"), h.Get("X-Bardo-Fallback"))
	}

	// A stream settles once its writer is done, which may be just after
	// the caller read its last byte: scrape until it has (bounded).
	var mfs map[string]*dto.MetricFamily
	for range 100 {
		mfs = scrape(t, g)
		if mfs["bardo_streams_total"] != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Every family has HELP; every catalog metric present has its declared
	// type and exactly its declared labels.
	for name, mf := range mfs {
		if mf.GetHelp() == "" {
			t.Errorf("%s: no HELP", name)
		}
	}
	types := map[string]dto.MetricType{"counter": dto.MetricType_COUNTER, "gauge": dto.MetricType_GAUGE, "histogram": dto.MetricType_HISTOGRAM}
	for _, d := range telemetry.Catalog {
		mf := mfs[d.Name]
		if mf == nil {
			continue
		}
		if mf.GetType() != types[d.Type] {
			t.Errorf("%s: type %v, want %s", d.Name, mf.GetType(), d.Type)
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName())
			}
			if strings.Join(got, ",") != strings.Join(slices.Sorted(slices.Values(d.Labels)), ",") {
				t.Errorf("%s: labels %v, want %v", d.Name, got, d.Labels)
			}
		}
	}

	value := func(name string, labels ...string) float64 {
		t.Helper()
		for _, m := range mfs[name].GetMetric() {
			if match(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"bardo_requests_total", []string{"dialect", "openai", "endpoint", "chat_completions", "code", "200"}, 4},
		{"bardo_requests_total", []string{"dialect", "anthropic", "endpoint", "messages", "code", "200"}, 1},
		{"bardo_http_requests_total", []string{"path", "/v1/chat/completions", "code", "200"}, 4},
		{"bardo_http_request_seconds", []string{"path", "/v1/messages"}, 1},
		{"bardo_provider_responses_total", []string{"provider", "backup", "model", "gpt-4o", "code", "200"}, 1},
		{"bardo_provider_responses_total", []string{"provider", "claude", "model", "claude-sonnet-4", "code", "200"}, 1},
		{"bardo_failovers_total", []string{"provider", "up", "reason", "502"}, 1},
		{"bardo_cache_answers_total", []string{"result", "hash-hit"}, 1},
		{"bardo_cache_answers_total", []string{"result", "miss"}, 3},
		{"bardo_plugin_hashcache_hits_total", []string{"plugin", "hashcache"}, 1},
		{"bardo_sandbox_call_seconds", []string{"plugin", "hashcache", "op", "bardo_on_request"}, 5},
		{"bardo_sandbox_pool_size", []string{"plugin", "hashcache"}, 1},
		{"bardo_sandbox_instances_created_total", []string{"plugin", "up"}, 1},
		{"bardo_tokens_total", []string{"provider", "backup", "model", "gpt-4o", "kind", "input"}, 1},
		{"bardo_tokens_total", []string{"provider", "backup", "model", "gpt-4o", "kind", "output"}, 1},
		{"bardo_tokens_total", []string{"provider", "claude", "model", "claude-sonnet-4", "kind", "output"}, 1},
		{"bardo_answer_seconds", []string{"provider", "backup", "model", "gpt-4o", "path", "upstream"}, 1},
		{"bardo_streams_total", []string{"end", "ended"}, 1},
		{"go_goroutines", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
	} {
		if v := value(c.name, c.labels...); v < c.min {
			t.Errorf("%s%v = %v, want ≥ %v", c.name, c.labels, v, c.min)
		}
	}
	if v := value("bardo_telemetry_dropped_total", "reason", "undeclared"); v != 0 {
		t.Errorf("%v samples dropped as undeclared: a call site and the catalog disagree", v)
	}
	if t.Failed() {
		var b strings.Builder
		g.Metrics.WriteTo(&b)
		t.Logf("exposition:\n%s", grepBardo(b.String()))
	}
}

func scrape(t *testing.T, g *testgateway.Gateway) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := tp.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	return mfs
}

func match(m *dto.Metric, kv []string) bool {
	if 2*len(m.GetLabel()) != len(kv) {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		ok := false
		for _, l := range m.GetLabel() {
			ok = ok || (l.GetName() == kv[i] && l.GetValue() == kv[i+1])
		}
		if !ok {
			return false
		}
	}
	return true
}

func grepBardo(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "bardo_") && !strings.Contains(l, "_bucket") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
