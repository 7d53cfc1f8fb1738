//go:build !wasip1

package main_test

// End to end: the gateway in-process with the hashcache layer compiled to
// WASM, in front of the fake upstream (an OpenAI-compatible provider "up"
// for gpt-*, an Anthropic provider "claude" for claude-*), called over HTTP.
//
// Tenant isolation is shown under the real runtime in runtime_test.go: the
// gateway serves every caller as the anonymous tenant until authentication
// lands, so two tenants cannot be told apart over HTTP yet.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["hashcache.wasm"] = "plugins/layers/hashcache" }

const upKey = testgateway.FakeUpstreamKey

const paceMs = 20

// The timeout is generous: these tests are about behaviour (also under
// -race on a busy machine); the layer's cost is measured by the benchmarks.
const layer = `
[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
trusted = true
timeout = "2s"
[layer.config]
replay_pace_ms = 20
`

func pipeline(fake *fakeupstream.Server) string {
	return layer + testgateway.FakeProviders(fake.URL())
}

func start(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, pipeline(fake), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, fake
}

type reply struct {
	status  int
	header  http.Header
	body    []byte
	elapsed time.Duration
}

func post(t *testing.T, g *testgateway.Gateway, path, body string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if path == "/v1/messages" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{resp.StatusCode, resp.Header, b, time.Since(t0)}
	if r.status != 200 {
		t.Fatalf("POST %s: status %d: %s", path, r.status, b)
	}
	if d := r.header.Get("X-Bardo-Degraded"); d != "" {
		t.Fatalf("POST %s: degraded %q; log:\n%s", path, d, failures(g))
	}
	return r
}

// failures returns the gateway's log lines about failed layer calls.
func failures(g *testgateway.Gateway) string {
	var out []string
	for _, l := range strings.Split(g.LogLines.String(), "\n") {
		if strings.Contains(l, "layer failed") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	return apitest.JSON(t, b)
}

func openAIText(t *testing.T, b []byte) string {
	t.Helper()
	m := decode(t, b)
	if m["object"] != "chat.completion" {
		t.Fatalf("not a chat completion: %s", b)
	}
	return m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

func anthropicText(t *testing.T, b []byte) string {
	t.Helper()
	m := decode(t, b)
	if m["type"] != "message" {
		t.Fatalf("not an Anthropic message: %s", b)
	}
	return m["content"].([]any)[0].(map[string]any)["text"].(string)
}

// sseEvents splits an SSE body into (event, data) pairs.
func sseEvents(t *testing.T, b []byte) [][2]string {
	t.Helper()
	return apitest.SSE(t, b)
}

const chat = "/v1/chat/completions"

// A question whose echo is well over ten tokens.
const question = "Summarize the risk of my Aave position in two sentences, considering ETH volatility and the health factor."

func openAIBody(model, temperature, text string, stream bool) string {
	s := ""
	if stream {
		s = `"stream":true,`
	}
	return `{"model":"` + model + `",` + s + `"temperature":` + temperature + `,"max_tokens":200,"messages":[` +
		`{"role":"system","content":"You are a careful DeFi agent."},{"role":"user","content":` + quote(text) + `}]}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func metric(g *testgateway.Gateway, name string) float64 {
	return g.Metrics.Value("bardo_plugin_"+name, "plugin", "hashcache")
}

func TestHitNeverReachesUpstream(t *testing.T) {
	g, fake := start(t)
	body := openAIBody("gpt-4o", "0.2", question, false)
	first := post(t, g, chat, body)
	if first.header.Get("X-Bardo-Cache") != "miss" || fake.Count(chat) != 1 {
		t.Fatalf("first: cache %q, upstream calls %d", first.header.Get("X-Bardo-Cache"), fake.Count(chat))
	}
	second := post(t, g, chat, body)
	if second.header.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatalf("second: cache %q", second.header.Get("X-Bardo-Cache"))
	}
	if fake.Count(chat) != 1 {
		t.Fatalf("a hit reached the upstream: %d calls", fake.Count(chat))
	}
	want := openAIText(t, first.body)
	if got := openAIText(t, second.body); got != want || want != "echo: "+question {
		t.Fatalf("hit content %q, first %q", got, want)
	}
	if decode(t, second.body)["id"] == decode(t, first.body)["id"] {
		t.Fatal("a hit reused the original response id")
	}
	saved := second.header.Get("X-Bardo-Cache-Saved-Tokens")
	usage := decode(t, first.body)["usage"].(map[string]any)
	if want := int(usage["prompt_tokens"].(float64) + usage["completion_tokens"].(float64)); saved != itoa(want) {
		t.Fatalf("saved tokens %q, want %d", saved, want)
	}
	if second.header.Get("X-Bardo-Cache-Key") != first.header.Get("X-Bardo-Cache-Key") || len(second.header.Get("X-Bardo-Cache-Key")) != 16 {
		t.Fatalf("key headers %q %q", first.header.Get("X-Bardo-Cache-Key"), second.header.Get("X-Bardo-Cache-Key"))
	}
	if metric(g, "hashcache_hits_total") != 1 || metric(g, "hashcache_misses_total") != 1 || metric(g, "hashcache_stores_total") != 1 {
		t.Fatalf("metrics: hits %v misses %v stores %v", metric(g, "hashcache_hits_total"), metric(g, "hashcache_misses_total"), metric(g, "hashcache_stores_total"))
	}

	// The same request from an Anthropic-dialect caller: the same canonical
	// request, answered from the cache in the caller's dialect.
	r := post(t, g, "/v1/messages", `{"model":"gpt-4o","temperature":0.2,"max_tokens":200,"system":"You are a careful DeFi agent.","messages":[{"role":"user","content":`+quote(question)+`}]}`)
	if r.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(chat) != 1 {
		t.Fatalf("anthropic caller: cache %q, upstream calls %d", r.header.Get("X-Bardo-Cache"), fake.Count(chat))
	}
	if got := anthropicText(t, r.body); got != want {
		t.Fatalf("anthropic caller got %q", got)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestDifferentRequestsMiss(t *testing.T) {
	g, fake := start(t)
	post(t, g, chat, openAIBody("gpt-4o", "0.2", question, false))
	for name, body := range map[string]string{
		"temperature": openAIBody("gpt-4o", "0.7", question, false),
		"model":       openAIBody("gpt-4o-mini", "0.2", question, false),
		"text":        openAIBody("gpt-4o", "0.2", question+" Please.", false),
	} {
		if r := post(t, g, chat, body); r.header.Get("X-Bardo-Cache") != "miss" {
			t.Errorf("%s: %q", name, r.header.Get("X-Bardo-Cache"))
		}
	}
	if fake.Count(chat) != 4 {
		t.Fatalf("upstream calls %d, want 4", fake.Count(chat))
	}
}

// Timestamps and UUIDs in the text do not change the key.
func TestEphemeralTextHits(t *testing.T) {
	g, fake := start(t)
	msg := func(ts, id string) string {
		return "Report generated at " + ts + " for run " + id + ": " + question
	}
	post(t, g, chat, openAIBody("gpt-4o", "0.2", msg("2025-06-01T12:00:00Z", "123e4567-e89b-12d3-a456-426614174000"), false))
	r := post(t, g, chat, openAIBody("gpt-4o", "0.2", msg("2025-06-02T08:15:42.123+02:00", "f47ac10b-58cc-4372-a567-0e02b2c3d479"), false))
	if r.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(chat) != 1 {
		t.Fatalf("cache %q, upstream calls %d", r.header.Get("X-Bardo-Cache"), fake.Count(chat))
	}
}

func TestToolCallsAndShortAnswersNotCached(t *testing.T) {
	g, fake := start(t)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	toolBody := `{"model":"gpt-4o","max_tokens":200,` + tools + `,"messages":[{"role":"user","content":"What is the weather in Lisbon today, in detail? fake:tool=get_weather"}]}`
	for i := range 2 {
		r := post(t, g, chat, toolBody)
		if r.header.Get("X-Bardo-Cache") != "miss" {
			t.Fatalf("tool call %d: %q", i, r.header.Get("X-Bardo-Cache"))
		}
		if m := decode(t, r.body); m["choices"].([]any)[0].(map[string]any)["finish_reason"] != "tool_calls" {
			t.Fatalf("not a tool call: %s", r.body)
		}
	}
	short := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}` // "echo: hi": 2 tokens
	for i := range 2 {
		if r := post(t, g, chat, short); r.header.Get("X-Bardo-Cache") != "miss" {
			t.Fatalf("short %d: %q", i, r.header.Get("X-Bardo-Cache"))
		}
	}
	if fake.Count(chat) != 4 || metric(g, "hashcache_skips_total") != 4 || metric(g, "hashcache_stores_total") != 0 {
		t.Fatalf("upstream calls %d, skips %v, stores %v", fake.Count(chat), metric(g, "hashcache_skips_total"), metric(g, "hashcache_stores_total"))
	}
	// A streamed tool call is not stored either.
	streamTool := strings.Replace(toolBody, `"max_tokens":200,`, `"max_tokens":200,"stream":true,`, 1)
	post(t, g, chat, streamTool)
	if r := post(t, g, chat, streamTool); r.header.Get("X-Bardo-Cache") != "miss" || fake.Count(chat) != 6 {
		t.Fatalf("streamed tool call: %q, upstream calls %d", r.header.Get("X-Bardo-Cache"), fake.Count(chat))
	}
}

// A hit for a streaming OpenAI caller is a valid, paced SSE replay that ends
// with [DONE].
func TestHitReplaysAsPacedOpenAIStream(t *testing.T) {
	g, fake := start(t)
	long := question + " " + strings.Repeat("Include gas costs and supply rates. ", 3)
	first := post(t, g, chat, openAIBody("gpt-4o", "0.2", long, false))
	want := openAIText(t, first.body)

	r := post(t, g, chat, openAIBody("gpt-4o", "0.2", long, true))
	if r.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(chat) != 1 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("cache %q, upstream calls %d, type %q", r.header.Get("X-Bardo-Cache"), fake.Count(chat), r.header.Get("Content-Type"))
	}
	evs := sseEvents(t, r.body)
	if len(evs) < 3 || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %v", evs)
	}
	var text strings.Builder
	deltas := 0
	finish := ""
	for _, ev := range evs[:len(evs)-1] {
		m := decode(t, []byte(ev[1]))
		if m["object"] != "chat.completion.chunk" {
			t.Fatalf("not a chunk: %s", ev[1])
		}
		ch := m["choices"].([]any)
		if len(ch) == 0 {
			continue
		}
		c := ch[0].(map[string]any)
		if s, ok := c["delta"].(map[string]any)["content"].(string); ok && s != "" {
			text.WriteString(s)
			deltas++
		}
		if f, ok := c["finish_reason"].(string); ok {
			finish = f
		}
	}
	if text.String() != want || finish != "stop" {
		t.Fatalf("replayed text %q (finish %q), want %q", text.String(), finish, want)
	}
	checkPace(t, r.elapsed, deltas)
}

// checkPace: a paced replay sleeps replay_pace_ms after each content delta.
func checkPace(t *testing.T, elapsed time.Duration, deltas int) {
	t.Helper()
	if deltas < 5 {
		t.Fatalf("only %d deltas: too few to see the pace", deltas)
	}
	t.Logf("%d deltas replayed in %v", deltas, elapsed)
	min := time.Duration(deltas) * paceMs * time.Millisecond * 8 / 10
	max := time.Duration(deltas)*paceMs*time.Millisecond*3 + 2*time.Second
	if elapsed < min || elapsed > max {
		t.Fatalf("%d deltas replayed in %v, want about %v", deltas, elapsed, time.Duration(deltas)*paceMs*time.Millisecond)
	}
}

// A hit for a streaming Anthropic caller replays the exact Messages event
// sequence. The entry was stored from a streamed miss (the stream phase
// accumulates it).
func TestStreamedMissThenAnthropicReplay(t *testing.T) {
	g, fake := start(t)
	body := func(stream bool) string {
		s := ""
		if stream {
			s = `"stream":true,`
		}
		return `{"model":"claude-sonnet-4-5","max_tokens":300,` + s + `"system":"You are a careful DeFi agent.","messages":[{"role":"user","content":` +
			quote(question+" "+strings.Repeat("Mention the liquidation threshold. ", 3)) + `}]}`
	}
	const msgs = "/v1/messages"
	first := post(t, g, msgs, body(true))
	if first.header.Get("X-Bardo-Cache") != "miss" || fake.Count(msgs) != 1 {
		t.Fatalf("first: %q", first.header.Get("X-Bardo-Cache"))
	}
	var want strings.Builder
	for _, ev := range sseEvents(t, first.body) {
		if ev[0] == "content_block_delta" {
			want.WriteString(decode(t, []byte(ev[1]))["delta"].(map[string]any)["text"].(string))
		}
	}

	// Non-streamed: a hit from the streamed entry.
	r := post(t, g, msgs, body(false))
	if r.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(msgs) != 1 {
		t.Fatalf("non-stream after a streamed miss: %q, upstream calls %d", r.header.Get("X-Bardo-Cache"), fake.Count(msgs))
	}
	if got := anthropicText(t, r.body); got != want.String() {
		t.Fatalf("hit text %q, want %q", got, want.String())
	}

	// Streamed: the replay.
	r = post(t, g, msgs, body(true))
	if r.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(msgs) != 1 {
		t.Fatalf("stream hit: %q", r.header.Get("X-Bardo-Cache"))
	}
	evs := sseEvents(t, r.body)
	var names []string
	var text strings.Builder
	deltas := 0
	for _, ev := range evs {
		names = append(names, ev[0])
		m := decode(t, []byte(ev[1]))
		if m["type"] != ev[0] {
			t.Fatalf("event %s carries type %v", ev[0], m["type"])
		}
		if ev[0] == "content_block_delta" {
			text.WriteString(m["delta"].(map[string]any)["text"].(string))
			deltas++
		}
	}
	wantNames := []string{"message_start", "content_block_start"}
	for range deltas {
		wantNames = append(wantNames, "content_block_delta")
	}
	wantNames = append(wantNames, "content_block_stop", "message_delta", "message_stop")
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("event order\n%s\nwant\n%s", strings.Join(names, ","), strings.Join(wantNames, ","))
	}
	if text.String() != want.String() {
		t.Fatalf("replayed %q, want %q", text.String(), want.String())
	}
	checkPace(t, r.elapsed, deltas)
}

// A streamed miss from the OpenAI upstream is accumulated and stored: the
// same request without streaming is then a hit with the same text.
func TestOpenAIStreamedMissIsStored(t *testing.T) {
	g, fake := start(t)
	// The caller asks for the usage chunk (its bytes go upstream as they
	// are: the cache does not change the request); stream_options is not
	// part of the key.
	streamed := strings.Replace(openAIBody("gpt-4o", "0.2", question, true), `"stream":true,`, `"stream":true,"stream_options":{"include_usage":true},`, 1)
	first := post(t, g, chat, streamed)
	if first.header.Get("X-Bardo-Cache") != "miss" {
		t.Fatalf("first: %q", first.header.Get("X-Bardo-Cache"))
	}
	r := post(t, g, chat, openAIBody("gpt-4o", "0.2", question, false))
	if r.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(chat) != 1 {
		t.Fatalf("after a streamed miss: %q, upstream calls %d", r.header.Get("X-Bardo-Cache"), fake.Count(chat))
	}
	if got := openAIText(t, r.body); got != "echo: "+question {
		t.Fatalf("hit text %q", got)
	}
	if u := decode(t, r.body)["usage"].(map[string]any); u["completion_tokens"].(float64) < 10 || u["prompt_tokens"].(float64) <= 0 {
		t.Fatalf("usage of the stored stream: %v", u)
	}
	if r.header.Get("X-Bardo-Cache-Saved-Tokens") == "0" {
		t.Fatal("no saved tokens reported")
	}
}
