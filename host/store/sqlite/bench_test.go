package sqlite

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

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
