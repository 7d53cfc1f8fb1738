package paywall

import (
	"context"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/wire"
)

// DefaultBudgetRefresh is how long a wallet's stored budgets are used
// before they are read again (Config.BudgetRefresh).
const DefaultBudgetRefresh = 2 * time.Second

// purse is a wallet's spending-budget state: its limits, what it spent
// this UTC day and month (charges settled or owed, as its usage records
// have them) and what its payments in flight may still cost. Spend is
// summed from the usage records when the wallet first has a budget (its
// first request, or the refresh that finds one) — so a restart keeps it —
// and kept in memory after that, as host/billing's meter does for keys:
// a request's charge is added when its tab closes, right after its usage
// record is written.
type purse struct {
	mu     sync.Mutex
	loaded bool      // the limits were read
	summed bool      // spentDay and spentMonth were read from the usage records
	read   time.Time // when the limits were read
	// day and month are the limits in micro-USD (USDC atomic units), 0
	// none: the wallet's stored budget, else the configured default.
	day, month int64
	dayOf      int64 // the UTC day (Unix days) spentDay is for
	monthOf    int64 // the UTC month (year*12 + month) spentMonth is for
	spentDay   int64
	spentMonth int64
	held       int64 // the amounts (exact) and maximums (upto) of open tabs
}

func utcDay(t time.Time) int64 { return t.Unix() / 86400 }

func utcMonth(t time.Time) int64 {
	t = t.UTC()
	return int64(t.Year())*12 + int64(t.Month()) - 1
}

func dayStart(t time.Time) time.Time { return time.Unix(utcDay(t)*86400, 0).UTC() }

func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// roll starts a new period's spend at 0 once now is past the one the
// figures are for; called with u.mu held.
func (u *purse) roll(now time.Time) {
	if d := utcDay(now); d != u.dayOf {
		u.dayOf, u.spentDay = d, 0
	}
	if m := utcMonth(now); m != u.monthOf {
		u.monthOf, u.spentMonth = m, 0
	}
}

// budgeted reports whether wallets have budgets at all: a default, or a
// store where an operator may set one.
func (p *Paywall) budgeted() bool {
	return p.cfg.DayBudget > 0 || p.cfg.MonthBudget > 0 || p.cfg.Budgets != nil
}

func (p *Paywall) purse(tenant string) *purse {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.purses[tenant]
	if u == nil {
		u = &purse{}
		p.purses[tenant] = u
	}
	return u
}

// limits reads tenant's budgets: a stored one (scope account, subject the
// tenant) overrides the default of its period.
func (p *Paywall) limits(ctx context.Context, tenant string) (day, month int64, err error) {
	day, month = p.cfg.DayBudget, p.cfg.MonthBudget
	if p.cfg.Budgets == nil {
		return day, month, nil
	}
	bs, err := p.cfg.Budgets.ListBudgets(ctx, tenant)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range bs {
		if b.Scope != store.ScopeAccount || b.Subject != tenant {
			continue
		}
		switch b.Period {
		case store.PeriodDay:
			day = b.Limit
		case store.PeriodMonth:
			month = b.Limit
		}
	}
	return day, month, nil
}

// load reads a wallet's limits, and its spend this day and month from its
// usage records once it has a limit: a wallet without budgets costs one
// read on its first request, not three. Called with u.mu held.
//
// A budget that first appears (refresh) while the wallet has tabs
// closing may count one of them twice — summed from its record, then
// added at its release — erring towards refusing; never the other way.
func (p *Paywall) load(ctx context.Context, u *purse, tenant string, now time.Time) error {
	day, month, err := p.limits(ctx, tenant)
	if err != nil {
		return err
	}
	if (day > 0 || month > 0) && !u.summed {
		var sd, sm int64
		if p.cfg.Usage != nil {
			d, err := p.cfg.Usage.SumUsage(ctx, store.UsageSumQuery{AccountID: tenant, From: dayStart(now)})
			if err != nil {
				return err
			}
			m, err := p.cfg.Usage.SumUsage(ctx, store.UsageSumQuery{AccountID: tenant, From: monthStart(now)})
			if err != nil {
				return err
			}
			sd, sm = d.Charge, m.Charge
		}
		u.dayOf, u.monthOf, u.spentDay, u.spentMonth, u.summed = utcDay(now), utcMonth(now), sd, sm, true
	}
	u.day, u.month, u.read, u.loaded = day, month, now, true
	return nil
}

// hold admits a payment of amount (exact: the amount; upto: the maximum)
// against tenant's budgets and holds it until its tab closes, or refuses
// it: 429 with Retry-After to the reset of the budget that clears last.
// A store that cannot be read on the wallet's first request is 503. The
// check and the hold are one step under the wallet's lock, so payments
// arriving at once cannot together overshoot a budget.
func (p *Paywall) hold(ctx context.Context, tenant string, amount int64) (*purse, *wire.Error) {
	if !p.budgeted() {
		return nil, nil
	}
	u := p.purse(tenant)
	now := p.cfg.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.loaded || now.Sub(u.read) >= p.cfg.BudgetRefresh {
		// First sight, or the operator may have changed the wallet's
		// budgets (CLI, admin API). A refresh that fails keeps the
		// budgets read before.
		if err := p.load(ctx, u, tenant, now); err != nil {
			if !u.loaded {
				p.cfg.Log.Error("x402: reading a wallet's budgets and spend", "tenant", tenant, "err", err)
				return nil, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 1000,
					Message: "the gateway cannot read this wallet's budgets right now; nothing was charged; try again with a new authorization"}
			}
			p.cfg.Log.Warn("x402: budget refresh failed; using the cached budgets", "tenant", tenant, "err", err)
			u.read = now
		}
	}
	u.roll(now)
	var what string
	var limit, used int64
	var resets time.Time
	if u.month > 0 && u.spentMonth+u.held+amount > u.month {
		what, limit, used, resets = "monthly", u.month, u.spentMonth+u.held, monthStart(now).AddDate(0, 1, 0)
	} else if u.day > 0 && u.spentDay+u.held+amount > u.day {
		what, limit, used, resets = "daily", u.day, u.spentDay+u.held, dayStart(now).AddDate(0, 0, 1)
	}
	if what != "" {
		// The month's clears last when both are over, so it is named.
		msg := "spending budget reached: this payment of " + dollars(amount) + " does not fit in what is left of this wallet's " + what +
			" budget (" + dollars(used) + " of " + dollars(limit) + " used, payments in flight included); it resets at " +
			resets.Format(time.RFC3339) + ". Nothing was charged, but the authorization's nonce is consumed: sign a new one after the reset"
		if amount > limit {
			msg += " — and ask for fewer output tokens (max_tokens): this request's price alone is over the whole budget"
		}
		return nil, &wire.Error{Status: 429, Kind: wire.ErrRateLimit, Retryable: true, RetryAfterMs: untilMs(now, resets), Message: msg}
	}
	u.held += amount
	return u, nil
}

// release ends a tab's hold of amount and counts its charge in the
// wallet's spend; nil u (no budgets) does nothing.
func (p *Paywall) release(u *purse, amount, charge int64) {
	if u == nil {
		return
	}
	u.mu.Lock()
	u.roll(p.cfg.Now())
	u.held -= amount
	u.spentDay += charge
	u.spentMonth += charge
	u.mu.Unlock()
}

func untilMs(now, t time.Time) int64 {
	d := t.Sub(now)
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}

func dollars(m int64) string { return "$" + pricing.Micros(m).String() }
