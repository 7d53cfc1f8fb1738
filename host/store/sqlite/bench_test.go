package sqlite

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// BenchmarkReserveSettle is one paid request's storage work: a reservation
// with two budgets, then a settlement writing the usage record. The
// parallel variants are the sustained rate the single writer gives 16 and
// 64 concurrent requests (ns/op is per request, so 1e9/ns-op = requests/s).
func BenchmarkReserveSettle(b *testing.B) {
	for _, par := range []int{0, 8, 32} {
		name := "serial"
		if par > 0 {
			name = "goroutines=" + strconv.Itoa(par*runtime.GOMAXPROCS(0))
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s := open(b, b.TempDir())
			account(b, s, "a", 1<<60)
			budgets := []store.Budget{{Name: "key:k:day", Limit: 1 << 61}, {Name: "acct:a:month", Limit: 1 << 61}}
			var seq atomic.Int64
			one := func() {
				id := strconv.FormatInt(seq.Add(1), 10)
				r, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", KeyID: "k", RequestID: id, Amount: 5000, Budgets: budgets})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Settle(ctx, r.ID, 1234, &store.Usage{Model: "claude-sonnet-4-5", InputTokens: 1000, OutputTokens: 200, Cost: 1000}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if par > 0 {
				b.SetParallelism(par)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						one()
					}
				})
			} else {
				for b.Loop() {
					one()
				}
			}
			b.StopTimer()
			if err := s.Audit(ctx, "a"); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func BenchmarkKeyLookup(b *testing.B) {
	ctx := context.Background()
	s := open(b, b.TempDir())
	account(b, s, "a", 0)
	for i := range 1000 {
		if err := s.CreateKey(ctx, store.Key{ID: "k" + strconv.Itoa(i), AccountID: "a", Hash: []byte{1}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Key(ctx, "k500"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsagePage reads one 100-record page of an account's usage at the
// end of 100,000 records (the depth where peers' OFFSET pages fall over):
// the keyset cursor makes it an index range scan.
func BenchmarkUsagePage(b *testing.B) {
	ctx := context.Background()
	s := open(b, b.TempDir())
	tx, err := s.w.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		if _, err := tx.Exec(`INSERT INTO usage(request_id, account_id, model, input_tokens, charge, at) VALUES (?, 'a', 'm', 10, 5, ?)`,
			strconv.Itoa(i), int64(1_700_000_000_000_000)+int64(i)*1000); err != nil {
			b.Fatal(err)
		}
	}
	// The rollups the records' own transactions would have kept (0002's backfill).
	if _, err := tx.Exec(`INSERT INTO usage_daily SELECT account_id, at / 86400000000, COUNT(*), SUM(input_tokens),
		SUM(output_tokens), SUM(cost), SUM(charge), SUM(savings) FROM usage GROUP BY account_id, at / 86400000000`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	// The cursor of the page that ends 100 records before the oldest one.
	deep := strconv.FormatInt(int64(1_700_000_000_000_000)+200*1000, 10) + "." + strconv.Itoa(201)
	for _, c := range []struct{ name, cursor string }{{"first", ""}, {"at-100k", deep}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.Usage(ctx, store.UsageQuery{AccountID: "a", Limit: 100, Cursor: c.cursor})
				if err != nil || len(p.Records) != 100 {
					b.Fatalf("%d records, %v", len(p.Records), err)
				}
			}
		})
	}
	b.Run("daily-100k", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.DailyUsage(ctx, "a", time.Time{}, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReserve is the reservation alone, the storage part of
// admission (the settlement happens after the upstream answered).
func BenchmarkReserve(b *testing.B) {
	ctx := context.Background()
	s := open(b, b.TempDir())
	account(b, s, "a", 1<<60)
	budgets := []store.Budget{{Name: "key:k:day", Limit: 1 << 61}, {Name: "acct:a:month", Limit: 1 << 61}}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		if _, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", KeyID: "k", RequestID: strconv.Itoa(i), Amount: 5000, Budgets: budgets}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPost is the settlement of paid requests whose money was held in
// memory (host/billing): batches of 1, 16 and 64 postings, each one charge
// entry and one usage record, one transaction a batch. ns/op is per
// posting, so 1e9/ns-op = settled requests/s for one writer.
func BenchmarkPost(b *testing.B) {
	for _, n := range []int{1, 16, 64} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			s := open(b, b.TempDir())
			account(b, s, "a", 1<<60)
			var seq int64
			batch := make([]store.Posting, n)
			b.ReportAllocs()
			for i := 0; i < b.N; i += n {
				for j := range batch {
					seq++
					batch[j] = store.Posting{Usage: store.Usage{RequestID: strconv.FormatInt(seq, 10), AccountID: "a", KeyID: "k",
						Model: "claude-sonnet-4-5", InputTokens: 1000, OutputTokens: 200, Cost: 1000, Charge: 1234, Status: 200}}
				}
				if _, err := s.Post(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := s.Audit(ctx, "a"); err != nil {
				b.Fatal(err)
			}
		})
	}
}
