package gateway

import (
	"bufio"
	"context"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/sdk/wire"
)

// events serves GET /v1/events: the caller's own inference events
// (inference.start, .end with cost and latency, .cache_hit, and
// .provider_fallback) as server-sent events, from now or after
// Last-Event-ID. A caller sees its account's events only; the operator's
// stream of everything is /admin/events/stream.
func (g *Gateway) events(ctx *fasthttp.RequestCtx) {
	d, caller, ok := g.admitGet(ctx)
	if !ok {
		return
	}
	if g.Events == nil {
		WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: "this gateway keeps no event stream"})
		return
	}
	from := g.Events.ParseLastEventID(ctx.Request.Header.Peek("Last-Event-ID"))
	account := caller.Tenant
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	log, heartbeat := g.Events, g.heartbeat()
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		// The writer runs after the handler returned; it ends when the
		// caller hangs up (a failed write) or is dropped for falling behind.
		log.SSE(context.Background(), w, from, func(e *eventlog.Event) bool { return e.Account == account }, heartbeat)
	})
}
