package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

func posting(req, acct string, charge int64) store.Posting {
	return store.Posting{Usage: store.Usage{RequestID: req, AccountID: acct, KeyID: "k", Model: "m",
		InputTokens: 10, OutputTokens: 5, Charge: charge, Status: 200}}
}

func TestPostBatch(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 1000)
	account(t, s, "b", 50)
	out, err := s.Post(ctx, []store.Posting{
		posting("r1", "a", 300),
		posting("r2", "b", 80), // more than b has: capped, the rest is shortfall
		posting("r3", "nobody", 5),
		posting("r4", "a", 0),   // a record alone
		posting("r1", "a", 300), // the same request twice in one batch
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Posted{
		{RequestID: "r1", AccountID: "a", Charged: 300, Balance: 700},
		{RequestID: "r2", AccountID: "b", Charged: 50, Shortfall: 30, Balance: 0},
		{RequestID: "r3", AccountID: "nobody"},
		{RequestID: "r4", AccountID: "a", Balance: 700},
		{RequestID: "r1", AccountID: "a", Charged: 300, Balance: 700, Replayed: true},
	}
	for i, w := range want {
		got := out[i]
		if i == 2 {
			if !errors.Is(got.Err, store.ErrNotFound) {
				t.Errorf("unknown account: %+v", got)
			}
			continue
		}
		if got != w {
			t.Errorf("posting %d: %+v, want %+v", i, got, w)
		}
	}
	audit(t, s, "a")
	if b := audit(t, s, "b"); b.Balance != 0 {
		t.Errorf("b balance %d", b.Balance)
	}
	page, err := s.Usage(ctx, store.UsageQuery{AccountID: "b"})
	if err != nil || len(page.Records) != 1 || page.Records[0].Charge != 50 || page.Records[0].Shortfall != 30 {
		t.Fatalf("b's record: %+v %v", page.Records, err)
	}
	// A replay in a later batch changes nothing either.
	out, err = s.Post(ctx, []store.Posting{posting("r1", "a", 999)})
	if err != nil || !out[0].Replayed || out[0].Charged != 300 || out[0].Balance != 700 {
		t.Fatalf("replay: %+v %v", out, err)
	}
	if a := audit(t, s, "a"); a.Balance != 700 {
		t.Fatalf("balance after replay %d", a.Balance)
	}
	sum, err := s.SumUsage(ctx, store.UsageSumQuery{AccountID: "a"})
	if err != nil || sum != (store.UsageSum{Requests: 2, Tokens: 30, Charge: 300}) {
		t.Fatalf("sum %+v %v", sum, err)
	}
	sum, err = s.SumUsage(ctx, store.UsageSumQuery{AccountID: "a", From: time.Now().Add(time.Hour)})
	if err != nil || sum != (store.UsageSum{}) {
		t.Fatalf("sum of the future %+v %v", sum, err)
	}
}

// TestPostConcurrentAudit: postings from many goroutines, each its own
// transaction or batch, keep the ledger's invariants and never double.
func TestPostConcurrentAudit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	account(t, s, "a", 10_000)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				// Every request is posted twice: the second is a replay.
				p := posting(fmt.Sprintf("r%d-%d", g, i%10), "a", 7)
				if _, err := s.Post(ctx, []store.Posting{p, p}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	a := audit(t, s, "a")
	if a.Balance != 10_000-16*10*7 {
		t.Fatalf("balance %d", a.Balance)
	}
	s.Close()
	// Restart keeps balances and records.
	s2 := open(t, dir)
	if a := audit(t, s2, "a"); a.Balance != 10_000-16*10*7 {
		t.Fatalf("balance after reopen %d", a.Balance)
	}
	sum, err := s2.SumUsage(ctx, store.UsageSumQuery{AccountID: "a"})
	if err != nil || sum.Requests != 160 || sum.Charge != 1120 {
		t.Fatalf("records after reopen %+v %v", sum, err)
	}
}

// TestAuditCatchesDoubleCharge: the audit notices a request charged twice
// (a settle and a post of the same request).
func TestAuditCatchesDoubleCharge(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 1000)
	r, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r", Amount: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, r.ID, 10, nil); err != nil {
		t.Fatal(err)
	}
	audit(t, s, "a")
	if _, err := s.Post(ctx, []store.Posting{posting("r", "a", 10)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Audit(ctx, "a"); err == nil {
		t.Fatal("double charge passed the audit")
	}
}

func TestSpendBudgetsAndRateLimit(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 0)
	if err := s.CreateKey(ctx, store.Key{ID: "k1", AccountID: "a", Hash: []byte{1}, RateLimit: 7}); err != nil {
		t.Fatal(err)
	}
	if k, err := s.Key(ctx, "k1"); err != nil || k.RateLimit != 7 {
		t.Fatalf("%+v %v", k, err)
	}
	if err := s.SetKeyRateLimit(ctx, "k1", 12); err != nil {
		t.Fatal(err)
	}
	if k, _ := s.Key(ctx, "k1"); k.RateLimit != 12 {
		t.Fatalf("rate limit %d", k.RateLimit)
	}
	if err := s.SetKeyRateLimit(ctx, "nope", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	for _, b := range []store.SpendBudget{
		{Scope: store.ScopeAccount, Subject: "a", Period: store.PeriodMonth, Limit: 500},
		{Scope: store.ScopeKey, Subject: "k1", Period: store.PeriodDay, Limit: 100},
		{Scope: store.ScopeKey, Subject: "k1", Period: store.PeriodDay, Limit: 200}, // replaces
	} {
		if err := s.SetBudget(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	bs, err := s.ListBudgets(ctx, "a")
	if err != nil || len(bs) != 2 || bs[0].Scope != store.ScopeAccount || bs[1].Limit != 200 || bs[1].AccountID != "a" {
		t.Fatalf("%+v %v", bs, err)
	}
	if err := s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeKey, Subject: "k1", Period: store.PeriodDay}); err != nil {
		t.Fatal(err)
	}
	if bs, _ := s.ListBudgets(ctx, "a"); len(bs) != 1 {
		t.Fatalf("after removal %+v", bs)
	}
	for _, b := range []store.SpendBudget{
		{Scope: store.ScopeKey, Subject: "nope", Period: store.PeriodDay, Limit: 1},
		{Scope: "team", Subject: "a", Period: store.PeriodDay, Limit: 1},
		{Scope: store.ScopeAccount, Subject: "a", Period: "week", Limit: 1},
		{Scope: store.ScopeAccount, Subject: "a", Period: store.PeriodDay, Limit: -1},
	} {
		if err := s.SetBudget(ctx, b); err == nil {
			t.Errorf("%+v accepted", b)
		}
	}
}
