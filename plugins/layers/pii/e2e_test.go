//go:build !wasip1

// End-to-end: the pii layer in a real gateway in front of the fake upstream.
// (The package is main_test: the external test package of a main package
// must be named after it.)
package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["pii.wasm"] = "plugins/layers/pii" }

const (
	upKey   = "sk-test-upstream-secret-0123456789"
	email   = "alice.smith@example.com"
	email2  = "bob@corp.example.org"
	phone   = "+1 415 555 2671"
	privKey = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
)

func start(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	pipeline := `
[[layer]]
name = "pii"
plugin = "pii.wasm"
trusted = true
` + testgateway.FakeProviders(fake.URL())
	g := testgateway.Start(t, pipeline, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, fake
}

type reply = apitest.Reply

func post(t *testing.T, url, path string, body any, headers ...string) reply {
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

// streamed is what a caller assembles from a stream.
type streamed struct {
	text, args string
	chunks     int // content chunks (text or tool arguments)
}

func readOpenAIStream(t *testing.T, b []byte) streamed {
	t.Helper()
	var s streamed
	evs := sseEvents(t, b)
	if len(evs) == 0 || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("openai stream does not end with [DONE]: %s", b)
	}
	for _, ev := range evs[:len(evs)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev[1], err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				s.text += *ch.Delta.Content
				s.chunks++
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					s.args += tc.Function.Arguments
					s.chunks++
				}
			}
		}
	}
	return s
}

func readAnthropicStream(t *testing.T, b []byte) streamed {
	t.Helper()
	var s streamed
	evs := sseEvents(t, b)
	if len(evs) == 0 || evs[len(evs)-1][0] != "message_stop" {
		t.Fatalf("anthropic stream does not end with message_stop: %s", b)
	}
	for _, ev := range evs {
		if ev[0] != "content_block_delta" {
			continue
		}
		d := decode(t, []byte(ev[1]))["delta"].(map[string]any)
		switch d["type"] {
		case "text_delta":
			s.text += d["text"].(string)
		case "input_json_delta":
			s.args += d["partial_json"].(string)
		}
		s.chunks++
	}
	return s
}

func openAIText(t *testing.T, b []byte) string {
	t.Helper()
	m := decode(t, b)
	return m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

// assertMasked checks the upstream never saw the originals, and saw
// placeholders instead.
func assertMasked(t *testing.T, upstream []byte, originals []string, placeholders ...string) {
	t.Helper()
	for _, o := range originals {
		if bytes.Contains(upstream, []byte(o)) {
			t.Errorf("upstream received %q:\n%s", o, upstream)
		}
	}
	for _, p := range placeholders {
		if !bytes.Contains(upstream, []byte(p)) {
			t.Errorf("upstream body lacks %s:\n%s", p, upstream)
		}
	}
}

func userMsg(text string) []map[string]any {
	return []map[string]any{{"role": "user", "content": text}}
}

// A long message with several values, so the echo streams in many chunks.
var longMessage = "Please forward the quarterly report to " + email + " and copy " + email2 +
	" as well. If anything is unclear call me on " + phone + " during office hours, or write to " +
	email + " again. Thanks for handling this so quickly, it matters a lot to the whole team."

func TestMaskRestoreNonStream(t *testing.T) {
	g, fake := start(t)
	msg := "Contact " + email + " or " + phone + " today."
	r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "messages": userMsg(msg)})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	assertMasked(t, fake.Last().Body, []string{email, phone}, "[EMAIL_1]", "[PHONE_1]")
	if got := openAIText(t, r.Body); got != "echo: "+msg {
		t.Fatalf("answer %q, want the originals restored", got)
	}
	if h := r.Header.Get("X-Bardo-PII"); h != "2 masked, 0 redacted" {
		t.Errorf("X-Bardo-PII = %q", h)
	}

	// Anthropic caller, Anthropic upstream, with the value in the system prompt too.
	r = post(t, g.URL, "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 200,
		"system": "Escalations go to " + email2 + ".", "messages": userMsg(msg)})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	assertMasked(t, fake.Last().Body, []string{email, email2, phone}, "[EMAIL_1]", "[EMAIL_2]", "[PHONE_1]")
	if got := decode(t, r.Body)["content"].([]any)[0].(map[string]any)["text"]; got != "echo: "+msg {
		t.Fatalf("answer %q", got)
	}
	// Nothing of it reached the log or the metrics.
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`bardo_plugin_pii_masked_total{plugin="pii"} 5`, `bardo_plugin_pii_restored_total{plugin="pii"} 4`} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s:\n%s", m, metrics)
		}
	}
	for _, v := range []string{email, email2, phone} {
		if strings.Contains(g.LogLines.String(), v) || strings.Contains(string(metrics), v) {
			t.Errorf("gateway log or metrics hold %q", v)
		}
	}
}

func TestMaskRestoreStream(t *testing.T) {
	g, fake := start(t)
	want := "echo: " + longMessage
	for _, tc := range []struct {
		name, path, model string
		read              func(*testing.T, []byte) streamed
	}{
		{"openai", "/v1/chat/completions", "gpt-4o", readOpenAIStream},
		{"anthropic-caller-openai-upstream", "/v1/messages", "gpt-4o", readAnthropicStream},
		{"anthropic", "/v1/messages", "claude-sonnet-4-5", readAnthropicStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, g.URL, tc.path, map[string]any{"model": tc.model, "max_tokens": 500, "stream": true, "messages": userMsg(longMessage)})
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			assertMasked(t, fake.Last().Body, []string{email, email2, phone}, "[EMAIL_1]", "[EMAIL_2]", "[PHONE_1]")
			s := tc.read(t, r.Body)
			if s.text != want {
				t.Fatalf("streamed text\n got %q\nwant %q", s.text, want)
			}
			if s.chunks < 10 {
				t.Errorf("only %d chunks: the echo should stream in pieces", s.chunks)
			}
			if strings.Contains(string(r.Body), "[EMAIL_") || strings.Contains(string(r.Body), "[PHONE_") {
				t.Errorf("a placeholder reached the caller:\n%s", r.Body)
			}
		})
	}
}

// Real providers split text where their tokenizer does, so a placeholder
// can straddle stream chunks ("[EM" + "AIL_1]"). The fake streams the echo in
// 3-byte pieces here: every placeholder is cut, and the caller still sees
// only its own values, whole.
func TestPlaceholderSplitAcrossChunks(t *testing.T) {
	g, fake := start(t)
	for _, tc := range []struct {
		name, path, model string
		read              func(*testing.T, []byte) streamed
	}{
		{"openai", "/v1/chat/completions", "gpt-4o", readOpenAIStream},
		{"anthropic", "/v1/messages", "claude-sonnet-4-5", readAnthropicStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.Script(fakeupstream.Behaviour{ChunkBytes: 3})
			r := post(t, g.URL, tc.path, map[string]any{"model": tc.model, "max_tokens": 500, "stream": true, "messages": userMsg(longMessage)})
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			assertMasked(t, fake.Last().Body, []string{email, email2, phone}, "[EMAIL_1]", "[EMAIL_2]", "[PHONE_1]")
			// Ask the fake the same thing directly: its frames do cut the
			// placeholders (so this test tests what it claims).
			direct := fakeTextFrames(t, fake, fakeupstream.Behaviour{ChunkBytes: 3}, "write to [EMAIL_1] now")
			cut := false
			for _, f := range direct {
				if strings.Contains(f, "[") && !strings.Contains(f, "]") {
					cut = true
				}
			}
			if !cut {
				t.Fatalf("the fake did not cut a placeholder: %q", direct)
			}
			s := tc.read(t, r.Body)
			if s.text != "echo: "+longMessage {
				t.Fatalf("streamed text\n got %q\nwant %q", s.text, "echo: "+longMessage)
			}
			if strings.Contains(string(r.Body), "[EMAIL_") || strings.Contains(string(r.Body), "[PHONE_") || strings.Contains(string(r.Body), "AIL_") {
				t.Errorf("a placeholder (or a piece of one) reached the caller:\n%s", r.Body)
			}
		})
	}
}

// fakeTextFrames asks the fake directly (no gateway) to stream an echo of
// text and returns its content frames.
func fakeTextFrames(t *testing.T, fake *fakeupstream.Server, b fakeupstream.Behaviour, text string) []string {
	t.Helper()
	fake.Script(b)
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": userMsg(text)})
	req, _ := http.NewRequest("POST", fake.URL()+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+upKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var frames []string
	for _, ev := range sseEvents(t, raw) {
		var c struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(ev[1]), &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil {
			frames = append(frames, *c.Choices[0].Delta.Content)
		}
	}
	return frames
}

// fakeStreamChunks asks the fake directly (no gateway) for the scripted
// stream and returns its tool-argument fragments: what the gateway has to
// reassemble.
func fakeStreamChunks(t *testing.T, fake *fakeupstream.Server, b fakeupstream.Behaviour) []string {
	t.Helper()
	fake.Script(b)
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": userMsg("x")})
	req, _ := http.NewRequest("POST", fake.URL()+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+upKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var frags []string
	for _, ev := range sseEvents(t, raw) {
		if i := strings.Index(ev[1], `"arguments":"`); i >= 0 {
			var c struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Function struct {
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(ev[1]), &c) == nil && len(c.Choices) > 0 && len(c.Choices[0].Delta.ToolCalls) > 0 {
				frags = append(frags, c.Choices[0].Delta.ToolCalls[0].Function.Arguments)
			}
		}
	}
	return frags
}

func TestToolCallArgumentsRestored(t *testing.T) {
	g, fake := start(t)
	args := `{"to":"[EMAIL_1]","cc":["[EMAIL_2]"],"body":"Call [PHONE_1] \"soon\""}`
	call := fakeupstream.ToolCall("send_email", args)

	// The fake cuts tool arguments into 8-byte pieces: placeholders are
	// split across stream events.
	frags := fakeStreamChunks(t, fake, call)
	split := false
	for _, f := range frags {
		if i := strings.LastIndexByte(f, '['); i >= 0 && !strings.Contains(f[i:], "]") {
			split = true
		}
	}
	if !split || strings.Join(frags, "") != args {
		t.Fatalf("the fake did not split a placeholder: %q", frags)
	}

	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "send_email",
		"parameters": map[string]any{"type": "object"}}}}
	msg := "Mail " + email + ", cc " + email2 + ", say to call " + phone
	check := func(t *testing.T, raw string) {
		t.Helper()
		var got struct {
			To   string   `json:"to"`
			CC   []string `json:"cc"`
			Body string   `json:"body"`
		}
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("arguments %q: %v", raw, err)
		}
		if got.To != email || len(got.CC) != 1 || got.CC[0] != email2 || got.Body != `Call `+phone+` "soon"` {
			t.Fatalf("arguments not restored: %q", raw)
		}
	}

	t.Run("openai", func(t *testing.T) {
		fake.Script(call)
		r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "tools": tools, "messages": userMsg(msg)})
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		assertMasked(t, fake.Last().Body, []string{email, email2, phone}, "[EMAIL_1]")
		tc := decode(t, r.Body)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0]
		check(t, tc.(map[string]any)["function"].(map[string]any)["arguments"].(string))
	})
	t.Run("openai-stream", func(t *testing.T) {
		fake.Script(call)
		r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "stream": true, "tools": tools, "messages": userMsg(msg)})
		s := readOpenAIStream(t, r.Body)
		check(t, s.args)
	})
	t.Run("anthropic-stream", func(t *testing.T) {
		fake.Script(call)
		r := post(t, g.URL, "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 200, "stream": true,
			"tools":    []map[string]any{{"name": "send_email", "input_schema": map[string]any{"type": "object"}}},
			"messages": userMsg(msg)})
		s := readAnthropicStream(t, r.Body)
		check(t, s.args)
	})
	t.Run("anthropic", func(t *testing.T) {
		fake.Script(call)
		r := post(t, g.URL, "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 200,
			"tools":    []map[string]any{{"name": "send_email", "input_schema": map[string]any{"type": "object"}}},
			"messages": userMsg(msg)})
		for _, c := range decode(t, r.Body)["content"].([]any) {
			if c.(map[string]any)["type"] == "tool_use" {
				in, _ := json.Marshal(c.(map[string]any)["input"])
				check(t, string(in))
				return
			}
		}
		t.Fatalf("no tool_use in %s", r.Body)
	})
}

func TestPrivateKeyBlocked(t *testing.T) {
	g, fake := start(t)
	msg := "sign with " + privKey + " please"
	calls := fake.Count("/v1/chat/completions") + fake.Count("/v1/messages")
	r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "messages": userMsg(msg)})
	if r.Status != 400 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	e := decode(t, r.Body)["error"].(map[string]any)
	if e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), "Ethereum private key") {
		t.Fatalf("openai error = %v", e)
	}
	r2 := post(t, g.URL, "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 20, "stream": true, "messages": userMsg(msg)})
	if r2.Status != 400 {
		t.Fatalf("status %d: %s", r2.Status, r2.Body)
	}
	if m := decode(t, r2.Body); m["type"] != "error" || m["error"].(map[string]any)["type"] != "invalid_request_error" {
		t.Fatalf("anthropic error = %v", m)
	}
	if n := fake.Count("/v1/chat/completions") + fake.Count("/v1/messages"); n != calls {
		t.Fatalf("the upstream was called (%d → %d)", calls, n)
	}
	bare := strings.TrimPrefix(privKey, "0x")
	for _, where := range []string{string(r.Body), string(r2.Body), g.LogLines.String()} {
		if strings.Contains(where, bare) || strings.Contains(where, bare[:16]) {
			t.Fatalf("the key leaked into %q", where)
		}
	}
}

func TestCreditCards(t *testing.T) {
	g, fake := start(t)
	const valid, invalid = "4111 1111 1111 1111", "4111111111111112"
	msg := "charge " + valid + ", not " + invalid
	r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "messages": userMsg(msg)})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	up := fake.Last().Body
	assertMasked(t, up, []string{valid}, "[CARD_1]")
	if !bytes.Contains(up, []byte(invalid)) {
		t.Errorf("a number failing the Luhn check was masked:\n%s", up)
	}
	if got := openAIText(t, r.Body); got != "echo: "+msg {
		t.Fatalf("answer %q", got)
	}
	if h := r.Header.Get("X-Bardo-PII"); h != "1 masked, 0 redacted" {
		t.Errorf("X-Bardo-PII = %q", h)
	}
}

// A multi-turn conversation sends back what the gateway restored: the
// history is masked again, consistently.
func TestHistoryIsMaskedAgain(t *testing.T) {
	g, fake := start(t)
	msgs := []map[string]any{
		{"role": "user", "content": "my mail is " + email},
		{"role": "assistant", "content": "Noted: " + email + "."},
		{"role": "user", "content": "and my phone " + phone},
	}
	r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "messages": msgs})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	up := fake.Last().Body
	assertMasked(t, up, []string{email, phone}, "Noted: [EMAIL_1].", "[PHONE_1]")
	if got := openAIText(t, r.Body); got != "echo: and my phone "+phone {
		t.Fatalf("answer %q", got)
	}
}
