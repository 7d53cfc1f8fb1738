package server

import (
	"slices"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/telemetry"
)

// BenchmarkRequestMetrics measures the metrics one inference request adds:
// the server's observe (with provider, model, failover, degradation and cache
// headers to read), four layer calls' latency and three plugin counters, as a
// request through two layers and a provider records them. Without metrics the
// same request records nothing, so this is the with-vs-without difference.
// It reports the per-request p50 and p99 besides the mean.
func BenchmarkRequestMetrics(b *testing.B) {
	reg := telemetry.New()
	sv := &Server{Metrics: reg}
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.SetMethod("POST")
	h := &ctx.Response.Header
	h.Set("X-Bardo-Provider", "backup")
	h.Set("X-Bardo-Model", "gpt-4o")
	h.Set("X-Bardo-Fallback", "up:502")
	h.Set("X-Bardo-Degraded", "layer-skipped:pii")
	h.Set("X-Bardo-Cache", "miss")
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		sv.observe(&ctx, t0)
		for _, l := range [...]string{"hashcache", "pii"} {
			reg.Observe("bardo_sandbox_call_seconds", 0.0002, "plugin", l, "op", "bardo_on_request")
			reg.Observe("bardo_sandbox_call_seconds", 0.0002, "plugin", l, "op", "bardo_on_response")
		}
		reg.PluginMetric("hashcache", 0, "hashcache_misses_total", 1)
		reg.PluginMetric("hashcache", 0, "hashcache_stores_total", 1)
		reg.PluginMetric("pii", 0, "pii_masked_total", 1)
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}
