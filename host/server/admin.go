package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/sandbox"
)

// KVFlusher deletes kv keys by prefix: kvstore.Memory (a shared store such
// as Redis implements it with SCAN and DEL).
type KVFlusher interface {
	DeletePrefix(prefix string) int
}

// Admin configures the administrative endpoints.
type Admin struct {
	// Token is required as "Authorization: Bearer <token>"; empty disables
	// the endpoints.
	Token string
	// KV is the store behind the plugins' kv host functions.
	KV KVFlusher
	// Vectors is the index behind the vector_* host functions; a flush
	// empties the layer's partitions there too (nil: nothing to flush).
	Vectors VectorFlusher
	// Health reports each provider's circuit state at GET /admin/health.
	Health *health.Tracker
	// Events is the operator's event stream at GET /admin/events.
	Events *eventlog.Log

	// Accounts is the store behind /admin/accounts and /admin/keys
	// (accounts.go); nil: they answer 404.
	Accounts AccountStore
	// KeyAuth creates keys and revokes, disables or enables them, dropping
	// its cached record at once; nil: those answer 501.
	KeyAuth *auth.Authenticator
	// Live, when set, gives an account's balance, held and available money
	// counting the requests in flight (the billing meter, whose holds live
	// in memory), in place of the store's.
	Live gateway.AccountReader
	// OnAccountChange is called after a top-up, an adjustment or a change
	// of an account's tier or state, so the running meter reloads the
	// account before its next request.
	OnAccountChange func(account string)
}

// VectorFlusher deletes vector index partitions by name prefix.
type VectorFlusher interface {
	FlushPrefix(prefix string) int
}

type flushRequest struct {
	Layer  string `json:"layer"`  // the entry's name in pipeline.toml
	Scope  string `json:"scope"`  // "tenant" (default when tenant is set), "shared" or "all"
	Tenant string `json:"tenant"` // with scope "tenant"
}

// cacheFlush answers POST /admin/cache/flush: it deletes a plugin's kv
// entries — one tenant's, the shared space, or all of them — by key prefix
// (the spec's manual flush, per agent or global). Body:
//
//	{"layer":"hashcache","tenant":"acme"}      one tenant's entries
//	{"layer":"hashcache","scope":"shared"}     the shared space
//	{"layer":"hashcache","scope":"all"}        every tenant and the shared space
//
// The answer is {"layer":…,"scope":…,"tenant":…,"deleted":<keys>}.
func (sv *Server) cacheFlush(ctx *fasthttp.RequestCtx) {
	reply := func(status int, body any) { adminReply(ctx, status, body) }
	fail := func(status int, msg string) { adminFail(ctx, status, msg) }

	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		fail(405, "use POST on /admin/cache/flush")
		return
	}
	if !sv.adminAuthorized(ctx) {
		fail(401, errAdminToken)
		return
	}
	if sv.Admin.KV == nil {
		fail(501, "the key/value store does not support flushing")
		return
	}
	var req flushRequest
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		fail(400, "body must be JSON: {\"layer\":\"<name>\",\"tenant\":\"<tenant>\"} or {\"layer\":\"<name>\",\"scope\":\"shared\"|\"all\"}")
		return
	}
	if !validName(req.Layer) {
		fail(400, "layer must be a pipeline entry name ([a-z0-9-]+)")
		return
	}
	if req.Scope == "" && req.Tenant != "" {
		req.Scope = "tenant"
	}
	var prefix string
	switch req.Scope {
	case "tenant":
		if req.Tenant == "" {
			fail(400, "scope \"tenant\" needs a tenant")
			return
		}
		prefix = sandbox.TenantPrefix(req.Layer, req.Tenant)
	case "shared":
		prefix = sandbox.SharedPrefix(req.Layer)
	case "all":
		prefix = sandbox.PluginPrefix(req.Layer)
	default:
		fail(400, "scope must be \"tenant\" (with a tenant), \"shared\" or \"all\"; a global flush must say \"all\"")
		return
	}
	if req.Scope != "tenant" {
		req.Tenant = ""
	}
	n := sv.Admin.KV.DeletePrefix(prefix)
	if sv.Admin.Vectors != nil {
		n += sv.Admin.Vectors.FlushPrefix(prefix)
	}
	sv.Metrics.Add("bardo_cache_flushes_total", 1, "layer", req.Layer, "scope", req.Scope)
	sv.Metrics.Add("bardo_cache_invalidations_total", float64(n), "layer", req.Layer)
	sv.Log.Info("cache flushed", "layer", req.Layer, "scope", req.Scope, "tenant", req.Tenant, "deleted", n)
	reply(200, map[string]any{"layer": req.Layer, "scope": req.Scope, "tenant": req.Tenant, "deleted": n})
}

const errAdminToken = "admin endpoints need Authorization: Bearer <admin token>"

// adminGET admits an authorized GET, answering anything else (401, then
// 405 with Allow); false: the request was answered.
func (sv *Server) adminGET(ctx *fasthttp.RequestCtx) bool {
	if !sv.adminAuthorized(ctx) {
		adminFail(ctx, 401, errAdminToken)
		return false
	}
	if !ctx.IsGet() {
		ctx.Response.Header.Set("Allow", "GET")
		adminFail(ctx, 405, "use GET on "+string(ctx.Path()))
		return false
	}
	return true
}

func (sv *Server) adminAuthorized(ctx *fasthttp.RequestCtx) bool {
	auth := ctx.Request.Header.Peek("Authorization")
	want := "Bearer " + sv.Admin.Token
	return subtle.ConstantTimeCompare(auth, []byte(want)) == 1
}

func adminReply(ctx *fasthttp.RequestCtx, status int, body any) {
	b, _ := json.Marshal(body)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func adminFail(ctx *fasthttp.RequestCtx, status int, msg string) {
	adminReply(ctx, status, map[string]any{"error": map[string]string{"message": msg}})
}

// regime answers /admin/regime: GET reports the market regime, POST
// {"regime":"volatile"} sets it. Every request then carries it (annotation
// bardo.market.regime) unless its own X-Bardo-Regime header says otherwise;
// the semantic cache shortens TTLs and drops market-analysis entries on a
// change.
func (sv *Server) regime(ctx *fasthttp.RequestCtx) {
	if !sv.adminAuthorized(ctx) {
		adminFail(ctx, 401, errAdminToken)
		return
	}
	switch {
	case ctx.IsGet():
		adminReply(ctx, 200, map[string]any{"regime": sv.Gateway.Regime()})
	case ctx.IsPost():
		var req struct {
			Regime string `json:"regime"`
		}
		if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || !sv.Gateway.SetRegime(req.Regime) {
			adminFail(ctx, 400, `body must be {"regime":"calm"|"normal"|"volatile"|"crisis"}`)
			return
		}
		sv.Metrics.Add("bardo_regime_changes_total", 1, "regime", req.Regime)
		sv.Log.Info("market regime set", "regime", req.Regime)
		adminReply(ctx, 200, map[string]any{"regime": req.Regime})
	default:
		ctx.Response.Header.Set("Allow", "GET, POST")
		adminFail(ctx, 405, "use GET or POST on /admin/regime")
	}
}

// healthReport answers GET /admin/health: every provider's circuit state,
// window counts and latency percentiles (host/health.Snapshot).
func (sv *Server) healthReport(ctx *fasthttp.RequestCtx) {
	if !sv.adminGET(ctx) {
		return
	}
	if sv.Admin.Health == nil {
		adminReply(ctx, 200, map[string]any{"providers": []any{}})
		return
	}
	adminReply(ctx, 200, map[string]any{"providers": sv.Admin.Health.Snapshot()})
}

// maxEventsWait bounds a long poll of /admin/events: a reader waiting for
// the next event holds a connection, and shutdown waits for it.
const maxEventsWait = 30 * time.Second

// events answers GET /admin/events?since=<seq>&limit=<n>&wait=<duration>:
// the routing events after seq (provider:resolved, provider:fallback,
// inference:profile_degraded, cache:stale_served, provider:exhausted),
// oldest first, and "next", the since of the following poll. With wait
// (at most 30s) it holds the request until an event arrives. "missed"
// counts events the reader fell too far behind to get (the log keeps the
// last 4,096).
func (sv *Server) events(ctx *fasthttp.RequestCtx) {
	if !sv.adminGET(ctx) {
		return
	}
	args := ctx.QueryArgs()
	var since uint64
	if v := args.Peek("since"); len(v) > 0 {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			adminFail(ctx, 400, "since must be an event sequence number (the previous answer's next)")
			return
		}
		since = n
	}
	limit := 500
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > 4096 {
			adminFail(ctx, 400, "limit must be 1–4096")
			return
		}
		limit = n
	}
	var wait time.Duration
	if v := args.Peek("wait"); len(v) > 0 {
		d, err := time.ParseDuration(string(v))
		if err != nil || d < 0 || d > maxEventsWait {
			adminFail(ctx, 400, "wait must be a duration of at most 30s, such as \"10s\"")
			return
		}
		wait = d
	}
	if sv.Admin.Events == nil {
		adminReply(ctx, 200, map[string]any{"events": []any{}, "next": since, "missed": 0})
		return
	}
	var (
		evs          []eventlog.Event
		next, missed uint64
	)
	if wait > 0 {
		wctx, cancel := context.WithTimeout(context.Background(), wait)
		evs, next, missed = sv.Admin.Events.Wait(wctx, since, limit)
		cancel()
	} else {
		evs, next, missed = sv.Admin.Events.Since(since, limit)
	}
	if evs == nil {
		evs = []eventlog.Event{}
	}
	adminReply(ctx, 200, map[string]any{"events": evs, "next": next, "missed": missed})
}

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// eventStream serves GET /admin/events/stream: every event — the
// operator's (routing, fallbacks, budgets) and every caller's inference
// events — as server-sent events, from now or after Last-Event-ID. A
// consumer that falls behind the event buffer is dropped with a notice;
// it never holds up a request.
func (sv *Server) eventStream(ctx *fasthttp.RequestCtx) {
	if !sv.adminGET(ctx) {
		return
	}
	if sv.Admin.Events == nil {
		adminFail(ctx, 404, "this gateway keeps no event stream")
		return
	}
	log := sv.Admin.Events
	from := log.ParseLastEventID(ctx.Request.Header.Peek("Last-Event-ID"))
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		log.SSE(context.Background(), w, from, nil, 0)
	})
}
