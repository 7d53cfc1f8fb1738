package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/daemon"
	"github.com/bardoinference/bardo/host/server"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// waitFor polls cond every 50 ms, at most n times.
func waitFor(n int, cond func() bool) bool {
	for range n {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

// TestLivenessCanaries: a canary that errs, and one blocked on a lock it
// cannot take (its age tells, since it cannot report), make the gateway not
// live; both recover once the cause is gone.
func TestLivenessCanaries(t *testing.T) {
	var mu sync.RWMutex
	var fail error
	var failMu sync.Mutex
	l := server.NewLiveness([]server.Check{
		{Name: "lock", Run: func(context.Context) error { mu.RLock(); defer mu.RUnlock(); return nil }},
		{Name: "err", Run: func(context.Context) error { failMu.Lock(); defer failMu.Unlock(); return fail }},
	}, server.LivenessConfig{Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond})
	l.Start()
	t.Cleanup(l.Close)
	live := func() bool { ok, _ := l.Status(); return ok }
	if !waitFor(40, live) {
		t.Fatal("not live at start")
	}
	mu.Lock()
	if !waitFor(100, func() bool { return !live() }) {
		t.Fatal("still live while a canary is blocked")
	}
	if _, why := l.Status(); !strings.Contains(why, "lock: no answer for") {
		t.Errorf("reason %q", why)
	}
	mu.Unlock()
	if !waitFor(100, live) {
		t.Fatal("not live after the lock came free")
	}
	failMu.Lock()
	fail = errors.New("pool exhausted")
	failMu.Unlock()
	if !waitFor(100, func() bool { return !live() }) {
		t.Fatal("live while a canary fails")
	}
	if _, why := l.Status(); why != "err: pool exhausted" {
		t.Errorf("reason %q", why)
	}
}

// TestHealthzFalseWhilePluginPoolStuck: through the real server and the
// daemon's canaries, /healthz is 503 while a layer's only instance is held
// by a call that cannot be interrupted (so no request can pass the layer),
// and 200 again once it is free. Before, /healthz was a constant 200.
func TestHealthzFalseWhilePluginPoolStuck(t *testing.T) {
	testgateway.Plugins["slow.wasm"] = "testplugins/slow"
	g := testgateway.Start(t, `
[[layer]]
name = "stuck"
plugin = "slow.wasm"
trusted = true
pool = 1
timeout = "100ms"
on_error = "fail-open"
`+simOnly, testgateway.Options{})
	l := server.NewLiveness(daemon.LivenessChecks(g.Daemon), server.LivenessConfig{Interval: 50 * time.Millisecond, Timeout: 500 * time.Millisecond})
	l.Start()
	t.Cleanup(l.Close)
	g.Server.SetLiveness(l)
	healthz := func() (int, string) {
		resp, err := http.Get(g.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if !waitFor(60, func() bool { st, _ := healthz(); return st == 200 }) {
		st, b := healthz()
		t.Fatalf("before the stall: %d %s", st, b)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Holds the layer's only instance for 3 s.
		resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"sleep %s"}]}`, 3*time.Second)))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	var st int
	var body string
	if !waitFor(50, func() bool { st, body = healthz(); return st == 503 }) {
		t.Fatalf("while the pool is stuck: %d %s", st, body)
	}
	if !strings.Contains(body, "plugins: plugin stuck") || strings.Contains(body, "plugin sim") {
		t.Errorf("reason (only the stuck pool): %s", body)
	}
	<-done
	if !waitFor(100, func() bool { st, body = healthz(); return st == 200 }) {
		t.Fatalf("after the stall: %d %s", st, body)
	}
}
