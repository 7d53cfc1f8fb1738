package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/auth/admit"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
)

// ledgerReader is the AccountReader of these tests: the account as the
// store has it, plus the budgets a meter would report.
type ledgerReader struct {
	*sqlite.Store
	budgets []gateway.BudgetStatus
}

func (r ledgerReader) AccountStatus(ctx context.Context, account, key string) (gateway.AccountStatus, error) {
	a, err := r.Account(ctx, account)
	if err != nil {
		return gateway.AccountStatus{}, err
	}
	return gateway.AccountStatus{Account: a.ID, Tier: string(a.Tier), Balance: a.Balance, Held: a.Held,
		Available: a.Available(), LowBalance: pricing.BalanceWarning(pricing.Micros(a.Available())),
		RemainingTokens: 5000, TokensReset: time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC), RateLimit: 100,
		Budgets: r.budgets}, nil
}

// usageOnly hides the store's DailyUsage: a reader without daily sums.
type usageOnly struct{ ledgerReader }

func (usageOnly) DailyUsage() {}

type balanceEnv struct {
	url   string
	store *sqlite.Store
	keys  *auth.Authenticator
	gw    *gateway.Gateway
}

// startBalance serves a gateway's Handle on 127.0.0.1 with keys over a
// fresh SQLite store holding accounts acct_a and acct_b.
func startBalance(t *testing.T) *balanceEnv {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range []string{"acct_a", "acct_b"} {
		if _, err := s.CreateAccount(ctx, store.Account{ID: id, Name: id, Tier: store.TierPro}); err != nil {
			t.Fatal(err)
		}
	}
	ka := auth.New(s, []byte("0123456789abcdef0123456789abcdef"), auth.Options{Accounts: s})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw := &gateway.Gateway{Admitter: &admit.Keys{Auth: ka, Log: log}, Log: log,
		Accounts: ledgerReader{Store: s, budgets: []gateway.BudgetStatus{{Scope: "account", Period: "day", Limit: 5_000_000,
			Spent: 6_000_000, Resets: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if !gw.Handle(ctx) {
			ctx.SetStatusCode(404)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return &balanceEnv{url: "http://" + ln.Addr().String(), store: s, keys: ka, gw: gw}
}

func (e *balanceEnv) key(t *testing.T, account string, spec auth.KeySpec) string {
	t.Helper()
	token, _, err := e.keys.Create(context.Background(), account, spec)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// get sends a request with a key (Authorization: Bearer) and headers
// given as name, value pairs.
func (e *balanceEnv) get(t *testing.T, method, path, token string, headers ...string) (int, map[string]any, *fasthttp.ResponseHeader) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(method)
	req.SetRequestURI(e.url + path)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if err := fasthttp.DoTimeout(req, resp, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Body(), &m); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode(), resp.Body())
	}
	h := &fasthttp.ResponseHeader{}
	resp.Header.CopyTo(h)
	return resp.StatusCode(), m, h
}

func TestBalance(t *testing.T) {
	e := startBalance(t)
	ctx := context.Background()
	if _, err := e.store.TopUp(ctx, "acct_a", 12_500_000, "test"); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC()
	if err := e.store.RecordUsage(ctx, store.Usage{RequestID: "req_today", AccountID: "acct_a", Charge: 2500, At: today}); err != nil {
		t.Fatal(err)
	}
	token := e.key(t, "acct_a", auth.KeySpec{Name: "k"})
	status, m, _ := e.get(t, "GET", "/v1/balance", token)
	if status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	want := map[string]any{"account": "acct_a", "tier": "pro", "balance_usd": "12.500000", "balance_micros": 12500000.0,
		"held_usd": "0.000000", "available_usd": "12.500000", "available_micros": 12500000.0, "low_balance": false,
		"remaining_tokens": 5000.0, "tokens_reset": "2026-11-27T02:00:00Z", "rate_limit_per_minute": 100.0,
		"spent_today_usd": "0.002500", "spent_today_micros": 2500.0}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// This month's spend counts today's (the month may have begun today).
	if m["spent_month_micros"].(float64) < 2500 {
		t.Errorf("spent_month %v", m["spent_month_micros"])
	}
	b := m["budgets"].([]any)[0].(map[string]any)
	if b["limit_usd"] != "5.000000" || b["spent_usd"] != "6.000000" || b["remaining_usd"] != "0.000000" || b["resets"] != "2026-11-28T00:00:00Z" {
		t.Errorf("budget %v", b)
	}

	// Read-only keys may read; a key from the wrong address may not.
	ro := e.key(t, "acct_a", auth.KeySpec{ReadOnly: true})
	if status, _, _ := e.get(t, "GET", "/v1/balance", ro); status != 200 {
		t.Errorf("read-only key: %d", status)
	}
	far := e.key(t, "acct_a", auth.KeySpec{CIDRs: []string{"10.0.0.0/8"}})
	if status, m, _ := e.get(t, "GET", "/v1/balance", far); status != 403 {
		t.Errorf("key from a foreign address: %d %v", status, m)
	}

	// Refusals in the caller's dialect.
	status, m, _ = e.get(t, "GET", "/v1/balance", "")
	if status != 401 || m["error"].(map[string]any)["type"] == nil {
		t.Errorf("no key (OpenAI): %d %v", status, m)
	}
	status, m, _ = e.get(t, "GET", "/v1/balance", "bardo_sk_wrong", "anthropic-version", "2023-06-01")
	if status != 401 || m["type"] != "error" || m["error"].(map[string]any)["type"] != "authentication_error" {
		t.Errorf("bad key (Anthropic): %d %v", status, m)
	}
	status, _, h := e.get(t, "POST", "/v1/balance", token)
	if status != 405 || string(h.Peek("Allow")) != "GET" {
		t.Errorf("POST: %d", status)
	}

	// The store unavailable is the gateway's 503, never a 500.
	e.store.Close()
	if status, m, _ := e.get(t, "GET", "/v1/balance", token); status != 503 {
		t.Errorf("store closed: %d %v", status, m)
	}
}

func TestBalanceWithoutAccounts(t *testing.T) {
	e := startBalance(t)
	token := e.key(t, "acct_a", auth.KeySpec{})
	e.gw.Accounts = nil
	if status, m, _ := e.get(t, "GET", "/v1/balance", token); status != 404 || !strings.Contains(fmt.Sprint(m), "no accounts") {
		t.Errorf("no AccountReader: %d %v", status, m)
	}
	// Open mode: the anonymous caller has no account to read.
	e.gw.Accounts, e.gw.Admitter = ledgerReader{Store: e.store}, nil
	if status, _, _ := e.get(t, "GET", "/v1/usage", ""); status != 404 {
		t.Errorf("open mode: %d", status)
	}
	// A reader without daily sums: /v1/usage/daily is not there, the
	// balance leaves its spend figures null.
	e.gw.Admitter = &admit.Keys{Auth: e.keys}
	e.gw.Accounts = usageOnly{ledgerReader{Store: e.store}}
	if status, _, _ := e.get(t, "GET", "/v1/usage/daily", token); status != 404 {
		t.Errorf("daily without DailyUsage: %d", status)
	}
	if status, m, _ := e.get(t, "GET", "/v1/balance", token); status != 200 || m["spent_today_usd"] != nil {
		t.Errorf("balance without DailyUsage: %d %v", status, m)
	}
}

// TestUsagePages: a caller pages its own account's records newest first
// with the cursor, and never sees another account's.
func TestUsagePages(t *testing.T) {
	e := startBalance(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		for _, acct := range []string{"acct_a", "acct_b"} {
			if err := e.store.RecordUsage(ctx, store.Usage{RequestID: fmt.Sprintf("req_%s_%d", acct, i), AccountID: acct,
				Model: "gpt-4o-mini", InputTokens: 10, Charge: 100, Status: 200, At: day.Add(time.Duration(i) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := e.key(t, "acct_a", auth.KeySpec{ReadOnly: true})
	b := e.key(t, "acct_b", auth.KeySpec{})

	var seen []string
	cursor := ""
	for page := 0; page < 5; page++ {
		status, m, _ := e.get(t, "GET", "/v1/usage?limit=2&cursor="+cursor, a)
		if status != 200 {
			t.Fatalf("page %d: %d %v", page, status, m)
		}
		for _, r := range m["data"].([]any) {
			seen = append(seen, r.(map[string]any)["request_id"].(string))
		}
		if m["next_cursor"] == nil {
			break
		}
		cursor = m["next_cursor"].(string)
	}
	if strings.Join(seen, ",") != "req_acct_a_4,req_acct_a_3,req_acct_a_2,req_acct_a_1,req_acct_a_0" {
		t.Fatalf("pages: %v", seen)
	}
	// Filters cannot reach another account: the tenant is admission's.
	status, m, _ := e.get(t, "GET", "/v1/usage?from=2026-11-20T13:00:00Z&to=2026-11-20T15:00:00Z", b)
	d := m["data"].([]any)
	if status != 200 || len(d) != 2 || d[0].(map[string]any)["account"] != "acct_b" || d[0].(map[string]any)["charge_usd"] != "0.000100" {
		t.Fatalf("b's window: %d %v", status, m)
	}
	status, m, _ = e.get(t, "GET", "/v1/usage/daily?from=2026-11-20&to=2026-11-21", a)
	if d := m["data"].([]any); status != 200 || len(d) != 1 || d[0].(map[string]any)["requests"] != 5.0 || d[0].(map[string]any)["charge_micros"] != 500.0 {
		t.Fatalf("daily: %d %v", status, m)
	}

	for _, q := range []string{"limit=0", "limit=1001", "limit=two", "cursor=abc", "cursor=1.", "from=monday",
		"from=2026-11-21&to=2026-11-20", "to=2026-13-01"} {
		status, m, _ := e.get(t, "GET", "/v1/usage?"+q, a, "anthropic-version", "2023-06-01")
		if status != 400 || m["error"].(map[string]any)["type"] != "invalid_request_error" {
			t.Errorf("%s: %d %v", q, status, m)
		}
	}
	if status, _, _ := e.get(t, "GET", "/v1/usage/daily?from=2020-01-01&to=2026-01-01", a); status != 400 {
		t.Errorf("a daily range over a year: %d", status)
	}
}

func TestParseUsageQuery(t *testing.T) {
	var args fasthttp.Args
	args.Parse("from=2026-11-01&to=2026-11-02T12:00:00%2B02:00&model=m&key=k&limit=7&cursor=1764000000000000.42")
	q, err := gateway.ParseUsageQuery(&args)
	if err != nil {
		t.Fatal(err)
	}
	if !q.From.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !q.To.Equal(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)) ||
		q.Model != "m" || q.KeyID != "k" || q.Limit != 7 || q.Cursor != "1764000000000000.42" || q.AccountID != "" {
		t.Fatalf("%+v", q)
	}
	args.Parse("")
	if q, err := gateway.ParseUsageQuery(&args); err != nil || q.Limit != gateway.DefaultUsageLimit {
		t.Fatalf("defaults: %+v %v", q, err)
	}
}

// BenchmarkBalance is one GET /v1/balance through Handle, in process:
// admission of a cached key, the account read and this month's daily
// rollups, over SQLite.
func BenchmarkBalance(b *testing.B) {
	benchAccountRead(b, "/v1/balance")
}

// BenchmarkUsagePage is one GET /v1/usage page of 100 records deep in
// 20,000 (keyset: the depth does not matter).
func BenchmarkUsagePage(b *testing.B) {
	benchAccountRead(b, "/v1/usage")
}

func benchAccountRead(b *testing.B, path string) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateAccount(ctx, store.Account{ID: "acct_a", Tier: store.TierPro}); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range 20_000 {
		if err := s.RecordUsage(ctx, store.Usage{RequestID: fmt.Sprintf("req_%d", i), AccountID: "acct_a", Charge: 10,
			At: now.Add(-time.Duration(i) * time.Second)}); err != nil {
			b.Fatal(err)
		}
	}
	ka := auth.New(s, []byte("0123456789abcdef0123456789abcdef"), auth.Options{Accounts: s})
	token, _, err := ka.Create(ctx, "acct_a", auth.KeySpec{})
	if err != nil {
		b.Fatal(err)
	}
	gw := &gateway.Gateway{Admitter: &admit.Keys{Auth: ka}, Accounts: ledgerReader{Store: s}}
	uri := path
	if path == "/v1/usage" {
		// The cursor of a page 100 pages down.
		page, err := s.Usage(ctx, store.UsageQuery{AccountID: "acct_a", Limit: 1000})
		for range 9 {
			page, err = s.Usage(ctx, store.UsageQuery{AccountID: "acct_a", Limit: 1000, Cursor: page.Next})
		}
		if err != nil || page.Next == "" {
			b.Fatal(err)
		}
		uri += "?limit=100&cursor=" + page.Next
	}
	var req fasthttp.Request
	req.SetRequestURI(uri)
	req.Header.Set("Authorization", "Bearer "+token)
	var rc fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		// Init gives the context a server, as a served request has: the
		// store reads it as a context.Context.
		rc.Init(&req, nil, nil)
		gw.Handle(&rc)
		if rc.Response.StatusCode() != 200 {
			b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
}
