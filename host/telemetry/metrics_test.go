package telemetry

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads an exposition back with Prometheus' own parser.
func parse(t *testing.T, r *Registry) map[string]*dto.MetricFamily {
	t.Helper()
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := tp.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	return mfs
}

// Every metric, the host's, a plugin's and the runtime's, carries HELP text
// and a type (the hand-written exposition had neither HELP nor the runtime).
func TestExpositionHasHelpAndTypes(t *testing.T) {
	r := New()
	r.Add("bardo_http_requests_total", 1, "path", "/v1/messages", "code", "200")
	r.Observe("bardo_http_request_seconds", 0.02, "path", "/v1/messages")
	r.Set("bardo_sandbox_pool_size", 4, "plugin", "hashcache")
	r.PluginMetric("hashcache", 0, "hashcache_hits_total", 2)
	r.PluginMetric("injection", 2, "injection_score_seconds", 0.003)
	mfs := parse(t, r)
	for name, mf := range mfs {
		if mf.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
	for name, typ := range map[string]dto.MetricType{
		"bardo_http_requests_total":            dto.MetricType_COUNTER,
		"bardo_http_request_seconds":           dto.MetricType_HISTOGRAM,
		"bardo_sandbox_pool_size":              dto.MetricType_GAUGE,
		"bardo_plugin_hashcache_hits_total":    dto.MetricType_COUNTER,
		"bardo_plugin_injection_score_seconds": dto.MetricType_HISTOGRAM,
		"go_goroutines":                        dto.MetricType_GAUGE,
		"process_resident_memory_bytes":        dto.MetricType_GAUGE,
		"bardo_telemetry_dropped_total":        dto.MetricType_COUNTER,
	} {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if mf.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, mf.GetType(), typ)
		}
	}
	if v := r.Value("bardo_plugin_hashcache_hits_total", "plugin", "hashcache"); v != 2 {
		t.Errorf("plugin counter = %v", v)
	}
	if v := r.Value("bardo_plugin_injection_score_seconds", "plugin", "injection"); v != 1 {
		t.Errorf("plugin histogram count = %v", v)
	}
	h := mfs["bardo_plugin_injection_score_seconds"].GetMetric()[0].GetHistogram()
	for _, b := range h.GetBucket() {
		if want := uint64(0); b.GetUpperBound() >= 0.003 {
			want = 1
			if b.GetCumulativeCount() != want {
				t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		} else if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// Samples outside the catalog, past a cap or of the wrong type are dropped
// and counted, never written and never a panic.
func TestBounds(t *testing.T) {
	r := New()
	drops := func(reason string) float64 { return r.Value("bardo_telemetry_dropped_total", "reason", reason) }

	r.Add("bardo_made_up_total", 1)                                      // undeclared name
	r.Add("bardo_http_requests_total", 1, "path", "/x")                  // missing label
	r.Add("bardo_http_requests_total", 1, "code", "200", "path", "/x")   // labels out of order
	r.Set("bardo_http_requests_total", 1, "path", "/x", "code", "200")   // a counter set as a gauge
	r.Add("bardo_http_requests_total", 1, "path", "\xff", "code", "200") // invalid UTF-8
	if d := drops("undeclared"); d != 5 {
		t.Errorf("undeclared drops = %v, want 5", d)
	}
	r.Add("bardo_http_requests_total", -1, "path", "/x", "code", "200")
	r.PluginMetric("p", 0, "c_total", -1)
	r.PluginMetric("p", 7, "c_total", 1)
	if d := drops("invalid"); d != 3 {
		t.Errorf("invalid drops = %v, want 3", d)
	}

	for i := range MaxSeries + 10 {
		r.Add("bardo_cache_invalidations_total", 1, "layer", strings.Repeat("l", i+1))
	}
	if n := testutil.CollectAndCount(r.metrics["bardo_cache_invalidations_total"].vec); n != MaxSeries {
		t.Errorf("series = %d, want %d", n, MaxSeries)
	}
	if d := drops("series_cap"); d != 10 {
		t.Errorf("series_cap drops = %v", d)
	}

	for i := range MaxPluginMetrics + 5 {
		r.PluginMetric("greedy", 0, "m"+strings.Repeat("x", i)+"_total", 1)
	}
	r.PluginMetric("greedy", 0, "m_total", 1) // an existing name still counts
	if d := drops("plugin_cap"); d != 5 {
		t.Errorf("plugin_cap drops = %v", d)
	}
	if v := r.Value("bardo_plugin_m_total", "plugin", "greedy"); v != 2 {
		t.Errorf("bardo_plugin_m_total = %v", v)
	}

	r.PluginMetric("a", 0, "shared", 1)
	r.PluginMetric("b", 1, "shared", 1) // another plugin's type for the same name
	if d := drops("kind_conflict"); d != 1 {
		t.Errorf("kind_conflict drops = %v", d)
	}
	parse(t, r) // still a valid exposition
}

// README.md documents every catalog metric with its type and labels.
func TestCatalogDocumented(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Catalog {
		if !model.LegacyValidation.IsValidMetricName(d.Name) || d.Help == "" {
			t.Errorf("%s: invalid name or no HELP", d.Name)
		}
		row := "| `" + d.Name + "` | " + d.Type + " | " + labelList(d.Labels) + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("README.md lacks the row %q", row)
		}
	}
}

func labelList(l []string) string {
	if len(l) == 0 {
		return "—"
	}
	return "`" + strings.Join(l, "`, `") + "`"
}

func BenchmarkAdd(b *testing.B) {
	r := New()
	for b.Loop() {
		r.Add("bardo_http_requests_total", 1, "path", "/v1/chat/completions", "code", "200")
	}
}

func BenchmarkObserve(b *testing.B) {
	r := New()
	for b.Loop() {
		r.Observe("bardo_sandbox_call_seconds", 0.0003, "plugin", "hashcache", "op", "bardo_on_request")
	}
}

// A bound Observer records into the series Observe would; an undeclared
// one is nil, so its caller keeps calling Observe and the drop is counted.
func TestObserver(t *testing.T) {
	r := New()
	o := r.Observer("bardo_sandbox_call_seconds", "plugin", "hashcache", "op", "bardo_on_request")
	o(0.001)
	r.Observe("bardo_sandbox_call_seconds", 0.002, "plugin", "hashcache", "op", "bardo_on_request")
	if v := r.Value("bardo_sandbox_call_seconds", "plugin", "hashcache", "op", "bardo_on_request"); v != 2 {
		t.Errorf("bound and looked-up observations = %v, want 2 in one series", v)
	}
	if r.Observer("bardo_sandbox_call_seconds", "plugin", "x") != nil || r.Observer("bardo_no_such_seconds") != nil {
		t.Error("an undeclared series was bound")
	}
}

// BenchmarkObserveBound is BenchmarkObserve through a bound Observer.
func BenchmarkObserveBound(b *testing.B) {
	r := New()
	o := r.Observer("bardo_sandbox_call_seconds", "plugin", "hashcache", "op", "bardo_on_request")
	for b.Loop() {
		o(0.0003)
	}
}

func BenchmarkPluginMetric(b *testing.B) {
	r := New()
	for b.Loop() {
		r.PluginMetric("hashcache", 0, "hashcache_hits_total", 1)
	}
}
