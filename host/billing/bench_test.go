package billing

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/sdk/wire"
)

// benchMeter is a meter on a real SQLite file in a temp dir, the real
// clock, account "a" with a large balance and both budget kinds set, and
// key "k1" with a rate limit that counts every request but never refuses.
// With journal, settlements go through the journal in the same temp dir.
func benchMeter(b *testing.B, journal bool) (*Meter, *sqlite.Store, *auth.Principal) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	s, err := sqlite.Open(ctx, filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.CreateAccount(ctx, store.Account{ID: "a", Tier: store.TierPro}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.TopUp(ctx, "a", 1<<50, "bench"); err != nil {
		b.Fatal(err)
	}
	k := store.Key{ID: "k1", AccountID: "a", Hash: []byte{1}, RateLimit: 1 << 30, SpendLimit: 1 << 52}
	if err := s.CreateKey(ctx, k); err != nil {
		b.Fatal(err)
	}
	for _, bg := range []store.SpendBudget{
		{Scope: store.ScopeAccount, Subject: "a", Period: store.PeriodMonth, Limit: 1 << 52},
		{Scope: store.ScopeKey, Subject: "k1", Period: store.PeriodDay, Limit: 1 << 52},
	} {
		if err := s.SetBudget(ctx, bg); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Store: s, Log: slog.New(slog.DiscardHandler),
		Tiers: map[store.Tier]Tier{store.TierPro: {Spread: 1500, RequestsPerMinute: 100, TokensPerHour: 1 << 50}}}
	if journal {
		cfg.JournalDir = dir
	}
	m, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(ctx) })
	return m, s, &auth.Principal{Key: k}
}

// BenchmarkOpen is the meter's part of admission: the account's state,
// the rate limit, the allowance, the estimate, four budgets and the
// balance, and the hold (issue 12: ≤ 20 µs p50 for all of admission). The
// tabs stay open, as under load. Reported: mean (ns/op), p50 and p99.
func BenchmarkOpen(b *testing.B) {
	m, _, p := benchMeter(b, false)
	ctx := context.Background()
	a := admission(3000, 4096, opus, sonnet, haiku)
	if _, werr := m.Open(ctx, p, a); werr != nil {
		b.Fatal(werr)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		_, werr := m.Open(ctx, p, a)
		lat = append(lat, time.Since(t0))
		if werr != nil {
			b.Fatal(werr)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkSettled is paid requests end to end through the meter: Open,
// then Close of an upstream answer, 64 goroutines on the 2-core machine,
// SQLite (WAL, synchronous=NORMAL) in a temp dir. "wait": each Close waits
// for its group commit; "journal": Close journals and returns, and the
// clock stops only once every settlement is committed, so req/s is the
// sustained rate (a request refused at the backlog bound retries, as a
// client does after its 503). Reported as settled requests per second.
func BenchmarkSettled(b *testing.B) {
	for _, journal := range []bool{false, true} {
		b.Run(mode(journal), func(b *testing.B) {
			m, s, p := benchMeter(b, journal)
			ctx := context.Background()
			a := admission(3000, 1024, sonnet)
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(64 / runtime.GOMAXPROCS(0))
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c, werr := m.Open(ctx, p, a)
					for werr != nil && werr.Status == 503 {
						time.Sleep(time.Millisecond)
						c, werr = m.Open(ctx, p, a)
					}
					if werr != nil {
						b.Error(werr)
						return
					}
					u := wire.Usage{InputTokens: 2500, OutputTokens: 300, CacheReadTokens: 1000}
					c.Tab.Close(&gateway.Settlement{RequestID: "r" + strconv.FormatInt(seq.Add(1), 10), Path: gateway.PathUpstream,
						Upstream: true, Model: sonnet.Model, Usage: &u, Status: 200, Prices: sonnet.Prices, Priced: true})
				}
			})
			waitCommitted(b, m)
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
			if err := s.Audit(ctx, "a"); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func mode(journal bool) string {
	if journal {
		return "journal"
	}
	return "wait"
}

// waitCommitted waits (at most 30 s) until the meter's writer has
// committed everything queued.
func waitCommitted(tb testing.TB, m *Meter) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); m.w.backlog() > 0; {
		if time.Now().After(deadline) {
			tb.Fatalf("%d settlements still uncommitted", m.w.backlog())
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkSettledSerial is one paid request at a time (concurrency 1):
// Open, then Close. Its p50 is what settlement adds to a lone request's
// latency. "wait": Close waits for a commit of its own; "journal": Close
// journals and returns, and the commit is awaited outside the measured
// span before the next request, so each request finds the writer idle, as
// a lone request does (ns/op includes that wait; p50 and p99 do not).
func BenchmarkSettledSerial(b *testing.B) {
	for _, journal := range []bool{false, true} {
		b.Run(mode(journal), func(b *testing.B) {
			m, _, p := benchMeter(b, journal)
			ctx := context.Background()
			a := admission(3000, 1024, sonnet)
			u := wire.Usage{InputTokens: 2500, OutputTokens: 300, CacheReadTokens: 1000}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				t0 := time.Now()
				c, werr := m.Open(ctx, p, a)
				if werr != nil {
					b.Fatal(werr)
				}
				c.Tab.Close(&gateway.Settlement{RequestID: "r" + strconv.Itoa(n), Path: gateway.PathUpstream,
					Upstream: true, Model: sonnet.Model, Usage: &u, Status: 200, Prices: sonnet.Prices, Priced: true})
				lat = append(lat, time.Since(t0))
				if journal {
					waitCommitted(b, m) // outside lat; not b.StopTimer, whose ReadMemStats disturbs the next request
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}
