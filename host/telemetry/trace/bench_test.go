package trace

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

var shippedLayers = []string{"pii", "injection", "hashcache", "semcache", "toolprune", "compress", "promptcache", "affinity"}

func simulateShipped(t *Tracer, h Header, req *wire.Request, o *Outcome) {
	r := t.Start(h, time.Now(), "req-1", "openai", "/v1/chat/completions", req)
	r.Admission(r.Now(), nil)
	ctx := r.Context(context.Background())
	for _, l := range shippedLayers {
		_, sp := StartLayer(ctx, l, "on_request")
		sp.EndLayer("")
	}
	r.Route(r.Now(), "explicit", nil)
	_, a := StartAttempt(ctx, "openai", "gpt-4o", 1)
	a.EndAttempt(200, "", false)
	for _, l := range shippedLayers[:4] {
		_, sp := StartLayer(ctx, l, "on_response")
		sp.EndLayer("")
	}
	r.End(o)
}

// BenchmarkRequestHooks runs every hook one request passes (start, the
// admission and routing spans, two layer calls, a failed attempt and a
// failover, an internal completion inside a layer, the end with a full
// outcome) with tracing off and on, exporting in batches to an exporter
// that drops them. p50-ns is the median of the timed iterations.
//
// shipped is the shape of a request through the shipped pipeline.toml: 8
// request-phase layer calls, 4 response-phase ones, one attempt (16 spans).
//
//   - on, shipped-on: as served — the hooks on this goroutine, the spans
//     built and exported on the Tracer's (which shares the machine).
//   - shipped-record: the hooks alone (no builder runs; what settles is
//     discarded): the request path's own cost and allocations.
//   - shipped-total: the hooks and then the building, both here: the CPU
//     tracing costs per request in all.
func BenchmarkRequestHooks(b *testing.B) {
	const (
		served = iota
		record
		total
	)
	for _, c := range []struct {
		name  string
		on    bool
		ratio float64
		mode  int
		run   func(*Tracer, Header, *wire.Request, *Outcome)
	}{
		{"off", false, 1, served, simulate}, {"on", true, 1, served, simulate},
		{"shipped-off", false, 1, served, simulateShipped}, {"shipped-on", true, 1, served, simulateShipped},
		{"shipped-record", true, 1, record, simulateShipped}, {"shipped-total", true, 1, total, simulateShipped},
		// sample_ratio = 0: a new trace not kept (no caller traceparent).
		{"shipped-unsampled", true, 0, served, simulateShipped},
	} {
		on := c.on
		b.Run(c.name, func(b *testing.B) {
			var tr *Tracer
			var bld builder
			if on {
				var err error
				if c.mode == served {
					tr, err = New(Config{Exporter: discard{}, SampleRatio: c.ratio})
				} else {
					tr, err = newTracer(Config{Exporter: discard{}, SampleRatio: c.ratio})
				}
				if err != nil {
					b.Fatal(err)
				}
				if c.mode == served {
					defer tr.Shutdown(context.Background())
				} else {
					defer tr.bat.Shutdown(context.Background())
				}
			}
			req, h, o := request(), Header(headers{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}), outcome()
			if c.ratio == 0 {
				h = headers{}
			}
			took := make([]time.Duration, 0, min(b.N, 1<<20))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				c.run(tr, h, req, o)
				switch c.mode {
				case total:
					tr.buildPending(&bld)
				case record:
					tr.pending = tr.pending[:0]
				}
				if len(took) < cap(took) {
					took = append(took, time.Since(t0))
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
