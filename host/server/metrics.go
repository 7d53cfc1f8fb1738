package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/sdk/wire"
)

// metrics serves GET /metrics: the Prometheus text exposition.
func (sv *Server) metrics(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType(telemetry.ContentType)
	if _, err := sv.Metrics.WriteTo(ctx); err != nil {
		// The exposition written so far stands (the failing metric is left
		// out); the cause is the operator's, in the log.
		sv.Log.Warn("metrics exposition incomplete", "err", err)
	}
}

// observe records a served request. The inference metrics read what the
// gateway already tells the caller in its X-Bardo-* response headers, so
// they agree with the headers by construction.
func (sv *Server) observe(ctx *fasthttp.RequestCtx, start time.Time) {
	route, code := routeLabel(ctx), strconv.Itoa(ctx.Response.StatusCode())
	sv.Metrics.Add("bardo_http_requests_total", 1, "path", route, "code", code)
	sv.Metrics.Observe("bardo_http_request_seconds", time.Since(start).Seconds(), "path", route)
	endpoint := inferenceEndpoint(route)
	if endpoint == "" {
		return
	}
	d := "openai"
	if dialectOf(ctx) == wire.DialectAnthropic {
		d = "anthropic"
	}
	sv.Metrics.Add("bardo_requests_total", 1, "dialect", d, "endpoint", endpoint, "code", code)
	h := &ctx.Response.Header
	if p := h.Peek(gateway.HeaderProvider); len(p) > 0 {
		sv.Metrics.Add("bardo_provider_responses_total", 1, "provider", string(p), "model", string(h.Peek(gateway.HeaderModel)), "code", code)
	}
	if f := h.Peek(gateway.HeaderFallback); len(f) > 0 {
		// Entries are "provider:status" or "provider:down", and a final
		// "cache:stale" when a stale answer was served.
		for _, e := range strings.Split(string(f), ",") {
			e = strings.TrimSpace(e)
			if e == "cache:stale" {
				sv.Metrics.Add("bardo_cache_stale_served_total", 1)
				continue
			}
			if i := strings.LastIndexByte(e, ':'); i > 0 {
				sv.Metrics.Add("bardo_failovers_total", 1, "provider", e[:i], "reason", e[i+1:])
			}
		}
	}
	if dg := h.Peek("X-Bardo-Degraded"); len(dg) > 0 {
		for _, e := range strings.Split(string(dg), ",") {
			if l, ok := strings.CutPrefix(strings.TrimSpace(e), "layer-skipped:"); ok {
				sv.Metrics.Add("bardo_layer_skips_total", 1, "layer", l)
			}
		}
	}
	if c := h.Peek("X-Bardo-Cache"); len(c) > 0 {
		sv.Metrics.Add("bardo_cache_answers_total", 1, "result", string(c))
	}
}

// inferenceEndpoint names the inference routes for bardo_requests_total; ""
// for the rest.
func inferenceEndpoint(route string) string {
	switch route {
	case "/v1/chat/completions":
		return "chat_completions"
	case "/v1/messages":
		return "messages"
	case "/v1/messages/count_tokens":
		return "count_tokens"
	case "/v1/completions":
		return "completions"
	}
	return ""
}
