package server

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/telemetry"
)

// On a listen address other machines reach, /metrics carries spend per
// account and key: it needs the admin token. On loopback it stays open to
// the local scraper. (Tests bind loopback only, so the guard is set as
// Listen sets it for a public address.)
func TestMetricsGuardedOffLoopback(t *testing.T) {
	sv := New(config.Server{}, &gateway.Gateway{}, telemetry.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	scrape := func(auth string) (int, string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI("/metrics")
		if auth != "" {
			ctx.Request.Header.Set("Authorization", auth)
		}
		sv.handle(&ctx)
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	if code, body := scrape(""); code != 200 || !strings.Contains(body, "# HELP") {
		t.Fatalf("loopback scrape: %d %.200s", code, body)
	}
	sv.guardMetrics = true
	if code, body := scrape(""); code != 403 || !strings.Contains(body, "BARDO_ADMIN_TOKEN") {
		t.Fatalf("public, no admin token configured: %d %s", code, body)
	}
	sv.Admin = &Admin{Token: "admin-secret"}
	for _, auth := range []string{"", "Bearer wrong"} {
		if code, _ := scrape(auth); code != 401 {
			t.Fatalf("public, auth %q: %d", auth, code)
		}
	}
	if code, body := scrape("Bearer admin-secret"); code != 200 || !strings.Contains(body, "# HELP") {
		t.Fatalf("public, with the token: %d %.200s", code, body)
	}
}

func TestListenLoopbackLeavesMetricsOpen(t *testing.T) {
	sv := New(config.Server{}, &gateway.Gateway{}, telemetry.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := sv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sv.ln.Close()
	if sv.guardMetrics {
		t.Fatal("a loopback listen guards /metrics")
	}
}
