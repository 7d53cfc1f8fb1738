package trace

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkRequestHooks runs every hook one request passes (start, the
// admission and routing spans, two layer calls, a failed attempt and a
// failover, an internal completion inside a layer, the end with a full
// outcome) with tracing off and on, exporting in batches to an exporter
// that drops them: what tracing adds to a request, the export aside (it
// runs on the batcher's goroutine). p50-ns is the median of the timed
// iterations.
func BenchmarkRequestHooks(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var tr *Tracer
			if on {
				var err error
				if tr, err = New(Config{Exporter: discard{}, SampleRatio: 1}); err != nil {
					b.Fatal(err)
				}
				defer tr.Shutdown(context.Background())
			}
			req, h, o := request(), headers{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, outcome()
			took := make([]time.Duration, 0, min(b.N, 1<<20))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				simulate(tr, h, req, o)
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
