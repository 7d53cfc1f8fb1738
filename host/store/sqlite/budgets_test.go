package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/bardoinference/bardo/host/store"
)

// An x402 wallet has no account row until its first budget: SetBudget
// creates it (the subject lower-cased, as the paywall names the tenant),
// ListBudgets finds the budget by either case, and removing a budget a
// wallet never had is no error. Other unknown accounts stay not found.
func TestWalletBudgets(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const mixed = "wallet:0xAbCdEf0123456789abcdef0123456789ABCDEF01"
	const lower = "wallet:0xabcdef0123456789abcdef0123456789abcdef01"
	if err := s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: lower, Period: store.PeriodDay}); err != nil {
		t.Fatalf("removing a budget a wallet never had: %v", err)
	}
	if _, err := s.Account(ctx, lower); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a removal created the wallet's account: %v", err)
	}
	if err := s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: mixed, Period: store.PeriodDay, Limit: 5_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: lower, Period: store.PeriodMonth, Limit: 40_000_000}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Account(ctx, lower)
	if err != nil || a.Tier != store.TierFree || a.Balance != 0 {
		t.Fatalf("the wallet's account %+v %v", a, err)
	}
	for _, id := range []string{lower, mixed} {
		bs, err := s.ListBudgets(ctx, id)
		if err != nil || len(bs) != 2 || bs[0].Subject != lower || bs[0].Period != store.PeriodDay || bs[0].Limit != 5_000_000 ||
			bs[1].Period != store.PeriodMonth || bs[1].AccountID != lower {
			t.Fatalf("ListBudgets(%s) = %+v %v", id, bs, err)
		}
	}
	if err := s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: mixed, Period: store.PeriodDay}); err != nil {
		t.Fatal(err)
	}
	if bs, _ := s.ListBudgets(ctx, lower); len(bs) != 1 || bs[0].Period != store.PeriodMonth {
		t.Fatalf("after removing the day's: %+v", bs)
	}
	for _, id := range []string{"acct_nobody", "wallet:0x12", "wallet:0xabcdef0123456789abcdef0123456789abcdef0"} {
		err := s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: id, Period: store.PeriodDay, Limit: 1})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("budget of %s: %v, want not found", id, err)
		}
	}
}
