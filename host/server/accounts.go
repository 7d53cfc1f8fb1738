package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
)

// AccountStore is what the operator's account API reads and writes:
// accounts, keys, the ledger and usage (host/store/sqlite.Store fits).
type AccountStore interface {
	store.Accounts
	store.Keys
	store.Ledger
	store.UsageLog
	store.SpendBudgets
}

// Limits of the account API's inputs.
const (
	maxReason     = 500 // characters of a ledger entry's reason
	maxName       = 200 // characters of an account's or a key's name
	maxScopeList  = 100 // model globs or CIDRs of one key
	maxAdminBody  = 1 << 16
	maxLedgerPage = 1000
	maxRateLimit  = 1_000_000 // requests per minute of one key
)

const msgRateLimit = "rate_limit must be requests per minute from 0 (the tier's default) to 1000000"

// accountsRoute serves /admin/accounts… and /admin/keys… (see
// docs/admin.md); false: the path is not one of them.
//
//	POST  /admin/accounts                      create {id?, name, tier}
//	GET   /admin/accounts                      list
//	GET   /admin/accounts/{id}                 one, with its keys
//	PATCH /admin/accounts/{id}                 {tier?, disabled?}
//	POST  /admin/accounts/{id}/topup           {amount_usd, reason}
//	POST  /admin/accounts/{id}/adjust          {amount_usd (signed), reason}
//	GET   /admin/accounts/{id}/ledger          ?after=&limit=
//	GET   /admin/accounts/{id}/usage           ?from=&to=&model=&key=&limit=&cursor=
//	GET   /admin/accounts/{id}/usage/daily     ?from=&to=
//	GET   /admin/accounts/{id}/budgets         the account's and its keys'
//	PUT   /admin/accounts/{id}/budgets         {day_usd?, month_usd?}
//	POST  /admin/keys                          create → the token, once
//	GET   /admin/keys                          ?account=
//	GET   /admin/keys/{id}                     one
//	PATCH /admin/keys/{id}                     {rate_limit}
//	POST  /admin/keys/{id}/revoke|disable|enable
//	PUT   /admin/keys/{id}/budgets             {day_usd?, month_usd?}
func (sv *Server) accountsRoute(ctx *fasthttp.RequestCtx) bool {
	path := string(ctx.Path())
	var rest string
	var keys bool
	switch {
	case path == "/admin/accounts" || strings.HasPrefix(path, "/admin/accounts/"):
		rest = strings.TrimPrefix(strings.TrimPrefix(path, "/admin/accounts"), "/")
	case path == "/admin/keys" || strings.HasPrefix(path, "/admin/keys/"):
		rest, keys = strings.TrimPrefix(strings.TrimPrefix(path, "/admin/keys"), "/"), true
	default:
		return false
	}
	if !sv.adminAuthorized(ctx) {
		adminFail(ctx, 401, errAdminToken)
		return true
	}
	a := sv.Admin
	if a.Accounts == nil {
		adminFail(ctx, 404, "this gateway keeps no accounts (no [storage])")
		return true
	}
	seg := strings.Split(rest, "/")
	if rest == "" {
		seg = nil
	}
	method := string(ctx.Method())
	if keys {
		sv.keysRoute(ctx, method, seg)
	} else {
		sv.accountRoute(ctx, method, seg)
	}
	return true
}

func (sv *Server) accountRoute(ctx *fasthttp.RequestCtx, method string, seg []string) {
	switch {
	case len(seg) == 0:
		switch method {
		case "GET":
			sv.listAccounts(ctx)
		case "POST":
			sv.createAccount(ctx)
		default:
			notAllowed(ctx, "GET, POST")
		}
		return
	case len(seg) == 1:
		switch method {
		case "GET":
			sv.showAccount(ctx, seg[0])
		case "PATCH":
			sv.patchAccount(ctx, seg[0])
		default:
			notAllowed(ctx, "GET, PATCH")
		}
		return
	}
	id, sub := seg[0], strings.Join(seg[1:], "/")
	var want string
	switch sub {
	case "topup", "adjust":
		want = "POST"
	case "ledger", "usage", "usage/daily":
		want = "GET"
	case "budgets":
		if method == "GET" {
			sv.listBudgets(ctx, id)
			return
		}
		want = "PUT"
	default:
		adminFail(ctx, 404, "no admin route "+string(ctx.Path()))
		return
	}
	if method != want {
		notAllowed(ctx, want)
		return
	}
	switch sub {
	case "topup", "adjust":
		sv.moveMoney(ctx, id, sub)
	case "ledger":
		sv.ledger(ctx, id)
	case "usage":
		sv.accountUsage(ctx, id)
	case "usage/daily":
		sv.accountDaily(ctx, id)
	case "budgets":
		sv.putBudgets(ctx, store.ScopeAccount, id)
	}
}

func (sv *Server) keysRoute(ctx *fasthttp.RequestCtx, method string, seg []string) {
	switch len(seg) {
	case 0:
		switch method {
		case "GET":
			sv.listKeys(ctx)
		case "POST":
			sv.createKey(ctx)
		default:
			notAllowed(ctx, "GET, POST")
		}
	case 1:
		switch method {
		case "GET":
			k, err := sv.Admin.Accounts.Key(ctx, seg[0])
			if err != nil {
				sv.storeFail(ctx, err, "key "+clip(seg[0]))
				return
			}
			adminReply(ctx, 200, keyView(k))
		case "PATCH":
			sv.patchKey(ctx, seg[0])
		default:
			notAllowed(ctx, "GET, PATCH")
		}
	case 2:
		want := "POST"
		switch seg[1] {
		case "revoke", "disable", "enable":
		case "budgets":
			want = "PUT"
		default:
			adminFail(ctx, 404, "no admin route "+string(ctx.Path()))
			return
		}
		if method != want {
			notAllowed(ctx, want)
			return
		}
		if seg[1] == "budgets" {
			sv.putBudgets(ctx, store.ScopeKey, seg[0])
			return
		}
		sv.changeKey(ctx, seg[0], seg[1])
	default:
		adminFail(ctx, 404, "no admin route "+string(ctx.Path()))
	}
}

func notAllowed(ctx *fasthttp.RequestCtx, allow string) {
	ctx.Response.Header.Set("Allow", allow)
	adminFail(ctx, 405, "use "+allow+" on "+string(ctx.Path()))
}

// decodeBody reads a JSON object into v, refusing unknown fields: a
// misspelt amount_usd must be a 400, not a silent zero.
func decodeBody(ctx *fasthttp.RequestCtx, v any, shape string) bool {
	body := ctx.PostBody()
	if len(body) > maxAdminBody {
		adminFail(ctx, 413, "the body is larger than 64 KiB")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(new(json.RawMessage)) != io.EOF {
		err = errTrailing
	}
	if err != nil {
		adminFail(ctx, 400, "body must be "+shape+": "+jsonProblem(err))
		return false
	}
	return true
}

var errTrailing = errors.New("one JSON object expected, and more follows it")

// jsonProblem describes a decoding error without echoing the body.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return "field " + te.Field + " must be a " + te.Type.String()
		}
		return "a " + te.Type.String() + " is expected"
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	if err == errTrailing {
		return err.Error()
	}
	if errors.Is(err, io.EOF) {
		return "the body is empty"
	}
	return "not valid JSON"
}

// storeFail answers a store error: 404 for what does not exist, 409 for a
// state the request conflicts with, 400 for what the store refuses as
// invalid, else 503 (logged).
func (sv *Server) storeFail(ctx *fasthttp.RequestCtx, err error, what string) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		adminFail(ctx, 404, "no such "+what)
	case errors.Is(err, store.ErrExists):
		adminFail(ctx, 409, what+" already exists")
	case errors.Is(err, store.ErrInsufficientFunds):
		adminFail(ctx, 409, "this would take the available balance of "+what+" below zero")
	case errors.Is(err, store.ErrAccountDisabled):
		adminFail(ctx, 409, what+" is disabled")
	case errors.Is(err, store.ErrInvalidAmount):
		adminFail(ctx, 400, "the store refused the request as invalid")
	default:
		sv.Log.Error("admin account API: store", "path", string(ctx.Path()), "err", err)
		adminFail(ctx, 503, "the account store is unavailable; try again")
	}
}

// changed tells the running meter (Admin.OnAccountChange) that an
// account's balance, tier, state or budgets changed.
func (sv *Server) changed(account string) {
	if f := sv.Admin.OnAccountChange; f != nil {
		f(account)
	}
}

// Money in JSON: a decimal string of USD with six fraction digits
// (pricing.AppendUSD) and the same amount as an integer of micro-USD.
func usd(m int64) string { return pricing.Micros(m).String() }

// ParseAmount parses an amount_usd field: a decimal USD string with at
// most six fraction digits, exactly (no float, no exponent, no "+").
// signed allows a negative amount; zero, "-0" included, is refused, as
// a ledger entry of nothing. Its errors are messages for the operator.
func ParseAmount(s string, signed bool) (int64, error) {
	m, err := pricing.ParseUSD(s)
	if err != nil {
		return 0, fmt.Errorf("amount_usd %q is not a decimal USD amount with at most 6 decimals, such as \"12.50\"", clip(s))
	}
	switch {
	case m == 0:
		return 0, fmt.Errorf("amount_usd %q is zero: a ledger entry must move money", clip(s))
	case m < 0 && !signed:
		return 0, fmt.Errorf("amount_usd %q is negative: a top-up adds money (use adjust to take some)", clip(s))
	}
	return int64(m), nil
}

// clip bounds an echoed value.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// validID accepts the ids the API names in paths: letters, digits, '_'
// and '-', at most 64.
func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// accountJSON is an account as the admin API shows it.
type accountJSON struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Tier            string    `json:"tier"`
	Disabled        bool      `json:"disabled"`
	Created         time.Time `json:"created"`
	Balance         string    `json:"balance_usd"`
	BalanceMicros   int64     `json:"balance_micros"`
	Held            string    `json:"held_usd"`
	HeldMicros      int64     `json:"held_micros"`
	Available       string    `json:"available_usd"`
	AvailableMicros int64     `json:"available_micros"`
	// Keys and Budgets (the account's and its keys') are shown by GET
	// /admin/accounts/{id} only.
	Keys    []keyJSON    `json:"keys,omitempty"`
	Budgets []budgetJSON `json:"budgets,omitempty"`
}

func accountView(a store.Account) accountJSON {
	return accountJSON{ID: a.ID, Name: a.Name, Tier: string(a.Tier), Disabled: a.Disabled, Created: a.Created.UTC(),
		Balance: usd(a.Balance), BalanceMicros: a.Balance, Held: usd(a.Held), HeldMicros: a.Held,
		Available: usd(a.Available()), AvailableMicros: a.Available()}
}

// liveFigures replaces the durable held and available amounts with the meter's,
// which count the requests in flight (their holds live in memory).
func (sv *Server) liveFigures(ctx context.Context, v *accountJSON) {
	if sv.Admin.Live == nil {
		return
	}
	st, err := sv.Admin.Live.AccountStatus(ctx, v.ID, "")
	if err != nil {
		sv.Log.Warn("admin account API: live status", "account", v.ID, "err", err)
		return
	}
	v.Balance, v.BalanceMicros = usd(st.Balance), st.Balance
	v.Held, v.HeldMicros = usd(st.Held), st.Held
	v.Available, v.AvailableMicros = usd(st.Available), st.Available
}

func (sv *Server) listAccounts(ctx *fasthttp.RequestCtx) {
	as, err := sv.Admin.Accounts.ListAccounts(ctx)
	if err != nil {
		sv.storeFail(ctx, err, "account")
		return
	}
	out := make([]accountJSON, 0, len(as))
	for _, a := range as {
		out = append(out, accountView(a))
	}
	adminReply(ctx, 200, map[string]any{"data": out})
}

func (sv *Server) showAccount(ctx *fasthttp.RequestCtx, id string) {
	a, err := sv.Admin.Accounts.Account(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	ks, err := sv.Admin.Accounts.ListKeys(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	bs, err := sv.Admin.Accounts.ListBudgets(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	v := accountView(a)
	sv.liveFigures(ctx, &v)
	v.Budgets = budgetViews(bs, "")
	v.Keys = make([]keyJSON, 0, len(ks))
	for _, k := range ks {
		v.Keys = append(v.Keys, keyView(k))
	}
	adminReply(ctx, 200, v)
}

func (sv *Server) createAccount(ctx *fasthttp.RequestCtx) {
	var req struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Tier string `json:"tier"`
	}
	if !decodeBody(ctx, &req, `{"name":"…","tier":"free"|"pro"|"golem","id"?:"…"}`) {
		return
	}
	if req.Tier == "" {
		req.Tier = string(store.TierFree)
	}
	switch {
	case !store.Tier(req.Tier).Valid():
		adminFail(ctx, 400, `tier must be "free", "pro" or "golem"`)
		return
	case req.ID != "" && !validID(req.ID):
		adminFail(ctx, 400, "id must be 1–64 letters, digits, '_' or '-'")
		return
	case len(req.Name) > maxName:
		adminFail(ctx, 400, "name is longer than 200 characters")
		return
	}
	if req.ID == "" {
		var raw [8]byte
		_, _ = rand.Read(raw[:])
		req.ID = "acct_" + hex.EncodeToString(raw[:])
	}
	a, err := sv.Admin.Accounts.CreateAccount(ctx, store.Account{ID: req.ID, Name: req.Name, Tier: store.Tier(req.Tier)})
	if err != nil {
		sv.storeFail(ctx, err, "account "+req.ID)
		return
	}
	sv.Log.Info("account created", "account", a.ID, "tier", a.Tier)
	adminReply(ctx, 201, accountView(a))
}

func (sv *Server) patchAccount(ctx *fasthttp.RequestCtx, id string) {
	var req struct {
		Tier     *string `json:"tier"`
		Disabled *bool   `json:"disabled"`
	}
	if !decodeBody(ctx, &req, `{"tier"?:"free"|"pro"|"golem","disabled"?:true|false}`) {
		return
	}
	if req.Tier == nil && req.Disabled == nil {
		adminFail(ctx, 400, "nothing to change: send tier and/or disabled")
		return
	}
	if req.Tier != nil && !store.Tier(*req.Tier).Valid() {
		adminFail(ctx, 400, `tier must be "free", "pro" or "golem"`)
		return
	}
	s := sv.Admin.Accounts
	if _, err := s.Account(ctx, id); err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	if req.Tier != nil {
		if err := s.SetAccountTier(ctx, id, store.Tier(*req.Tier)); err != nil {
			sv.storeFail(ctx, err, "account "+clip(id))
			return
		}
	}
	if req.Disabled != nil {
		if err := s.SetAccountDisabled(ctx, id, *req.Disabled); err != nil {
			sv.storeFail(ctx, err, "account "+clip(id))
			return
		}
		// A key's cached record carries its account's state: drop them,
		// so a disabled account's keys stop at once.
		if ka := sv.Admin.KeyAuth; ka != nil {
			if ks, err := s.ListKeys(ctx, id); err == nil {
				for _, k := range ks {
					ka.Invalidate(k.ID)
				}
			}
		}
	}
	sv.changed(id)
	a, err := s.Account(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	sv.Log.Info("account changed", "account", id, "tier", a.Tier, "disabled", a.Disabled)
	v := accountView(a)
	sv.liveFigures(ctx, &v)
	adminReply(ctx, 200, v)
}

// entryJSON is a ledger entry as the admin API shows it.
type entryJSON struct {
	Seq           int64     `json:"seq"`
	Account       string    `json:"account"`
	Kind          string    `json:"kind"`
	Amount        string    `json:"amount_usd"`
	AmountMicros  int64     `json:"amount_micros"`
	Held          string    `json:"held_usd"`
	HeldMicros    int64     `json:"held_micros"`
	ReservationID int64     `json:"reservation,omitempty"`
	RequestID     string    `json:"request_id,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	At            time.Time `json:"at"`
}

func entryView(e store.Entry) entryJSON {
	return entryJSON{Seq: e.Seq, Account: e.AccountID, Kind: string(e.Kind), Amount: usd(e.Amount), AmountMicros: e.Amount,
		Held: usd(e.Held), HeldMicros: e.Held, ReservationID: e.ReservationID, RequestID: e.RequestID, Reason: e.Reason,
		At: e.At.UTC()}
}

// moveMoney answers a top-up or an adjustment: one ledger entry with its
// reason, never an update of a balance. The running meter is told so the
// caller's next request sees it.
func (sv *Server) moveMoney(ctx *fasthttp.RequestCtx, id, kind string) {
	var req struct {
		Amount *string `json:"amount_usd"`
		Reason string  `json:"reason"`
	}
	if !decodeBody(ctx, &req, `{"amount_usd":"12.50","reason":"…"}`) {
		return
	}
	if req.Amount == nil {
		adminFail(ctx, 400, `amount_usd is required: a decimal USD string such as "12.50"`)
		return
	}
	amount, err := ParseAmount(*req.Amount, kind == "adjust")
	if err != nil {
		adminFail(ctx, 400, err.Error())
		return
	}
	req.Reason = strings.TrimSpace(req.Reason)
	switch {
	case req.Reason == "":
		adminFail(ctx, 400, "reason is required: the ledger keeps why money moved")
		return
	case len(req.Reason) > maxReason:
		adminFail(ctx, 400, "reason is longer than 500 characters")
		return
	}
	var e store.Entry
	if kind == "topup" {
		e, err = sv.Admin.Accounts.TopUp(ctx, id, amount, req.Reason)
	} else {
		e, err = sv.Admin.Accounts.Adjust(ctx, id, amount, req.Reason)
	}
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	sv.changed(id)
	sv.Log.Info("ledger entry", "account", id, "kind", string(e.Kind), "amount", usd(e.Amount), "seq", e.Seq)
	adminReply(ctx, 201, entryView(e))
}

// ledger answers GET /admin/accounts/{id}/ledger?after=<seq>&limit=<n>:
// the account's entries after seq, oldest first; next_after, when not
// null, is the after of the following page.
func (sv *Server) ledger(ctx *fasthttp.RequestCtx, id string) {
	args := ctx.QueryArgs()
	var after int64
	if v := args.Peek("after"); len(v) > 0 {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 {
			adminFail(ctx, 400, "after must be an entry's seq (a non-negative integer)")
			return
		}
		after = n
	}
	limit := 100
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > maxLedgerPage {
			adminFail(ctx, 400, "limit must be an integer from 1 to 1000")
			return
		}
		limit = n
	}
	if _, err := sv.Admin.Accounts.Account(ctx, id); err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	es, err := sv.Admin.Accounts.Entries(ctx, id, after, limit+1)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	var next *int64
	if len(es) > limit {
		es = es[:limit]
		next = &es[limit-1].Seq
	}
	out := make([]entryJSON, 0, len(es))
	for _, e := range es {
		out = append(out, entryView(e))
	}
	adminReply(ctx, 200, map[string]any{"data": out, "next_after": next})
}

// accountUsage answers GET /admin/accounts/{id}/usage with the caller's
// /v1/usage query and shape.
func (sv *Server) accountUsage(ctx *fasthttp.RequestCtx, id string) {
	q, err := gateway.ParseUsageQuery(ctx.QueryArgs())
	if err != nil {
		adminFail(ctx, 400, err.Error())
		return
	}
	if _, err := sv.Admin.Accounts.Account(ctx, id); err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	q.AccountID = id
	page, err := sv.Admin.Accounts.Usage(ctx, q)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	adminReply(ctx, 200, gateway.NewUsagePage(page))
}

// accountDaily answers GET /admin/accounts/{id}/usage/daily?from=&to=.
func (sv *Server) accountDaily(ctx *fasthttp.RequestCtx, id string) {
	from, to, err := gateway.ParseDailyRange(ctx.QueryArgs(), time.Now())
	if err != nil {
		adminFail(ctx, 400, err.Error())
		return
	}
	if _, err := sv.Admin.Accounts.Account(ctx, id); err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	days, err := sv.Admin.Accounts.DailyUsage(ctx, id, from, to)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	adminReply(ctx, 200, gateway.NewDailyList(days))
}

// keyJSON is a key's public fields; the token is never stored, and its
// hash never leaves the store.
type keyJSON struct {
	ID               string     `json:"id"`
	Account          string     `json:"account"`
	Name             string     `json:"name"`
	State            string     `json:"state"` // active, disabled, revoked or expired
	ReadOnly         bool       `json:"read_only"`
	SpendLimit       *string    `json:"spend_limit_usd"`
	SpendLimitMicros *int64     `json:"spend_limit_micros"`
	Models           []string   `json:"models"`
	CIDRs            []string   `json:"cidrs"`
	Expires          *time.Time `json:"expires"`
	Disabled         bool       `json:"disabled"`
	Revoked          *time.Time `json:"revoked"`
	Created          time.Time  `json:"created"`
	// RateLimit is the key's own requests per minute; null: its account
	// tier's default.
	RateLimit *int `json:"rate_limit_per_minute"`
}

func keyView(k store.Key) keyJSON {
	v := keyJSON{ID: k.ID, Account: k.AccountID, Name: k.Name, ReadOnly: k.ReadOnly, Models: k.Models, CIDRs: k.CIDRs,
		Disabled: k.Disabled, Created: k.Created.UTC(), State: "active"}
	if v.Models == nil {
		v.Models = []string{}
	}
	if v.CIDRs == nil {
		v.CIDRs = []string{}
	}
	if k.SpendLimit > 0 {
		s, m := usd(k.SpendLimit), k.SpendLimit
		v.SpendLimit, v.SpendLimitMicros = &s, &m
	}
	if !k.Expires.IsZero() {
		t := k.Expires.UTC()
		v.Expires = &t
	}
	if k.RateLimit > 0 {
		n := k.RateLimit
		v.RateLimit = &n
	}
	if !k.Revoked.IsZero() {
		t := k.Revoked.UTC()
		v.Revoked = &t
	}
	switch {
	case !k.Revoked.IsZero():
		v.State = "revoked"
	case k.Disabled:
		v.State = "disabled"
	case !k.Expires.IsZero() && !time.Now().Before(k.Expires):
		v.State = "expired"
	}
	return v
}

func (sv *Server) listKeys(ctx *fasthttp.RequestCtx) {
	acct := string(ctx.QueryArgs().Peek("account"))
	if acct != "" {
		if _, err := sv.Admin.Accounts.Account(ctx, acct); err != nil {
			sv.storeFail(ctx, err, "account "+clip(acct))
			return
		}
	}
	ks, err := sv.Admin.Accounts.ListKeys(ctx, acct)
	if err != nil {
		sv.storeFail(ctx, err, "key")
		return
	}
	out := make([]keyJSON, 0, len(ks))
	for _, k := range ks {
		out = append(out, keyView(k))
	}
	adminReply(ctx, 200, map[string]any{"data": out})
}

// createKey answers POST /admin/keys: the token is in this answer only.
func (sv *Server) createKey(ctx *fasthttp.RequestCtx) {
	ka := sv.Admin.KeyAuth
	if ka == nil {
		adminFail(ctx, 501, "this gateway cannot create keys (no key secret)")
		return
	}
	var req struct {
		Account    string   `json:"account"`
		Name       string   `json:"name"`
		ReadOnly   bool     `json:"read_only"`
		SpendLimit *string  `json:"spend_limit_usd"`
		Models     []string `json:"models"`
		CIDRs      []string `json:"cidrs"`
		Expires    string   `json:"expires"`
		RateLimit  int      `json:"rate_limit"`
	}
	const shape = `{"account":"acct_…","name"?:"…","read_only"?:bool,"spend_limit_usd"?:"5.00","models"?:["claude-*"],"cidrs"?:["10.0.0.0/8"],"expires"?:"720h"|RFC 3339,"rate_limit"?:<requests per minute>}`
	if !decodeBody(ctx, &req, shape) {
		return
	}
	if req.RateLimit < 0 || req.RateLimit > maxRateLimit {
		adminFail(ctx, 400, msgRateLimit)
		return
	}
	spec := auth.KeySpec{Name: req.Name, ReadOnly: req.ReadOnly, Models: req.Models, CIDRs: req.CIDRs, RateLimit: req.RateLimit}
	if msg := validKeySpec(&spec, req.SpendLimit, req.Expires, time.Now()); msg != "" {
		adminFail(ctx, 400, msg)
		return
	}
	if req.Account == "" {
		adminFail(ctx, 400, "account is required")
		return
	}
	if _, err := sv.Admin.Accounts.Account(ctx, req.Account); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			adminFail(ctx, 400, "account "+clip(req.Account)+" does not exist")
			return
		}
		sv.storeFail(ctx, err, "account")
		return
	}
	token, k, err := ka.Create(ctx, req.Account, spec)
	if err != nil {
		sv.storeFail(ctx, err, "key")
		return
	}
	sv.Log.Info("key created", "key", k.ID, "account", k.AccountID) // never the token
	out := struct {
		Token string `json:"token"`
		keyJSON
	}{token, keyView(k)}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	adminReply(ctx, 201, out)
}

// validKeySpec checks and completes a key's scopes; it returns a message
// for the operator, "" when the spec is fine.
func validKeySpec(spec *auth.KeySpec, limit *string, expires string, now time.Time) string {
	if len(spec.Name) > maxName {
		return "name is longer than 200 characters"
	}
	if limit != nil {
		m, err := ParseAmount(*limit, false)
		if err != nil {
			return "spend_limit_usd: " + strings.TrimPrefix(err.Error(), "amount_usd ")
		}
		spec.SpendLimit = m
	}
	if len(spec.Models) > maxScopeList || len(spec.CIDRs) > maxScopeList {
		return "at most 100 models and 100 cidrs"
	}
	for _, g := range spec.Models {
		if strings.TrimSpace(g) == "" {
			return "models: an empty glob"
		}
	}
	for _, c := range spec.CIDRs {
		c = strings.TrimSpace(c)
		var err error
		if strings.Contains(c, "/") {
			_, err = netip.ParsePrefix(c)
		} else {
			_, err = netip.ParseAddr(c)
		}
		if err != nil {
			return fmt.Sprintf("cidrs: %q is neither a CIDR (10.0.0.0/8) nor an address", clip(c))
		}
	}
	if expires != "" {
		if d, err := time.ParseDuration(expires); err == nil && d > 0 {
			spec.Expires = now.Add(d).UTC()
		} else if t, err := time.Parse(time.RFC3339, expires); err == nil && t.After(now) {
			spec.Expires = t.UTC()
		} else {
			return "expires must be a positive duration (720h) or a future RFC 3339 time"
		}
	}
	return ""
}

// changeKey revokes, disables or enables a key through the authenticator,
// so its cached record is dropped and it stops at once.
func (sv *Server) changeKey(ctx *fasthttp.RequestCtx, id, op string) {
	ka := sv.Admin.KeyAuth
	if ka == nil {
		adminFail(ctx, 501, "this gateway cannot change keys (no key secret)")
		return
	}
	var err error
	switch op {
	case "revoke":
		err = ka.Revoke(ctx, id)
	default:
		err = ka.SetDisabled(ctx, id, op == "disable")
	}
	if err != nil {
		sv.storeFail(ctx, err, "key "+clip(id))
		return
	}
	k, err := sv.Admin.Accounts.Key(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "key "+clip(id))
		return
	}
	sv.Log.Info("key changed", "key", id, "op", op)
	adminReply(ctx, 200, keyView(k))
}

// patchKey answers PATCH /admin/keys/{id} {"rate_limit":<requests per
// minute, 0 for the tier's default>}.
func (sv *Server) patchKey(ctx *fasthttp.RequestCtx, id string) {
	var req struct {
		RateLimit *int `json:"rate_limit"`
	}
	if !decodeBody(ctx, &req, `{"rate_limit":<requests per minute, 0: the tier's default>}`) {
		return
	}
	if req.RateLimit == nil {
		adminFail(ctx, 400, "nothing to change: send rate_limit")
		return
	}
	if *req.RateLimit < 0 || *req.RateLimit > maxRateLimit {
		adminFail(ctx, 400, msgRateLimit)
		return
	}
	s := sv.Admin.Accounts
	if err := s.SetKeyRateLimit(ctx, id, *req.RateLimit); err != nil {
		sv.storeFail(ctx, err, "key "+clip(id))
		return
	}
	if ka := sv.Admin.KeyAuth; ka != nil {
		ka.Invalidate(id)
	}
	k, err := s.Key(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "key "+clip(id))
		return
	}
	sv.changed(k.AccountID)
	sv.Log.Info("key changed", "key", id, "rate_limit", k.RateLimit)
	adminReply(ctx, 200, keyView(k))
}

// budgetJSON is one spending budget.
type budgetJSON struct {
	Scope       string `json:"scope"`   // key or account
	Subject     string `json:"subject"` // the key's or the account's id
	Period      string `json:"period"`  // day or month (UTC)
	Limit       string `json:"limit_usd"`
	LimitMicros int64  `json:"limit_micros"`
}

func budgetViews(bs []store.SpendBudget, subject string) []budgetJSON {
	out := []budgetJSON{}
	for _, b := range bs {
		if subject == "" || b.Subject == subject {
			out = append(out, budgetJSON{Scope: string(b.Scope), Subject: b.Subject, Period: string(b.Period),
				Limit: usd(b.Limit), LimitMicros: b.Limit})
		}
	}
	return out
}

// walletPrefix starts an x402 wallet's account id, "wallet:0x<address>"
// (host/paywall), lower case.
const walletPrefix = "wallet:0x"

// listBudgets answers GET /admin/accounts/{id}/budgets: the account's
// budgets and its keys'.
func (sv *Server) listBudgets(ctx *fasthttp.RequestCtx, id string) {
	if w := strings.ToLower(id); strings.HasPrefix(w, walletPrefix) {
		id = w
	}
	if _, err := sv.Admin.Accounts.Account(ctx, id); err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	bs, err := sv.Admin.Accounts.ListBudgets(ctx, id)
	if err != nil {
		sv.storeFail(ctx, err, "account "+clip(id))
		return
	}
	adminReply(ctx, 200, map[string]any{"data": budgetViews(bs, "")})
}

// putBudgets answers PUT /admin/{accounts|keys}/{id}/budgets
// {"day_usd":"5.00","month_usd":null}: a USD amount sets the period's
// cap, null or "0" removes it, an absent field leaves it as it is. The
// answer is the subject's budgets after the change.
func (sv *Server) putBudgets(ctx *fasthttp.RequestCtx, scope store.BudgetScope, id string) {
	var req struct {
		Day   json.RawMessage `json:"day_usd"`
		Month json.RawMessage `json:"month_usd"`
	}
	if !decodeBody(ctx, &req, `{"day_usd"?:"5.00"|null,"month_usd"?:"100.00"|null}`) {
		return
	}
	if req.Day == nil && req.Month == nil {
		adminFail(ctx, 400, "nothing to change: send day_usd and/or month_usd (null removes)")
		return
	}
	var set []store.SpendBudget
	for _, f := range []struct {
		name   string
		raw    json.RawMessage
		period store.BudgetPeriod
	}{{"day_usd", req.Day, store.PeriodDay}, {"month_usd", req.Month, store.PeriodMonth}} {
		if f.raw == nil {
			continue
		}
		b := store.SpendBudget{Scope: scope, Subject: id, Period: f.period}
		if string(f.raw) != "null" {
			var s string
			if json.Unmarshal(f.raw, &s) != nil {
				adminFail(ctx, 400, f.name+` must be a decimal USD string such as "5.00", or null to remove`)
				return
			}
			m, err := pricing.ParseUSD(s)
			if err != nil || m < 0 {
				adminFail(ctx, 400, fmt.Sprintf(`%s %q is not a non-negative decimal USD amount with at most 6 decimals, such as "5.00"`, f.name, clip(s)))
				return
			}
			b.Limit = int64(m)
		}
		set = append(set, b)
	}
	what := string(scope) + " " + clip(id)
	var account string
	if w := strings.ToLower(id); scope == store.ScopeAccount && strings.HasPrefix(w, walletPrefix) {
		// An x402 wallet has an account row only once it has a budget:
		// SetBudget creates it (host/store/sqlite), or answers not found
		// for an id that is no wallet's.
		account = w
		for i := range set {
			set[i].Subject = w
		}
		id = w
	} else if scope == store.ScopeKey {
		k, err := sv.Admin.Accounts.Key(ctx, id)
		if err != nil {
			sv.storeFail(ctx, err, what)
			return
		}
		account = k.AccountID
	} else {
		if _, err := sv.Admin.Accounts.Account(ctx, id); err != nil {
			sv.storeFail(ctx, err, what)
			return
		}
		account = id
	}
	for _, b := range set {
		if err := sv.Admin.Accounts.SetBudget(ctx, b); err != nil {
			sv.storeFail(ctx, err, what)
			return
		}
	}
	sv.changed(account)
	bs, err := sv.Admin.Accounts.ListBudgets(ctx, account)
	if err != nil {
		sv.storeFail(ctx, err, what)
		return
	}
	sv.Log.Info("budgets set", "scope", string(scope), "subject", id)
	adminReply(ctx, 200, map[string]any{"data": budgetViews(bs, id)})
}
