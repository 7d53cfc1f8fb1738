package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/sdk/routing"
)

// Two maximum-quality thinking models behind the fake upstream, the
// Anthropic one first: risk (effort max) resolves to it, and to the OpenAI
// reasoning model when it fails.
func reasoningGateway(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server, *fakeupstream.Server) {
	t.Helper()
	claude := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(claude.Close)
	up := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(up.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "`+claude.URL()+`"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true
[[provider.model]]
id = "claude-opus-test"
quality = "maximum"
features = ["tool_use", "adaptive_thinking", "interleaved_thinking", "visible_thinking", "citations"]
input_price = "15"
output_price = "75"

[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "`+up.URL()+`/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
[[provider.model]]
id = "gpt-reasoner"
quality = "maximum"
features = ["tool_use", "reasoning_effort", "interleaved_thinking", "citations"]
input_price = "1.25"
output_price = "10"
`, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, claude, up
}

// lastBody is the JSON body the fake upstream last received.
func lastBody(t *testing.T, f *fakeupstream.Server) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(f.Last().Body, &body); err != nil {
		t.Fatalf("upstream body: %v: %s", err, f.Last().Body)
	}
	return body
}

func degraded(r reply) []string { return strings.Split(r.Header.Get("X-Bardo-Degraded"), ",") }

func hasNote(r reply, note string) bool {
	for _, d := range degraded(r) {
		if strings.TrimSpace(d) == note {
			return true
		}
	}
	return false
}

// The subsystem's reasoning depth reaches the upstream in the resolved
// provider's own style, with sampling a thinking request accepts; a
// failover re-maps it for the next provider's style.
func TestProfileReasoningReachesUpstream(t *testing.T) {
	g, claude, up := reasoningGateway(t)
	ask := `{"model":"auto","messages":[{"role":"user","content":"assess the position"}]}`

	// Anthropic: thinking with the max budget, no temperature or top_k,
	// top_p at least 0.95, max_tokens above the budget.
	r := post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "risk")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "claude" {
		t.Fatalf("risk: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	body := lastBody(t, claude)
	th, _ := body["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(65536) {
		t.Fatalf("anthropic thinking %v in %v", body["thinking"], body)
	}
	if _, ok := body["temperature"]; ok {
		t.Errorf("temperature beside thinking: %v", body)
	}
	if _, ok := body["top_k"]; ok {
		t.Errorf("top_k beside thinking: %v", body)
	}
	if tp, _ := body["top_p"].(float64); tp < 0.95 {
		t.Errorf("top_p %v with thinking", body["top_p"])
	}
	if mt, _ := body["max_tokens"].(float64); mt <= 65536 {
		t.Errorf("max_tokens %v not above the budget", body["max_tokens"])
	}
	for _, k := range []string{"reasoning_effort", "reasoning"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent to Anthropic: %v", k, body)
		}
	}
	if !hasNote(r, "profile:temperature:dropped-with-thinking") {
		t.Errorf("X-Bardo-Degraded %q", r.Header.Get("X-Bardo-Degraded"))
	}

	// The caller's temperature wins: no thinking, the note says why.
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"auto","temperature":0.9,"messages":[{"role":"user","content":"assess"}]}`,
		"X-Bardo-Subsystem", "risk")
	body = lastBody(t, claude)
	if r.Status != 200 || body["thinking"] != nil || body["temperature"] != 0.9 {
		t.Fatalf("caller temperature: %d thinking %v temperature %v", r.Status, body["thinking"], body["temperature"])
	}
	if !hasNote(r, "profile:"+"reasoning_effort:dropped-caller-sampling") {
		t.Errorf("X-Bardo-Degraded %q", r.Header.Get("X-Bardo-Degraded"))
	}

	// An Anthropic caller's max_tokens below the budget wins too; the
	// profile's own sampling applies instead.
	r = post(t, g.URL, "/v1/messages", `{"model":"auto","max_tokens":1000,"messages":[{"role":"user","content":"assess"}]}`,
		"X-Bardo-Subsystem", "risk", "anthropic-version", "2023-06-01")
	body = lastBody(t, claude)
	if r.Status != 200 || body["thinking"] != nil || body["max_tokens"] != float64(1000) || body["temperature"] != 0.1 || body["top_k"] != float64(40) {
		t.Fatalf("caller max_tokens: %d %v", r.Status, body)
	}

	// The caller's own thinking is kept as it sent it.
	r = post(t, g.URL, "/v1/messages",
		`{"model":"auto","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"assess"}]}`,
		"X-Bardo-Subsystem", "risk", "anthropic-version", "2023-06-01")
	body = lastBody(t, claude)
	th, _ = body["thinking"].(map[string]any)
	if r.Status != 200 || th["budget_tokens"] != float64(2048) || body["max_tokens"] != float64(4096) || body["temperature"] != nil {
		t.Fatalf("caller thinking: %d %v", r.Status, body)
	}

	// Failover: the Anthropic provider fails, the OpenAI reasoning model
	// gets reasoning_effort — and nothing of the Anthropic mapping (no
	// thinking member, no top_p or max_tokens the profile filled for it).
	claude.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	r = post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "risk")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "up" || r.Header.Get("X-Bardo-Fallback") == "" {
		t.Fatalf("failover: %d %q fallback %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Fallback"), r.Body)
	}
	body = lastBody(t, up)
	if body["reasoning_effort"] != "xhigh" {
		t.Fatalf("openai reasoning_effort %v in %v", body["reasoning_effort"], body)
	}
	for _, k := range []string{"thinking", "reasoning", "temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent to the OpenAI reasoning model: %v", k, body)
		}
	}
	if hasNote(r, "profile:temperature:dropped-with-thinking") || !hasNote(r, "profile:temperature:dropped-with-reasoning") {
		t.Errorf("X-Bardo-Degraded after failover %q", r.Header.Get("X-Bardo-Degraded"))
	}
}

// A model whose catalog says it cannot reason is told in the system prompt
// (the intent tests' catalogs: premium-1 has no reasoning feature), and no
// reasoning member reaches it.
func TestProfileReasoningPromptFallback(t *testing.T) {
	g, fakes := intentGateway(t)
	r := post(t, g.URL, "/v1/chat/completions",
		`{"model":"auto","messages":[{"role":"system","content":"You assess risk."},{"role":"user","content":"assess"}]}`,
		"X-Bardo-Subsystem", "risk")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "premium" {
		t.Fatalf("%d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	_, body := upstreamModel(t, fakes["premium"])
	for _, k := range []string{"thinking", "reasoning", "reasoning_effort"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent to a model that cannot reason: %v", k, body)
		}
	}
	raw := string(fakes["premium"].Last().Body)
	if i, j := strings.Index(raw, routing.PromptStepByStep), strings.Index(raw, "You assess risk."); i < 0 || j < 0 || i > j {
		t.Errorf("system prompt: %s", raw)
	}
	if !hasNote(r, "profile:reasoning_effort:max>prompt") {
		t.Errorf("X-Bardo-Degraded %q", r.Header.Get("X-Bardo-Degraded"))
	}
}

// pipeline.toml's [inference.profiles.<subsystem>] reaches the upstream;
// a locked profile's override does not.
func TestConfiguredProfileReachesUpstream(t *testing.T) {
	up := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(up.Close)
	g := testgateway.Start(t, `
[inference.profiles.curator]
temperature = 0.05

[inference.profiles.risk]
temperature = 0.9

[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "`+up.URL()+`/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
[[provider.model]]
id = "gpt-plain"
quality = "maximum"
features = ["tool_use", "citations", "structured_outputs"]
input_price = "1"
output_price = "2"
`, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	if !strings.Contains(g.LogLines.String(), "inference profile risk is locked") {
		t.Errorf("no warning about the locked profile's override:\n%s", g.LogLines.String())
	}
	ask := `{"model":"auto","messages":[{"role":"user","content":"evaluate this entry"}]}`
	for _, c := range []struct {
		subsystem string
		want      float64
	}{{"curator", 0.05}, {"risk", 0.1}} {
		r := post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", c.subsystem)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", c.subsystem, r.Status, r.Body)
		}
		if got := lastBody(t, up)["temperature"]; got != c.want {
			t.Errorf("%s: upstream temperature %v, want %v", c.subsystem, got, c.want)
		}
	}
}
