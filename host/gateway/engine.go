package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"net/netip"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Header reads a caller's request headers; *fasthttp.RequestHeader fits.
type Header interface {
	Peek(name string) []byte
	All() iter.Seq2[[]byte, []byte]
}

// Call is one decoded request, as a front (the HTTP API today; the
// Responses API or an edge front later) hands it to the engine.
type Call struct {
	RequestID string
	Dialect   wire.Dialect
	Req       *wire.Request
	Body      []byte // the caller's bytes, forwarded untouched when nothing changes them
	Header    Header // the caller's headers: credentials, X-Bardo-*, anthropic-beta
	Path      string // the endpoint, for admission
	RemoteIP  netip.Addr

	began time.Time // when the front took the request
}

// Outcome is the engine's answer for a front to write: headers, then an
// error in the caller's dialect, a JSON body, or a stream.
type Outcome struct {
	Headers []wire.KV   // response headers, in order; a later one replaces an earlier of the same name
	Err     *wire.Error // the answer is this error
	Body    []byte      // a JSON answer in the caller's dialect
	// Stream writes an SSE answer in the caller's dialect. The front must
	// run it exactly once, after the headers: it holds the request's
	// pipeline and context, and settles the request when it returns.
	Stream func(w *bufio.Writer)
	// errMembers are written beside Err's object (Caller.ErrorMembers).
	errMembers []byte
	// tenant is the admitted caller's ("" when admission refused it): the
	// Responses front stores the answer under it.
	tenant string
}

// set sets header k, replacing an earlier value.
func (o *Outcome) set(k, v string) {
	for i := range o.Headers {
		if strings.EqualFold(o.Headers[i].Key, k) {
			o.Headers[i].Value = v
			return
		}
	}
	o.Headers = append(o.Headers, wire.KV{Key: k, Value: v})
}

// Serve is the engine: admission, request phase, routing, the failover
// loop, the answer (response or stream phase), and settlement, for one
// decoded request. It knows no transport; every way out settles once
// (holds.end, or the stream writer's end).
func (g *Gateway) Serve(call *Call) *Outcome {
	o := &Outcome{}
	rid, d, req := call.RequestID, call.Dialect, call.Req
	began := call.began
	if began.IsZero() {
		began = time.Now()
	}
	// A streamed answer is written by a goroutine that outlives Serve: its
	// writer takes the request's context, pipeline reference and settlement
	// over (held.handOff).
	held := &holds{g: g, began: began, s: Settlement{RequestID: rid, Dialect: d, Path: PathError}}
	held.o = o
	defer held.end()
	held.s.Asked = req.Model
	held.s.trace = g.Tracer.Start(call.Header, began, rid, d.String(), call.Path, req)

	p, release := g.Pipelines.Acquire()
	held.p, held.release = p, release
	adm := &Admission{Dialect: d, Path: call.Path, Header: call.Header, RemoteIP: call.RemoteIP, Model: req.Model, Spends: true,
		Method: "POST", Body: call.Body}
	estimate(adm, p, req, call.Body)
	adm.Direct = directOnly(p, call.Header, req.Model)
	admitted := held.s.trace.Now()
	caller, werr := g.admit(context.Background(), adm)
	held.s.trace.Admission(admitted, werr)
	held.s.Tenant, held.s.Key, held.tab = caller.Tenant, caller.Key, caller.Tab
	for _, kv := range caller.Headers {
		o.set(kv.Key, kv.Value)
	}
	if werr != nil {
		held.fail(werr)
		o.Err, o.errMembers = werr, caller.ErrorMembers
		return o
	}
	o.tenant = caller.Tenant
	g.Events.EmitFor(eventlog.InferenceStart, rid, caller.Tenant, map[string]any{"model": req.Model, "dialect": d.String(), "stream": req.Stream})
	body := call.Body
	if caller.Model != "" && caller.Model != req.Model {
		// A budget downgrade: the cheaper model is asked for from here on,
		// in the caller's bytes too (they may be forwarded as they are).
		if b, err := mergeMembers(body, modelMember(caller.Model), false); err == nil {
			g.Events.Emit(eventlog.BudgetDowngraded, rid, map[string]any{"account": caller.Tenant, "key": caller.Key, "from": req.Model, "to": caller.Model})
			req.Model, body = caller.Model, b
		}
	}

	hideUsage := false
	if held.tab != nil && d == wire.DialectOpenAI && req.Stream {
		body, hideUsage = askUsage(body) // streamusage.go
	}

	x := g.newExchange(call.Header, rid, caller.Tenant, d, req, body)
	x.Degraded = append(x.Degraded, caller.Degraded...)
	held.x = x
	rctx, cancel := context.WithTimeout(context.Background(), g.timeout())
	rctx = held.s.trace.Context(rctx) // layer calls and attempts are its child spans
	if held.tab != nil {
		// A layer's internal completions are charged to this request.
		rctx = context.WithValue(rctx, tabKey{}, held.tab)
	}
	held.cancel = cancel

	answer, werr := p.RequestPhase(rctx, x)
	if werr != nil {
		g.finishError(o, held, werr)
		return o
	}
	if answer != nil {
		held.s.Path = PathLayer
		g.answerLocal(o, rctx, held, p, x, answer)
		return o
	}

	planned := held.s.trace.Now()
	plan, werr := g.newPlanner(call.Header, p, x)
	held.s.trace.Route(planned, routeMode(plan), werr)
	if werr != nil {
		g.finishError(o, held, werr)
		return o
	}
	res := g.failover(rctx, p, x, plan, failoverOptions{})
	tried := res.tried
	held.s.Tried = tried
	held.s.UpstreamWait = res.waited
	switch {
	case res.planErr != nil:
		// Every provider that could serve is out of service: a cached
		// answer beats an error.
		if res.planErr.Status == 503 && g.answerStale(o, rctx, held, p, x, tried) {
			return o
		}
		g.finishError(o, held, res.planErr)
		return o
	case res.final:
		out, route := res.out, res.route
		setRoute(o, route, tried)
		held.s.Provider, held.s.Model = route.Provider, route.Model
		if pr := p.Provider(route.Provider); pr != nil {
			held.s.Direct = pr.Spec.Direct
		}
		held.s.Upstream = out.resp != nil || out.upStatus != 0
		switch {
		case out.local != nil:
			held.s.Path = PathLocal
			g.answerLocal(o, rctx, held, p, x, out.local)
		case out.resp != nil && out.call.Stream:
			// The stream writer runs after Serve returns; it owns the
			// pipeline reference, the context and the upstream response
			// from here on.
			setHeaders(o, x)
			st := &streamer{g: g, p: p, pr: res.pr, route: route, x: x, resp: out.resp, first: out.first,
				upDialect: out.call.ResponseDialect, ctx: rctx, tab: &held.s, done: held.handOff(), closing: held.closeStream, hideUsage: hideUsage, began: held.began}
			o.Stream = st.run
		case out.resp != nil:
			g.answerUpstream(o, rctx, held, p, res.pr, route, x, out.call, out.resp)
		default:
			g.finishError(o, held, out.err)
		}
		return o
	}
	// Every candidate failed: a cached answer if a layer keeps one, else the
	// caller gets the last failure, and the fallback header says what was
	// tried. Nothing was charged.
	if g.answerStale(o, rctx, held, p, x, tried) {
		return o
	}
	if len(tried) > 0 {
		o.set(HeaderFallback, strings.Join(tried, ","))
	}
	g.Events.Emit(eventlog.ProvidersExhausted, rid, map[string]any{"tried": tried})
	lastErr := res.lastErr
	if lastErr == nil && rctx.Err() != nil {
		lastErr = &wire.Error{Status: 504, Kind: wire.ErrTimeout, Message: "the request's time ran out before a provider could be tried"}
	}
	if lastErr == nil {
		// No attempt at all: health took every candidate out.
		lastErr = &wire.Error{Status: 503, Kind: wire.ErrOverloaded, RetryAfterMs: 30_000,
			Message: "every provider that can serve model " + x.Req.Model + " is temporarily out of service after repeated failures (" +
				strings.Join(tried, ", ") + "); retry later"}
	}
	g.finishError(o, held, lastErr)
	return o
}

// refused settles a request a front turned away before the engine saw it
// (a wrong method, a body that does not decode).
func (g *Gateway) refused(rid string, d wire.Dialect, e *wire.Error, began time.Time) {
	status, _ := codecFor(d).EncodeError(e)
	g.settle(&Settlement{RequestID: rid, Dialect: d, Path: PathError, Status: status, Err: e, Latency: time.Since(began)})
}

// tabKey carries a request's tab in its context, for the internal
// completions its layers make (Complete).
type tabKey struct{}

// tabOf returns the tab of the request ctx belongs to, or nil.
func tabOf(ctx context.Context) Tab {
	t, _ := ctx.Value(tabKey{}).(Tab)
	return t
}

// modelMember is a JSON object holding one "model" member.
func modelMember(model string) []byte {
	b, _ := json.Marshal(map[string]string{"model": model})
	return b
}

// directOnly reports whether the caller pays every provider that prices
// model with its own key: it sent one, and every such provider is direct.
// Only then does its admission reserve nothing; a request that may fall
// back to a paid provider reserves like any other (and is charged nothing
// when a direct provider serves it).
func directOnly(p *pipeline.Pipeline, h Header, model string) bool {
	if callerKey(h) == "" {
		return false
	}
	ms := p.Priced(model)
	for _, m := range ms {
		if pr := p.Provider(m.Provider); pr == nil || !pr.Spec.Direct {
			return false
		}
	}
	return len(ms) > 0
}
