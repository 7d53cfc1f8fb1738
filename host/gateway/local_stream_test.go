package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// Streamed answers the gateway builds itself — hash and semantic cache hits
// and the simulator — are written after the request's handler returned.
// They must still run the stream phase under a live request: through the
// shipped layers (pii fail-closed among them) each ends cleanly, with no
// layer failing on the way. Before the writer took the request's context
// over, every one of them ended in an error event.
func TestLocalStreamsThroughShippedLayers(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, upstreamPipeline(fake, testgateway.ShippedLayers(t)), testgateway.Options{Env: testgateway.FakeProviderEnv()})

	const answer = "Impermanent loss is what a liquidity provider gives up against simply holding both tokens."
	openai := func(model, q string) string {
		return `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"` + q + `"}]}`
	}
	anthropic := func(model, q string) string {
		return `{"model":"` + model + `","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"` + q + `"}]}`
	}
	for _, tc := range []struct {
		name, path, cache string
		body              string
		wantText          string
	}{
		{"openai miss", "/v1/chat/completions", "miss", openai("gpt-4o", "Explain impermanent loss in one sentence"), answer},
		{"openai hash-hit", "/v1/chat/completions", "hash-hit", openai("gpt-4o", "Explain impermanent loss in one sentence"), answer},
		{"openai semantic-hit", "/v1/chat/completions", "semantic-hit", openai("gpt-4o", "explain IMPERMANENT loss, in one sentence."), answer},
		{"anthropic miss", "/v1/messages", "miss", anthropic("claude-sonnet-4-5", "Explain impermanent loss in one sentence"), answer},
		{"anthropic hash-hit", "/v1/messages", "hash-hit", anthropic("claude-sonnet-4-5", "Explain impermanent loss in one sentence"), answer},
		{"sim openai", "/v1/chat/completions", "miss", openai("sim-model", "write to ann@example.com please"), "ann@example.com"},
		{"sim anthropic", "/v1/messages", "miss", anthropic("sim-model", "say hello to bob@example.org"), "bob@example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cache == "miss" && !strings.HasPrefix(tc.body, `{"model":"sim`) {
				fake.Script(fakeupstream.Reply(answer))
			}
			r := apitest.Post(t, g.URL, tc.path, tc.body)
			if r.Status != 200 || r.Header.Get("X-Bardo-Cache") != tc.cache {
				t.Fatalf("status %d, X-Bardo-Cache %q (want %q): %s", r.Status, r.Header.Get("X-Bardo-Cache"), tc.cache, r.Body)
			}
			text := streamedText(t, tc.path, r.Body)
			if !strings.Contains(text, tc.wantText) {
				t.Fatalf("streamed text %q lacks %q:\n%s", text, tc.wantText, r.Body)
			}
		})
	}
	if log := g.LogLines.String(); strings.Contains(log, "layer failed") {
		t.Fatalf("a layer failed while streaming:\n%s", log)
	}
}

// streamedText checks that an SSE body ends the way its dialect ends a
// stream, with no error event, and returns its text.
func streamedText(t *testing.T, path string, body []byte) string {
	t.Helper()
	evs := apitest.SSE(t, body)
	if len(evs) == 0 {
		t.Fatalf("empty stream")
	}
	var text strings.Builder
	for _, ev := range evs {
		if ev[0] == "error" || strings.Contains(ev[1], `"error"`) {
			t.Fatalf("error event in the stream:\n%s", body)
		}
		if ev[1] == "[DONE]" {
			continue
		}
		m := apitest.JSON(t, []byte(ev[1]))
		if path == "/v1/messages" {
			if d, ok := m["delta"].(map[string]any); ok {
				s, _ := d["text"].(string)
				text.WriteString(s)
			}
			continue
		}
		for _, c := range asSlice(m["choices"]) {
			if d, ok := c.(map[string]any)["delta"].(map[string]any); ok {
				s, _ := d["content"].(string)
				text.WriteString(s)
			}
		}
	}
	last := evs[len(evs)-1]
	if path == "/v1/messages" && last[0] != "message_stop" || path != "/v1/messages" && last[1] != "[DONE]" {
		t.Fatalf("the stream did not end with its end marker (last event %q):\n%s", last, body)
	}
	return text.String()
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// When the request's deadline is spent on an upstream that never answered,
// the stale answer a cache keeps must still go through the response and
// stream phases (pii restores what it masked, fail-closed): they get time
// of their own, as the fallback phase does, instead of the dead deadline.
func TestStaleAnswerAfterTheDeadline(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	layers := `
[[layer]]
name = "pii"
plugin = "pii.wasm"
on_error = "fail-closed"
trusted = true

[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
trusted = true
[layer.config]
ttl = "1s"
`
	// Two providers that both hang: the second attempt starts with the
	// deadline spent (or nearly), so it is surely spent after it.
	second := `
[[provider]]
name = "up2"
plugin = "openai-compatible.wasm"
base_url = "` + fake.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
`
	g := testgateway.Start(t, layers+testgateway.FakeProviders(fake.URL())+second,
		testgateway.Options{Env: testgateway.FakeProviderEnv(), Upstream: time.Second})
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[{"role":"user","content":"mail ann@example.com the report (stream %v)"}]}`, stream, stream)
		if r := apitest.Post(t, g.URL, "/v1/chat/completions", body); r.Status != 200 {
			t.Fatalf("stream=%v: first ask: %d %s", stream, r.Status, r.Body)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the entries' TTL
	for _, stream := range []bool{false, true} {
		fake.Script(fakeupstream.Latency(3*time.Second), fakeupstream.Latency(3*time.Second)) // past the request's deadline
		body := fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[{"role":"user","content":"mail ann@example.com the report (stream %v)"}]}`, stream, stream)
		r := apitest.Post(t, g.URL, "/v1/chat/completions", body)
		if r.Status != 200 || !strings.Contains(r.Header.Get("X-Bardo-Fallback"), "cache:stale") {
			t.Fatalf("stream=%v: %d, fallback %q: %s", stream, r.Status, r.Header.Get("X-Bardo-Fallback"), r.Body)
		}
		text := string(r.Body)
		if stream {
			text = streamedText(t, "/v1/chat/completions", r.Body)
		}
		if !strings.Contains(text, "ann@example.com") {
			t.Fatalf("stream=%v: the stale answer was not restored: %s", stream, r.Body)
		}
	}
}
