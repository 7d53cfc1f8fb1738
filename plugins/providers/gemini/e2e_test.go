//go:build !wasip1

package main_test

// End to end: the gateway in-process with the gemini adapter compiled to
// WASM, in front of the fake upstream's Gemini endpoints, called over plain
// HTTP by OpenAI- and Anthropic-dialect clients.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

const geminiKey = "AIza-e2e-secret-0123456789"

func start(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(geminiKey))
	t.Cleanup(fake.Close)
	wasm := wasmbuild.MustBuild(t, "plugins/providers/gemini")
	toml := fmt.Sprintf(`
[[provider]]
name = "gemini"
plugin = %q
base_url = %q
credential = "env:GEMINI_KEY"
models = ["gemini-*"]
trusted = true
`, wasm, fake.URL())
	g := testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"GEMINI_KEY": geminiKey}})
	return g, fake
}

type reply struct {
	status int
	header http.Header
	body   []byte
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// J is a decoded JSON value with a path accessor for terse assertions.
type J struct {
	t *testing.T
	v any
}

func parse(t *testing.T, b []byte) J {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return J{t, v}
}

// At walks object keys and array indexes; a missing step gives nil.
func (j J) At(path ...any) J {
	v := j.v
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return J{j.t, nil}
			}
			v = a[k]
		}
	}
	return J{j.t, v}
}

func (j J) S(path ...any) string { s, _ := j.At(path...).v.(string); return s }
func (j J) N(path ...any) int    { f, _ := j.At(path...).v.(float64); return int(f) }
func (j J) Len(path ...any) int  { a, _ := j.At(path...).v.([]any); return len(a) }
func (j J) Has(path ...any) bool { return j.At(path...).v != nil }
func (j J) String() string       { b, _ := json.Marshal(j.v); return string(b) }
func tokens(s string) int        { return (len(s) + 3) / 4 }
func ok(t *testing.T, r reply) J { t.Helper(); mustStatus(t, r, 200); return parse(t, r.body) }
func mustStatus(t *testing.T, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

// events splits an SSE body into (event name, data) pairs.
func events(t *testing.T, b []byte) [][2]string {
	t.Helper()
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev, data string
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			if data != "" || ev != "" {
				out = append(out, [2]string{ev, data})
			}
			ev, data = "", ""
		case strings.HasPrefix(line, "event: "):
			ev = line[7:]
		case strings.HasPrefix(line, "data: "):
			data += line[6:]
		}
	}
	return out
}

// upstream returns the last request the fake received, its body decoded.
func upstream(t *testing.T, fake *fakeupstream.Server) (fakeupstream.Recorded, J) {
	t.Helper()
	r := fake.Last()
	return r, parse(t, r.Body)
}

func TestOpenAICaller(t *testing.T) {
	g, fake := start(t)
	const q = "hello there, gemini"

	r := post(t, g, "/v1/chat/completions", `{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"`+q+`"}],"max_tokens":64,"temperature":0.2}`)
	m := ok(t, r)
	if r.header.Get("X-Bardo-Provider") != "gemini" || m.S("object") != "chat.completion" ||
		m.S("choices", 0, "message", "content") != "echo: "+q || m.S("choices", 0, "finish_reason") != "stop" {
		t.Fatalf("response %s", m)
	}
	if m.N("usage", "prompt_tokens") != tokens("Be brief."+q) || m.N("usage", "completion_tokens") != tokens("echo: "+q) {
		t.Fatalf("usage %s", m.At("usage"))
	}
	rec, up := upstream(t, fake)
	if rec.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || rec.RawQuery != "" ||
		rec.Header.Get("x-goog-api-key") != geminiKey || rec.Header.Get("Authorization") != "" {
		t.Fatalf("upstream call %s?%s %v", rec.Path, rec.RawQuery, rec.Header)
	}
	if up.S("systemInstruction", "parts", 0, "text") != "Be brief." || up.S("contents", 0, "role") != "user" ||
		up.N("generationConfig", "maxOutputTokens") != 64 || up.At("generationConfig", "temperature").v != 0.2 {
		t.Fatalf("upstream body %s", up)
	}

	// Streamed.
	r = post(t, g, "/v1/chat/completions", `{"model":"gemini-2.5-flash","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three four five six seven"}]}`)
	mustStatus(t, r, 200)
	evs := events(t, r.body)
	if len(evs) < 4 || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("stream %v", evs)
	}
	var text strings.Builder
	finish := ""
	var usage J
	for _, ev := range evs[:len(evs)-1] {
		c := parse(t, []byte(ev[1]))
		text.WriteString(c.S("choices", 0, "delta", "content"))
		if f := c.S("choices", 0, "finish_reason"); f != "" {
			finish = f
		}
		if c.Has("usage") {
			usage = c.At("usage")
		}
	}
	if text.String() != "echo: one two three four five six seven" || finish != "stop" ||
		usage.N("completion_tokens") != tokens("echo: one two three four five six seven") {
		t.Fatalf("stream text %q finish %q usage %s", text.String(), finish, usage)
	}
	if rec := fake.Last(); rec.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || rec.RawQuery != "alt=sse" {
		t.Fatalf("stream call %s?%s", rec.Path, rec.RawQuery)
	}
}

func TestAnthropicCaller(t *testing.T) {
	g, fake := start(t)
	m := ok(t, post(t, g, "/v1/messages", `{"model":"gemini-2.5-pro","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"tell me a story"}]}`))
	if m.S("type") != "message" || m.S("role") != "assistant" || m.S("content", 0, "text") != "echo: tell me a story" ||
		m.S("stop_reason") != "end_turn" || m.Len("content") != 1 || m.S("model") != "gemini-2.5-pro" {
		t.Fatalf("message %s", m)
	}
	if m.N("usage", "input_tokens") != tokens("Be brief."+"hi"+"hello"+"tell me a story") || m.N("usage", "output_tokens") != tokens("echo: tell me a story") {
		t.Fatalf("usage %s", m.At("usage"))
	}
	_, up := upstream(t, fake)
	if up.S("contents", 1, "role") != "model" || up.N("generationConfig", "maxOutputTokens") != 100 {
		t.Fatalf("upstream body %s", up)
	}

	// Claude Code's mid-conversation system message: user text for Gemini,
	// in its place, and the caller is told.
	r0 := post(t, g, "/v1/messages", `{"model":"gemini-2.5-pro","max_tokens":100,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"be brief"}]}`)
	mustStatus(t, r0, 200)
	if d := r0.header.Get("X-Bardo-Degraded"); d != "system-as-user" {
		t.Fatalf("X-Bardo-Degraded %q", d)
	}
	if _, up = upstream(t, fake); up.S("contents", 0, "parts", 1, "text") != "<system-reminder>\nbe brief\n</system-reminder>" {
		t.Fatalf("upstream body %s", up)
	}

	// Streamed.
	r := post(t, g, "/v1/messages", `{"model":"gemini-2.5-pro","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"stream me a reply please"}]}`)
	mustStatus(t, r, 200)
	evs := events(t, r.body)
	var names []string
	var text strings.Builder
	for _, ev := range evs {
		if len(names) == 0 || names[len(names)-1] != ev[0] {
			names = append(names, ev[0])
		}
		d := parse(t, []byte(ev[1]))
		if ev[0] == "content_block_delta" {
			text.WriteString(d.S("delta", "text"))
		}
		if ev[0] == "message_delta" && (d.S("delta", "stop_reason") != "end_turn" || d.N("usage", "output_tokens") != tokens("echo: stream me a reply please")) {
			t.Fatalf("message_delta %s", d)
		}
	}
	want := "message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if strings.Join(names, ",") != want || text.String() != "echo: stream me a reply please" {
		t.Fatalf("events %v text %q", names, text.String())
	}
}

func TestToolRoundTrip(t *testing.T) {
	g, fake := start(t)
	// The schema has keys Gemini refuses; the fake answers 400 if any reaches it.
	tools := `[{"name":"get_weather","description":"Weather by city.","input_schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`
	m := ok(t, post(t, g, "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":100,"tools":`+tools+`,"messages":[{"role":"user","content":"weather in Paris? fake:tool"}]}`))
	if m.S("stop_reason") != "tool_use" || m.S("content", 0, "type") != "tool_use" || m.S("content", 0, "name") != "get_weather" ||
		m.S("content", 0, "input", "query") != "weather in Paris? fake:tool" || !strings.HasPrefix(m.S("content", 0, "id"), "call_") {
		t.Fatalf("tool_use %s", m)
	}
	id := m.S("content", 0, "id")
	_, up := upstream(t, fake)
	decl := up.At("tools", 0, "functionDeclarations", 0)
	if decl.S("name") != "get_weather" || decl.Has("parameters", "additionalProperties") || decl.S("parameters", "properties", "city", "type") != "string" {
		t.Fatalf("declaration %s", decl)
	}

	// The result goes back as a functionResponse named after the call.
	tu := m.At("content", 0).String()
	m = ok(t, post(t, g, "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":100,"tools":`+tools+`,"messages":[`+
		`{"role":"user","content":"weather in Paris? fake:tool"},{"role":"assistant","content":[`+tu+`]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"sunny, 21C"}]}]}`))
	if m.S("content", 0, "text") != "echo: sunny, 21C" || m.S("stop_reason") != "end_turn" {
		t.Fatalf("answer %s", m)
	}
	_, up = upstream(t, fake)
	if up.S("contents", 1, "parts", 0, "functionCall", "name") != "get_weather" ||
		up.S("contents", 1, "parts", 0, "functionCall", "args", "query") != "weather in Paris? fake:tool" ||
		up.S("contents", 2, "parts", 0, "functionResponse", "name") != "get_weather" ||
		up.S("contents", 2, "parts", 0, "functionResponse", "response", "output") != "sunny, 21C" {
		t.Fatalf("upstream contents %s", up.At("contents"))
	}

	// OpenAI caller, streamed, on a Gemini 3 model (which requires thought
	// signatures): the tool call arrives as tool_calls deltas; the OpenAI
	// history cannot carry Gemini's signature back, so the adapter sends the
	// documented fallback and Gemini accepts the turn.
	otools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"additionalProperties":false}}}]`
	r := post(t, g, "/v1/chat/completions", `{"model":"gemini-3-pro-preview","stream":true,"tools":`+otools+`,"messages":[{"role":"user","content":"Rome? fake:tool fake:thinking"}]}`)
	mustStatus(t, r, 200)
	var callID, name, args, finish string
	for _, ev := range events(t, r.body) {
		if ev[1] == "[DONE]" {
			continue
		}
		c := parse(t, []byte(ev[1]))
		tc := c.At("choices", 0, "delta", "tool_calls", 0)
		callID += tc.S("id")
		name += tc.S("function", "name")
		args += tc.S("function", "arguments")
		if f := c.S("choices", 0, "finish_reason"); f != "" {
			finish = f
		}
	}
	if name != "get_weather" || !strings.HasPrefix(callID, "call_") || finish != "tool_calls" || parse(t, []byte(args)).S("query") != "Rome? fake:tool fake:thinking" {
		t.Fatalf("streamed tool call id %q name %q args %q finish %q", callID, name, args, finish)
	}
	m = ok(t, post(t, g, "/v1/chat/completions", `{"model":"gemini-3-pro-preview","tools":`+otools+`,"messages":[`+
		`{"role":"user","content":"Rome? fake:tool fake:thinking"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"`+callID+`","type":"function","function":{"name":"get_weather","arguments":`+jsonString(args)+`}}]},`+
		`{"role":"tool","tool_call_id":"`+callID+`","content":"{\"temp\":18}"}]}`))
	if m.S("choices", 0, "message", "content") != `echo: {"temp":18}` {
		t.Fatalf("answer %s", m)
	}
	_, up = upstream(t, fake)
	if up.S("contents", 1, "parts", 0, "thoughtSignature") != "skip_thought_signature_validator" ||
		up.N("contents", 2, "parts", 0, "functionResponse", "response", "temp") != 18 {
		t.Fatalf("upstream contents %s", up.At("contents"))
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestThinkingSignaturesSurvive(t *testing.T) {
	g, fake := start(t)
	// An Anthropic caller keeps Gemini's signature in its thinking blocks,
	// so the next turn carries the real one (not the fallback).
	q := `{"role":"user","content":"Oslo? fake:tool fake:thinking"}`
	m := ok(t, post(t, g, "/v1/messages", `{"model":"gemini-3-flash-preview","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[`+q+`]}`))
	_, up := upstream(t, fake)
	if !up.At("generationConfig", "thinkingConfig", "includeThoughts").v.(bool) || up.N("generationConfig", "thinkingConfig", "thinkingBudget") != 1024 {
		t.Fatalf("thinkingConfig %s", up.At("generationConfig"))
	}
	// thought part → thinking (marked as Gemini's); the signature that rode
	// on the functionCall → its own thinking block; then the tool_use.
	if m.Len("content") != 3 || m.S("content", 0, "type") != "thinking" || m.S("content", 0, "thinking") != "Thinking about: Oslo? fake:tool fake:thinking" ||
		m.S("content", 1, "type") != "thinking" || !strings.HasPrefix(m.S("content", 1, "signature"), "gemini:") || m.S("content", 2, "type") != "tool_use" {
		t.Fatalf("content %s", m.At("content"))
	}
	sig := strings.TrimPrefix(m.S("content", 1, "signature"), "gemini:")
	if m.N("usage", "output_tokens") != tokens("Thinking about: Oslo? fake:tool fake:thinking")+tokens("get_weather"+`{"query":"Oslo? fake:tool fake:thinking"}`) {
		t.Fatalf("thinking tokens count as output: %s", m.At("usage"))
	}
	history := m.At("content").String()
	id := m.S("content", 2, "id")
	ok(t, post(t, g, "/v1/messages", `{"model":"gemini-3-flash-preview","max_tokens":2000,"messages":[`+q+`,{"role":"assistant","content":`+history+`},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"snow"}]}]}`))
	_, up = upstream(t, fake)
	model := up.At("contents", 1, "parts")
	if model.Len() != 2 || model.At(0, "thought").v != true || model.S(1, "functionCall", "name") != "get_weather" || model.S(1, "thoughtSignature") != sig {
		t.Fatalf("model turn sent back %s (signature %q)", model, sig)
	}

	// Streamed, the Anthropic caller sees thinking deltas and a signature delta.
	r := post(t, g, "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":2000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"why? fake:thinking"}]}`)
	mustStatus(t, r, 200)
	var thinking, text, sigs strings.Builder
	for _, ev := range events(t, r.body) {
		d := parse(t, []byte(ev[1]))
		switch d.S("delta", "type") {
		case "thinking_delta":
			thinking.WriteString(d.S("delta", "thinking"))
		case "text_delta":
			text.WriteString(d.S("delta", "text"))
		case "signature_delta":
			sigs.WriteString(d.S("delta", "signature") + "|")
		}
	}
	if thinking.String() != "Thinking about: why? fake:thinking" || text.String() != "echo: why? fake:thinking" ||
		!strings.HasPrefix(sigs.String(), "gemini:|gemini:") || len(sigs.String()) < 20 {
		t.Fatalf("thinking %q text %q signatures %q", thinking.String(), text.String(), sigs.String())
	}
}

func TestUsageMapping(t *testing.T) {
	g, _ := start(t)
	const q = "count me fake:cached=100"
	m := ok(t, post(t, g, "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":100,"messages":[{"role":"user","content":"`+q+`"}]}`))
	if m.N("usage", "input_tokens") != tokens(q) || m.N("usage", "cache_read_input_tokens") != 100 || m.N("usage", "output_tokens") != tokens("echo: "+q) {
		t.Fatalf("anthropic usage %s", m.At("usage"))
	}
	m = ok(t, post(t, g, "/v1/chat/completions", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"`+q+`"}]}`))
	if m.N("usage", "prompt_tokens") != tokens(q)+100 || m.N("usage", "prompt_tokens_details", "cached_tokens") != 100 ||
		m.N("usage", "completion_tokens") != tokens("echo: "+q) {
		t.Fatalf("openai usage %s", m.At("usage"))
	}
}

func TestRateLimitInCallerDialect(t *testing.T) {
	g, fake := start(t)
	fake.Script(fakeupstream.RateLimited(7))
	r := post(t, g, "/v1/chat/completions", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"x"}]}`)
	mustStatus(t, r, 429)
	if r.header.Get("Retry-After") != "7" {
		t.Fatalf("Retry-After %q (from Gemini's RetryInfo)", r.header.Get("Retry-After"))
	}
	if e := parse(t, r.body).At("error"); !strings.Contains(e.S("message"), "exceeded your current quota") || (e.S("type") == "" && e.S("code") == "") {
		t.Fatalf("openai error %s", e)
	}

	fake.Script(fakeupstream.RateLimited(3))
	r = post(t, g, "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	mustStatus(t, r, 429)
	m := parse(t, r.body)
	if m.S("type") != "error" || m.S("error", "type") != "rate_limit_error" || r.header.Get("Retry-After") != "3" {
		t.Fatalf("anthropic error %s (retry-after %q)", m, r.header.Get("Retry-After"))
	}
	if strings.Contains(string(r.body), geminiKey) {
		t.Fatal("the key leaked")
	}

	// A retry-after beyond the gateway's retry cap: no second try was made.
	if fake.Pending() != 0 || fake.Count("/v1beta/models/gemini-2.5-flash:streamGenerateContent") != 1 {
		t.Fatalf("429s were retried: %v", fake.Counts())
	}

	// 503 UNAVAILABLE is retryable: the gateway tries once more, then the
	// caller gets the error in its dialect.
	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	r = post(t, g, "/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`)
	if r.status/100 != 5 || parse(t, r.body).S("error", "type") == "" || !strings.Contains(string(r.body), "overloaded") || fake.Pending() != 0 {
		t.Fatalf("503: %d %s (pending %d)", r.status, r.body, fake.Pending())
	}
}

func TestCutStreamEndsWithError(t *testing.T) {
	g, fake := start(t)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"a b c d e f g h i j k l"}]}`},
		{"/v1/messages", `{"model":"gemini-2.5-flash","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"a b c d e f g h i j k l"}]}`},
	} {
		fake.Script(fakeupstream.CutAfter(2))
		r := post(t, g, tc.path, tc.body)
		evs := events(t, r.body)
		if len(evs) < 2 {
			t.Fatalf("%s: stream %v", tc.path, evs)
		}
		last := evs[len(evs)-1]
		if !strings.Contains(last[1], `"error"`) || !strings.Contains(last[1], "broke off") {
			t.Fatalf("%s: a cut stream must end with an error event, got %v", tc.path, last)
		}
		for _, ev := range evs {
			if ev[0] == "message_stop" || ev[1] == "[DONE]" {
				t.Fatalf("%s: a cut stream looked complete: %v", tc.path, evs)
			}
		}
	}
}
