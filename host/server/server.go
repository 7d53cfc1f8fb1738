// Package server is the gateway's HTTP front: the fasthttp server with its
// limits and timeouts, the routes (API, health, metrics), panic containment,
// and graceful shutdown.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Server serves the gateway.
type Server struct {
	Gateway *gateway.Gateway
	Metrics *telemetry.Registry
	Log     *slog.Logger

	// Admin enables the administrative endpoints (/admin/...); nil or an
	// empty token leaves them off (404).
	Admin *Admin
	// Dashboard serves /dashboard (host/dashboard) when set; it answers
	// false for paths that are not its own.
	Dashboard interface {
		Handle(ctx *fasthttp.RequestCtx) bool
	}

	srv  *fasthttp.Server
	ln   net.Listener
	live atomic.Pointer[Liveness]
	// guardMetrics: the listen address is reachable from other machines, so
	// /metrics (spend per account and key, providers, models) needs the
	// admin token.
	guardMetrics bool
}

// SetLiveness makes /healthz answer from l (nil: always live).
func (sv *Server) SetLiveness(l *Liveness) { sv.live.Store(l) }

// New builds the fasthttp server from the [server] settings.
func New(s config.Server, gw *gateway.Gateway, metrics *telemetry.Registry, log *slog.Logger) *Server {
	sv := &Server{Gateway: gw, Metrics: metrics, Log: log}
	sv.srv = &fasthttp.Server{
		Name:                          "bardo",
		Handler:                       sv.handle,
		ErrorHandler:                  sv.transportError,
		MaxRequestBodySize:            int(s.MaxBodyBytes),
		ReadTimeout:                   s.ReadTimeout,
		WriteTimeout:                  s.WriteTimeout,
		IdleTimeout:                   s.IdleTimeout,
		DisableHeaderNamesNormalizing: false,
		NoDefaultDate:                 true,
		ReadBufferSize:                16 << 10,
		CloseOnShutdown:               true,
		StreamRequestBody:             false,
		// The API takes JSON only: a multipart body reaches the handler and
		// is refused there in the caller's dialect, never parsed.
		DisablePreParseMultipartForm: true,
		// Header parse errors must not carry the raw request head (its
		// Authorization header included) into the log.
		SecureErrorLogMessage: true,
		Logger:                fasthttpLogger{log: log},
	}
	return sv
}

// Listen binds addr (host:port).
func (sv *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	sv.ln = lingerListener{ln}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		sv.guardMetrics = true
	}
	return nil
}

// Addr is the bound address (after Listen).
func (sv *Server) Addr() string { return sv.ln.Addr().String() }

// Serve serves until Shutdown.
func (sv *Server) Serve() error {
	if sv.ln == nil {
		return errors.New("server: Serve before Listen")
	}
	return sv.srv.Serve(sv.ln)
}

// Shutdown stops accepting connections and waits for open requests (streams
// included) up to the deadline.
func (sv *Server) Shutdown(timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- sv.srv.Shutdown() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("shutdown: requests still open after %s", timeout)
	}
}

func (sv *Server) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			// A bug must cost one request, not the process.
			sv.Log.Error("panic serving request", "path", string(ctx.Path()), "panic", r, "stack", string(debug.Stack()))
			ctx.Response.Reset()
			writeError(ctx, dialectOf(ctx), &wire.Error{Status: 500, Kind: wire.ErrInternal,
				Message: "the gateway hit an internal error serving this request; it has been logged"})
		}
		sv.observe(ctx, start)
	}()
	if smuggled(&ctx.Request.Header) {
		refuseSmuggled(ctx)
		return
	}
	switch string(ctx.Path()) {
	case "/healthz":
		sv.healthz(ctx)
		return
	case "/metrics":
		sv.metrics(ctx)
		return
	case "/admin/cache/flush":
		if sv.Admin != nil && sv.Admin.Token != "" {
			sv.cacheFlush(ctx)
			return
		}
	case "/admin/regime":
		if sv.Admin != nil && sv.Admin.Token != "" {
			sv.regime(ctx)
			return
		}
	case "/admin/health":
		if sv.Admin != nil && sv.Admin.Token != "" {
			sv.healthReport(ctx)
			return
		}
	case "/admin/events":
		if sv.Admin != nil && sv.Admin.Token != "" {
			sv.events(ctx)
			return
		}
	case "/admin/events/stream":
		if sv.Admin != nil && sv.Admin.Token != "" {
			sv.eventStream(ctx)
			return
		}
	}
	if sv.Dashboard != nil && sv.Dashboard.Handle(ctx) {
		return
	}
	if sv.Admin != nil && sv.Admin.Token != "" && sv.accountsRoute(ctx) {
		return
	}
	if sv.Gateway.Handle(ctx) {
		return
	}
	writeError(ctx, dialectOf(ctx), &wire.Error{Status: 404, Kind: wire.ErrNotFound,
		Message: "no route for " + string(ctx.Method()) + " " + string(ctx.Path()) + "; the API lives at /v1/chat/completions, /v1/messages, /v1/responses, /v1/embeddings and /v1/models"})
}

// routeLabel keeps metric label cardinality bounded.
func routeLabel(ctx *fasthttp.RequestCtx) string {
	switch p := string(ctx.Path()); p {
	case "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/completions", "/v1/models", "/v1/responses", "/v1/embeddings", "/v1/balance", "/v1/usage", "/v1/usage/daily", "/v1/events", "/healthz", "/metrics",
		"/admin/cache/flush", "/admin/regime", "/admin/health", "/admin/events", "/admin/events/stream":
		return p
	}
	// The account API's paths carry ids: one label per family.
	switch p := string(ctx.Path()); {
	case strings.HasPrefix(p, "/admin/accounts"):
		return "/admin/accounts"
	case strings.HasPrefix(p, "/admin/keys"):
		return "/admin/keys"
	case p == "/dashboard" || strings.HasPrefix(p, "/dashboard/"):
		return "/dashboard"
	case strings.HasPrefix(p, "/v1/responses/"): // stored responses, by id
		return "/v1/responses/{id}"
	}
	return "other"
}

// dialectOf guesses the caller's dialect from the path and headers, for errors
// raised before a route is chosen.
func dialectOf(ctx *fasthttp.RequestCtx) wire.Dialect {
	if strings.HasPrefix(string(ctx.Path()), "/v1/messages") || len(ctx.Request.Header.Peek("anthropic-version")) > 0 {
		return wire.DialectAnthropic
	}
	return wire.DialectOpenAI
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func writeError(ctx *fasthttp.RequestCtx, d wire.Dialect, e *wire.Error) {
	gateway.WriteError(ctx, d, e)
}

// healthz answers liveness: 200 when the gateway can serve, 503 with the
// failing canaries when it cannot (see Liveness).
func (sv *Server) healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	l := sv.live.Load()
	if l == nil {
		ctx.SetBodyString(`{"status":"ok"}`)
		return
	}
	ok, why := l.Status()
	if ok {
		ctx.SetBodyString(`{"status":"ok"}`)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
	b, _ := json.Marshal(map[string]string{"status": "unavailable", "reason": why})
	ctx.SetBody(b)
}
