package billing

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Open admits a request of the verified key p, after its scopes passed
// (host/auth/admit calls it). A read (a.Spends false) gets the caller's
// headers and no tab. A request that may spend, in order:
//
//  1. the key's rate limit: at most N requests per fixed UTC minute
//     (429, Retry-After to the minute's end);
//  2. the account's hourly token allowance: refused once used up (429,
//     Retry-After to the next hour);
//  3. the estimate: Quotes()[0] priced for InputTokens input (at the
//     dearer of the input and cache-write prices) and MaxTokens output,
//     with the tier's spread, rounded up; 0 for a direct or unpriced
//     request, which then skips 4 and 5;
//  4. budgets (the account's and the key's per day and month, the key's
//     lifetime spend limit): when the estimate does not fit, the first
//     cheaper quote that fits replaces the model (Caller.Model, Degraded
//     "budget-downgrade:<from>-><to>"); when none does, 429 with
//     Retry-After to the budget's reset (402 for the lifetime limit, which
//     never resets);
//  5. the balance: the estimate must fit what the account has available
//     (402 otherwise), and is then held until the tab closes.
//
// Once the caller is identified, a refusal comes back with the Caller and
// its Tab, so the refusal is settled like any outcome (a usage record with
// its status, no charge). Only a meter that cannot read its store or
// commit its settlements refuses (503) without a tab.
func (m *Meter) Open(ctx context.Context, p *auth.Principal, ad *gateway.Admission) (gateway.Caller, *wire.Error) {
	key := &p.Key
	c := gateway.Caller{Tenant: key.AccountID, Key: key.ID}
	a, err := m.account(ctx, key.AccountID)
	if err != nil {
		return c, m.unavailable(key.AccountID, err)
	}
	if !ad.Spends {
		a.mu.Lock()
		c.Headers = m.headers(a, c.Headers)
		a.mu.Unlock()
		return c, nil
	}
	if n := m.w.backlog(); n >= int64(m.cfg.MaxBacklog) {
		m.log.Error("billing: refusing paid requests: settlements are not being committed", "backlog", n)
		return c, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 1000,
			Message: "the gateway cannot record charges right now; try again shortly"}
	}
	k, err := m.key(ctx, a, key.ID)
	if err != nil {
		return c, m.unavailable(key.AccountID, err)
	}
	var quotes []gateway.Quote
	if !ad.Direct && ad.Quotes != nil {
		quotes = ad.Quotes() // outside the lock: the routing catalogs are read
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	now := m.now()
	m.refresh(ctx, a, now)
	a.roll(k, now)
	tier := m.tier(a.tier)
	if p.Spread > 0 && p.Spread < tier.Spread {
		// An ERC-8004 delegation's reputation tier (host/identity): it
		// lowers the account tier's spread, never raises it.
		tier.Spread = p.Spread
	}
	t := &tab{m: m, a: a, k: k, keyID: key.ID, spread: tier.Spread, direct: ad.Direct, inputTokens: ad.InputTokens,
		asked: ad.Model, opened: now}
	c.Tab = t
	refuse := func(e *wire.Error) (gateway.Caller, *wire.Error) {
		c.Headers = m.headers(a, c.Headers)
		return c, e
	}

	if a.disabled {
		return refuse(&wire.Error{Status: 403, Kind: wire.ErrPermission, Message: "this account is disabled"})
	}
	if rpm := m.rateLimit(key, tier); rpm > 0 {
		if w := minuteOf(now); k.window != w {
			k.window, k.count = w, 0
		}
		if k.count >= rpm {
			return refuse(&wire.Error{Status: 429, Kind: wire.ErrRateLimit, Retryable: true,
				RetryAfterMs: untilMs(now, time.Unix((k.window+1)*60, 0)),
				Message:      "rate limit reached: this key may send " + strconv.Itoa(rpm) + " requests a minute"})
		}
		k.count++
	}
	if rem := a.remaining(tier); rem == 0 {
		next := hourStart(now).Add(time.Hour)
		return refuse(&wire.Error{Status: 429, Kind: wire.ErrRateLimit, Retryable: true, RetryAfterMs: untilMs(now, next),
			Message: "the hourly token allowance of " + strconv.FormatInt(tier.TokensPerHour, 10) +
				" tokens is used up; it resets at " + next.Format("15:04") + " UTC"})
	}

	// The estimate of the asked model, then of its cheaper equivalents.
	if len(quotes) == 0 || !quotes[0].Prices.Known() {
		c.Headers = m.headers(a, c.Headers)
		return c, nil // direct or unpriced: nothing to hold
	}
	bs := a.budgets(k, key.ID, key.SpendLimit, now, make([]budget, 0, 5))
	pick, est := 0, estimate(quotes[0].Prices, ad.InputTokens, ad.MaxTokens, tier.Spread)
	first := over(bs, est)
	if first != nil {
		pick = -1
		for i := 1; i < len(quotes); i++ {
			if !quotes[i].Prices.Known() {
				continue
			}
			e := estimate(quotes[i].Prices, ad.InputTokens, ad.MaxTokens, tier.Spread)
			if e < est && over(bs, e) == nil {
				pick, est = i, e
				break
			}
		}
		if pick < 0 {
			return refuse(budgetRefusal(first, est, now))
		}
	}
	if avail := a.available(); est > avail {
		return refuse(&wire.Error{Status: 402, Kind: wire.ErrPermission,
			Message: "insufficient balance: this request may cost up to " + usd(est) + " and the account has " +
				usd(max(avail, 0)) + " available; top up to continue"})
	}
	t.reserved = est
	a.held += est
	for _, s := range t.spends() {
		s.held += est
	}
	if pick > 0 {
		c.Model = quotes[pick].Model
		c.Degraded = []string{"budget-downgrade:" + quotes[0].Model + "->" + quotes[pick].Model}
		t.asked = quotes[pick].Model
	}
	c.Headers = m.headers(a, c.Headers)
	return c, nil
}

// budgetRefusal is the error of a request no quote fits a budget for.
// A period budget answers 429: it clears by itself at its reset, which
// Retry-After gives. The key's lifetime spend limit answers 402, as the
// balance does: only the operator can lift it.
func budgetRefusal(b *budget, est int64, now time.Time) *wire.Error {
	msg := "this request may cost up to " + usd(est) + ", more than is left of " + b.String()
	if b.resets.IsZero() {
		return &wire.Error{Status: 402, Kind: wire.ErrPermission, Message: msg}
	}
	return &wire.Error{Status: 429, Kind: wire.ErrRateLimit, Retryable: true, RetryAfterMs: untilMs(now, b.resets),
		Message: msg + "; it resets at " + b.resets.Format(time.RFC3339)}
}

// rateLimit is the key's requests per minute: its own, else its tier's.
func (m *Meter) rateLimit(k *store.Key, t Tier) int {
	if k.RateLimit > 0 {
		return k.RateLimit
	}
	return t.RequestsPerMinute
}

// estimate is the most a request can be charged: in input tokens at the
// dearer of the input and cache-write prices (a prompt written to the
// provider's cache costs 1.25× input on Anthropic) and out output tokens,
// with the spread, rounded up once (pricing.Bill).
func estimate(p pricing.Prices, in, out int64, spread pricing.Spread) int64 {
	if p.CacheWrite.Nanos() > p.Input.Nanos() {
		p.Input = p.CacheWrite
	}
	b := pricing.NewBill(pricing.Terms{Spread: spread})
	b.Add(pricing.Served(p, wire.Usage{InputTokens: in, OutputTokens: out}, pricing.Optimizations{}))
	return int64(b.Settle().Charge)
}

// headers are what every answer to the account carries: the balance (with
// the low-balance warning) and the tokens left this hour. Called with
// a.mu held.
func (m *Meter) headers(a *account, dst []wire.KV) []wire.KV {
	bal := a.balance()
	dst = append(dst, wire.KV{Key: pricing.HeaderBalance, Value: pricing.Micros(bal).String()})
	if pricing.BalanceWarning(pricing.Micros(bal)) {
		dst = append(dst, wire.KV{Key: pricing.HeaderBalanceWarning, Value: BalanceWarningValue})
	}
	if rem := a.remaining(m.tier(a.tier)); rem >= 0 {
		dst = append(dst, wire.KV{Key: pricing.HeaderRemainingToken, Value: strconv.FormatInt(rem, 10)})
	}
	return dst
}

// BalanceWarningValue is the value of X-Bardo-Balance-Warning, sent when
// the balance is below $1.00 (spec 003).
const BalanceWarningValue = "balance below 1.00 USD"

func (m *Meter) unavailable(account string, err error) *wire.Error {
	if errors.Is(err, store.ErrNotFound) {
		// The key verified but its account is gone: the key is useless.
		return &wire.Error{Status: 403, Kind: wire.ErrPermission, Message: "this key's account does not exist"}
	}
	if !errors.Is(err, context.Canceled) {
		m.log.Error("billing: cannot read the account", "account", account, "err", err)
	}
	return &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 1000,
		Message: "the billing store is unavailable; try again"}
}

// untilMs is the milliseconds from now to t, rounded up, at least 1.
func untilMs(now, t time.Time) int64 {
	d := t.Sub(now)
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}

func usd(m int64) string { return "$" + pricing.Micros(m).String() }

// logAttrs are the log attributes naming a tab.
func (t *tab) logAttrs(requestID string) []any {
	return []any{slog.String("request_id", requestID), slog.String("account", t.a.id), slog.String("key", t.keyID)}
}
