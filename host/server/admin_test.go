package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/telemetry"
)

func TestCacheFlush(t *testing.T) {
	kv := kvstore.NewMemory(1 << 20)
	put := func(keys ...string) {
		for _, k := range keys {
			kv.Put(k, []byte("v"), time.Minute)
		}
	}
	acme := sandbox.TenantPrefix("hashcache", "acme") + "r:1"
	acme2 := sandbox.TenantPrefix("hashcache", "acme") + "r:2"
	globex := sandbox.TenantPrefix("hashcache", "globex") + "r:1"
	shared := sandbox.SharedPrefix("hashcache") + "r:1"
	other := sandbox.TenantPrefix("promptcache", "acme") + "s:1"
	put(acme, acme2, globex, shared, other)

	metrics := telemetry.New()
	sv := New(config.Server{}, &gateway.Gateway{}, metrics, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sv.Admin = &Admin{Token: "admin-secret", KV: kv}
	call := func(method, auth, body string) (int, map[string]any) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI("/admin/cache/flush")
		if auth != "" {
			ctx.Request.Header.Set("Authorization", auth)
		}
		ctx.Request.SetBodyString(body)
		sv.handle(&ctx)
		var m map[string]any
		json.Unmarshal(ctx.Response.Body(), &m)
		return ctx.Response.StatusCode(), m
	}
	present := func(k string) bool { _, ok := kv.Get(k); return ok }

	for _, tc := range []struct {
		method, auth, body string
		status             int
	}{
		{"GET", "Bearer admin-secret", "", 405},
		{"POST", "", `{"layer":"hashcache","tenant":"acme"}`, 401},
		{"POST", "Bearer wrong", `{"layer":"hashcache","tenant":"acme"}`, 401},
		{"POST", "Bearer admin-secret", `nope`, 400},
		{"POST", "Bearer admin-secret", `{"layer":"Hash\u0000cache","tenant":"acme"}`, 400},
		{"POST", "Bearer admin-secret", `{"layer":"hashcache"}`, 400}, // a global flush must say so
		{"POST", "Bearer admin-secret", `{"layer":"hashcache","scope":"tenant"}`, 400},
	} {
		if status, _ := call(tc.method, tc.auth, tc.body); status != tc.status {
			t.Fatalf("%s %q %s: status %d, want %d", tc.method, tc.auth, tc.body, status, tc.status)
		}
	}
	if kv.Len() != 5 {
		t.Fatalf("a refused flush deleted keys: %d left", kv.Len())
	}

	status, m := call("POST", "Bearer admin-secret", `{"layer":"hashcache","tenant":"acme"}`)
	if status != 200 || m["deleted"] != 2.0 || m["scope"] != "tenant" || present(acme) || present(acme2) || !present(globex) || !present(shared) || !present(other) {
		t.Fatalf("tenant flush: %d %v", status, m)
	}
	status, m = call("POST", "Bearer admin-secret", `{"layer":"hashcache","scope":"shared"}`)
	if status != 200 || m["deleted"] != 1.0 || present(shared) || !present(globex) {
		t.Fatalf("shared flush: %d %v", status, m)
	}
	put(acme, shared)
	status, m = call("POST", "Bearer admin-secret", `{"layer":"hashcache","scope":"all"}`)
	if status != 200 || m["deleted"] != 3.0 || kv.Len() != 1 || !present(other) {
		t.Fatalf("global flush: %d %v, %d keys left", status, m, kv.Len())
	}
	if metrics.Value("bardo_cache_flushes_total", "layer", "hashcache", "scope", "all") != 1 ||
		metrics.Value("bardo_cache_invalidations_total", "layer", "hashcache") != 6 {
		t.Fatal("flush metrics")
	}

	// Without a token the endpoint does not exist.
	sv.Admin.Token = ""
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/admin/cache/flush")
	sv.handle(&ctx)
	if ctx.Response.StatusCode() != 404 {
		t.Fatalf("admin endpoint without a token: status %d, want 404", ctx.Response.StatusCode())
	}
}

func TestRegime(t *testing.T) {
	gw := &gateway.Gateway{}
	sv := New(config.Server{}, gw, telemetry.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	sv.Admin = &Admin{Token: "admin-secret"}
	call := func(method, auth, body string) (int, map[string]any) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI("/admin/regime")
		if auth != "" {
			ctx.Request.Header.Set("Authorization", auth)
		}
		ctx.Request.SetBodyString(body)
		sv.handle(&ctx)
		var m map[string]any
		json.Unmarshal(ctx.Response.Body(), &m)
		return ctx.Response.StatusCode(), m
	}
	if st, _ := call("POST", "Bearer wrong", `{"regime":"crisis"}`); st != 401 || gw.Regime() != "" {
		t.Fatalf("unauthorised set: %d, regime %q", st, gw.Regime())
	}
	for _, bad := range []string{`{"regime":"panic"}`, `nope`, `{}`} {
		if st, _ := call("POST", "Bearer admin-secret", bad); st != 400 {
			t.Errorf("%s: status %d, want 400", bad, st)
		}
	}
	if st, m := call("POST", "Bearer admin-secret", `{"regime":"volatile"}`); st != 200 || m["regime"] != "volatile" || gw.Regime() != "volatile" {
		t.Fatalf("set: %d %v, regime %q", st, m, gw.Regime())
	}
	if st, m := call("GET", "Bearer admin-secret", ""); st != 200 || m["regime"] != "volatile" {
		t.Fatalf("get: %d %v", st, m)
	}
	if st, _ := call("DELETE", "Bearer admin-secret", ""); st != 405 {
		t.Errorf("DELETE: %d", st)
	}
	// Without an admin token the endpoint does not exist.
	sv.Admin = nil
	if st, _ := call("GET", "Bearer admin-secret", ""); st != 404 {
		t.Errorf("admin off: %d, want 404", st)
	}
}
