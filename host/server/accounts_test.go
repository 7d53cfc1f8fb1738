package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/auth/admit"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/telemetry"
)

const adminToken = "admin-secret-for-tests"

// storeReader is the caller endpoints' AccountReader read straight from
// the store (the billing meter's stand-in: same store, no holds in memory).
type storeReader struct{ *sqlite.Store }

func (s storeReader) AccountStatus(ctx context.Context, account, key string) (gateway.AccountStatus, error) {
	a, err := s.Account(ctx, account)
	if err != nil {
		return gateway.AccountStatus{}, err
	}
	return gateway.AccountStatus{Account: a.ID, Tier: string(a.Tier), Balance: a.Balance, Held: a.Held,
		Available: a.Available(), LowBalance: pricing.BalanceWarning(pricing.Micros(a.Available())), RemainingTokens: -1}, nil
}

// accountsServer is a real server on 127.0.0.1 over a fresh SQLite store,
// with keys admitted by admit.Keys and the account API on.
type accountsServer struct {
	t       *testing.T
	url     string
	store   *sqlite.Store
	client  *fasthttp.Client
	mu      sync.Mutex
	changed []string // OnAccountChange calls
}

func newAccountsServer(t *testing.T) *accountsServer {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ka := auth.New(s, []byte("0123456789abcdef0123456789abcdef"), auth.Options{Accounts: s})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw := &gateway.Gateway{Admitter: &admit.Keys{Auth: ka, Log: log}, Accounts: storeReader{s}, Log: log}
	sv := New(config.Server{ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}, gw, telemetry.New(), log)
	as := &accountsServer{t: t, store: s, client: &fasthttp.Client{}}
	sv.Admin = &Admin{Token: adminToken, Accounts: s, KeyAuth: ka, OnAccountChange: func(a string) {
		as.mu.Lock()
		as.changed = append(as.changed, a)
		as.mu.Unlock()
	}}
	if err := sv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go sv.Serve()
	t.Cleanup(func() { sv.Shutdown(5 * time.Second) })
	as.url = "http://" + sv.Addr()
	return as
}

// do sends one request; auth is the whole Authorization value ("" none).
func (as *accountsServer) do(method, path, auth, body string) (int, map[string]any) {
	as.t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(as.url + path)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	if err := as.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		as.t.Fatalf("%s %s: %v", method, path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Body(), &m); err != nil {
		as.t.Fatalf("%s %s: %d, body not JSON: %q", method, path, resp.StatusCode(), resp.Body())
	}
	return resp.StatusCode(), m
}

// admin sends an admin request and insists on the status.
func (as *accountsServer) admin(method, path, body string, want int) map[string]any {
	as.t.Helper()
	status, m := as.do(method, path, "Bearer "+adminToken, body)
	if status != want {
		as.t.Fatalf("%s %s %s: status %d, want %d: %v", method, path, body, status, want, m)
	}
	return m
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func TestAccountsAPIRefusesWithoutToken(t *testing.T) {
	as := newAccountsServer(t)
	for _, r := range [][2]string{
		{"GET", "/admin/accounts"}, {"POST", "/admin/accounts"}, {"GET", "/admin/accounts/acct_x"},
		{"PATCH", "/admin/accounts/acct_x"}, {"POST", "/admin/accounts/acct_x/topup"},
		{"POST", "/admin/accounts/acct_x/adjust"}, {"GET", "/admin/accounts/acct_x/ledger"},
		{"GET", "/admin/accounts/acct_x/usage"}, {"GET", "/admin/accounts/acct_x/usage/daily"},
		{"PUT", "/admin/accounts/acct_x/budgets"}, {"GET", "/admin/keys"}, {"POST", "/admin/keys"},
		{"GET", "/admin/keys/k"}, {"POST", "/admin/keys/k/revoke"}, {"POST", "/admin/keys/k/disable"},
		{"PUT", "/admin/keys/k/budgets"}, {"GET", "/admin/nothing-here"},
	} {
		for _, auth := range []string{"", "Bearer wrong", adminToken} {
			status, m := as.do(r[0], r[1], auth, `{"name":"x","amount_usd":"1","reason":"r"}`)
			if r[1] == "/admin/nothing-here" {
				if status != 404 {
					t.Errorf("%s %s: %d", r[0], r[1], status)
				}
				continue
			}
			if status != 401 || errMessage(m) == "" {
				t.Errorf("%s %s with %q: %d %v, want 401", r[0], r[1], auth, status, m)
			}
		}
	}
	if as.store != nil {
		if as2, _ := as.store.ListAccounts(context.Background()); len(as2) != 0 {
			t.Fatalf("a refused request created %v", as2)
		}
	}
}

func TestAccountsAPI(t *testing.T) {
	as := newAccountsServer(t)

	// Accounts.
	a := as.admin("POST", "/admin/accounts", `{"name":"acme","tier":"pro"}`, 201)
	id, _ := a["id"].(string)
	if !strings.HasPrefix(id, "acct_") || a["tier"] != "pro" || a["balance_usd"] != "0.000000" || a["balance_micros"] != 0.0 {
		t.Fatalf("created %v", a)
	}
	as.admin("POST", "/admin/accounts", `{"id":"acct_b","name":"b"}`, 201)
	as.admin("POST", "/admin/accounts", `{"id":"acct_b","name":"b"}`, 409)
	if l := as.admin("GET", "/admin/accounts", "", 200); len(l["data"].([]any)) != 2 {
		t.Fatalf("list %v", l)
	}
	as.admin("GET", "/admin/accounts/acct_nope", "", 404)
	as.admin("PATCH", "/admin/accounts/acct_nope", `{"tier":"pro"}`, 404)
	if p := as.admin("PATCH", "/admin/accounts/acct_b", `{"tier":"golem"}`, 200); p["tier"] != "golem" {
		t.Fatalf("patch %v", p)
	}
	as.admin("DELETE", "/admin/accounts/acct_b", "", 405)

	// Money: exact decimal strings, a ledger entry each, the meter told.
	e := as.admin("POST", "/admin/accounts/"+id+"/topup", `{"amount_usd":"12.50","reason":"invoice 42"}`, 201)
	if e["kind"] != "topup" || e["amount_usd"] != "12.500000" || e["amount_micros"] != 12500000.0 || e["reason"] != "invoice 42" {
		t.Fatalf("topup %v", e)
	}
	as.admin("POST", "/admin/accounts/"+id+"/adjust", `{"amount_usd":"-0.25","reason":"refund"}`, 201)
	as.admin("POST", "/admin/accounts/"+id+"/adjust", `{"amount_usd":"-1000","reason":"too much"}`, 409)
	as.admin("POST", "/admin/accounts/acct_nope/topup", `{"amount_usd":"1","reason":"r"}`, 404)
	if got := as.admin("GET", "/admin/accounts/"+id, "", 200); got["balance_usd"] != "12.250000" || got["available_micros"] != 12250000.0 {
		t.Fatalf("balance after topup and adjust: %v", got)
	}
	as.mu.Lock()
	changed := strings.Join(as.changed, ",")
	as.mu.Unlock()
	if changed != "acct_b,"+id+","+id {
		t.Fatalf("OnAccountChange calls: %q", changed)
	}

	// The ledger, a page at a time.
	l1 := as.admin("GET", "/admin/accounts/"+id+"/ledger?limit=1", "", 200)
	if d := l1["data"].([]any); len(d) != 1 || d[0].(map[string]any)["kind"] != "topup" || l1["next_after"] == nil {
		t.Fatalf("ledger page 1: %v", l1)
	}
	l2 := as.admin("GET", fmt.Sprintf("/admin/accounts/%s/ledger?limit=1&after=%v", id, l1["next_after"]), "", 200)
	if d := l2["data"].([]any); len(d) != 1 || d[0].(map[string]any)["amount_usd"] != "-0.250000" {
		t.Fatalf("ledger page 2: %v", l2)
	}
	if l3 := as.admin("GET", fmt.Sprintf("/admin/accounts/%s/ledger?limit=1&after=%v", id, l2["data"].([]any)[0].(map[string]any)["seq"]), "", 200); len(l3["data"].([]any)) != 0 || l3["next_after"] != nil {
		t.Fatalf("ledger page 3: %v", l3)
	}
	if err := as.store.Audit(context.Background(), id); err != nil {
		t.Fatal(err)
	}

	// Keys: the token once, then never again.
	k := as.admin("POST", "/admin/keys", `{"account":"`+id+`","name":"ci","spend_limit_usd":"5","models":["gpt-*"],"cidrs":["127.0.0.1"],"expires":"720h","rate_limit":30}`, 201)
	token, _ := k["token"].(string)
	kid, _ := k["id"].(string)
	if !strings.HasPrefix(token, "bardo_sk_") || kid == "" || k["spend_limit_usd"] != "5.000000" || k["rate_limit_per_minute"] != 30.0 || k["state"] != "active" {
		t.Fatalf("key %v", k)
	}
	ro := as.admin("POST", "/admin/keys", `{"account":"`+id+`","read_only":true}`, 201)
	roToken, _ := ro["token"].(string)
	for _, path := range []string{"/admin/keys/" + kid, "/admin/keys?account=" + id, "/admin/accounts/" + id} {
		b, _ := json.Marshal(as.admin("GET", path, "", 200))
		if strings.Contains(string(b), token) || strings.Contains(string(b), token[len(token)-20:]) || strings.Contains(string(b), "hash") {
			t.Fatalf("%s shows a secret: %s", path, b)
		}
	}
	if l := as.admin("GET", "/admin/keys?account="+id, "", 200); len(l["data"].([]any)) != 2 {
		t.Fatalf("keys %v", l)
	}
	as.admin("GET", "/admin/keys?account=acct_nope", "", 404)
	as.admin("GET", "/admin/keys/nope", "", 404)

	// A created key authenticates through admit.Keys and sees the top-up.
	status, bal := as.do("GET", "/v1/balance", "Bearer "+token, "")
	if status != 200 || bal["account"] != id || bal["balance_usd"] != "12.250000" || bal["tier"] != "pro" {
		t.Fatalf("balance with the new key: %d %v", status, bal)
	}
	if status, bal := as.do("GET", "/v1/balance", "Bearer "+roToken, ""); status != 200 || bal["available_usd"] != "12.250000" {
		t.Fatalf("balance with a read-only key: %d %v", status, bal)
	}
	as.admin("POST", "/admin/accounts/"+id+"/topup", `{"amount_usd":"0.000001","reason":"a micro"}`, 201)
	if _, bal := as.do("GET", "/v1/balance", "Bearer "+token, ""); bal["balance_micros"] != 12250001.0 {
		t.Fatalf("a top-up did not reach the balance: %v", bal)
	}

	// Rate limit and budgets.
	if p := as.admin("PATCH", "/admin/keys/"+kid, `{"rate_limit":60}`, 200); p["rate_limit_per_minute"] != 60.0 {
		t.Fatalf("patch key %v", p)
	}
	as.admin("PATCH", "/admin/keys/"+kid, `{"rate_limit":-1}`, 400)
	b := as.admin("PUT", "/admin/accounts/"+id+"/budgets", `{"day_usd":"5","month_usd":"100.5"}`, 200)
	if d := b["data"].([]any); len(d) != 2 || d[0].(map[string]any)["limit_usd"] != "5.000000" || d[1].(map[string]any)["limit_micros"] != 100500000.0 {
		t.Fatalf("account budgets %v", b)
	}
	kb := as.admin("PUT", "/admin/keys/"+kid+"/budgets", `{"day_usd":"1.25"}`, 200)
	if d := kb["data"].([]any); len(d) != 1 || d[0].(map[string]any)["scope"] != "key" || d[0].(map[string]any)["period"] != "day" {
		t.Fatalf("key budgets %v", kb)
	}
	b = as.admin("PUT", "/admin/accounts/"+id+"/budgets", `{"day_usd":null}`, 200)
	if d := b["data"].([]any); len(d) != 1 || d[0].(map[string]any)["period"] != "month" {
		t.Fatalf("a removed budget is still there: %v", b)
	}
	if all := as.admin("GET", "/admin/accounts/"+id+"/budgets", "", 200); len(all["data"].([]any)) != 2 {
		t.Fatalf("all budgets %v", all)
	}
	as.admin("PUT", "/admin/keys/nope/budgets", `{"day_usd":"1"}`, 404)
	// An x402 wallet's budget: its account row is created with it; the id
	// is lower-cased as the paywall names the wallet.
	wb := as.admin("PUT", "/admin/accounts/wallet:0xAbCdEf0123456789abcdef0123456789ABCDEF01/budgets", `{"day_usd":"2"}`, 200)
	if d := wb["data"].([]any); len(d) != 1 || d[0].(map[string]any)["subject"] != "wallet:0xabcdef0123456789abcdef0123456789abcdef01" {
		t.Fatalf("wallet budgets %v", wb)
	}
	if all := as.admin("GET", "/admin/accounts/wallet:0xABCDEF0123456789abcdef0123456789abcdef01/budgets", "", 200); len(all["data"].([]any)) != 1 {
		t.Fatalf("wallet budgets %v", all)
	}
	as.admin("PUT", "/admin/accounts/wallet:0x12/budgets", `{"day_usd":"1"}`, 404)

	// Revoking stops the key at once; disabling and enabling too.
	if d := as.admin("POST", "/admin/keys/"+kid+"/disable", "", 200); d["state"] != "disabled" {
		t.Fatalf("disable %v", d)
	}
	if status, m := as.do("GET", "/v1/balance", "Bearer "+token, ""); status != 401 {
		t.Fatalf("a disabled key read the balance: %d %v", status, m)
	}
	as.admin("POST", "/admin/keys/"+kid+"/enable", "", 200)
	if status, _ := as.do("GET", "/v1/balance", "Bearer "+token, ""); status != 200 {
		t.Fatalf("an enabled key: %d", status)
	}
	if r := as.admin("POST", "/admin/keys/"+kid+"/revoke", "", 200); r["state"] != "revoked" || r["revoked"] == nil {
		t.Fatalf("revoke %v", r)
	}
	if status, _ := as.do("GET", "/v1/balance", "Bearer "+token, ""); status != 401 {
		t.Fatalf("a revoked key read the balance: %d", status)
	}
	as.admin("POST", "/admin/keys/nope/revoke", "", 404)

	// A disabled account's keys stop at once.
	as.admin("PATCH", "/admin/accounts/"+id, `{"disabled":true}`, 200)
	if status, _ := as.do("GET", "/v1/balance", "Bearer "+roToken, ""); status != 401 {
		t.Fatalf("a disabled account's key read the balance: %d", status)
	}
}

func TestAccountsAPIUsagePages(t *testing.T) {
	as := newAccountsServer(t)
	ctx := context.Background()
	as.admin("POST", "/admin/accounts", `{"id":"acct_u","name":"u"}`, 201)
	as.admin("POST", "/admin/accounts", `{"id":"acct_v","name":"v"}`, 201)
	day := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		u := store.Usage{RequestID: fmt.Sprintf("req_u%d", i), AccountID: "acct_u", Model: "gpt-4o-mini", Provider: "openai",
			InputTokens: 100, OutputTokens: 10, Cost: 1000, Charge: 1150, Savings: 20, Status: 200,
			At: day.Add(time.Duration(i) * 24 * time.Hour)}
		if err := as.store.RecordUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := as.store.RecordUsage(ctx, store.Usage{RequestID: "req_v", AccountID: "acct_v", Model: "m", Status: 200, At: day}); err != nil {
		t.Fatal(err)
	}
	p1 := as.admin("GET", "/admin/accounts/acct_u/usage?limit=3", "", 200)
	d1 := p1["data"].([]any)
	cur, _ := p1["next_cursor"].(string)
	if len(d1) != 3 || cur == "" || d1[0].(map[string]any)["request_id"] != "req_u4" || d1[0].(map[string]any)["charge_usd"] != "0.001150" {
		t.Fatalf("page 1: %v", p1)
	}
	p2 := as.admin("GET", "/admin/accounts/acct_u/usage?limit=3&cursor="+cur, "", 200)
	if d2 := p2["data"].([]any); len(d2) != 2 || d2[1].(map[string]any)["request_id"] != "req_u0" || p2["next_cursor"] != nil {
		t.Fatalf("page 2: %v", p2)
	}
	r := as.admin("GET", "/admin/accounts/acct_u/usage?from=2026-11-21&to=2026-11-23", "", 200)
	if len(r["data"].([]any)) != 2 {
		t.Fatalf("from/to: %v", r)
	}
	daily := as.admin("GET", "/admin/accounts/acct_u/usage/daily?from=2026-11-19&to=2026-12-01", "", 200)
	dd := daily["data"].([]any)
	if len(dd) != 5 || dd[0].(map[string]any)["day"] != "2026-11-20" || dd[0].(map[string]any)["charge_micros"] != 1150.0 || dd[0].(map[string]any)["requests"] != 1.0 {
		t.Fatalf("daily: %v", daily)
	}
	as.admin("GET", "/admin/accounts/acct_nope/usage", "", 404)
	as.admin("GET", "/admin/accounts/acct_nope/usage/daily", "", 404)
}

// TestAccountsAPIBadInput: every malformed request is a 400 (or 404/405)
// with a message, never a 500, and changes nothing.
func TestAccountsAPIBadInput(t *testing.T) {
	as := newAccountsServer(t)
	as.admin("POST", "/admin/accounts", `{"id":"acct_a","name":"a"}`, 201)
	for _, tc := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{"POST", "/admin/accounts", ``, 400, "empty"},
		{"POST", "/admin/accounts", `nope`, 400, "JSON"},
		{"POST", "/admin/accounts", `{"name":"x"} {}`, 400, "one JSON object"},
		{"POST", "/admin/accounts", `{"name":"x","tier":"gold"}`, 400, "tier"},
		{"POST", "/admin/accounts", `{"name":"x","nmae":"y"}`, 400, "unknown field"},
		{"POST", "/admin/accounts", `{"id":"a b","name":"x"}`, 400, "id must"},
		{"POST", "/admin/accounts", `{"name":5}`, 400, "name"},
		{"PATCH", "/admin/accounts/acct_a", `{}`, 400, "nothing to change"},
		{"PATCH", "/admin/accounts/acct_a", `{"disabled":"yes"}`, 400, "disabled"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":12.5,"reason":"r"}`, 400, "amount_usd"},
		{"POST", "/admin/accounts/acct_a/topup", `{"reason":"r"}`, 400, "amount_usd is required"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":"1e3","reason":"r"}`, 400, "at most 6 decimals"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":"0.0000001","reason":"r"}`, 400, "at most 6 decimals"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":"-0","reason":"r"}`, 400, "zero"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":"-5","reason":"r"}`, 400, "negative"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":"99999999999999999999","reason":"r"}`, 400, "decimal USD"},
		{"POST", "/admin/accounts/acct_a/topup", `{"amount_usd":"5"}`, 400, "reason is required"},
		{"POST", "/admin/accounts/acct_a/adjust", `{"amount_usd":"-1","reason":"  "}`, 400, "reason is required"},
		{"POST", "/admin/accounts/acct_a/adjust", `{"amount_usd":"0","reason":"r"}`, 400, "zero"},
		{"POST", "/admin/accounts/acct_a/adjust", `{"amount_usd":"+1","reason":"r"}`, 400, "decimal USD"},
		{"POST", "/admin/accounts/acct_a/adjust", `{"amount_usd":"1","reason":"` + strings.Repeat("x", 501) + `"}`, 400, "longer"},
		{"GET", "/admin/accounts/acct_a/topup", ``, 405, "POST"},
		{"GET", "/admin/accounts/acct_a/ledger?after=-1", ``, 400, "after"},
		{"GET", "/admin/accounts/acct_a/ledger?limit=0", ``, 400, "limit"},
		{"GET", "/admin/accounts/acct_a/ledger?limit=1001", ``, 400, "limit"},
		{"GET", "/admin/accounts/acct_a/usage?cursor=garbage", ``, 400, "cursor"},
		{"GET", "/admin/accounts/acct_a/usage?cursor=1.2.3", ``, 400, "cursor"},
		{"GET", "/admin/accounts/acct_a/usage?limit=x", ``, 400, "limit"},
		{"GET", "/admin/accounts/acct_a/usage?from=yesterday", ``, 400, "from"},
		{"GET", "/admin/accounts/acct_a/usage?from=2026-11-02&to=2026-11-01", ``, 400, "before"},
		{"GET", "/admin/accounts/acct_a/usage/daily?from=2020-01-01&to=2026-01-01", ``, 400, "366"},
		{"GET", "/admin/accounts/acct_a/other", ``, 404, "no admin route"},
		{"PUT", "/admin/accounts/acct_a/budgets", `{}`, 400, "nothing to change"},
		{"PUT", "/admin/accounts/acct_a/budgets", `{"day_usd":5}`, 400, "day_usd"},
		{"PUT", "/admin/accounts/acct_a/budgets", `{"week_usd":"5"}`, 400, "unknown field"},
		{"PUT", "/admin/accounts/acct_a/budgets", `{"month_usd":"-5"}`, 400, "month_usd"},
		{"POST", "/admin/keys", `{"name":"k"}`, 400, "account is required"},
		{"POST", "/admin/keys", `{"account":"acct_nope"}`, 400, "does not exist"},
		{"POST", "/admin/keys", `{"account":"acct_a","cidrs":["10.0.0.0/99"]}`, 400, "cidrs"},
		{"POST", "/admin/keys", `{"account":"acct_a","models":[""]}`, 400, "models"},
		{"POST", "/admin/keys", `{"account":"acct_a","expires":"-1h"}`, 400, "expires"},
		{"POST", "/admin/keys", `{"account":"acct_a","expires":"2001-01-01T00:00:00Z"}`, 400, "expires"},
		{"POST", "/admin/keys", `{"account":"acct_a","spend_limit_usd":"1.1234567"}`, 400, "spend_limit_usd"},
		{"POST", "/admin/keys", `{"account":"acct_a","rate_limit":-3}`, 400, "rate_limit"},
		{"POST", "/admin/keys", `{"account":"acct_a","read_only":"no"}`, 400, "read_only"},
		{"POST", "/admin/keys/k/explode", ``, 404, "no admin route"},
		{"GET", "/admin/keys/k/revoke", ``, 405, "POST"},
	} {
		status, m := as.do(tc.method, tc.path, "Bearer "+adminToken, tc.body)
		if status != tc.status || !strings.Contains(errMessage(m), tc.says) {
			t.Errorf("%s %s %.60s: %d %q, want %d saying %q", tc.method, tc.path, tc.body, status, errMessage(m), tc.status, tc.says)
		}
	}
	a, err := as.store.Account(context.Background(), "acct_a")
	if err != nil || a.Balance != 0 || a.Tier != store.TierFree {
		t.Fatalf("a refused request changed the account: %+v %v", a, err)
	}
	if ks, _ := as.store.ListKeys(context.Background(), "acct_a"); len(ks) != 0 {
		t.Fatalf("a refused request created keys: %v", ks)
	}
}

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in     string
		signed bool
		want   int64
		err    string
	}{
		{"12.50", false, 12_500_000, ""},
		{"0.000001", false, 1, ""},
		{"1", false, 1_000_000, ""},
		{"-0.25", true, -250_000, ""},
		{"-0", true, 0, "zero"},
		{"0.000000", false, 0, "zero"},
		{"-1", false, 0, "negative"},
		{"1e3", false, 0, "at most 6 decimals"},
		{"0.0000001", false, 0, "at most 6 decimals"},
		{"", false, 0, "at most 6 decimals"},
		{".5", false, 0, "at most 6 decimals"},
		{"1.", false, 0, ""}, // ParseUSD reads "1." as 1
		{" 1", false, 0, "at most 6 decimals"},
		{"+1", true, 0, "at most 6 decimals"},
		{"1,5", false, 0, "at most 6 decimals"},
		{"NaN", false, 0, "at most 6 decimals"},
		{"9223372036854", false, 0, "at most 6 decimals"},
	} {
		got, err := ParseAmount(tc.in, tc.signed)
		if tc.in == "1." {
			if err != nil || got != 1_000_000 {
				t.Errorf("%q: %d %v", tc.in, got, err)
			}
			continue
		}
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("%q: %d %v, want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %d %v, want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}

// FuzzParseAmount: an accepted amount is exact (it prints back to the
// same micro-USD), non-zero, and signed only when allowed.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"12.50", "-0", "1e3", "0.0000001", "-0.000001", "9223372036853.775807", "00.1", "1."} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, signed bool) {
		m, err := ParseAmount(s, signed)
		if err != nil {
			if m != 0 {
				t.Fatalf("%q: %d with an error", s, m)
			}
			return
		}
		if m == 0 || (m < 0 && !signed) {
			t.Fatalf("%q accepted as %d", s, m)
		}
		back, err := pricing.ParseUSD(pricing.Micros(m).String())
		if err != nil || int64(back) != m {
			t.Fatalf("%q → %d → %q → %d %v", s, m, pricing.Micros(m).String(), back, err)
		}
	})
}

// The account routes get bounded metric labels: one per family, whatever
// the ids in the path.
func TestAccountRouteLabels(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/balance": "/v1/balance", "/v1/usage": "/v1/usage", "/v1/usage/daily": "/v1/usage/daily",
		"/admin/accounts/acct_1/topup": "/admin/accounts", "/admin/keys/k1/revoke": "/admin/keys",
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI(path)
		if got := routeLabel(&ctx); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}
