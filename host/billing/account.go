package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// account is one account's live state. Every field after mu is guarded by
// it. Money is micro-USD.
type account struct {
	id    string
	ready chan struct{} // closed once loaded (or failed: err)
	err   error

	mu       sync.Mutex
	tier     store.Tier
	disabled bool
	// posted is the balance the store last reported (a refresh, or the
	// commit of a posting, whose transaction returns it).
	posted int64
	// held is the sum of the open tabs' reservations.
	held int64
	// pending is the sum of charges closed but not yet committed; inflight
	// counts those postings (of a charge above 0). The balance is re-read
	// from the store only when inflight is 0, so a charge is never counted
	// twice (once in pending, once in a posted balance that already
	// includes it); otherwise the next commit brings it (Post reads the
	// row's balance inside its transaction).
	pending  int64
	inflight int
	loaded   time.Time // when posted, tier, disabled and limits were read

	// limits are the stored budgets of the account and its keys.
	limits map[limitKey]int64
	// day and month are the account's spend this UTC day and month.
	day, month spend
	// hour is the current hour's number and tokens its usage.
	hour, tokens int64

	keys map[string]*keyState
}

// limitKey names one stored budget.
type limitKey struct {
	scope   store.BudgetScope
	subject string
	period  store.BudgetPeriod
}

// spend is what a budget period has taken: charges (committed or pending)
// and the holds of open tabs. period is the period's number (UTC day or
// month); a new period starts with nothing spent, and the holds carry over
// (their charges land in the period they close in).
type spend struct {
	period int64
	spent  int64
	held   int64
}

// roll starts period p if it is not the current one.
func (s *spend) roll(p int64) {
	if s.period != p {
		s.period, s.spent = p, 0
	}
}

// keyState is one key's live state, under its account's mutex.
type keyState struct {
	// window is the current minute's number, count the requests it let in.
	window int64
	count  int
	// day and month are the key's spend; life its spend over its life
	// (for Key.SpendLimit).
	day, month, life spend
}

// Periods, UTC.
func dayOf(t time.Time) int64  { return floorDiv(t.Unix(), 86400) }
func hourOf(t time.Time) int64 { return floorDiv(t.Unix(), 3600) }
func minuteOf(t time.Time) int64 {
	return floorDiv(t.Unix(), 60)
}
func monthOf(t time.Time) int64 {
	t = t.UTC()
	return int64(t.Year())*12 + int64(t.Month()) - 1
}

func dayStart(t time.Time) time.Time {
	return time.Unix(dayOf(t)*86400, 0).UTC()
}
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
func hourStart(t time.Time) time.Time { return time.Unix(hourOf(t)*3600, 0).UTC() }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// account returns the live state of account id, loading it on first use:
// its row, its budgets, and its spend today, this month and its tokens
// this hour from the usage records (so a restart keeps budgets and the
// allowance). Concurrent first uses share one load.
func (m *Meter) account(ctx context.Context, id string) (*account, error) {
	m.mu.Lock()
	a := m.accounts[id]
	if a == nil {
		a = &account{id: id, ready: make(chan struct{})}
		m.accounts[id] = a
		m.mu.Unlock()
		// Not the caller's cancellation: others may be waiting on this load.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		a.err = m.load(lctx, a)
		cancel()
		close(a.ready)
		if a.err != nil {
			m.mu.Lock()
			delete(m.accounts, id) // the next request tries again
			m.mu.Unlock()
		}
		return a, a.err
	}
	m.mu.Unlock()
	select {
	case <-a.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return a, a.err
}

func (m *Meter) load(ctx context.Context, a *account) error {
	now := m.now()
	row, err := m.st.Account(ctx, a.id)
	if err != nil {
		return err
	}
	limits, err := m.loadLimits(ctx, a.id)
	if err != nil {
		return err
	}
	day, err := m.st.SumUsage(ctx, store.UsageSumQuery{AccountID: a.id, From: dayStart(now)})
	if err != nil {
		return err
	}
	month, err := m.st.SumUsage(ctx, store.UsageSumQuery{AccountID: a.id, From: monthStart(now)})
	if err != nil {
		return err
	}
	hour, err := m.st.SumUsage(ctx, store.UsageSumQuery{AccountID: a.id, From: hourStart(now)})
	if err != nil {
		return err
	}
	a.tier, a.disabled, a.posted, a.loaded = row.Tier, row.Disabled, row.Balance, now
	a.limits = limits
	a.day = spend{period: dayOf(now), spent: day.Charge}
	a.month = spend{period: monthOf(now), spent: month.Charge}
	a.hour, a.tokens = hourOf(now), hour.Tokens
	a.keys = map[string]*keyState{}
	return nil
}

func (m *Meter) loadLimits(ctx context.Context, id string) (map[limitKey]int64, error) {
	bs, err := m.st.ListBudgets(ctx, id)
	if err != nil {
		return nil, err
	}
	limits := make(map[limitKey]int64, len(bs))
	for _, b := range bs {
		limits[limitKey{b.Scope, b.Subject, b.Period}] = b.Limit
	}
	return limits, nil
}

// key returns the live state of one of a's keys, loading its spend today,
// this month and over its life from the usage records on first use. It is
// called without a.mu held; a key's first requests may load it twice, and
// the first to finish wins (no tab of the key exists before it is stored,
// so nothing it counts can be missed or doubled).
func (m *Meter) key(ctx context.Context, a *account, id string) (*keyState, error) {
	a.mu.Lock()
	k := a.keys[id]
	a.mu.Unlock()
	if k != nil {
		return k, nil
	}
	now := m.now()
	sum := func(from time.Time) (int64, error) {
		s, err := m.st.SumUsage(ctx, store.UsageSumQuery{AccountID: a.id, KeyID: id, From: from})
		return s.Charge, err
	}
	day, err := sum(dayStart(now))
	if err != nil {
		return nil, err
	}
	month, err := sum(monthStart(now))
	if err != nil {
		return nil, err
	}
	life, err := sum(time.Time{})
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if k := a.keys[id]; k != nil {
		return k, nil
	}
	k = &keyState{day: spend{period: dayOf(now), spent: day}, month: spend{period: monthOf(now), spent: month},
		life: spend{spent: life}}
	a.keys[id] = k
	return k, nil
}

// refresh re-reads a's row and budgets when they are older than the
// refresh interval. The balance is taken only when no posting is in
// flight (see account.pending). Called with a.mu held: the two reads
// (~50 µs) stall this account's other requests once per interval.
func (m *Meter) refresh(ctx context.Context, a *account, now time.Time) {
	if now.Sub(a.loaded) < m.cfg.Refresh {
		return
	}
	row, err := m.st.Account(ctx, a.id)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			m.log.Warn("billing: account refresh failed; using the cached state", "account", a.id, "err", err)
		}
		return
	}
	limits, err := m.loadLimits(ctx, a.id)
	if err != nil {
		m.log.Warn("billing: budget refresh failed; using the cached budgets", "account", a.id, "err", err)
		return
	}
	a.tier, a.disabled, a.limits, a.loaded = row.Tier, row.Disabled, limits, now
	if a.inflight == 0 {
		a.posted = row.Balance
	}
}

// roll brings a's and k's periods to now.
func (a *account) roll(k *keyState, now time.Time) {
	d, mo := dayOf(now), monthOf(now)
	a.day.roll(d)
	a.month.roll(mo)
	if h := hourOf(now); a.hour != h {
		a.hour, a.tokens = h, 0
	}
	if k != nil {
		k.day.roll(d)
		k.month.roll(mo)
	}
}

// available is what a new reservation may take.
func (a *account) available() int64 { return a.posted - a.pending - a.held }

// balance is the balance once every closed request is committed.
func (a *account) balance() int64 { return a.posted - a.pending }

// remaining is what is left of the hourly allowance (−1: none).
func (a *account) remaining(t Tier) int64 {
	if t.TokensPerHour <= 0 {
		return -1
	}
	return max(t.TokensPerHour-a.tokens, 0)
}

// budget is one cap a request's estimate must fit under.
type budget struct {
	what   string // for messages: "the key's daily budget"
	scope  store.BudgetScope
	period string // "day", "month" or "life"
	limit  int64
	s      *spend
	resets time.Time // zero: never (a key's lifetime spend limit)
}

// budgets lists the caps on a request of key k (id keyID, lifetime limit
// life; k nil for the account alone) with their state; called with a.mu
// held, after roll.
func (a *account) budgets(k *keyState, keyID string, life int64, now time.Time, dst []budget) []budget {
	nextDay := dayStart(now).AddDate(0, 0, 1)
	nextMonth := monthStart(now).AddDate(0, 1, 0)
	add := func(what string, lk limitKey, s *spend, resets time.Time) {
		if l := a.limits[lk]; l > 0 {
			dst = append(dst, budget{what, lk.scope, string(lk.period), l, s, resets})
		}
	}
	add("the account's daily budget", limitKey{store.ScopeAccount, a.id, store.PeriodDay}, &a.day, nextDay)
	add("the account's monthly budget", limitKey{store.ScopeAccount, a.id, store.PeriodMonth}, &a.month, nextMonth)
	if k == nil {
		return dst
	}
	add("the key's daily budget", limitKey{store.ScopeKey, keyID, store.PeriodDay}, &k.day, nextDay)
	add("the key's monthly budget", limitKey{store.ScopeKey, keyID, store.PeriodMonth}, &k.month, nextMonth)
	if life > 0 {
		dst = append(dst, budget{"the key's spend limit", store.ScopeKey, "life", life, &k.life, time.Time{}})
	}
	return dst
}

// loadTimeout bounds an account's first load from the store.
const loadTimeout = 10 * time.Second

// over returns a budget est does not fit under, or nil: the one that
// clears last (the lifetime limit, which never does, first), so the
// refusal's Retry-After is when the request can pass.
func over(bs []budget, est int64) *budget {
	var worst *budget
	for i := range bs {
		b := &bs[i]
		if b.s.spent+b.s.held+est <= b.limit {
			continue
		}
		switch {
		case b.resets.IsZero():
			return b
		case worst == nil || b.resets.After(worst.resets):
			worst = b
		}
	}
	return worst
}

func (b *budget) String() string {
	return fmt.Sprintf("%s (%s of %s used)", b.what, usd(b.s.spent+b.s.held), usd(b.limit))
}

// Invalidate makes the next request of account re-read its balance, tier
// and budgets from the store, instead of within the refresh interval: the
// admin API calls it after a top-up, an adjustment or a budget change
// (server.Admin.OnAccountChange).
func (m *Meter) Invalidate(account string) {
	m.mu.Lock()
	a := m.accounts[account]
	m.mu.Unlock()
	if a == nil {
		return
	}
	select {
	case <-a.ready:
	default:
		return // still loading: it reads the new state anyway
	}
	if a.err != nil {
		return
	}
	a.mu.Lock()
	a.loaded = time.Time{}
	a.mu.Unlock()
}
