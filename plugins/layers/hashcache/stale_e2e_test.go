//go:build !wasip1

package main_test

// All providers down: the gateway serves the entry this layer kept past its
// TTL (stale_if_error), in the caller's dialect, streamed or not, and says
// so; without an entry, or past the window, the caller gets the upstream's
// failure. The fake upstream answers 503 to both tries of its one provider.

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func startStale(t *testing.T, ttl, stale string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	toml := `
[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
trusted = true
timeout = "2s"
[layer.config]
replay_pace_ms = 0
ttl = "` + ttl + `"
stale_if_error = "` + stale + `"
` + testgateway.FakeProviders(fake.URL())
	g := testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, fake
}

// postAny is post without the 200 check.
func postAny(t *testing.T, g *testgateway.Gateway, path, body string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestStaleIfErrorWhenAllProvidersFail(t *testing.T) {
	g, fake := startStale(t, "1s", "1h")
	body := openAIBody("gpt-4o", "0.2", question, false)
	first := post(t, g, chat, body)
	want := openAIText(t, first.body)

	time.Sleep(1100 * time.Millisecond) // past the TTL: no longer a hit

	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	r := postAny(t, g, chat, body)
	if r.status != 200 {
		t.Fatalf("all down with a stale entry: status %d: %s\nlog:\n%s", r.status, r.body, failures(g))
	}
	if got := openAIText(t, r.body); got != want {
		t.Fatalf("stale answer %q, stored %q", got, want)
	}
	if c := r.header.Get("X-Bardo-Cache"); c != "stale" {
		t.Fatalf("X-Bardo-Cache %q, want stale", c)
	}
	if fb := r.header.Get("X-Bardo-Fallback"); fb != "up:502,up:502,cache:stale" {
		t.Fatalf("X-Bardo-Fallback %q", fb)
	}
	if age, err := strconv.Atoi(r.header.Get("X-Bardo-Cache-Age")); err != nil || age < 1 {
		t.Fatalf("X-Bardo-Cache-Age %q on an entry older than its 1s TTL", r.header.Get("X-Bardo-Cache-Age"))
	}
	if fake.Count(chat) != 3 || fake.Pending() != 0 {
		t.Fatalf("upstream calls %d (want 1 + 2 failed tries), pending %d", fake.Count(chat), fake.Pending())
	}
	if n := metric(g, "hashcache_stale_served_total"); n != 1 {
		t.Fatalf("stale_served metric %v", n)
	}

	// Streamed, the same entry replays as the caller's SSE.
	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	rs := postAny(t, g, chat, openAIBody("gpt-4o", "0.2", question, true))
	if rs.status != 200 || rs.header.Get("X-Bardo-Cache") != "stale" || !strings.HasPrefix(rs.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: status %d cache %q type %q: %s", rs.status, rs.header.Get("X-Bardo-Cache"), rs.header.Get("Content-Type"), rs.body)
	}
	var text strings.Builder
	for _, ev := range sseEvents(t, rs.body) {
		if ev[1] == "[DONE]" {
			continue
		}
		for _, c := range decode(t, []byte(ev[1]))["choices"].([]any) {
			if d, ok := c.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(d)
			}
		}
	}
	if text.String() != want {
		t.Fatalf("streamed stale answer %q, want %q", text.String(), want)
	}

	// The stale answer was not stored again as fresh: with the upstream
	// back, the next request is a miss that reaches it.
	calls := fake.Count(chat)
	next := post(t, g, chat, body)
	if next.header.Get("X-Bardo-Cache") != "miss" || fake.Count(chat) != calls+1 {
		t.Fatalf("after the outage: cache %q, upstream calls %d → %d", next.header.Get("X-Bardo-Cache"), calls, fake.Count(chat))
	}
}

func TestAllDownWithoutCacheIsAClearError(t *testing.T) {
	g, fake := startStale(t, "1s", "1h")
	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	r := postAny(t, g, chat, openAIBody("gpt-4o", "0.2", "A question nobody asked before, long enough to cache.", false))
	if r.status != 502 { // the upstream's 503, as the gateway reports an upstream failure
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	m := decode(t, r.body)
	if e, ok := m["error"].(map[string]any); !ok || e["message"] == "" {
		t.Fatalf("not an OpenAI error object: %s", r.body)
	}
	if c := r.header.Get("X-Bardo-Cache"); c != "miss" {
		t.Fatalf("X-Bardo-Cache %q", c)
	}
	if fb := r.header.Get("X-Bardo-Fallback"); fb != "up:502,up:502" {
		t.Fatalf("X-Bardo-Fallback %q", fb)
	}
}

func TestStaleWindowEnds(t *testing.T) {
	g, fake := startStale(t, "1s", "1s")
	body := openAIBody("gpt-4o", "0.2", question, false)
	post(t, g, chat, body)
	time.Sleep(2100 * time.Millisecond) // past TTL + stale_if_error
	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	r := postAny(t, g, chat, body)
	if r.status != 502 || r.header.Get("X-Bardo-Cache") == "stale" {
		t.Fatalf("past the stale window: status %d cache %q: %s", r.status, r.header.Get("X-Bardo-Cache"), r.body)
	}
}
