package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

const simOnly = `
[[provider]]
name = "sim"
plugin = "sim.wasm"
models = ["*"]
trusted = true
`

func upstreamPipeline(fake *fakeupstream.Server, layers string) string {
	return layers + testgateway.FakeProviders(fake.URL()) + `
[[provider]]
name = "sim"
plugin = "sim.wasm"
models = ["*"]
failover = false
trusted = true
`
}

const upKey = testgateway.FakeUpstreamKey

func startWithUpstream(t *testing.T, layers string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, upstreamPipeline(fake, layers), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, fake
}

type reply = apitest.Reply

func post(t *testing.T, url, path, body string, headers ...string) reply {
	t.Helper()
	return apitest.Post(t, url, path, body, headers...)
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	return apitest.JSON(t, b)
}

// sseEvents splits an SSE body into (event, data) pairs.
func sseEvents(t *testing.T, b []byte) [][2]string {
	t.Helper()
	return apitest.SSE(t, b)
}

func TestSimAnswersBothDialects(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})

	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello \"quoted\" ünïcode"}]}`)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	for _, h := range []string{"X-Bardo-Request-Id", "X-Bardo-Provider", "X-Bardo-Model"} {
		if r.Header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
	if r.Header.Get("X-Bardo-Provider") != "sim" || r.Header.Get("X-Bardo-Model") != "gpt-4o-mini" {
		t.Errorf("provider/model headers = %q/%q", r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Model"))
	}
	m := decode(t, r.Body)
	content := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	if !strings.HasPrefix(content, "[bardo sim]") || !strings.Contains(content, `hello "quoted" ünïcode`) {
		t.Errorf("sim content does not quote the message verbatim: %q", content)
	}
	usage := m["usage"].(map[string]any)
	if usage["prompt_tokens"].(float64) <= 0 || usage["completion_tokens"].(float64) <= 0 {
		t.Errorf("usage = %v", usage)
	}

	r = post(t, g.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi there"}]}`)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	m = decode(t, r.Body)
	if m["type"] != "message" || m["role"] != "assistant" || m["stop_reason"] != "end_turn" {
		t.Errorf("anthropic message = %v", m)
	}
	if text := m["content"].([]any)[0].(map[string]any)["text"].(string); !strings.Contains(text, "hi there") {
		t.Errorf("text = %q", text)
	}
}

func TestSimStreamsBothDialects(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})

	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"stream me a reply please"}]}`)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %q", r.Status, r.Header.Get("Content-Type"))
	}
	evs := sseEvents(t, r.Body)
	if len(evs) < 3 || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("openai stream does not end with [DONE]: %v", evs)
	}
	var text strings.Builder
	for _, ev := range evs[:len(evs)-1] {
		m := decode(t, []byte(ev[1]))
		ch := m["choices"].([]any)
		if len(ch) == 0 {
			continue
		}
		if c, ok := ch[0].(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
			text.WriteString(c)
		}
	}
	if !strings.Contains(text.String(), "stream me a reply please") {
		t.Errorf("accumulated text = %q", text.String())
	}

	r = post(t, g.URL, "/v1/messages", `{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello stream"}]}`)
	evs = sseEvents(t, r.Body)
	var names []string
	for _, ev := range evs {
		names = append(names, ev[0])
	}
	got := strings.Join(names, ",")
	if !strings.HasPrefix(got, "message_start,content_block_start,") || !strings.HasSuffix(got, "content_block_stop,message_delta,message_stop") {
		t.Errorf("anthropic event order = %s", got)
	}
}

// Same dialect, no layer: the upstream receives the caller's exact bytes, and
// the caller the upstream's.
func TestPassthroughKeepsBytes(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}],"user":"u-1","some_future_field":{"x":[1,2,3]}}`
	r := post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if got := string(fake.Last().Body); got != body {
		t.Fatalf("upstream received\n%s\nwant the caller's bytes\n%s", got, body)
	}
	if auth := fake.Last().Header.Get("Authorization"); auth != "Bearer "+upKey {
		t.Fatalf("upstream auth header = %q", auth)
	}
	if r.Header.Get("X-Bardo-Provider") != "up" {
		t.Fatalf("provider = %q", r.Header.Get("X-Bardo-Provider"))
	}
	if !strings.Contains(string(r.Body), "echo: hello") {
		t.Fatalf("body = %s", r.Body)
	}
}

// An Anthropic caller served by an OpenAI upstream: translated both ways.
func TestCrossDialect(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	r := post(t, g.URL, "/v1/messages", `{"model":"gpt-4o","max_tokens":50,"system":"Be brief.","messages":[{"role":"user","content":"translate me"}]}`)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	up := decode(t, fake.Last().Body)
	msgs := up["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" {
		t.Fatalf("upstream messages = %v", msgs)
	}
	m := decode(t, r.Body)
	if m["type"] != "message" {
		t.Fatalf("caller got %v", m)
	}
	if text := m["content"].([]any)[0].(map[string]any)["text"].(string); text != "echo: translate me" {
		t.Fatalf("text = %q", text)
	}
}

func TestUpstreamStreamTranslated(t *testing.T) {
	g, _ := startWithUpstream(t, "")
	// OpenAI caller, OpenAI upstream, no layers: passthrough.
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"one two three four five six"}]}`)
	evs := sseEvents(t, r.Body)
	if len(evs) < 3 || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("passthrough stream = %v", evs)
	}
	// Anthropic caller, OpenAI upstream: translated stream.
	r = post(t, g.URL, "/v1/messages", `{"model":"gpt-4o","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"one two three four five six"}]}`)
	evs = sseEvents(t, r.Body)
	var text strings.Builder
	for _, ev := range evs {
		if ev[0] == "content_block_delta" {
			d := decode(t, []byte(ev[1]))["delta"].(map[string]any)
			text.WriteString(d["text"].(string))
		}
	}
	if text.String() != "echo: one two three four five six" || evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("translated stream text %q, events %v", text.String(), evs)
	}
}

func TestStreamCutEndsWithErrorEvent(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"a b c d e f g h i j"}]}`},
		{"/v1/messages", `{"model":"gpt-4o","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"a b c d e f g h i j"}]}`},
	} {
		fake.Script(fakeupstream.CutAfter(2))
		r := post(t, g.URL, tc.path, tc.body)
		evs := sseEvents(t, r.Body)
		if len(evs) == 0 {
			t.Fatalf("%s: empty stream", tc.path)
		}
		last := evs[len(evs)-1]
		if !strings.Contains(last[1], `"error"`) || !strings.Contains(last[1], "broke off") {
			t.Fatalf("%s: a cut stream must end with an error event, got %v", tc.path, last)
		}
		if strings.Contains(last[1], "127.0.0.1") {
			t.Fatalf("%s: the error event names the upstream's address: %v", tc.path, last)
		}
	}
}

func TestUpstreamErrorsInCallerDialect(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	fake.Script(fakeupstream.RateLimited(7))
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`)
	if r.Status != 429 || r.Header.Get("Retry-After") != "7" {
		t.Fatalf("status %d retry-after %q: %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if e := decode(t, r.Body)["error"].(map[string]any); e["type"] != "rate_limit_error" && e["code"] != "rate_limit_exceeded" {
		t.Fatalf("openai error = %v", e)
	}

	// The provider backs off for the 7 s it asked for, but it is the only
	// one serving the model: the next caller's request is still sent
	// (another caller's rate limit is not this one's), not refused.
	before := fake.Count("/v1/chat/completions")
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`)
	if r.Status != 200 || fake.Count("/v1/chat/completions") != before+1 || !g.Daemon.Health.BackingOff("up") {
		t.Fatalf("backing off, the only provider: %d fallback %q: %s", r.Status, r.Header.Get("X-Bardo-Fallback"), r.Body)
	}
	g.Daemon.Health.Remove("up") // the back-off is not the rest's subject

	fake.Script(fakeupstream.Fail(500), fakeupstream.Fail(500)) // the first try and its retry
	r = post(t, g.URL, "/v1/messages", `{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`)
	if r.Status != 502 || r.Header.Get("X-Bardo-Fallback") != "up:502,up:502" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	m := decode(t, r.Body)
	if m["type"] != "error" || m["error"].(map[string]any)["type"] == "" {
		t.Fatalf("anthropic error = %v", m)
	}
	if strings.Contains(string(r.Body), upKey) {
		t.Fatal("the upstream key leaked into an error")
	}
}

func TestBadInputGetsDialectErrors(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	cases := []struct {
		name, path, body string
		status           int
		anthropic        bool
	}{
		{"openai invalid json", "/v1/chat/completions", `{"model":`, 400, false},
		{"openai no messages", "/v1/chat/completions", `{"model":"gpt-4o"}`, 400, false},
		{"anthropic invalid json", "/v1/messages", `not json`, 400, true},
		{"anthropic no max_tokens", "/v1/messages", `{"model":"c","messages":[{"role":"user","content":"x"}]}`, 400, true},
		{"unknown path", "/v1/nope", `{}`, 404, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, g.URL, tc.path, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			m := decode(t, r.Body)
			if tc.anthropic {
				if m["type"] != "error" || m["error"].(map[string]any)["message"] == "" {
					t.Fatalf("not an Anthropic error: %s", r.Body)
				}
			} else if m["error"].(map[string]any)["message"] == "" {
				t.Fatalf("not an OpenAI error: %s", r.Body)
			}
		})
	}
	// Wrong method.
	resp, err := http.Get(g.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Fatalf("GET chat/completions: %d", resp.StatusCode)
	}
	// Body over the limit (10 MiB default): the gateway answers from the
	// headers, before reading the body (a raw connection, so the client does
	// not race the server's close while still sending).
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 11<<20)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(b), "exceeds") || decode(t, b)["error"] == nil {
		t.Fatalf("oversized body: %d %s", resp.StatusCode, b)
	}
}

// A layer's patch reaches the upstream; its header reaches the caller.
func TestLayerPatchReachesUpstream(t *testing.T) {
	g, fake := startWithUpstream(t, `
[[layer]]
name = "hc"
plugin = "hostcalls.wasm"
on_error = "fail-closed"
trusted = true
[layer.config]
suffix = " [seen-by-layer]"
`)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"unknown_field":1}`
	r := post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	up := string(fake.Last().Body)
	if !strings.Contains(up, "hello [seen-by-layer] #1") {
		t.Fatalf("upstream did not get the patched text: %s", up)
	}
	if !strings.Contains(up, `"unknown_field":1`) {
		t.Fatalf("re-encoding dropped an unknown field: %s", up)
	}
	if r.Header.Get("X-Bardo-Hostcalls") != "1" {
		t.Fatalf("layer header = %q", r.Header.Get("X-Bardo-Hostcalls"))
	}
}

func TestModelsEndpoint(t *testing.T) {
	g, _ := startWithUpstream(t, "")
	resp, err := http.Get(g.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := decode(t, b)
	if m["object"] != "list" {
		t.Fatalf("models = %s", b)
	}
	// "auto" first, then what the providers describe (sim: its plugin's
	// one model), once each.
	var ids []string
	once := map[string]bool{}
	for _, e := range m["data"].([]any) {
		id := e.(map[string]any)["id"].(string)
		if once[id] {
			t.Fatalf("%s listed twice", id)
		}
		once[id] = true
		ids = append(ids, id)
	}
	if len(ids) < 2 || ids[0] != "auto" || !slices.Contains(ids, "sim") {
		t.Fatalf("model ids %v", ids)
	}
}

// Reload swaps the pipeline; a broken file keeps the old one serving; a
// request in flight during the swap finishes.
func TestReload(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	ask := func() reply {
		return post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	}
	if r := ask(); r.Header.Get("X-Bardo-Hostcalls") != "" {
		t.Fatal("layer active before reload")
	}

	// A slow request in flight across the reload.
	fake.Script(fakeupstream.Latency(400 * time.Millisecond))
	var wg sync.WaitGroup
	var slow reply
	wg.Add(1)
	go func() { defer wg.Done(); slow = ask() }()
	time.Sleep(100 * time.Millisecond)

	withLayer := upstreamPipeline(fake, `
[[layer]]
name = "hc"
plugin = "hostcalls.wasm"
trusted = true
`)
	if err := g.Rewrite(t, withLayer); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if r := ask(); r.Header.Get("X-Bardo-Hostcalls") != "1" {
		t.Fatalf("layer not active after reload: %v", r.Header)
	}
	wg.Wait()
	if slow.Status != 200 {
		t.Fatalf("in-flight request failed across reload: %d %s", slow.Status, slow.Body)
	}

	// A broken file: reload fails with file:line, the old pipeline serves.
	if err := g.Rewrite(t, withLayer+"\n[[layer]]\nname = \"bad\"\nplugin = \"nope.wasm\"\non_error = \"sometimes\"\n"); err == nil {
		t.Fatal("broken config reloaded without error")
	} else if !strings.Contains(err.Error(), "pipeline.toml:") {
		t.Fatalf("error does not name the file and line: %v", err)
	}
	if r := ask(); r.Status != 200 || r.Header.Get("X-Bardo-Hostcalls") == "" {
		t.Fatalf("old pipeline not serving after a failed reload: %d %v", r.Status, r.Header)
	}
}

// A panicking layer costs only the requests that trigger it; fail-open skips
// it visibly, fail-closed fails in the caller's dialect; concurrent good
// requests all succeed.
func TestFaultyLayerIsolation(t *testing.T) {
	for _, policy := range []string{"fail-open", "fail-closed"} {
		t.Run(policy, func(t *testing.T) {
			g := testgateway.Start(t, `
[[layer]]
name = "panicky"
plugin = "panic.wasm"
on_error = "`+policy+`"
pool = 2
trusted = true
`+simOnly, testgateway.Options{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			bad := map[int]reply{}
			good := map[int]reply{}
			for i := range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					text := "fine request"
					if i%4 == 0 {
						text = "please panic now"
					}
					r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"`+text+`"}]}`)
					mu.Lock()
					defer mu.Unlock()
					if i%4 == 0 {
						bad[i] = r
					} else {
						good[i] = r
					}
				}()
			}
			wg.Wait()
			for i, r := range good {
				if r.Status != 200 || r.Header.Get("X-Bardo-Degraded") != "" {
					t.Errorf("good request %d: %d %q %s", i, r.Status, r.Header.Get("X-Bardo-Degraded"), r.Body)
				}
			}
			for i, r := range bad {
				if policy == "fail-open" {
					if r.Status != 200 || !strings.Contains(r.Header.Get("X-Bardo-Degraded"), "layer-skipped:panicky") {
						t.Errorf("fail-open request %d: %d %q", i, r.Status, r.Header.Get("X-Bardo-Degraded"))
					}
				} else if r.Status != 503 || decode(t, r.Body)["error"] == nil {
					t.Errorf("fail-closed request %d: %d %s", i, r.Status, r.Body)
				}
			}
		})
	}
}

// Anthropic upstream: an Anthropic caller's bytes pass untouched (thinking
// signatures and cache_control included); an OpenAI caller is translated.
func TestAnthropicUpstream(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig-abc=="},{"type":"text","text":"hello"}]},{"role":"user","content":"again"}],"metadata":{"user_id":"u1"}}`
	r := post(t, g.URL, "/v1/messages", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "claude" {
		t.Fatalf("status %d provider %q: %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	last := fake.Last()
	if string(last.Body) != body {
		t.Fatalf("upstream got\n%s\nwant the caller's bytes", last.Body)
	}
	if last.Header.Get("x-api-key") != upKey || last.Header.Get("anthropic-version") == "" {
		t.Fatalf("upstream headers: %v", last.Header)
	}
	// The caller's anthropic-beta reaches an Anthropic upstream; its own
	// credentials never do.
	post(t, g.URL, "/v1/messages", body, "anthropic-beta", "interleaved-thinking-2025-05-14", "x-api-key", "caller-key")
	if h := fake.Last().Header; h.Get("anthropic-beta") != "interleaved-thinking-2025-05-14" || h.Get("x-api-key") != upKey {
		t.Fatalf("upstream headers: %v", h)
	}

	r = post(t, g.URL, "/v1/chat/completions", `{"model":"claude-haiku-4-5","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"from openai"}]}`)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	up := decode(t, fake.Last().Body)
	if up["max_tokens"] == nil || up["system"] == nil {
		t.Fatalf("translated request lacks max_tokens/system: %s", fake.Last().Body)
	}
	m := decode(t, r.Body)
	if m["object"] != "chat.completion" || !strings.Contains(string(r.Body), "echo: from openai") {
		t.Fatalf("caller got %s", r.Body)
	}
}

func TestCompletionsDetectsDialect(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	r := post(t, g.URL, "/v1/completions", `{"model":"m","max_tokens":20,"system":"s","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 200 || decode(t, r.Body)["type"] != "message" {
		t.Fatalf("anthropic-shaped body: %d %s", r.Status, r.Body)
	}
	r = post(t, g.URL, "/v1/completions", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`)
	if r.Status != 200 || decode(t, r.Body)["object"] != "chat.completion" {
		t.Fatalf("openai-shaped body: %d %s", r.Status, r.Body)
	}
}

func TestCountTokens(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"count these tokens please"}]}`
	r := post(t, g.URL, "/v1/messages/count_tokens", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Token-Count") != "upstream" || decode(t, r.Body)["input_tokens"] == nil {
		t.Fatalf("anthropic upstream: %d %v %s", r.Status, r.Header, r.Body)
	}
	if fake.Last().Path != "/v1/messages/count_tokens" || string(fake.Last().Body) != body {
		t.Fatalf("upstream got %s %s", fake.Last().Path, fake.Last().Body)
	}
	r = post(t, g.URL, "/v1/messages/count_tokens", `{"model":"gpt-4o","messages":[{"role":"user","content":"count these tokens please"}]}`)
	if r.Status != 200 || r.Header.Get("X-Bardo-Token-Count") != "estimate" || decode(t, r.Body)["input_tokens"].(float64) < 5 {
		t.Fatalf("estimate: %d %v %s", r.Status, r.Header, r.Body)
	}
}

func TestStreamHeartbeatAndDisconnect(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, upstreamPipeline(fake, ""), testgateway.Options{
		Env: map[string]string{"UP_KEY": upKey}, Heartbeat: 40 * time.Millisecond})

	// A silent upstream: heartbeats flow, then the answer.
	fake.Script(fakeupstream.Drip(150 * time.Millisecond))
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"one two"}]}`)
	if !strings.Contains(string(r.Body), ": keep-alive\n\n") || !strings.Contains(string(r.Body), "data: [DONE]") {
		t.Fatalf("no heartbeat in a slow stream, or no end:\n%s", r.Body)
	}

	// A client that goes away mid-stream: the gateway stops and says so.
	fake.Script(fakeupstream.Drip(100 * time.Millisecond))
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"`+strings.Repeat("word ", 200)+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	resp.Body.Close() // hang up
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.LogLines.String(), "client went away mid-stream") {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not notice the client leaving:\n%s", g.LogLines.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startPrimaryBackup serves gpt-* from two OpenAI-compatible providers, each
// its own fake upstream, then the simulator (which never takes over a
// failed request). opts.Env gets the fakes' key.
func startPrimaryBackup(t *testing.T, opts testgateway.Options) (*testgateway.Gateway, *fakeupstream.Server, *fakeupstream.Server) {
	t.Helper()
	primary := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	backup := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(primary.Close)
	t.Cleanup(backup.Close)
	cfg := `
[[provider]]
name = "primary"
plugin = "openai-compatible.wasm"
base_url = "` + primary.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true

[[provider]]
name = "backup"
plugin = "openai-compatible.wasm"
base_url = "` + backup.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
` + simOnly + "failover = false\n"
	opts.Env = map[string]string{"UP_KEY": upKey}
	return testgateway.Start(t, cfg, opts), primary, backup
}

// Failover: a transient failure is retried once on the same provider, then
// the next provider serving the model takes over; a stream that fails before
// its first byte fails over invisibly; the simulator never takes over a real
// provider's request.
func TestFailover(t *testing.T) {
	g, primary, backup := startPrimaryBackup(t, testgateway.Options{})
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`

	// One 503: the retry on the same provider answers.
	primary.Script(fakeupstream.Fail(503))
	r := post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "primary" || r.Header.Get("X-Bardo-Fallback") != "primary:502" {
		t.Fatalf("retry: %d %q %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Fallback"), r.Body)
	}

	// Two 500s: the backup answers.
	primary.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	before := backup.Count("/v1/chat/completions")
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "backup" || backup.Count("/v1/chat/completions") != before+1 {
		t.Fatalf("failover: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}

	// A request the upstream finds invalid is not retried or failed over
	// (and says nothing about the provider's health).
	primary.Script(fakeupstream.Fail(400))
	before = backup.Count("/v1/chat/completions")
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 400 || backup.Count("/v1/chat/completions") != before {
		t.Fatalf("400: %d %s", r.Status, r.Body)
	}

	// A stream cut before its first event, twice: the caller sees one clean
	// stream from the backup.
	primary.Script(fakeupstream.CutAfter(0), fakeupstream.CutAfter(0))
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"one two three"}]}`)
	evs := sseEvents(t, r.Body)
	if r.Header.Get("X-Bardo-Provider") != "backup" || len(evs) == 0 || evs[len(evs)-1][1] != "[DONE]" || strings.Contains(string(r.Body), `"error"`) {
		t.Fatalf("invisible stream failover: %q\n%s", r.Header.Get("X-Bardo-Provider"), r.Body)
	}

	// A 429 with a long retry-after is not waited for: straight to the backup.
	primary.Script(fakeupstream.RateLimited(30))
	t0 := time.Now()
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "backup" || time.Since(t0) > 5*time.Second {
		t.Fatalf("429 failover: %d %q after %v", r.Status, r.Header.Get("X-Bardo-Provider"), time.Since(t0))
	}

	// The primary failed four times (two 500s, two cut streams) and asked
	// for 30 s: too little evidence to take it out (issue 11: a few bad
	// requests must not switch a provider off). It backs off for the 30 s
	// its 429 asked for: still available, but tried after the backup.
	if s, _ := g.Daemon.Health.Get("primary"); s.State.String() != "healthy" || s.BackoffUntil.IsZero() ||
		!g.Daemon.Health.BackingOff("primary") || !g.Daemon.Health.Available("primary") {
		t.Fatalf("health: primary %+v", s)
	}
	before = primary.Count("/v1/chat/completions")
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "backup" || r.Header.Get("X-Bardo-Fallback") != "" ||
		primary.Count("/v1/chat/completions") != before {
		t.Fatalf("primary backing off: %d %q %q, primary got %d more", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Fallback"),
			primary.Count("/v1/chat/completions")-before)
	}

	// The backup fails: the primary, backing off, is tried last rather
	// than never, and serves.
	backup.Script(fakeupstream.Fail(502), fakeupstream.Fail(502))
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "primary" || r.Header.Get("X-Bardo-Fallback") != "backup:502,backup:502" {
		t.Fatalf("backing-off provider as the last resort: %d %q %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Fallback"), r.Body)
	}

	// Both fail: a clear error naming what was tried; never the simulator.
	primary.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	backup.Script(fakeupstream.Fail(502), fakeupstream.Fail(502))
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 502 || r.Header.Get("X-Bardo-Fallback") != "backup:502,backup:502,primary:502,primary:502" || strings.Contains(string(r.Body), "bardo sim") {
		t.Fatalf("all down: %d %q %s", r.Status, r.Header.Get("X-Bardo-Fallback"), r.Body)
	}
}

// An OpenAI-dialect client served by Anthropic with extended thinking gets
// the signed thinking as reasoning_details and, sending it back in its
// tool-use loop, the Anthropic upstream receives the same signature.
func TestOpenAIClientKeepsThinkingSignature(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"weather? fake:thinking fake:tool=get_weather"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var resp struct {
		Choices []struct {
			Message map[string]json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(r.Body, &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("%v: %s", err, r.Body)
	}
	msg := resp.Choices[0].Message
	var details []struct {
		Type, Text, Signature, Format string
	}
	if err := json.Unmarshal(msg["reasoning_details"], &details); err != nil || len(details) != 1 {
		t.Fatalf("reasoning_details: %v: %s", err, r.Body)
	}
	sig := details[0].Signature
	if sig == "" || details[0].Type != "reasoning.text" || details[0].Format != "anthropic-claude-v1" || msg["reasoning_content"] == nil {
		t.Fatalf("message %s", r.Body)
	}

	// stream: the same signature in delta.reasoning_details
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"weather? fake:thinking fake:tool=get_weather"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"reasoning_details":[{"type":"reasoning.text","text":`) || !strings.Contains(string(r.Body), `"signature":"`+sig+`"`) {
		t.Fatalf("stream %d: %s", r.Status, r.Body)
	}

	// the client sends the assistant turn back, as it got it
	var calls []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(msg["tool_calls"], &calls); err != nil || len(calls) != 1 {
		t.Fatalf("tool_calls: %v: %s", err, r.Body)
	}
	assistant, _ := json.Marshal(map[string]json.RawMessage{
		"role": json.RawMessage(`"assistant"`), "content": msg["content"], "reasoning_content": msg["reasoning_content"],
		"reasoning_details": msg["reasoning_details"], "tool_calls": msg["tool_calls"]})
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"weather? fake:thinking fake:tool=get_weather"},` + string(assistant) +
		`,{"role":"tool","tool_call_id":"` + calls[0].ID + `","content":"sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var up struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(fake.Last().Body, &up); err != nil || len(up.Messages) != 3 {
		t.Fatalf("upstream body %v: %s", err, fake.Last().Body)
	}
	var c []struct {
		Type, Thinking, Signature string
	}
	if err := json.Unmarshal(up.Messages[1].Content, &c); err != nil || len(c) == 0 || c[0].Type != "thinking" || c[0].Signature != sig || c[0].Thinking != details[0].Text {
		t.Fatalf("upstream assistant turn: %s", fake.Last().Body)
	}
}

// An OpenAI caller's response_format, served by Anthropic, is a forced tool
// upstream and JSON text for the caller.
func TestStructuredOutputFromAnthropic(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	const rf = `"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":{"type":"object","properties":{"query":{"type":"string"}}}}}`
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"q fake:tool=answer"}],`+rf+`}`)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	up := decode(t, fake.Last().Body)
	if tc, _ := up["tool_choice"].(map[string]any); tc["type"] != "tool" || tc["name"] != "answer" {
		t.Fatalf("upstream body %s", fake.Last().Body)
	}
	m := decode(t, r.Body)
	choice := m["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	var got map[string]string
	if s, _ := msg["content"].(string); json.Unmarshal([]byte(s), &got) != nil || got["query"] != "q fake:tool=answer" ||
		choice["finish_reason"] != "stop" || msg["tool_calls"] != nil {
		t.Fatalf("caller got %s", r.Body)
	}
	if h := r.Header.Get("X-Bardo-Degraded"); strings.Contains(h, "response_format") {
		t.Errorf("degraded %q", h)
	}

	r = post(t, g.URL, "/v1/chat/completions", `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"q fake:tool=answer"}],`+rf+`}`)
	var content, finish string
	for _, ev := range sseEvents(t, r.Body) {
		if ev[1] == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls any    `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.ToolCalls != nil {
				t.Fatalf("tool call in stream: %s", r.Body)
			}
			content += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if json.Unmarshal([]byte(content), &got) != nil || got["query"] != "q fake:tool=answer" || finish != "stop" {
		t.Fatalf("stream content %q finish %q: %s", content, finish, r.Body)
	}
}
