// Package gateway serves the inference API: it decodes the caller's dialect,
// runs the request through the current pipeline, calls the chosen provider's
// upstream through its adapter plugin, and answers in the caller's dialect, as
// JSON or as a stream, with every decision in X-Bardo-* headers.
//
// The HTTP front (serve, writeOutcome) is the only part that knows fasthttp;
// the engine (Serve) takes a decoded Call and returns an Outcome, admits the
// caller (Admitter), runs the one failover loop (failover.go, shared with
// internal completions) and settles every outcome once (settle.go).
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/telemetry/trace"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Response headers.
const (
	HeaderRequestID = "X-Bardo-Request-Id"
	HeaderProvider  = "X-Bardo-Provider"
	HeaderModel     = "X-Bardo-Model"
	HeaderDegraded  = "X-Bardo-Degraded"
	HeaderSession   = "X-Bardo-Session"
	HeaderFallback  = "X-Bardo-Fallback"
)

// Gateway is the API handler.
type Gateway struct {
	Pipelines *pipeline.Manager
	Upstream  *upstream.Client
	Log       *slog.Logger
	// Timeout bounds one request's pipeline and upstream work.
	Timeout time.Duration
	// ReplayChunk is the size, in runes, of the text deltas used when a
	// locally produced answer is streamed.
	ReplayChunk int
	// Heartbeat is the silence after which a stream gets an SSE comment
	// (default 15 s).
	Heartbeat time.Duration
	// MaxRetryAfter caps how long a 429's retry-after may make the gateway
	// wait before retrying the same provider (default 2 s); longer waits
	// fail over to the next provider instead.
	MaxRetryAfter time.Duration
	// Payer pays upstreams that charge per request with x402 from the
	// gateway's own wallet (payment.go); nil: such providers fail over.
	Payer *x402.Payer
	// Health tracks each provider's recent failures (host/health): a
	// provider it has taken out is skipped, and every attempt is recorded.
	// nil: every provider is always tried.
	Health *health.Tracker
	// Events is the operator's event stream (provider:resolved,
	// provider:fallback, inference:profile_degraded, cache:stale_served;
	// GET /admin/events). nil: no events.
	Events *eventlog.Log

	// Admitter identifies the caller before any layer runs (admission.go);
	// nil: every caller is the anonymous tenant.
	Admitter Admitter

	// Responses keeps the Responses API's stored responses (responses.go);
	// nil: nothing is stored and previous_response_id is refused.
	Responses store.ResponseStore
	// ResponsesTTL is how long a stored response is kept (default 30 days).
	ResponsesTTL time.Duration
	// Embedder serves POST /v1/embeddings with the local [[model]]
	// embedders (embeddings.go); nil: the endpoint has no models.
	Embedder Embedder
	// Accounts serves a caller's GET /v1/balance, /v1/usage and
	// /v1/usage/daily (balance.go); nil: those answer 404.
	Accounts AccountReader
	// Identity serves POST and DELETE /v1/identity/link (identity.go);
	// nil: 404.
	Identity IdentityLinker
	// Tracer exports a span per request (host/telemetry/trace, tracing.go);
	// nil: no tracing, at no cost.
	Tracer *trace.Tracer

	regime   atomic.Value             // string: the market regime (annotations.go)
	observer atomic.Pointer[Observer] // settlement observer (settle.go)
}

func (g *Gateway) heartbeat() time.Duration {
	if g.Heartbeat > 0 {
		return g.Heartbeat
	}
	return 15 * time.Second
}

// Handle routes the API endpoints; it returns false for paths it does not own.
func (g *Gateway) Handle(ctx *fasthttp.RequestCtx) bool {
	path := string(ctx.Path())
	method := string(ctx.Method())
	switch path {
	case "/v1/chat/completions":
		g.onlyPost(ctx, method, wire.DialectOpenAI)
	case "/v1/messages":
		g.onlyPost(ctx, method, wire.DialectAnthropic)
	case "/v1/messages/count_tokens":
		g.countTokens(ctx)
	case "/v1/completions":
		// The dialect is read from the body's shape, for clients that post
		// either format to one URL.
		g.onlyPost(ctx, method, detectDialect(ctx.PostBody()))
	case "/v1/models":
		g.models(ctx)
	case "/v1/balance":
		g.balance(ctx)
	case "/v1/usage":
		g.usage(ctx)
	case "/v1/usage/daily":
		g.usageDaily(ctx)
	case "/v1/events":
		g.events(ctx)
	case "/v1/responses":
		g.responsesPost(ctx, method)
	case "/v1/embeddings":
		g.embeddings(ctx, method)
	case "/v1/identity/link":
		g.identityLink(ctx, method)
	default:
		if strings.HasPrefix(path, "/v1/responses/") {
			g.responseByID(ctx, method, path)
			return true
		}
		// The server answers 404; it carries a request id like every
		// other answer.
		ctx.Response.Header.Set(HeaderRequestID, newRequestID())
		return false
	}
	return true
}

func (g *Gateway) onlyPost(ctx *fasthttp.RequestCtx, method string, d wire.Dialect) {
	g.serve(ctx, method, d)
}

// newRequestID returns "req_" and 24 random hex digits.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// serve is the HTTP front of a completion endpoint: it checks the method,
// decodes the caller's dialect, hands the request to the engine (Serve) and
// writes the engine's outcome. Nothing past this function knows fasthttp.
func (g *Gateway) serve(ctx *fasthttp.RequestCtx, method string, d wire.Dialect) {
	rid := newRequestID()
	if method != fasthttp.MethodPost {
		ctx.Response.Header.Set("Allow", "POST")
		e := &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest,
			Message: "method " + method + " is not allowed on " + string(ctx.Path()) + "; use POST"}
		WriteError(ctx, d, e)
		g.refused(rid, d, e, time.Now())
		return
	}
	began := time.Now()
	ctx.Response.Header.Set(HeaderRequestID, rid)
	body := ctx.PostBody()
	req, err := codecFor(d).DecodeRequest(body)
	if err != nil {
		e := &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()}
		WriteError(ctx, d, e)
		g.refused(rid, d, e, began)
		return
	}
	var ip netip.Addr
	if a, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		ip = a.Unmap()
	}
	o := g.Serve(&Call{RequestID: rid, Dialect: d, Req: req, Body: body, Header: &ctx.Request.Header,
		Path: string(ctx.Path()), RemoteIP: ip, began: began})
	writeOutcome(ctx, d, o)
}

// writeOutcome writes the engine's answer: its headers, then the error, the
// JSON body, or the stream (whose writer settles the request when it ends).
func writeOutcome(ctx *fasthttp.RequestCtx, d wire.Dialect, o *Outcome) {
	for _, h := range o.Headers {
		ctx.Response.Header.Set(h.Key, h.Value)
	}
	switch {
	case o.Err != nil:
		WriteError(ctx, d, o.Err)
		if len(o.errMembers) > 0 {
			if b, err := mergeMembers(ctx.Response.Body(), o.errMembers, true); err == nil {
				ctx.SetBody(b)
			}
		}
	case o.Stream != nil:
		ctx.SetContentType("text/event-stream")
		ctx.Response.Header.Set("Cache-Control", "no-cache")
		ctx.Response.Header.Set("X-Accel-Buffering", "no")
		ctx.SetBodyStreamWriter(o.Stream)
	default:
		ctx.SetContentType("application/json")
		ctx.SetBody(o.Body)
	}
}

// answerStale serves the answer a layer kept for this request (a cache
// entry past its freshness, within its stale-if-error window) when every
// provider failed: the spec's "degrade if all backends are down — return a
// cached response if available". X-Bardo-Fallback ends in "cache:stale".
func (g *Gateway) answerStale(o *Outcome, rctx context.Context, held *holds, p *pipeline.Pipeline, x *pipeline.Exchange, tried []string) bool {
	resp := p.FallbackPhase(rctx, x)
	if resp == nil {
		return false
	}
	o.set(HeaderFallback, strings.Join(append(tried, "cache:stale"), ","))
	g.Events.Emit(eventlog.CacheStaleServed, x.Meta.RequestID, map[string]any{"tried": tried})
	g.Log.Warn("every provider failed; served a stale cached answer", "request_id", x.Meta.RequestID, "tried", strings.Join(tried, ","))
	// The failed attempts may have spent the request's deadline: the
	// answer's response or stream phase (pii restores what it masked) gets
	// time of its own, as the fallback phase does.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(rctx), staleTimeout)
	held.also(cancel)
	held.s.Path = PathStale
	g.answerLocal(o, sctx, held, p, x, resp)
	return true
}

// staleTimeout bounds the layers' work on a stale answer (the fallback
// phase has the same).
const staleTimeout = 2 * time.Second

// attemptOutcome is one try of one provider.
type attemptOutcome struct {
	local     *wire.Response     // answered by the adapter itself
	call      *wire.UpstreamCall // what was sent
	resp      *upstream.Response // a 2xx response (stream: primed with its first event)
	first     *wire.SSE          // a stream's first event, already read
	err       *wire.Error        // the failure
	transient bool               // another try or provider may succeed
	upStatus  int                // the upstream's own status, when it answered an error
	unusable  bool               // the adapter refused a 2xx answer (VerifySuccess): no privacy confirmation, a bad receipt
	saturated bool               // no free connection to the upstream: the gateway's limit, not the provider's failure
}

// attempt encodes the request for one provider and calls its upstream. A
// stream's first event is read here, before the caller has seen a byte, so a
// stream that fails at once is retried or failed over invisibly.
func (g *Gateway) attempt(rctx context.Context, p *pipeline.Pipeline, x *pipeline.Exchange, pr *pipeline.Provider, route wire.Route) attemptOutcome {
	er, werr := p.Encode(rctx, x, pr, route)
	if werr != nil {
		return attemptOutcome{err: werr, transient: werr.Retryable}
	}
	if er.Local != nil {
		if er.Local.Model == "" {
			er.Local.Model = route.Model
		}
		return attemptOutcome{local: er.Local}
	}
	call := er.Call
	var body []byte
	if pr.Spec.Direct {
		if body, werr = directBody(x, call, route); werr != nil {
			return attemptOutcome{err: werr}
		}
		pipeline.ExpandCallerKey(call.Headers, x.CallerKey)
	} else {
		if body, werr = g.upstreamBody(x, call, route); werr != nil {
			return attemptOutcome{err: werr}
		}
		pr.ExpandCredential(call.Headers)
	}
	call.Headers = passCallerHeaders(call.Headers, x.CallerHeaders, call.BodyDialect)
	resp, werr := g.send(rctx, x, pr, &upstream.Request{
		Method: call.Method, URL: call.URL, Headers: dropUnexpanded(call.Headers), Body: body, Stream: call.Stream,
	})
	if werr != nil {
		return attemptOutcome{err: werr, transient: werr.Retryable || werr.Kind == wire.ErrTimeout,
			saturated: werr.Kind == wire.ErrOverloaded}
	}
	if resp.Status/100 != 2 {
		resp.Close()
		_, werr := p.Decode(rctx, x, pr, route, resp.Status, resp.Headers, resp.Body)
		if werr == nil {
			werr = &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "upstream " + route.Provider + " failed"}
		}
		// Failures of the upstream (rate limits, 5xx, refused gateway
		// credentials) may pass on another provider; a request the
		// upstream found invalid will not.
		transient := werr.Retryable || werr.Status >= 500 || werr.Status == 429 || werr.Status == 408
		return attemptOutcome{err: werr, transient: transient, upStatus: resp.Status}
	}
	if call.VerifySuccess && call.ResponseDialect != wire.DialectNone {
		// The adapter vets a response the host decodes natively (Venice:
		// no-retention headers, TEE receipts); a stream by its headers.
		var body []byte
		if !call.Stream {
			body = resp.Body
		}
		if werr := p.Verify(rctx, x, pr, route, resp.Status, resp.Headers, body); werr != nil {
			if call.Stream {
				resp.Abort()
			} else {
				resp.Close()
			}
			return attemptOutcome{err: werr, transient: werr.Retryable, unusable: true}
		}
	}
	if !call.Stream {
		return attemptOutcome{call: call, resp: resp}
	}
	first, err := resp.Next()
	if err != nil {
		resp.Abort()
		return attemptOutcome{transient: true, err: &wire.Error{Status: 502, Kind: wire.ErrUpstream, Retryable: true,
			Message: "upstream " + route.Provider + " stream ended before its first event"}}
	}
	return attemptOutcome{call: call, resp: resp, first: &first}
}

// retrySame says whether a failed attempt is worth one more try on the same
// provider, and after how long: connection failures and 5xx at once, a 429
// after its retry-after when that is within MaxRetryAfter.
func (g *Gateway) retrySame(out attemptOutcome) (time.Duration, bool) {
	e := out.err
	switch {
	case e.Status == 429 || e.Kind == wire.ErrRateLimit:
		wait := time.Duration(e.RetryAfterMs) * time.Millisecond
		return wait, wait <= g.maxRetryAfter()
	case e.Kind == wire.ErrTimeout:
		return 0, false // the time is spent; try elsewhere
	case e.Retryable:
		return 0, true
	}
	return 0, false
}

func (g *Gateway) maxRetryAfter() time.Duration {
	if g.MaxRetryAfter > 0 {
		return g.MaxRetryAfter
	}
	return 2 * time.Second
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// setRoute writes the provider/model headers and, after failed attempts, the
// fallback header naming them.
func setRoute(o *Outcome, route wire.Route, tried []string) {
	o.set(HeaderProvider, route.Provider)
	o.set(HeaderModel, route.Model)
	if len(tried) > 0 {
		o.set(HeaderFallback, strings.Join(tried, ","))
	}
}

func (g *Gateway) newExchange(h Header, rid, tenant string, d wire.Dialect, req *wire.Request, body []byte) *pipeline.Exchange {
	var passed []wire.KV
	if v := h.Peek("anthropic-beta"); len(v) > 0 {
		passed = append(passed, wire.KV{Key: "anthropic-beta", Value: string(v)})
	}
	return &pipeline.Exchange{
		CallerHeaders: passed,
		CallerKey:     callerKey(h),
		Meta: wire.Meta{
			RequestID:   rid,
			Tenant:      tenant,
			Session:     string(h.Peek(HeaderSession)),
			Dialect:     d,
			Model:       req.Model,
			Stream:      req.Stream,
			Annotations: g.requestAnnotations(h),
		},
		Req:      req,
		Pristine: true,
		Original: body,
	}
}

func (g *Gateway) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return 10 * time.Minute
}

// upstreamBody picks the bytes to send: the caller's own when nothing changed
// and the upstream speaks the caller's dialect (unknown fields and every
// cache_control survive untouched), otherwise a native encoding.
func (g *Gateway) upstreamBody(x *pipeline.Exchange, call *wire.UpstreamCall, route wire.Route) ([]byte, *wire.Error) {
	body, werr := g.encodeBody(x, call, route)
	if werr != nil || call.BodyMode != wire.BodyNative {
		return body, werr
	}
	// The adapter's provider-specific members (OpenRouter's provider
	// preferences, Venice's venice_parameters) go on the standard body.
	if len(call.BodyMerge) > 0 {
		merged, err := mergeMembers(body, call.BodyMerge, false)
		if err != nil {
			return nil, &wire.Error{Status: 502, Kind: wire.ErrInternal,
				Message: "provider adapter " + route.Provider + " returned a body_merge that " + err.Error()}
		}
		body = merged
	}
	// The profile's members for this provider, where the caller set none.
	if len(x.ProfileMembers) > 0 {
		merged, err := mergeMembers(body, x.ProfileMembers, true)
		if err != nil {
			return nil, &wire.Error{Status: 500, Kind: wire.ErrInternal, Message: "inference profile members: " + err.Error()}
		}
		body = merged
	}
	return body, nil
}

// encodeBody is the upstream body as the call's body mode says, before any
// merge.
func (g *Gateway) encodeBody(x *pipeline.Exchange, call *wire.UpstreamCall, route wire.Route) ([]byte, *wire.Error) {
	switch call.BodyMode {
	case wire.BodyRaw:
		return call.Body, nil
	case wire.BodyOriginal:
		if !x.Pristine {
			return nil, &wire.Error{Status: 502, Kind: wire.ErrInternal,
				Message: "provider adapter " + route.Provider + " asked for the original body, but a layer changed the request"}
		}
		return x.Original, nil
	case wire.BodyNative:
		if x.Pristine && call.BodyDialect == x.Meta.Dialect && route.Model == x.Req.Model {
			return x.Original, nil
		}
		x.Req.Model = route.Model
		req := x.Req
		// Cross-dialect fixes (translate.go): structured outputs and
		// sampling ranges. They read the caller's Extra, so they run before
		// it is dropped below.
		x.StructuredTool = ""
		var honoured, dropped []string
		if call.BodyDialect != x.Meta.Dialect {
			req, honoured, dropped = translateRequest(x, req, call.BodyDialect)
		}
		if call.BodyDialect != x.Meta.Dialect && len(req.Extra) > 0 {
			// Unknown top-level fields are the caller's dialect's: they mean
			// nothing (or something else) to the other one. Say which were
			// dropped, except those the translation honours itself.
			cp := *req
			// Members with an equivalent in the upstream's dialect are
			// carried over under its names (responses.go).
			carried, kept := carryExtra(x.Meta.Dialect, call.BodyDialect, req.Extra)
			cp.Extra = carried
			honoured = append(honoured, kept...)
			req = &cp
			// Members the adapter sets itself (BodyMerge) are not dropped.
			jsonscan.EachMember(call.BodyMerge, func(k, _ []byte) { honoured = append(honoured, string(k)) })
			if top := droppedFields(x.Req.Extra, honoured...); top != "" {
				dropped = append(strings.Split(top, ","), dropped...)
			}
		}
		if len(dropped) > 0 { // top-level fields first, then nested ones (translate.go)
			addDegraded(x, "dropped-fields:"+strings.Join(dropped, ","))
		}
		b, err := codecFor(call.BodyDialect).EncodeRequest(req)
		if err != nil {
			return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
				Message: "the request cannot be expressed for provider " + route.Provider + ": " + err.Error()}
		}
		return b, nil
	}
	return nil, &wire.Error{Status: 502, Kind: wire.ErrInternal, Message: "provider adapter " + route.Provider + " returned an unknown body mode"}
}

// dropUnexpanded removes headers still holding the credential placeholder
// (a provider without a credential, e.g. a local server).
func dropUnexpanded(hs []wire.KV) []wire.KV {
	out := hs[:0]
	for _, h := range hs {
		if !strings.Contains(h.Value, "${credential}") {
			out = append(out, h)
		}
	}
	return out
}

// upstreamFailure is the caller's error for a failed exchange: the provider
// and a short reason, never the upstream's address or the gateway's socket
// (err carries them, for the log only).
func upstreamFailure(provider string, err error) *wire.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &wire.Error{Status: 504, Kind: wire.ErrTimeout, Message: "upstream " + provider + " did not answer in time"}
	}
	if upstream.Saturated(err) {
		// The gateway's own limit, not the upstream: overloaded, retried
		// elsewhere or later, never an outage.
		return &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 1000,
			Message: "the gateway's connections to upstream " + provider + " are all in use; retry shortly"}
	}
	return &wire.Error{Status: 502, Kind: wire.ErrUpstream, Retryable: true, Message: "upstream " + provider + " " + upstream.Reason(err)}
}

// setHeaders writes the layers' headers and the degraded list.
func setHeaders(o *Outcome, x *pipeline.Exchange) {
	for _, h := range x.Headers {
		o.set(h.Key, h.Value)
	}
	if len(x.Degraded) > 0 {
		o.set(HeaderDegraded, strings.Join(x.Degraded, ", "))
	}
}

// finishError answers with e, with the layers' headers, and marks the
// request's settlement as failed.
func (g *Gateway) finishError(o *Outcome, held *holds, e *wire.Error) {
	held.fail(e)
	setHeaders(o, held.x)
	o.Err = e
}

// WriteError answers with the dialect's error object.
func WriteError(ctx *fasthttp.RequestCtx, d wire.Dialect, e *wire.Error) {
	status, body := codecFor(d).EncodeError(e)
	if e.RetryAfterMs > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.FormatInt((e.RetryAfterMs+999)/1000, 10))
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// translatedExtras are caller fields the cross-dialect translation honours on
// its own (stream_options.include_usage shapes the caller's stream).
var translatedExtras = map[string]bool{"stream_options": true}

// droppedFields names the top-level fields of extra that a translation drops.
// honoured names more fields this request's translation took care of.
func droppedFields(extra []byte, honoured ...string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(extra, &m) != nil {
		return "unknown"
	}
	var names []string
	for k := range m {
		if !translatedExtras[k] && !slices.Contains(honoured, k) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// Routing annotations. A layer sets AnnotationPrefer (a provider name) to ask
// for that provider first when it serves the request (session affinity keeps
// a provider's prompt cache warm); it never overrides which providers may
// serve, nor failover. The host sets AnnotationProvider and AnnotationModel
// before calling a provider, so response and stream phases know who answered.
const (
	AnnotationPrefer   = "bardo.route.prefer"
	AnnotationProvider = "bardo.route.provider"
	AnnotationModel    = "bardo.route.model"
)

// preferred moves the provider a layer asked for to the front of cands.
func preferred(cands []*pipeline.Provider, anns []wire.KV) []*pipeline.Provider {
	want := annotation(anns, AnnotationPrefer)
	if want == "" {
		return cands
	}
	for i, pr := range cands {
		if pr.Spec.Name == want && i > 0 {
			out := make([]*pipeline.Provider, 0, len(cands))
			out = append(out, pr)
			out = append(out, cands[:i]...)
			return append(out, cands[i+1:]...)
		}
	}
	return cands
}

// passCallerHeaders forwards the caller's protocol headers an upstream of the
// same dialect understands: anthropic-beta (feature flags such as interleaved
// thinking) to Anthropic upstreams, unless the adapter set its own. Auth
// headers are never forwarded: the upstream gets the provider's credential.
func passCallerHeaders(hs, caller []wire.KV, d wire.Dialect) []wire.KV {
	if d != wire.DialectAnthropic {
		return hs
	}
	for _, c := range caller {
		set := false
		for _, h := range hs {
			if strings.EqualFold(h.Key, c.Key) {
				set = true
				break
			}
		}
		if !set {
			hs = append(hs, c)
		}
	}
	return hs
}
