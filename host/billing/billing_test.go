package billing

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/sdk/wire"
)

// clock is an injected, settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// prices returns Anthropic-convention prices of in/out USD per Mtok.
func prices(in, out string) pricing.Prices {
	pi, _ := catalog.ParsePrice(in)
	po, _ := catalog.ParsePrice(out)
	return pricing.PricesOf(&catalog.Model{Input: pi, Output: po}, pricing.Anthropic)
}

var (
	opus   = gateway.Quote{Model: "claude-opus-4", Prices: prices("15", "75")}
	sonnet = gateway.Quote{Model: "claude-sonnet-4", Prices: prices("3", "15")}
	haiku  = gateway.Quote{Model: "claude-haiku-4", Prices: prices("1", "5")}
)

type env struct {
	t     testing.TB
	dir   string
	s     *sqlite.Store
	m     *Meter
	clk   *clock
	tweak func(*Config)
	seq   atomic.Int64
}

// newEnv opens a real SQLite store in a temp dir with account "a" (tier
// free) holding balance µUSD and key "k1", and a meter on it.
func newEnv(t testing.TB, balance int64, tweak func(*Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: &clock{t: time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC)}, tweak: tweak}
	e.open()
	ctx := context.Background()
	if _, err := e.s.CreateAccount(ctx, store.Account{ID: "a", Tier: store.TierFree}); err != nil {
		t.Fatal(err)
	}
	if balance > 0 {
		if _, err := e.s.TopUp(ctx, "a", balance, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.s.CreateKey(ctx, store.Key{ID: "k1", AccountID: "a", Hash: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) open() {
	s, err := sqlite.Open(context.Background(), filepath.Join(e.dir, sqlite.FileName), sqlite.Options{Now: e.clk.now})
	if err != nil {
		e.t.Fatal(err)
	}
	// The journal is on, as the daemon's default; TestLedgerDown and
	// TestWaitForCommit cover the meter without it.
	cfg := Config{Store: s, Now: e.clk.now, Log: slog.New(slog.DiscardHandler), JournalDir: e.dir}
	if e.tweak != nil {
		e.tweak(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.s, e.m = s, m
	e.t.Cleanup(e.close)
}

func (e *env) close() {
	if e.m != nil {
		if err := e.m.Close(context.Background()); err != nil {
			e.t.Error(err)
		}
		e.s.Close()
		e.m = nil
	}
}

func (e *env) principal(keyID string) *auth.Principal {
	k, err := e.s.Key(context.Background(), keyID)
	if err != nil {
		e.t.Fatal(err)
	}
	return &auth.Principal{Key: k}
}

// admission asks for in input and out output tokens of the quotes' first
// model, offering the rest as cheaper equivalents.
func admission(in, out int64, quotes ...gateway.Quote) *gateway.Admission {
	return &gateway.Admission{Dialect: wire.DialectAnthropic, Path: "/v1/messages", Model: quotes[0].Model, Spends: true,
		InputTokens: in, MaxTokens: out, Quotes: func() []gateway.Quote { return quotes }}
}

// served is the settlement of an upstream answer of model q with usage u.
func (e *env) served(q gateway.Quote, u wire.Usage) *gateway.Settlement {
	return &gateway.Settlement{RequestID: fmt.Sprintf("req-%d", e.seq.Add(1)), Path: gateway.PathUpstream,
		Upstream: true, Provider: "anthropic", Model: q.Model, Asked: q.Model, Usage: &u, Status: 200,
		Prices: q.Prices, Priced: true}
}

// refused is the settlement of an admission refusal.
func (e *env) refused(werr *wire.Error) *gateway.Settlement {
	return &gateway.Settlement{RequestID: fmt.Sprintf("req-%d", e.seq.Add(1)), Path: gateway.PathError,
		Status: int(werr.Status), Err: werr}
}

func header(kvs []wire.KV, name string) string {
	for _, kv := range kvs {
		if kv.Key == name {
			return kv.Value
		}
	}
	return ""
}

// sync waits until the meter has committed every closed tab: with the
// journal, Close returns before its commit.
func (e *env) sync() {
	if e.m != nil {
		waitCommitted(e.t, e.m)
	}
}

func (e *env) records() []store.Usage {
	e.sync()
	var all []store.Usage
	q := store.UsageQuery{AccountID: "a", Limit: 1000}
	for {
		page, err := e.s.Usage(context.Background(), q)
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, page.Records...)
		if page.Next == "" {
			return all
		}
		q.Cursor = page.Next
	}
}

func (e *env) account() store.Account {
	e.sync()
	if err := e.s.Audit(context.Background(), "a"); err != nil {
		e.t.Fatal(err)
	}
	a, err := e.s.Account(context.Background(), "a")
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// TestEstimateAndCharge: the reservation is the request's most, at the
// cache-write price for input; the charge is the usage's, the bill's
// figures are the record's, and the balance header is the ledger's.
func TestEstimateAndCharge(t *testing.T) {
	e := newEnv(t, 1_000_000, nil)
	ctx := context.Background()
	c, werr := e.m.Open(ctx, e.principal("k1"), admission(1000, 500, sonnet))
	if werr != nil || c.Tab == nil || c.Tenant != "a" || c.Key != "k1" {
		t.Fatalf("%+v %+v", c, werr)
	}
	// 1000 × $3.75 + 500 × $15 per Mtok = 11,250 µUSD, × 1.25 = 14,062.5 → 14,063.
	if st, _ := e.m.AccountStatus(ctx, "a", "k1"); st.Held != 14_063 || st.Available != 1_000_000-14_063 {
		t.Fatalf("status %+v", st)
	}
	if header(c.Headers, pricing.HeaderBalance) != "1.000000" || header(c.Headers, pricing.HeaderRemainingToken) != "1000000" {
		t.Fatalf("admission headers %+v", c.Headers)
	}
	// 800 × 3 + 300 × 15 + 100 × 0.30 = 6,930 µUSD cost, × 1.25 = 8,662.5 → 8,663.
	s := e.served(sonnet, wire.Usage{InputTokens: 800, OutputTokens: 300, CacheReadTokens: 100})
	bill := c.Tab.Close(s)
	if got := header(bill.Headers, pricing.HeaderCost); got != "0.008663" {
		t.Fatalf("cost %q (%+v)", got, bill.Headers)
	}
	if got := header(bill.Headers, pricing.HeaderBalance); got != "0.991337" {
		t.Fatalf("balance %q", got)
	}
	sf, ok := pricing.ParseTrailer(string(bill.Trailer))
	if !ok || sf.Cost != "0.008663" || sf.Balance != "0.991337" || sf.RemainingTokens != "998800" {
		t.Fatalf("trailer %q", bill.Trailer)
	}
	if header(bill.Headers, pricing.HeaderBalanceWarning) == "" {
		t.Error("no low-balance warning below $1.00")
	}
	recs := e.records()
	if len(recs) != 1 || recs[0].Charge != 8663 || recs[0].Cost != 6930 || recs[0].RequestID != s.RequestID ||
		recs[0].KeyID != "k1" || recs[0].InputTokens != 800 || recs[0].Status != 200 {
		t.Fatalf("records %+v", recs)
	}
	if a := e.account(); a.Balance != 1_000_000-8663 {
		t.Fatalf("ledger balance %d", a.Balance)
	}
	if st, _ := e.m.AccountStatus(ctx, "a", "k1"); st.Held != 0 || st.Balance != 1_000_000-8663 {
		t.Fatalf("status after %+v", st)
	}
}

// TestLedgerInvariants64 is issue 12's invariant test at the meter: 64
// concurrent requests on a balance that covers three of them at once.
// The balance never goes below zero, the charges equal the balance's
// change, every request has exactly one record, and every served request
// is charged exactly its price (no lost update).
func TestLedgerInvariants64(t *testing.T) {
	const start = 50_000
	e := newEnv(t, start, nil)
	ctx := context.Background()
	p := e.principal("k1")
	var served, refused atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, werr := e.m.Open(ctx, p, admission(1000, 500, sonnet))
			if c.Tab == nil {
				t.Errorf("no tab: %+v", werr)
				return
			}
			if werr != nil {
				if werr.Status != 402 || !strings.Contains(werr.Message, "available") {
					t.Errorf("refusal %+v", werr)
				}
				refused.Add(1)
				c.Tab.Close(e.refused(werr))
				return
			}
			// 800 × 3 + 300 × 15 = 6,900 µUSD, × 1.25 = 8,625.
			bill := c.Tab.Close(e.served(sonnet, wire.Usage{InputTokens: 800, OutputTokens: 300}))
			if header(bill.Headers, pricing.HeaderCost) != "0.008625" {
				t.Errorf("bill %+v", bill.Headers)
			}
			served.Add(1)
		}()
	}
	wg.Wait()
	a := e.account() // audits
	recs := e.records()
	if len(recs) != 64 {
		t.Fatalf("%d records for 64 requests", len(recs))
	}
	seen := map[string]bool{}
	var charged int64
	for _, r := range recs {
		if seen[r.RequestID] {
			t.Fatalf("two records of %s", r.RequestID)
		}
		seen[r.RequestID] = true
		charged += r.Charge
	}
	if a.Balance < 0 || charged != start-a.Balance || charged != served.Load()*8625 {
		t.Fatalf("balance %d, charged %d, served %d refused %d", a.Balance, charged, served.Load(), refused.Load())
	}
	if served.Load() < 3 || refused.Load() == 0 {
		t.Fatalf("served %d refused %d: the test did not contend", served.Load(), refused.Load())
	}
	st, err := e.m.AccountStatus(ctx, "a", "")
	if err != nil || st.Held != 0 || st.Balance != a.Balance {
		t.Fatalf("meter %+v, ledger %d, %v", st, a.Balance, err)
	}
}

// TestRateLimitExactlyN: exactly N requests pass per fixed minute, the
// rest get 429 with Retry-After to the minute's end, and the next minute
// lets N more in.
func TestRateLimitExactlyN(t *testing.T) {
	e := newEnv(t, 10_000_000, nil)
	ctx := context.Background()
	if err := e.s.SetKeyRateLimit(ctx, "k1", 5); err != nil {
		t.Fatal(err)
	}
	p := e.principal("k1")
	for round := range 2 {
		var passed atomic.Int64
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, werr := e.m.Open(ctx, p, admission(10, 10, haiku))
				if werr == nil {
					passed.Add(1)
					c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 10, OutputTokens: 10}))
					return
				}
				if werr.Status != 429 || werr.Kind != wire.ErrRateLimit || werr.RetryAfterMs != 60_000 {
					t.Errorf("refusal %+v", werr)
				}
				c.Tab.Close(e.refused(werr))
			}()
		}
		wg.Wait()
		if passed.Load() != 5 {
			t.Fatalf("round %d: %d passed a limit of 5", round, passed.Load())
		}
		e.clk.add(time.Minute)
	}
	// The tier's default applies to a key without its own.
	if err := e.s.SetKeyRateLimit(ctx, "k1", 0); err != nil {
		t.Fatal(err)
	}
	p = e.principal("k1")
	n := 0
	for range 150 {
		c, werr := e.m.Open(ctx, p, admission(10, 10, haiku))
		if werr == nil {
			n++
		}
		c.Tab.Close(e.refused(&wire.Error{Status: 499}))
	}
	if n != 100 {
		t.Fatalf("%d passed the default of 100", n)
	}
	if got := len(e.records()); got != 40+150 {
		t.Fatalf("%d records", got)
	}
}

// TestAllowanceResets: the hourly allowance counts every token settled,
// refuses once used up with Retry-After to the hour, and resets on it.
func TestAllowanceResets(t *testing.T) {
	e := newEnv(t, 10_000_000, func(c *Config) {
		c.Tiers = map[store.Tier]Tier{store.TierFree: {Spread: pricing.SpreadFree, RequestsPerMinute: 100, TokensPerHour: 1000}}
	})
	ctx := context.Background()
	p := e.principal("k1")
	for i, want := range []string{"400", "0"} {
		c, werr := e.m.Open(ctx, p, admission(100, 100, haiku))
		if werr != nil {
			t.Fatalf("request %d: %+v", i, werr)
		}
		bill := c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 400, OutputTokens: 100, CacheReadTokens: 100}))
		if got := header(bill.Headers, pricing.HeaderRemainingToken); got != want {
			t.Fatalf("request %d: remaining %q, want %s", i, got, want)
		}
	}
	c, werr := e.m.Open(ctx, p, admission(100, 100, haiku))
	if werr == nil || werr.Status != 429 || werr.RetryAfterMs != 30*60*1000 || header(c.Headers, pricing.HeaderRemainingToken) != "0" {
		t.Fatalf("used up: %+v %+v", werr, c.Headers)
	}
	c.Tab.Close(e.refused(werr))
	e.clk.add(30 * time.Minute)
	c, werr = e.m.Open(ctx, p, admission(100, 100, haiku))
	if werr != nil || header(c.Headers, pricing.HeaderRemainingToken) != "1000" {
		t.Fatalf("after the hour: %+v %+v", werr, c.Headers)
	}
	c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 1, OutputTokens: 1}))
}

// TestBudgetDowngradeThenBlock: a request over its daily budget is served
// by the first cheaper model that fits; when none fits it is refused with
// 429 until the day's end; the next day it passes again.
func TestBudgetDowngradeThenBlock(t *testing.T) {
	e := newEnv(t, 10_000_000, nil)
	ctx := context.Background()
	// Estimates of 1000 in / 1000 out at free's 25 %: opus 117,188 (input at
	// the $18.75 write price), sonnet 23,438, haiku 7,813 µUSD.
	if err := e.s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeKey, Subject: "k1", Period: store.PeriodDay, Limit: 31_000}); err != nil {
		t.Fatal(err)
	}
	p := e.principal("k1")
	c, werr := e.m.Open(ctx, p, admission(1000, 1000, opus, sonnet, haiku))
	if werr != nil || c.Model != "claude-sonnet-4" || len(c.Degraded) != 1 ||
		c.Degraded[0] != "budget-downgrade:claude-opus-4->claude-sonnet-4" {
		t.Fatalf("%+v %+v", c, werr)
	}
	// Sonnet served 1000/1000: 18,000 × 1.25 = 22,500 spent of 31,000;
	// sonnet's next estimate does not fit, haiku's (30,313) does.
	c.Tab.Close(e.served(sonnet, wire.Usage{InputTokens: 1000, OutputTokens: 1000}))
	c, werr = e.m.Open(ctx, p, admission(1000, 1000, opus, sonnet, haiku))
	if werr != nil || c.Model != "claude-haiku-4" {
		t.Fatalf("second: %+v %+v", c, werr)
	}
	c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000})) // 7,500: 30,000 spent
	c, werr = e.m.Open(ctx, p, admission(1000, 1000, opus, sonnet, haiku))
	want := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC).Sub(e.clk.now()).Milliseconds()
	if werr == nil || werr.Status != 429 || werr.RetryAfterMs != want || !strings.Contains(werr.Message, "daily budget") || c.Tab == nil {
		t.Fatalf("block: %+v", werr)
	}
	c.Tab.Close(e.refused(werr))
	st, _ := e.m.AccountStatus(ctx, "a", "k1")
	if len(st.Budgets) != 1 || st.Budgets[0].Spent != 30_000 || st.Budgets[0].Limit != 31_000 {
		t.Fatalf("status %+v", st)
	}
	e.clk.add(14 * time.Hour) // past midnight UTC
	if c, werr = e.m.Open(ctx, p, admission(1000, 1000, opus, sonnet, haiku)); werr != nil || c.Model != "claude-sonnet-4" {
		t.Fatalf("next day: %+v %+v", c, werr)
	}
	c.Tab.Close(e.refused(&wire.Error{Status: 502}))
}

// TestAccountMonthBudgetAcrossRestart: an account's monthly spend is read
// back from the usage records when the meter starts again.
func TestAccountMonthBudgetAcrossRestart(t *testing.T) {
	e := newEnv(t, 10_000_000, nil)
	ctx := context.Background()
	if err := e.s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: "a", Period: store.PeriodMonth, Limit: 40_000}); err != nil {
		t.Fatal(err)
	}
	c, werr := e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	if werr != nil {
		t.Fatal(werr)
	}
	c.Tab.Close(e.served(sonnet, wire.Usage{InputTokens: 1000, OutputTokens: 1000})) // 22,500
	e.close()
	e.open()
	if a := e.account(); a.Balance != 10_000_000-22_500 {
		t.Fatalf("balance after restart %d", a.Balance)
	}
	if n := len(e.records()); n != 1 {
		t.Fatalf("%d records after restart", n)
	}
	// 22,500 spent + 23,438 estimated > 40,000: blocked, no cheaper quote.
	_, werr = e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	if werr == nil || werr.Status != 429 || !strings.Contains(werr.Message, "monthly budget") {
		t.Fatalf("after restart: %+v", werr)
	}
	st, _ := e.m.AccountStatus(ctx, "a", "")
	if len(st.Budgets) != 1 || st.Budgets[0].Spent != 22_500 || st.Budgets[0].Period != "month" {
		t.Fatalf("%+v", st.Budgets)
	}
	// Over both the day's and the month's budget: Retry-After is the later
	// reset, the month's, when the request can pass again.
	if err := e.s.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: "a", Period: store.PeriodDay, Limit: 20_000}); err != nil {
		t.Fatal(err)
	}
	e.m.Invalidate("a")
	_, werr = e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	want := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Sub(e.clk.now()).Milliseconds()
	if werr == nil || werr.RetryAfterMs != want || !strings.Contains(werr.Message, "monthly") {
		t.Fatalf("both budgets: %+v", werr)
	}
}

// TestSpendLimitAndBalance: a key's lifetime spend limit and an empty
// balance refuse with 402 (only the operator or a top-up clears them); a
// top-up shows within the refresh interval.
func TestSpendLimitAndBalance(t *testing.T) {
	e := newEnv(t, 20_000, nil)
	ctx := context.Background()
	if err := e.s.CreateKey(ctx, store.Key{ID: "k2", AccountID: "a", Hash: []byte{2}, SpendLimit: 10_000}); err != nil {
		t.Fatal(err)
	}
	c, werr := e.m.Open(ctx, e.principal("k2"), admission(1000, 1000, sonnet))
	if werr == nil || werr.Status != 402 || !strings.Contains(werr.Message, "spend limit") {
		t.Fatalf("spend limit: %+v", werr)
	}
	c.Tab.Close(e.refused(werr))
	// k1: 23,438 estimated, 20,000 available.
	c, werr = e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	if werr == nil || werr.Status != 402 || !strings.Contains(werr.Message, "$0.023438") || !strings.Contains(werr.Message, "$0.020000") {
		t.Fatalf("balance: %+v", werr)
	}
	c.Tab.Close(e.refused(werr))
	// Committed first: a commit after the top-up would read it (Post takes
	// the row's balance) and show it before the refresh this tests.
	e.sync()
	if _, err := e.s.TopUp(ctx, "a", 1_000_000, "cli"); err != nil {
		t.Fatal(err)
	}
	// Within the refresh interval the cached balance still refuses…
	c, werr = e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	if werr == nil || werr.Status != 402 {
		t.Fatalf("cached: %+v", werr)
	}
	c.Tab.Close(e.refused(werr))
	// …after it, or at once when the admin API says so, the top-up shows.
	e.clk.add(3 * time.Second)
	c, werr = e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	if werr != nil || header(c.Headers, pricing.HeaderBalance) != "1.020000" {
		t.Fatalf("after top-up: %+v %+v", werr, c.Headers)
	}
	c.Tab.Close(e.refused(&wire.Error{Status: 502}))
	if _, err := e.s.TopUp(ctx, "a", 1_000_000, "admin"); err != nil {
		t.Fatal(err)
	}
	e.m.Invalidate("a")
	c, werr = e.m.Open(ctx, e.principal("k1"), admission(10, 10, haiku))
	if werr != nil || header(c.Headers, pricing.HeaderBalance) != "2.020000" {
		t.Fatalf("after invalidation: %+v %+v", werr, c.Headers)
	}
	c.Tab.Close(e.refused(&wire.Error{Status: 502}))
	if recs := e.records(); len(recs) != 5 || recs[0].Charge != 0 {
		t.Fatalf("%+v", recs)
	}
}

// TestChargeRules: what each outcome is charged.
func TestChargeRules(t *testing.T) {
	e := newEnv(t, 10_000_000, nil)
	ctx := context.Background()
	p := e.principal("k1")
	u := wire.Usage{InputTokens: 1000, OutputTokens: 1000} // sonnet: 18,000 cost, 22,500 charged
	hit := e.served(sonnet, u)
	hit.Path, hit.Cache, hit.Upstream, hit.Provider = gateway.PathLayer, "hash-hit", false, ""
	broken := e.served(sonnet, u)
	broken.Streamed, broken.StreamEnd = true, gateway.StreamBroken
	gone := e.served(sonnet, u)
	gone.Streamed, gone.StreamEnd = true, gateway.StreamClientGone
	failed := e.served(sonnet, u)
	failed.Path, failed.Status, failed.Err = gateway.PathError, 502, &wire.Error{Status: 502}
	sim := e.served(sonnet, u)
	sim.Path, sim.Upstream = gateway.PathLocal, false
	direct := e.served(sonnet, u)
	direct.Direct = true
	withInternal := e.served(sonnet, u)
	for _, c := range []struct {
		name          string
		s             *gateway.Settlement
		cost, savings string
		internal      bool
	}{
		{"cache hit", hit, "0.000000", "0.018000", false},
		{"broken stream", broken, "0.000000", "0.000000", false},
		{"client went away", gone, "0.022500", "-0.004500", false},
		{"upstream error", failed, "0.000000", "0.000000", false},
		{"simulator", sim, "0.000000", "0.000000", false},
		{"direct provider", direct, "direct", "0.000000", false},
		{"with an internal completion", withInternal, "0.045000", "-0.009000", true},
	} {
		cl, werr := e.m.Open(ctx, p, admission(1000, 1000, sonnet))
		if werr != nil {
			t.Fatal(werr)
		}
		if c.internal {
			in := e.served(sonnet, u)
			in.Path, in.Internal = gateway.PathInternal, true
			cl.Tab.Internal(in)
		}
		bill := cl.Tab.Close(c.s)
		if got, sav := header(bill.Headers, pricing.HeaderCost), header(bill.Headers, pricing.HeaderSavings); got != c.cost || sav != c.savings {
			t.Errorf("%s: cost %s savings %s, want %s %s", c.name, got, sav, c.cost, c.savings)
		}
		// Closing twice never charges twice.
		if again := cl.Tab.Close(c.s); len(again.Headers) != 0 {
			t.Errorf("%s: second close billed %+v", c.name, again)
		}
	}
	var charged int64
	for _, r := range e.records() {
		charged += r.Charge
		if r.RequestID == withInternal.RequestID && r.InputTokens != 2000 {
			t.Errorf("internal completion's tokens not on the record: %+v", r)
		}
	}
	if a := e.account(); charged != 22_500+45_000 || a.Balance != 10_000_000-charged {
		t.Fatalf("charged %d, balance %d", charged, a.Balance)
	}
}

// TestReplayedPostingNotDoubled: two tabs settling the same request id
// (a replay) charge it once.
func TestReplayedPostingNotDoubled(t *testing.T) {
	e := newEnv(t, 1_000_000, nil)
	ctx := context.Background()
	p := e.principal("k1")
	s := e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000}) // 6,000 × 1.25 = 7,500
	for range 2 {
		c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
		if werr != nil {
			t.Fatal(werr)
		}
		c.Tab.Close(s)
	}
	if a := e.account(); a.Balance != 1_000_000-7_500 || len(e.records()) != 1 {
		t.Fatalf("balance %d, %d records", a.Balance, len(e.records()))
	}
	st, _ := e.m.AccountStatus(ctx, "a", "")
	if st.Balance != 1_000_000-7_500 || st.Held != 0 {
		t.Fatalf("meter after replay %+v", st)
	}
}

// TestReadsAndUnpriced: a read gets headers and no tab; an unpriced or
// direct request holds nothing but is rate-limited and recorded.
func TestReadsAndUnpriced(t *testing.T) {
	e := newEnv(t, 0, nil)
	ctx := context.Background()
	p := e.principal("k1")
	c, werr := e.m.Open(ctx, p, &gateway.Admission{Path: "/v1/models"})
	if werr != nil || c.Tab != nil || header(c.Headers, pricing.HeaderBalance) != "0.000000" ||
		header(c.Headers, pricing.HeaderBalanceWarning) == "" {
		t.Fatalf("read: %+v %+v", c, werr)
	}
	free := gateway.Quote{Model: "local-model"}
	c, werr = e.m.Open(ctx, p, admission(1000, 1000, free))
	if werr != nil || c.Tab == nil {
		t.Fatalf("unpriced on an empty balance: %+v", werr)
	}
	c.Tab.Close(e.served(free, wire.Usage{InputTokens: 5, OutputTokens: 5}))
	a := admission(1000, 1000, sonnet)
	a.Direct = true
	c, werr = e.m.Open(ctx, p, a)
	if werr != nil {
		t.Fatalf("direct on an empty balance: %+v", werr)
	}
	s := e.served(sonnet, wire.Usage{InputTokens: 5, OutputTokens: 5})
	if bill := c.Tab.Close(s); header(bill.Headers, pricing.HeaderCost) != "direct" {
		t.Fatalf("direct bill %+v", bill.Headers)
	}
	recs := e.records()
	if len(recs) != 2 || recs[0].Charge != 0 || recs[1].InputTokens != 5 {
		t.Fatalf("%+v", recs)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{},
		{Store: &sqlite.Store{}, Tiers: map[store.Tier]Tier{"gold": {}}},
		{Store: &sqlite.Store{}, Tiers: map[store.Tier]Tier{store.TierPro: {Spread: -1}}},
		{Store: &sqlite.Store{}, MaxBatch: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte("[billing]\nrefresh = \"5s\"\n[billing.tiers.pro]\nspread_percent = 12.5\n"), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := FromConfig(cfg.Billing, &sqlite.Store{})
	want := DefaultTiers[store.TierPro]
	want.Spread = 1250
	if c.Refresh != 5*time.Second || len(c.Tiers) != 1 || c.Tiers[store.TierPro] != want {
		t.Fatalf("%+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerDown: when the store cannot commit, a settlement stays queued
// (the bill shows the meter's figures: at once with the journal, after
// CommitWait without it), paid requests are refused with 503 once the
// backlog reaches its bound, and closing the meter reports what never
// reached the ledger rather than drop it quietly; the journal keeps it
// for the next start.
func TestLedgerDown(t *testing.T) {
	for _, journal := range []bool{true, false} {
		t.Run(mode(journal), func(t *testing.T) {
			e := newEnv(t, 1_000_000, func(c *Config) {
				c.CommitWait, c.MaxBacklog = 50*time.Millisecond, 1
				if !journal {
					c.JournalDir = ""
				}
			})
			ctx := context.Background()
			p := e.principal("k1")
			c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
			if werr != nil {
				t.Fatal(werr)
			}
			e.s.Close() // every commit fails from here on
			bill := c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000}))
			if header(bill.Headers, pricing.HeaderCost) != "0.007500" || header(bill.Headers, pricing.HeaderBalance) != "0.992500" {
				t.Fatalf("bill while the ledger is down: %+v", bill.Headers)
			}
			_, werr = e.m.Open(ctx, p, admission(1000, 1000, haiku))
			if werr == nil || werr.Status != 503 {
				t.Fatalf("backlog at its bound: %+v", werr)
			}
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			err := e.m.Close(cctx)
			if err == nil || !strings.Contains(err.Error(), "1 settlements not committed") {
				t.Fatalf("close: %v", err)
			}
			e.m = nil // closed
			if n := len(journalFiles(t, e.dir)); journal && n != 1 || !journal && n != 0 {
				t.Fatalf("%d journal segments left", n)
			}
		})
	}
}
