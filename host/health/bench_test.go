package health

import (
	"testing"
	"time"
)

// The benchmarks use the real clock: time.Now is part of what Record costs
// on the request path.

func benchTracker(b *testing.B) *Tracker {
	b.Helper()
	tr, err := New(Config{MinSamples: 1 << 30, ConsecutiveFailures: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkRecord: one outcome through Tracker.Record (map lookup included),
// 1 in 20 a failure.
func BenchmarkRecord(b *testing.B) {
	tr := benchTracker(b)
	tr.Backend("openrouter")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		o := Outcome{Kind: OK, Latency: time.Duration(i%500) * time.Millisecond}
		if i%20 == 0 {
			o.Kind = Server
		}
		tr.Record("openrouter", o)
		i++
	}
}

// BenchmarkRecordParallel: every goroutine recording on the same backend,
// the worst contention the gateway can produce.
func BenchmarkRecordParallel(b *testing.B) {
	tr := benchTracker(b)
	bk := tr.Backend("openrouter")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			bk.Record(Outcome{Kind: OK, Latency: time.Duration(i%500) * time.Millisecond})
			i++
		}
	})
}

func BenchmarkAvailable(b *testing.B) {
	tr := benchTracker(b)
	tr.Record("blockrun", Outcome{Kind: OK, Latency: time.Millisecond})
	b.ReportAllocs()
	for b.Loop() {
		if !tr.Available("blockrun") {
			b.Fatal("unavailable")
		}
	}
}

func BenchmarkAvailableParallel(b *testing.B) {
	tr := benchTracker(b)
	tr.Record("blockrun", Outcome{Kind: OK, Latency: time.Millisecond})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !tr.Available("blockrun") {
				b.Fatal("unavailable")
			}
		}
	})
}

// BenchmarkAvailableOpen: the out path reads the clock.
func BenchmarkAvailableOpen(b *testing.B) {
	tr, err := New(Config{Cooldown: time.Hour, MaxCooldown: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	trip(tr, "venice")
	b.ReportAllocs()
	for b.Loop() {
		if tr.Available("venice") {
			b.Fatal("available")
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	tr := benchTracker(b)
	for i := range 10000 {
		tr.Record("a", Outcome{Kind: OK, Latency: time.Duration(i) * time.Microsecond})
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tr.Get("a")
	}
}
