package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/sdk/wire"
)

// settlements records every settlement, by request ID.
type settlements struct {
	mu  sync.Mutex
	all []gateway.Settlement
}

func (s *settlements) Settled(st gateway.Settlement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, st)
}

func (s *settlements) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// of waits (bounded) for rid's settlement and fails unless there is exactly
// one. A stream settles when its writer ends, which may be just after the
// caller read its last byte.
func (s *settlements) of(t *testing.T, rid string) gateway.Settlement {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		var got []gateway.Settlement
		for _, st := range s.all {
			if st.RequestID == rid {
				got = append(got, st)
			}
		}
		s.mu.Unlock()
		if len(got) > 1 {
			t.Fatalf("%s settled %d times: %+v", rid, len(got), got)
		}
		if len(got) == 1 {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never settled", rid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func observe(g *testgateway.Gateway) *settlements {
	s := &settlements{}
	g.Daemon.Gateway.SetObserver(s)
	return s
}

func settledOf(t *testing.T, s *settlements, r reply) gateway.Settlement {
	t.Helper()
	rid := r.Header.Get(gateway.HeaderRequestID)
	if rid == "" {
		t.Fatalf("no request id: %d %s", r.Status, r.Body)
	}
	return s.of(t, rid)
}

// Every way a request can end passes through the one settlement point
// exactly once, with what a bill needs: JSON answers forwarded or
// translated, streams that end, break, or whose client hangs up, the
// simulator's local answers, upstream and gateway errors, and a layer's
// internal completion.
func TestSettlementEveryPathOnce(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	obs := observe(g)
	const ask = `"messages":[{"role":"user","content":"one two three"}]}`
	requests := 0
	check := func(r reply, want gateway.Settlement) gateway.Settlement {
		t.Helper()
		requests++
		st := settledOf(t, obs, r)
		if st.Path != want.Path || st.Status != want.Status || st.Provider != want.Provider || st.Upstream != want.Upstream ||
			st.Streamed != want.Streamed || st.StreamEnd != want.StreamEnd || (st.Asked != "" && st.Tenant != "anonymous") {
			t.Fatalf("settled %+v, want %+v (reply %d %s)", st, want, r.Status, r.Body)
		}
		if st.Status != r.Status {
			t.Fatalf("settled status %d, caller got %d", st.Status, r.Status)
		}
		return st
	}

	// Forwarded answers: usage read from their bytes (cached tokens
	// included), in both dialects.
	fake.Script(fakeupstream.Cached(5, 0))
	st := check(post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o",`+ask),
		gateway.Settlement{Path: gateway.PathPassthrough, Status: 200, Provider: "up", Upstream: true})
	if st.Model != "gpt-4o" || st.Usage == nil || st.Usage.OutputTokens == 0 || st.Usage.CacheReadTokens != 5 || st.Err != nil {
		t.Fatalf("passthrough: %+v %+v", st, st.Usage)
	}
	fake.Script(fakeupstream.Cached(7, 3))
	st = check(post(t, g.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,`+ask),
		gateway.Settlement{Path: gateway.PathPassthrough, Status: 200, Provider: "claude", Upstream: true})
	if st.Usage == nil || st.Usage.OutputTokens == 0 || st.Usage.CacheReadTokens != 7 || st.Usage.CacheWriteTokens != 3 {
		t.Fatalf("anthropic passthrough usage: %+v", st.Usage)
	}
	fake.Script(fakeupstream.Cached(7, 3))
	st = check(post(t, g.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,`+ask),
		gateway.Settlement{Path: gateway.PathPassthrough, Status: 200, Provider: "claude", Upstream: true, Streamed: true, StreamEnd: gateway.StreamEnded})
	if st.Usage == nil || st.Usage.InputTokens == 0 || st.Usage.OutputTokens == 0 || st.Usage.CacheReadTokens != 7 || st.Usage.CacheWriteTokens != 3 {
		t.Fatalf("anthropic passthrough stream usage: %+v", st.Usage)
	}
	st = check(post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},`+ask),
		gateway.Settlement{Path: gateway.PathPassthrough, Status: 200, Provider: "up", Upstream: true, Streamed: true, StreamEnd: gateway.StreamEnded})
	if st.Usage == nil || st.Usage.OutputTokens == 0 {
		t.Fatalf("openai passthrough stream usage: %+v", st.Usage)
	}
	// A translated answer (Anthropic caller, OpenAI upstream) has usage.
	st = check(post(t, g.URL, "/v1/messages", `{"model":"gpt-4o","max_tokens":64,`+ask),
		gateway.Settlement{Path: gateway.PathUpstream, Status: 200, Provider: "up", Upstream: true})
	if st.Usage == nil || st.Usage.InputTokens == 0 || st.Usage.OutputTokens == 0 {
		t.Fatalf("translated answer's usage: %+v", st.Usage)
	}
	// Streams: forwarded, translated (usage from its events), broken.
	check(post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,`+ask),
		gateway.Settlement{Path: gateway.PathPassthrough, Status: 200, Provider: "up", Upstream: true, Streamed: true, StreamEnd: gateway.StreamEnded})
	st = check(post(t, g.URL, "/v1/messages", `{"model":"gpt-4o","max_tokens":64,"stream":true,`+ask),
		gateway.Settlement{Path: gateway.PathUpstream, Status: 200, Provider: "up", Upstream: true, Streamed: true, StreamEnd: gateway.StreamEnded})
	if st.Usage == nil || st.Usage.OutputTokens == 0 {
		t.Fatalf("translated stream's usage: %+v", st.Usage)
	}
	fake.Script(fakeupstream.CutAfter(2))
	st = check(post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,`+ask),
		gateway.Settlement{Path: gateway.PathPassthrough, Status: 200, Provider: "up", Upstream: true, Streamed: true, StreamEnd: gateway.StreamBroken})
	if st.Err == nil {
		t.Fatal("a broken stream settled without its error")
	}
	// The simulator answers locally, as JSON and as a stream.
	check(post(t, g.URL, "/v1/chat/completions", `{"model":"local-model",`+ask),
		gateway.Settlement{Path: gateway.PathLocal, Status: 200, Provider: "sim"})
	check(post(t, g.URL, "/v1/chat/completions", `{"model":"local-model","stream":true,`+ask),
		gateway.Settlement{Path: gateway.PathLocal, Status: 200, Provider: "sim", Streamed: true, StreamEnd: gateway.StreamEnded})
	// Errors: the upstream's (reached, not retried), the gateway's own.
	fake.Script(fakeupstream.Fail(400))
	st = check(post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o",`+ask),
		gateway.Settlement{Path: gateway.PathError, Status: 400, Provider: "up", Upstream: true})
	if st.Err == nil || st.Err.Status != 400 {
		t.Fatalf("upstream error: %+v", st.Err)
	}
	check(post(t, g.URL, "/v1/chat/completions", `{"model":`),
		gateway.Settlement{Path: gateway.PathError, Status: 400})
	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	st = check(post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o",`+ask),
		gateway.Settlement{Path: gateway.PathError, Status: 502})
	if len(st.Tried) != 2 {
		t.Fatalf("failed attempts: %v", st.Tried)
	}

	// A client that hangs up mid-stream.
	fake.Script(fakeupstream.Drip(50 * time.Millisecond))
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(
		`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"`+strings.Repeat("word ", 200)+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	requests++
	st = obs.of(t, resp.Header.Get(gateway.HeaderRequestID))
	if st.StreamEnd != gateway.StreamClientGone || st.Provider != "up" || !st.Upstream {
		t.Fatalf("client gone: %+v", st)
	}

	// A method the endpoint refuses: settled, though it has no request ID.
	before := obs.count()
	if r := apitestGet(t, g.URL+"/v1/chat/completions"); r != 405 {
		t.Fatalf("GET: %d", r)
	}
	requests++
	if obs.count() != before+1 || obs.all[before].Path != gateway.PathError || obs.all[before].Status != 405 {
		t.Fatalf("405 settled as %+v", obs.all[before:])
	}

	// A layer's internal completion, charged to the caller who caused it.
	res, err := g.Daemon.Gateway.Complete(context.Background(), "tenant-b", sandbox.Completion{Request: &wire.Request{
		Model: "gpt-4o", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "sum up"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	requests++
	obs.mu.Lock()
	last := obs.all[len(obs.all)-1]
	obs.mu.Unlock()
	if !last.Internal || last.Path != gateway.PathInternal || last.Tenant != "tenant-b" || last.Provider != res.Provider ||
		!last.Upstream || last.Usage == nil || last.Usage.OutputTokens == 0 || last.Status != 200 {
		t.Fatalf("internal completion settled as %+v", last)
	}
	if n := obs.count(); n != requests {
		t.Fatalf("%d settlements for %d requests", n, requests)
	}
}

// A layer's answers settle too: a cache hit (JSON and streamed) with the
// cache's verdict, and the stale answer served when every provider fails.
func TestSettlementCacheHitAndStale(t *testing.T) {
	layers := `
[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
trusted = true
[layer.config]
ttl = "1s"
min_tokens = 0
`
	g, fake := startWithUpstream(t, layers)
	obs := observe(g)
	const body = `{"model":"gpt-4o","messages":[{"role":"user","content":"settle this"}]}`
	st := settledOf(t, obs, post(t, g.URL, "/v1/chat/completions", body))
	if st.Path != gateway.PathUpstream || st.Cache != "miss" || !st.Upstream {
		t.Fatalf("miss: %+v", st)
	}
	st = settledOf(t, obs, post(t, g.URL, "/v1/chat/completions", body))
	if st.Path != gateway.PathLayer || st.Cache != "hash-hit" || st.Upstream || st.Provider != "" || st.Status != 200 {
		t.Fatalf("hit: %+v", st)
	}
	st = settledOf(t, obs, post(t, g.URL, "/v1/chat/completions", strings.Replace(body, `"messages"`, `"stream":true,"messages"`, 1)))
	if st.Path != gateway.PathLayer || st.Cache != "hash-hit" || !st.Streamed || st.StreamEnd != gateway.StreamEnded || st.Usage == nil {
		t.Fatalf("streamed hit: %+v", st)
	}
	time.Sleep(1100 * time.Millisecond) // past the entry's TTL
	fake.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	r := post(t, g.URL, "/v1/chat/completions", body)
	st = settledOf(t, obs, r)
	if r.Status != 200 || st.Path != gateway.PathStale || st.Cache != "stale" || st.Upstream || len(st.Tried) != 2 {
		t.Fatalf("stale: %d %+v", r.Status, st)
	}
	if n := obs.count(); n != 4 {
		t.Fatalf("%d settlements for 4 requests", n)
	}
}

func apitestGet(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A layer's internal completion runs the caller's failover loop: a provider
// backing off after a 429 is tried after the others, not first (the
// completion loop of old tried it first and hit its limit again), and the
// failed attempts are settled with it.
func TestInternalCompletionSharesTheFailoverLoop(t *testing.T) {
	g, primary, backup := startPrimaryBackup(t, testgateway.Options{})
	obs := observe(g)
	primary.Script(fakeupstream.RateLimited(30))
	if r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`); r.Status != 200 ||
		r.Header.Get("X-Bardo-Provider") != "backup" || !g.Daemon.Health.BackingOff("primary") {
		t.Fatalf("setup: %d %q", r.Status, r.Header.Get("X-Bardo-Provider"))
	}
	complete := func() (sandbox.CompletionResult, gateway.Settlement) {
		t.Helper()
		res, err := g.Daemon.Gateway.Complete(context.Background(), "tenant-c", sandbox.Completion{Request: &wire.Request{
			Model: "gpt-4o", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "sum up"}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return res, obs.all[len(obs.all)-1]
	}
	before := primary.Count("/v1/chat/completions")
	if res, st := complete(); res.Provider != "backup" || primary.Count("/v1/chat/completions") != before || st.Provider != "backup" {
		t.Fatalf("internal completion served by %q (primary got %d more), settled %+v", res.Provider,
			primary.Count("/v1/chat/completions")-before, st)
	}
	// The backup fails: the primary is the last resort, and the settlement
	// names the failed attempts.
	backup.Script(fakeupstream.Fail(502), fakeupstream.Fail(502))
	if res, st := complete(); res.Provider != "primary" || strings.Join(st.Tried, ",") != "backup:502,backup:502" || !st.Internal {
		t.Fatalf("last resort: %q, settled %+v", res.Provider, st)
	}
}
