//go:build !wasip1

package main_test

// End to end: the gateway in-process with the venice adapter compiled to
// WASM, in front of the fake upstream's Venice endpoint, called over plain
// HTTP by OpenAI- and Anthropic-dialect clients.

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["venice.wasm"] = "plugins/providers/venice" }

const veniceKey = "vk-e2e-secret-0123456789"

// start serves one Venice provider in front of a fresh fake. extraConfig is
// appended to its [provider.config] table.
func start(t *testing.T, extraConfig string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(veniceKey))
	t.Cleanup(fake.Close)
	toml := fmt.Sprintf(`
[[provider]]
name = "venice"
plugin = "venice.wasm"
base_url = "%s/api/v1"
credential = "env:VENICE_KEY"
models = ["*"]
trusted = true
traits = { private = true }
[[provider.model]]
id = "deepseek-r1"
quality = "maximum"
features = ["visible_thinking", "privacy", "reasoning"]
input_price = "0.5"
output_price = "2"
[provider.config]
attestation_keys = [%q]
characters = { "risk-assessor" = "analytical-conservative" }
%s
`, fake.URL(), fakeupstream.VeniceAttestationPublicKey(), extraConfig)
	g := testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"VENICE_KEY": veniceKey}})
	return g, fake
}

func openAIAsk(model, text, more string) string {
	q, _ := json.Marshal(text)
	return `{"model":"` + model + `","messages":[{"role":"user","content":` + string(q) + `}]` + more + `}`
}

func anthropicAsk(model, text, more string) string {
	q, _ := json.Marshal(text)
	return `{"model":"` + model + `","max_tokens":200,"messages":[{"role":"user","content":` + string(q) + `}]` + more + `}`
}

// at walks a decoded JSON value by keys and indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func mustStatus(t *testing.T, r apitest.Reply, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	return apitest.JSON(t, r.Body)
}

// lastBody is the body of the last request the fake received.
func lastBody(t *testing.T, fake *fakeupstream.Server) map[string]any {
	t.Helper()
	return apitest.JSON(t, fake.Last().Body)
}

// openAIError checks an OpenAI-dialect error and returns its message.
func openAIError(t *testing.T, r apitest.Reply, status int) string {
	t.Helper()
	m := mustStatus(t, r, status)
	msg, _ := at(m, "error", "message").(string)
	if typ, _ := at(m, "error", "type").(string); typ == "" || msg == "" {
		t.Fatalf("not an OpenAI error: %s", r.Body)
	}
	return msg
}

// anthropicError checks an Anthropic-dialect error and returns its message.
func anthropicError(t *testing.T, r apitest.Reply, status int) string {
	t.Helper()
	m := mustStatus(t, r, status)
	msg, _ := at(m, "error", "message").(string)
	if m["type"] != "error" || at(m, "error", "type") == nil || msg == "" {
		t.Fatalf("not an Anthropic error: %s", r.Body)
	}
	return msg
}

func TestPrivateAnswer(t *testing.T) {
	g, fake := start(t, "")
	r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "hello venice", ""),
		"X-Bardo-Session", "golem-7:epoch-2", "X-Bardo-Role", "risk-assessor")
	m := mustStatus(t, r, 200)
	if at(m, "choices", 0, "message", "content") != "echo: hello venice" || r.Header.Get("X-Bardo-Provider") != "venice" {
		t.Fatalf("answer %s", r.Body)
	}
	rec := fake.Last()
	if rec.Path != fakeupstream.VeniceChatPath || rec.Header.Get("Authorization") != "Bearer "+veniceKey ||
		rec.Header.Get(fakeupstream.VeniceHeaderAttestation) != "" {
		t.Fatalf("upstream call %s %v", rec.Path, rec.Header)
	}
	up := lastBody(t, fake)
	vp, _ := up["venice_parameters"].(map[string]any)
	if vp["include_venice_system_prompt"] != false || vp["enable_web_search"] != "off" ||
		vp["character_slug"] != "analytical-conservative" || up["prompt_cache_key"] != "golem-7:epoch-2" {
		t.Fatalf("upstream body %s", rec.Body)
	}

	// An Anthropic caller may send venice_parameters too; its other unknown
	// fields are Anthropic's and stay behind.
	r = apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("llama-3.3-70b", "hello from anthropic",
		`,"venice_parameters":{"enable_web_citations":true},"metadata":{"user_id":"u-1"}`))
	m = mustStatus(t, r, 200)
	if m["type"] != "message" || at(m, "content", 0, "text") != "echo: hello from anthropic" {
		t.Fatalf("anthropic answer %s", r.Body)
	}
	up = lastBody(t, fake)
	if at(up, "venice_parameters", "enable_web_citations") != true || at(up, "venice_parameters", "enable_web_search") != "off" ||
		up["metadata"] != nil || at(up, "messages", 0, "content") != "hello from anthropic" {
		t.Fatalf("upstream body from an Anthropic caller %s", fake.Last().Body)
	}
}

func TestNoLogRefused(t *testing.T) {
	g, fake := start(t, "")
	for _, c := range []struct{ phrase, why string }{
		{fakeupstream.PhraseVeniceNoPrivacy, "X-Venice-Privacy-Level missing"},
		{fakeupstream.PhraseVeniceRetention + "=30d", `X-Venice-Retention-Policy is "30d"`},
		{fakeupstream.PhraseVenicePrivacy + "=anonymized", `X-Venice-Privacy-Level is "anonymized"`},
	} {
		fake.Reset()
		msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "secret plan "+c.phrase, "")), 502)
		if !strings.Contains(msg, "does not confirm no retention") || !strings.Contains(msg, c.why) {
			t.Errorf("%s (OpenAI): %q", c.phrase, msg)
		}
		msg = anthropicError(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("llama-3.3-70b", "secret plan "+c.phrase, "")), 502)
		if !strings.Contains(msg, "does not confirm no retention") {
			t.Errorf("%s (Anthropic): %q", c.phrase, msg)
		}
		// Refused, not retried: the prompt went to Venice once per call.
		if n := fake.Count(fakeupstream.VeniceChatPath); n != 2 {
			t.Errorf("%s: %d upstream requests for 2 calls", c.phrase, n)
		}
	}
}

func TestTEEAttested(t *testing.T) {
	g, fake := start(t, "")
	for _, model := range []string{"tee-deepseek-r1", "deepseek-r1-tee"} {
		r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk(model, "plan the trade", ""))
		m := mustStatus(t, r, 200)
		if at(m, "choices", 0, "message", "content") != "echo: plan the trade" {
			t.Fatalf("%s: answer %s", model, r.Body)
		}
		rec := fake.Last()
		if rec.Header.Get(fakeupstream.VeniceHeaderAttestation) != "required" || len(rec.Header.Get(fakeupstream.VeniceHeaderAttestationNonce)) != 32 {
			t.Fatalf("%s: upstream headers %v", model, rec.Header)
		}
	}
	r := apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("tee-deepseek-r1", "plan the trade", ""))
	if m := mustStatus(t, r, 200); at(m, "content", 0, "text") != "echo: plan the trade" {
		t.Fatalf("anthropic answer %s", r.Body)
	}

	for _, c := range []struct{ phrase, why string }{
		{fakeupstream.PhraseVeniceDebug, "debug mode"},
		{fakeupstream.PhraseVeniceStale + "=45s", "too old"},
		{fakeupstream.PhraseVeniceBadSignature, "signature does not verify"},
		{fakeupstream.PhraseVeniceHashMismatch, "does not match the receipt"},
		{fakeupstream.PhraseVeniceNoReceipt, "no X-Venice-Attestation-Receipt"},
	} {
		msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("tee-deepseek-r1", "plan "+c.phrase, "")), 502)
		if !strings.Contains(msg, "attestation receipt was refused") || !strings.Contains(msg, c.why) {
			t.Errorf("%s (OpenAI): %q", c.phrase, msg)
		}
		msg = anthropicError(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("tee-deepseek-r1", "plan "+c.phrase, "")), 502)
		if !strings.Contains(msg, c.why) {
			t.Errorf("%s (Anthropic): %q", c.phrase, msg)
		}
	}

	// A gateway that trusts another key refuses the fake's receipts.
	seed := sha256.Sum256([]byte("not the fake's key"))
	other := ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey)
	g2, _ := startWithKeys(t, `"`+base64.StdEncoding.EncodeToString(other)+`"`)
	msg := openAIError(t, apitest.Post(t, g2.URL, "/v1/chat/completions", openAIAsk("tee-deepseek-r1", "plan", "")), 502)
	if !strings.Contains(msg, "signature does not verify") {
		t.Fatalf("untrusted key: %q", msg)
	}
}

// startWithKeys is start with attestation_keys replaced.
func startWithKeys(t *testing.T, keys string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(veniceKey))
	t.Cleanup(fake.Close)
	toml := fmt.Sprintf(`
[[provider]]
name = "venice"
plugin = "venice.wasm"
base_url = "%s/api/v1"
credential = "env:VENICE_KEY"
models = ["*"]
trusted = true
[provider.config]
attestation_keys = [%s]
`, fake.URL(), keys)
	return testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"VENICE_KEY": veniceKey}}), fake
}

func TestE2EERefusedBeforeSending(t *testing.T) {
	g, fake := start(t, "allow_e2ee_plaintext = true")
	tools := `,"tools":[{"type":"function","function":{"name":"get_price","parameters":{"type":"object","properties":{}}}}]`
	msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("e2ee-qwen3-30b", "my sealed bid", tools)), 400)
	if !strings.Contains(msg, "may not carry tools") {
		t.Fatalf("OpenAI caller: %q", msg)
	}
	atools := `,"tools":[{"name":"get_price","input_schema":{"type":"object","properties":{}}}]`
	msg = anthropicError(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("e2ee-qwen3-30b", "my sealed bid", atools)), 400)
	if !strings.Contains(msg, "may not carry tools") {
		t.Fatalf("Anthropic caller: %q", msg)
	}
	msg = openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("e2ee-qwen3-30b", "my sealed bid", ""),
		"X-Bardo-Web-Search", "auto"), 400)
	if !strings.Contains(msg, "may not carry web search") {
		t.Fatalf("web search header: %q", msg)
	}
	if n := fake.Count(fakeupstream.VeniceChatPath); n != 0 {
		t.Fatalf("refused E2EE requests reached Venice %d times", n)
	}

	// Without tools or search the request goes, attested.
	r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("e2ee-qwen3-30b", "my sealed bid", ""))
	if m := mustStatus(t, r, 200); at(m, "choices", 0, "message", "content") != "echo: my sealed bid" {
		t.Fatalf("clean e2ee: %s", r.Body)
	}
	if n := fake.Count(fakeupstream.VeniceChatPath); n != 1 {
		t.Fatalf("%d upstream requests", n)
	}
}

func TestE2EENotEncryptedRefused(t *testing.T) {
	g, fake := start(t, "")
	msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("e2ee-qwen3-30b", "my sealed bid", "")), 501)
	if !strings.Contains(msg, "encryption") || fake.Count(fakeupstream.VeniceChatPath) != 0 {
		t.Fatalf("%q, %d upstream requests", msg, fake.Count(fakeupstream.VeniceChatPath))
	}
}

func TestThinkingPerSubsystem(t *testing.T) {
	g, fake := start(t, "")
	ask := openAIAsk("auto", "why fake:thinking", "")
	for _, c := range []struct {
		subsystem string
		strip     bool
	}{{"dream", false}, {"death", false}, {"daimon_complex", false}, {"daimon", true}, {"heartbeat_t1", true}} {
		r := apitest.Post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", c.subsystem)
		m := mustStatus(t, r, 200)
		if vp, _ := lastBody(t, fake)["venice_parameters"].(map[string]any); vp["strip_thinking_response"] != c.strip {
			t.Errorf("%s: venice_parameters %v", c.subsystem, vp)
		}
		// The fake strips <think> when told to; the gateway turns a kept
		// one into the OpenAI dialect's reasoning_content.
		reasoning, _ := at(m, "choices", 0, "message", "reasoning_content").(string)
		content, _ := at(m, "choices", 0, "message", "content").(string)
		if (reasoning == "") != c.strip || content != "echo: why fake:thinking" {
			t.Errorf("%s: content %q reasoning %q", c.subsystem, content, reasoning)
		}
	}
}

func TestStreamsRefused(t *testing.T) {
	g, fake := start(t, "")
	msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "hi", `,"stream":true`)), 400)
	if !strings.Contains(msg, "stream") || fake.Count(fakeupstream.VeniceChatPath) != 0 {
		t.Fatalf("%q, %d upstream requests", msg, fake.Count(fakeupstream.VeniceChatPath))
	}

	// With unverified_streams, a private model streams (a TEE one still not).
	g, fake = start(t, "unverified_streams = true")
	r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "one two three", `,"stream":true`))
	if r.Status != 200 {
		t.Fatalf("unverified stream: %d %s", r.Status, r.Body)
	}
	var text strings.Builder
	evs := apitest.SSE(t, r.Body)
	for _, ev := range evs[:len(evs)-1] {
		s, _ := at(apitest.JSON(t, []byte(ev[1])), "choices", 0, "delta", "content").(string)
		text.WriteString(s)
	}
	if text.String() != "echo: one two three" || evs[len(evs)-1][1] != "[DONE]" {
		t.Fatalf("stream %q %v", text.String(), evs)
	}
	anthropicError(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("tee-deepseek-r1", "hi", `,"stream":true`)), 400)
	if n := fake.Count(fakeupstream.VeniceChatPath); n != 1 {
		t.Fatalf("%d upstream requests", n)
	}
}
