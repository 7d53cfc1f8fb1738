package auth

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkVerify is key verification on the admission path: "cached" is
// the steady state (HMAC + constant-time compare + scope check), "store"
// the cold path reading the key from SQLite every time.
func BenchmarkVerify(b *testing.B) {
	s := openStore(b)
	for _, name := range []string{"cached", "store"} {
		b.Run(name, func(b *testing.B) {
			ttl := time.Hour
			if name == "store" {
				ttl = time.Nanosecond
			}
			a := New(s, secret(), Options{TTL: ttl})
			tok, _, err := a.Create(ctx(), "acct", KeySpec{Models: []string{"claude-*"}, CIDRs: []string{"127.0.0.0/8"}})
			if err != nil {
				b.Fatal(err)
			}
			acc := Access{Model: "claude-sonnet-4-5", ClientIP: peer("127.0.0.1"), Spends: true}
			b.ReportAllocs()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				p, err := a.Verify(ctx(), tok)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Allow(acc); err != nil {
					b.Fatal(err)
				}
				if len(lat) < 1<<20 {
					lat = append(lat, time.Since(t0))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
