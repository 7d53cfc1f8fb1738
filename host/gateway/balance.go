package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/wire"
)

// DailyUsageReader is implemented by an AccountReader that can also sum an
// account's usage per UTC day (host/store's UsageLog does, from rollups):
// it serves GET /v1/usage/daily and the balance's spend today and this
// month. Without it those figures are left out.
type DailyUsageReader interface {
	DailyUsage(ctx context.Context, account string, from, to time.Time) ([]store.DailyUsage, error)
}

// Messages of the account endpoints' refusals.
const (
	msgNoAccounts   = "this gateway keeps no accounts: it runs without billing (open mode)"
	msgNoDaily      = "daily usage is not available on this gateway"
	msgStoreTrouble = "the account store is unavailable; try again"
)

// balance answers GET /v1/balance: the caller's own account (the tenant
// admission found), its balance, what its open requests hold, its limits
// and budgets. Read-only keys may ask; nothing is spent.
func (g *Gateway) balance(ctx *fasthttp.RequestCtx) {
	d, caller, ok := g.admitRead(ctx)
	if !ok {
		return
	}
	st, err := g.Accounts.AccountStatus(ctx, caller.Tenant, caller.Key)
	if err != nil {
		g.accountFail(ctx, d, err)
		return
	}
	out := BalanceJSON{
		Account: st.Account, Tier: st.Tier,
		Balance: usdOf(st.Balance), BalanceMicros: st.Balance,
		Held: usdOf(st.Held), HeldMicros: st.Held,
		Available: usdOf(st.Available), AvailableMicros: st.Available,
		LowBalance: st.LowBalance,
		Budgets:    []BudgetJSON{},
	}
	if st.RemainingTokens >= 0 {
		out.RemainingTokens = &st.RemainingTokens
		if !st.TokensReset.IsZero() {
			r := st.TokensReset.UTC()
			out.TokensReset = &r
		}
	}
	if st.RateLimit > 0 {
		out.RateLimit = &st.RateLimit
	}
	for _, b := range st.Budgets {
		out.Budgets = append(out.Budgets, BudgetJSON{Scope: b.Scope, Period: b.Period,
			Limit: usdOf(b.Limit), LimitMicros: b.Limit, Spent: usdOf(b.Spent), SpentMicros: b.Spent,
			Remaining: usdOf(max(b.Limit-b.Spent, 0)), RemainingMicros: max(b.Limit-b.Spent, 0), Resets: b.Resets.UTC()})
	}
	if dr, ok := g.Accounts.(DailyUsageReader); ok {
		// The month's charges from its daily rollups: at most 31 rows.
		now := time.Now().UTC()
		month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		days, err := dr.DailyUsage(ctx, caller.Tenant, month, today.AddDate(0, 0, 1))
		if err != nil {
			g.accountFail(ctx, d, err)
			return
		}
		var t, m int64
		for _, day := range days {
			m += day.Charge
			if day.Day.Equal(today) {
				t = day.Charge
			}
		}
		ts, ms := usdOf(t), usdOf(m)
		out.SpentToday, out.SpentTodayMicros, out.SpentMonth, out.SpentMonthMicros = &ts, &t, &ms, &m
	}
	writeJSON(ctx, out)
}

// usage answers GET /v1/usage?from=&to=&model=&key=&limit=&cursor=: the
// caller's account's usage records, newest first, a page at a time
// (keyset: next_cursor, null on the last page).
func (g *Gateway) usage(ctx *fasthttp.RequestCtx) {
	d, caller, ok := g.admitRead(ctx)
	if !ok {
		return
	}
	q, err := ParseUsageQuery(ctx.QueryArgs())
	if err != nil {
		WriteError(ctx, d, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()})
		return
	}
	q.AccountID = caller.Tenant // a caller only ever reads its own account
	page, err := g.Accounts.Usage(ctx, q)
	if err != nil {
		g.accountFail(ctx, d, err)
		return
	}
	writeJSON(ctx, NewUsagePage(page))
}

// usageDaily answers GET /v1/usage/daily?from=&to=: the caller's account's
// totals per UTC day (default: the last 30 days).
func (g *Gateway) usageDaily(ctx *fasthttp.RequestCtx) {
	d, caller, ok := g.admitRead(ctx)
	if !ok {
		return
	}
	dr, ok := g.Accounts.(DailyUsageReader)
	if !ok {
		WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: msgNoDaily})
		return
	}
	from, to, err := ParseDailyRange(ctx.QueryArgs(), time.Now())
	if err != nil {
		WriteError(ctx, d, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()})
		return
	}
	days, err := dr.DailyUsage(ctx, caller.Tenant, from, to)
	if err != nil {
		g.accountFail(ctx, d, err)
		return
	}
	writeJSON(ctx, NewDailyList(days))
}

// admitRead admits a GET of the caller's account endpoints (no spending,
// so read-only keys pass) and answers anything else in the caller's
// dialect; ok false: the request was answered.
func (g *Gateway) admitRead(ctx *fasthttp.RequestCtx) (d wire.Dialect, c Caller, ok bool) {
	d, c, ok = g.admitGet(ctx)
	if ok && (g.Accounts == nil || c.Tenant == "" || c.Tenant == AnonymousTenant) {
		WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: msgNoAccounts})
		return d, c, false
	}
	return d, c, ok
}

// admitGet admits a GET that reads (Spends false): the caller's dialect
// (from anthropic-version), 405 for another method, the admission's
// refusal in that dialect. Open mode admits everyone as the anonymous
// tenant.
func (g *Gateway) admitGet(ctx *fasthttp.RequestCtx) (d wire.Dialect, c Caller, ok bool) {
	d = wire.DialectOpenAI
	if len(ctx.Request.Header.Peek("anthropic-version")) > 0 {
		d = wire.DialectAnthropic
	}
	if !ctx.IsGet() {
		ctx.Response.Header.Set("Allow", "GET")
		WriteError(ctx, d, &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest, Message: "use GET on " + string(ctx.Path())})
		return d, c, false
	}
	var ip netip.Addr
	if a, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		ip = a.Unmap()
	}
	c, werr := g.admit(ctx, &Admission{Dialect: d, Path: string(ctx.Path()), Header: &ctx.Request.Header, RemoteIP: ip})
	for _, h := range c.Headers {
		ctx.Response.Header.Set(h.Key, h.Value)
	}
	if c.Tab != nil {
		// Reads carry no tab; should an admitter open one anyway, it is
		// closed here so that no tab is ever left open.
		s := &Settlement{Tenant: c.Tenant, Key: c.Key, Dialect: d, Path: PathLocal, Status: 200}
		if werr != nil {
			s.Path, s.Status, s.Err = PathError, int(werr.Status), werr
		}
		c.Tab.Close(s)
	}
	if werr != nil {
		WriteError(ctx, d, werr)
		return d, c, false
	}
	return d, c, true
}

// accountFail answers a failed account read: 404 for an account the store
// does not know (a key outliving its account), 503 otherwise — the
// caller's request was fine, the gateway could not serve it.
func (g *Gateway) accountFail(ctx *fasthttp.RequestCtx, d wire.Dialect, err error) {
	if errors.Is(err, store.ErrNotFound) {
		WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: "no such account"})
		return
	}
	if g.Log != nil {
		g.Log.Error("account read", "path", string(ctx.Path()), "err", err)
	}
	WriteError(ctx, d, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Message: msgStoreTrouble, Retryable: true, RetryAfterMs: 1000})
}

func writeJSON(ctx *fasthttp.RequestCtx, v any) {
	b, _ := json.Marshal(v)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// usdOf formats micro-USD as a decimal string with six fraction digits
// (pricing.AppendUSD): amounts in JSON are never floats.
func usdOf(m int64) string { return pricing.Micros(m).String() }

// BalanceJSON is the body of GET /v1/balance. Every amount is given twice:
// a decimal USD string with six fraction digits and an integer of
// micro-USD. A null remaining_tokens or rate_limit_per_minute is
// unlimited; spent_today and spent_month (charges per UTC day and month)
// are null when the gateway cannot sum usage per day.
type BalanceJSON struct {
	Account          string       `json:"account"`
	Tier             string       `json:"tier"`
	Balance          string       `json:"balance_usd"`
	BalanceMicros    int64        `json:"balance_micros"`
	Held             string       `json:"held_usd"`
	HeldMicros       int64        `json:"held_micros"`
	Available        string       `json:"available_usd"`
	AvailableMicros  int64        `json:"available_micros"`
	LowBalance       bool         `json:"low_balance"`
	SpentToday       *string      `json:"spent_today_usd"`
	SpentTodayMicros *int64       `json:"spent_today_micros"`
	SpentMonth       *string      `json:"spent_month_usd"`
	SpentMonthMicros *int64       `json:"spent_month_micros"`
	RemainingTokens  *int64       `json:"remaining_tokens"`
	TokensReset      *time.Time   `json:"tokens_reset"`
	RateLimit        *int         `json:"rate_limit_per_minute"`
	Budgets          []BudgetJSON `json:"budgets"`
}

// BudgetJSON is one budget of a balance: spent counts charges and what
// requests in flight hold this period.
type BudgetJSON struct {
	Scope           string    `json:"scope"`  // "key" or "account"
	Period          string    `json:"period"` // "day" or "month"
	Limit           string    `json:"limit_usd"`
	LimitMicros     int64     `json:"limit_micros"`
	Spent           string    `json:"spent_usd"`
	SpentMicros     int64     `json:"spent_micros"`
	Remaining       string    `json:"remaining_usd"`
	RemainingMicros int64     `json:"remaining_micros"`
	Resets          time.Time `json:"resets"`
}

// UsageRecord is one usage record as the caller's and the operator's
// usage endpoints show it.
type UsageRecord struct {
	RequestID        string    `json:"request_id"`
	Account          string    `json:"account"`
	Key              string    `json:"key"`
	Model            string    `json:"model"`
	Provider         string    `json:"provider"`
	InputTokens      int64     `json:"input_tokens"`
	OutputTokens     int64     `json:"output_tokens"`
	CacheReadTokens  int64     `json:"cache_read_tokens"`
	CacheWriteTokens int64     `json:"cache_write_tokens"`
	Cost             string    `json:"cost_usd"` // the provider's price of the request
	CostMicros       int64     `json:"cost_micros"`
	Charge           string    `json:"charge_usd"` // what the caller paid
	ChargeMicros     int64     `json:"charge_micros"`
	Savings          string    `json:"savings_usd"`
	SavingsMicros    int64     `json:"savings_micros"`
	Cache            string    `json:"cache,omitempty"`
	LatencyMicros    int64     `json:"latency_us"`
	Status           int       `json:"status"`
	At               time.Time `json:"at"`
}

// NewUsageRecord converts a stored record.
func NewUsageRecord(u store.Usage) UsageRecord {
	return UsageRecord{RequestID: u.RequestID, Account: u.AccountID, Key: u.KeyID, Model: u.Model, Provider: u.Provider,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, Cost: usdOf(u.Cost), CostMicros: u.Cost, Charge: usdOf(u.Charge),
		ChargeMicros: u.Charge, Savings: usdOf(u.Savings), SavingsMicros: u.Savings, Cache: u.Cache,
		LatencyMicros: u.LatencyMicros, Status: u.Status, At: u.At.UTC()}
}

// UsagePage is the body of a usage listing: next_cursor, when not null,
// is the cursor of the following page.
type UsagePage struct {
	Data       []UsageRecord `json:"data"`
	NextCursor *string       `json:"next_cursor"`
}

// NewUsagePage converts a stored page.
func NewUsagePage(p store.UsagePage) UsagePage {
	out := UsagePage{Data: make([]UsageRecord, 0, len(p.Records))}
	for _, u := range p.Records {
		out.Data = append(out.Data, NewUsageRecord(u))
	}
	if p.Next != "" {
		out.NextCursor = &p.Next
	}
	return out
}

// DailyRecord is one UTC day of an account's usage.
type DailyRecord struct {
	Day           string `json:"day"` // YYYY-MM-DD
	Requests      int64  `json:"requests"`
	InputTokens   int64  `json:"input_tokens"`
	OutputTokens  int64  `json:"output_tokens"`
	Cost          string `json:"cost_usd"`
	CostMicros    int64  `json:"cost_micros"`
	Charge        string `json:"charge_usd"`
	ChargeMicros  int64  `json:"charge_micros"`
	Savings       string `json:"savings_usd"`
	SavingsMicros int64  `json:"savings_micros"`
}

// DailyList is the body of a daily usage listing, oldest day first; days
// without usage are left out.
type DailyList struct {
	Data []DailyRecord `json:"data"`
}

// NewDailyList converts stored daily sums.
func NewDailyList(days []store.DailyUsage) DailyList {
	out := DailyList{Data: make([]DailyRecord, 0, len(days))}
	for _, d := range days {
		out.Data = append(out.Data, DailyRecord{Day: d.Day.UTC().Format(time.DateOnly), Requests: d.Requests,
			InputTokens: d.InputTokens, OutputTokens: d.OutputTokens, Cost: usdOf(d.Cost), CostMicros: d.Cost,
			Charge: usdOf(d.Charge), ChargeMicros: d.Charge, Savings: usdOf(d.Savings), SavingsMicros: d.Savings})
	}
	return out
}

// Bounds of a usage page (host/store pages at most 1,000 records).
const (
	DefaultUsageLimit = 100
	MaxUsageLimit     = 1000
)

// ParseUsageQuery reads a usage listing's query: from and to (RFC 3339 or
// YYYY-MM-DD, UTC; from inclusive, to exclusive), model, key, limit
// (1–1000, default 100) and cursor (a previous page's next_cursor). Its
// errors are messages for the caller. The account is the caller's to set.
func ParseUsageQuery(args *fasthttp.Args) (store.UsageQuery, error) {
	var q store.UsageQuery
	var err error
	if q.From, err = parseTimeArg(args, "from"); err != nil {
		return q, err
	}
	if q.To, err = parseTimeArg(args, "to"); err != nil {
		return q, err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return q, errors.New("from must be before to")
	}
	q.Model = string(args.Peek("model"))
	q.KeyID = string(args.Peek("key"))
	q.Limit = DefaultUsageLimit
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > MaxUsageLimit {
			return q, errors.New("limit must be an integer from 1 to 1000")
		}
		q.Limit = n
	}
	if v := args.Peek("cursor"); len(v) > 0 {
		if !validCursor(v) {
			return q, errors.New("cursor must be the next_cursor of a previous page")
		}
		q.Cursor = string(v)
	}
	return q, nil
}

// validCursor accepts the store's keyset cursor, "<at>.<id>" in decimal
// digits, so a forged one is the caller's 400 rather than the store's
// error.
func validCursor(v []byte) bool {
	dot := -1
	for i, c := range v {
		switch {
		case c == '.' && dot < 0:
			dot = i
		case c < '0' || c > '9':
			return false
		}
	}
	return len(v) <= 40 && dot > 0 && dot < len(v)-1
}

// ParseDailyRange reads a daily listing's from and to (as ParseUsageQuery
// does); without from, the 30 days up to to (or now).
func ParseDailyRange(args *fasthttp.Args, now time.Time) (from, to time.Time, err error) {
	if from, err = parseTimeArg(args, "from"); err != nil {
		return
	}
	if to, err = parseTimeArg(args, "to"); err != nil {
		return
	}
	if to.IsZero() {
		to = now.UTC()
	}
	if from.IsZero() {
		from = to.AddDate(0, 0, -30)
	}
	if !from.Before(to) {
		err = errors.New("from must be before to")
	} else if to.Sub(from) > 366*24*time.Hour {
		err = errors.New("a daily listing covers at most 366 days")
	}
	return
}

// parseTimeArg reads an RFC 3339 time or a YYYY-MM-DD date (UTC midnight).
func parseTimeArg(args *fasthttp.Args, name string) (time.Time, error) {
	v := string(args.Peek(name))
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New(name + " must be an RFC 3339 time (2026-11-26T00:00:00Z) or a date (2026-11-26)")
}
