package server

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/sdk/wire"
)

// metrics serves GET /metrics: the Prometheus text exposition.
func (sv *Server) metrics(ctx *fasthttp.RequestCtx) {
	if sv.guardMetrics {
		// Off loopback the metrics are business data (spend per account
		// and key): a scraper sends the admin token, as Prometheus does
		// with authorization.credentials.
		if sv.Admin == nil || sv.Admin.Token == "" {
			adminFail(ctx, 403, "/metrics on a non-loopback listen address needs BARDO_ADMIN_TOKEN set, and Authorization: Bearer <token> on the scrape")
			return
		}
		if !sv.adminAuthorized(ctx) {
			adminFail(ctx, 401, errAdminToken)
			return
		}
	}
	ctx.SetContentType(telemetry.ContentType)
	if _, err := sv.Metrics.WriteTo(ctx); err != nil {
		// The exposition written so far stands (the failing metric is left
		// out); the cause is the operator's, in the log.
		sv.Log.Warn("metrics exposition incomplete", "err", err)
	}
}

// observe records a served request. What the gateway decided (provider,
// failovers, cache, skipped layers) is counted at its settlement point
// (host/daemon's settlementMetrics), where every outcome passes once.
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
