package billing

import (
	"context"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/store"
)

var _ gateway.AccountReader = (*Meter)(nil)

// AccountStatus is the account's live state as key sees it (key "" for
// the account alone): the ledger balance, what open and closing requests
// hold, the allowance, the key's rate limit and the budgets that apply,
// each with what it has taken this period (charges plus holds). It first
// waits for the settlements closed so far to commit (Usage), so the
// balance is the one the caller's last bill showed, not that one's
// charge still counted as held.
func (m *Meter) AccountStatus(ctx context.Context, account, key string) (gateway.AccountStatus, error) {
	m.syncRead(ctx)
	a, err := m.account(ctx, account)
	if err != nil {
		return gateway.AccountStatus{}, err
	}
	var k *keyState
	var life int64
	rate := 0
	if key != "" {
		rec, err := m.st.Key(ctx, key)
		if err != nil {
			return gateway.AccountStatus{}, err
		}
		if k, err = m.key(ctx, a, key); err != nil {
			return gateway.AccountStatus{}, err
		}
		life, rate = rec.SpendLimit, rec.RateLimit
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := m.now()
	m.refresh(ctx, a, now)
	a.roll(k, now)
	tier := m.tier(a.tier)
	if rate == 0 {
		rate = tier.RequestsPerMinute
	}
	st := gateway.AccountStatus{
		Account:         a.id,
		Tier:            string(a.tier),
		Balance:         a.posted,
		Held:            a.held + a.pending,
		Available:       a.available(),
		RemainingTokens: a.remaining(tier),
		TokensReset:     hourStart(now).Add(time.Hour),
		RateLimit:       rate,
	}
	st.LowBalance = st.Balance-a.pending < int64(1*store.MicroUSD)
	for _, b := range a.budgets(k, key, life, now, nil) {
		st.Budgets = append(st.Budgets, gateway.BudgetStatus{Scope: string(b.scope), Period: b.period,
			Limit: b.limit, Spent: b.s.spent + b.s.held, Resets: b.resets})
	}
	return st, nil
}

// Usage pages the account's usage records, newest first. It first waits
// (within ctx) for the settlements closed so far to commit, so a caller
// sees the request it just made although Close did not wait for it.
func (m *Meter) Usage(ctx context.Context, q store.UsageQuery) (store.UsagePage, error) {
	m.syncRead(ctx)
	return m.st.Usage(ctx, q)
}

// syncRead is Sync for a read, bounded by CommitWait: a ledger that
// cannot commit delays a read that long, then it answers with what is
// committed.
func (m *Meter) syncRead(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.CommitWait)
	defer cancel()
	m.Sync(ctx)
}

// Sync waits until every settlement closed before the call is committed
// to the ledger (one whose commit keeps failing is retried alone and not
// waited for), or ctx ends. With the journal, Tab.Close returns before
// its commit: a read of the store that must see it (a caller's usage, a
// test's ledger check) syncs first.
func (m *Meter) Sync(ctx context.Context) error { return m.w.sync(ctx) }
