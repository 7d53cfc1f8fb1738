// Package gateway serves the inference API: it decodes the caller's dialect,
// runs the request through the current pipeline, calls the chosen provider's
// upstream through its adapter plugin, and answers in the caller's dialect, as
// JSON or as a stream, with every decision in X-Bardo-* headers.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Response headers.
const (
	HeaderRequestID = "X-Bardo-Request-Id"
	HeaderProvider  = "X-Bardo-Provider"
	HeaderModel     = "X-Bardo-Model"
	HeaderDegraded  = "X-Bardo-Degraded"
	HeaderSession   = "X-Bardo-Session"
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
	default:
		return false
	}
	return true
}

func (g *Gateway) onlyPost(ctx *fasthttp.RequestCtx, method string, d wire.Dialect) {
	if method != fasthttp.MethodPost {
		ctx.Response.Header.Set("Allow", "POST")
		WriteError(ctx, d, &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest,
			Message: "method " + method + " is not allowed on " + string(ctx.Path()) + "; use POST"})
		return
	}
	g.serve(ctx, d)
}

// newRequestID returns "req_" and 24 random hex digits.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// serve is the request's way: decode, request phase, route, encode, upstream,
// decode, response phase, encode in the caller's dialect.
func (g *Gateway) serve(ctx *fasthttp.RequestCtx, d wire.Dialect) {
	rid := newRequestID()
	ctx.Response.Header.Set(HeaderRequestID, rid)
	cd := codecFor(d)

	body := ctx.PostBody()
	req, err := cd.DecodeRequest(body)
	if err != nil {
		WriteError(ctx, d, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()})
		return
	}

	p, release := g.Pipelines.Acquire()
	// A stream hands release to its writer, which runs after this returns.
	defer func() {
		if release != nil {
			release()
		}
	}()
	x := newExchange(ctx, rid, d, req, body)
	rctx, cancel := context.WithTimeout(context.Background(), g.timeout())
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()

	answer, werr := p.RequestPhase(rctx, x)
	if werr != nil {
		g.finishError(ctx, x, werr)
		return
	}
	if answer != nil {
		g.answerLocal(ctx, rctx, p, x, answer)
		return
	}

	pr, route, werr := p.Route(x)
	if werr != nil {
		g.finishError(ctx, x, werr)
		return
	}
	ctx.Response.Header.Set(HeaderProvider, route.Provider)
	ctx.Response.Header.Set(HeaderModel, route.Model)

	er, werr := p.Encode(rctx, x, pr, route)
	if werr != nil {
		g.finishError(ctx, x, werr)
		return
	}
	if er.Local != nil {
		if er.Local.Model == "" {
			er.Local.Model = route.Model
		}
		g.answerLocal(ctx, rctx, p, x, er.Local)
		return
	}
	call := er.Call
	upBody, werr := g.upstreamBody(x, call, route)
	if werr != nil {
		g.finishError(ctx, x, werr)
		return
	}
	pr.ExpandCredential(call.Headers)
	resp, err := g.Upstream.Do(rctx, &upstream.Request{
		Method: call.Method, URL: call.URL, Headers: dropUnexpanded(call.Headers), Body: upBody, Stream: call.Stream,
	})
	if err != nil {
		g.finishError(ctx, x, upstreamFailure(route.Provider, err))
		return
	}
	if resp.Status/100 != 2 {
		resp.Close()
		_, werr := p.Decode(rctx, x, pr, route, resp.Status, resp.Headers, resp.Body)
		if werr == nil {
			werr = &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "upstream " + route.Provider + " failed"}
		}
		g.finishError(ctx, x, werr)
		return
	}
	if call.Stream {
		// The stream writer runs after serve returns; it owns the pipeline
		// reference, the context and the upstream response from here on.
		s := &streamer{g: g, p: p, pr: pr, route: route, x: x, resp: resp, upDialect: call.ResponseDialect,
			ctx: rctx, cancel: cancel, release: release}
		release, cancel = nil, nil
		s.start(ctx)
		return
	}
	g.answerUpstream(ctx, rctx, p, pr, route, x, call, resp)
}

func newExchange(ctx *fasthttp.RequestCtx, rid string, d wire.Dialect, req *wire.Request, body []byte) *pipeline.Exchange {
	return &pipeline.Exchange{
		Meta: wire.Meta{
			RequestID: rid,
			Tenant:    tenantOf(ctx),
			Session:   string(ctx.Request.Header.Peek(HeaderSession)),
			Dialect:   d,
			Model:     req.Model,
			Stream:    req.Stream,
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

// tenantOf names the caller for kv namespacing. Until authentication lands,
// every caller is the anonymous tenant.
func tenantOf(*fasthttp.RequestCtx) string { return "anonymous" }

// upstreamBody picks the bytes to send: the caller's own when nothing changed
// and the upstream speaks the caller's dialect (unknown fields and every
// cache_control survive untouched), otherwise a native encoding.
func (g *Gateway) upstreamBody(x *pipeline.Exchange, call *wire.UpstreamCall, route wire.Route) ([]byte, *wire.Error) {
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
		if call.BodyDialect != x.Meta.Dialect && len(req.Extra) > 0 {
			// Unknown top-level fields are the caller's dialect's: they mean
			// nothing (or something else) to the other one.
			cp := *req
			cp.Extra = nil
			req = &cp
			x.Degraded = append(x.Degraded, "dropped-unknown-fields")
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

func upstreamFailure(provider string, err error) *wire.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &wire.Error{Status: 504, Kind: wire.ErrTimeout, Message: "upstream " + provider + " did not answer in time"}
	}
	return &wire.Error{Status: 502, Kind: wire.ErrUpstream, Retryable: true, Message: err.Error()}
}

// setHeaders writes the layers' headers and the degraded list.
func setHeaders(ctx *fasthttp.RequestCtx, x *pipeline.Exchange) {
	for _, h := range x.Headers {
		ctx.Response.Header.Set(h.Key, h.Value)
	}
	if len(x.Degraded) > 0 {
		ctx.Response.Header.Set(HeaderDegraded, strings.Join(x.Degraded, ", "))
	}
}

func (g *Gateway) finishError(ctx *fasthttp.RequestCtx, x *pipeline.Exchange, e *wire.Error) {
	setHeaders(ctx, x)
	WriteError(ctx, x.Meta.Dialect, e)
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
