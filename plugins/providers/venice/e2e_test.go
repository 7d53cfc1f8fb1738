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
func start(t testing.TB, extraConfig string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(veniceKey))
	t.Cleanup(fake.Close)
	return startPlugin(t, fake, "venice.wasm", extraConfig), fake
}

// startPlugin serves the Venice provider entry start uses, with plugin as
// its adapter, in front of fake.
func startPlugin(t testing.TB, fake *fakeupstream.Server, plugin, extraConfig string) *testgateway.Gateway {
	t.Helper()
	toml := fmt.Sprintf(`
[[provider]]
name = "venice"
plugin = %q
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
`, plugin, fake.URL(), fakeupstream.VeniceAttestationPublicKey(), extraConfig)
	return testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"VENICE_KEY": veniceKey}})
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
	// The caller's own fields reach Venice beside the adapter's members
	// (here the host forwards the caller's bytes with the members set).
	r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "hello venice", `,"user":"u-7","temperature":0.25`),
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
		vp["character_slug"] != "analytical-conservative" || up["prompt_cache_key"] != "golem-7:epoch-2" ||
		up["model"] != "llama-3.3-70b" || up["user"] != "u-7" || up["temperature"] != 0.25 || at(up, "messages", 0, "content") != "hello venice" {
		t.Fatalf("upstream body %s", rec.Body)
	}

	// The caller's venice_parameters are merged with the adapter's
	// defaults, its own members winning, and sent once; its own
	// prompt_cache_key wins over the session's.
	r = apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "hello again",
		`,"venice_parameters":{"enable_web_citations":true,"include_venice_system_prompt":true},"prompt_cache_key":"mine"`),
		"X-Bardo-Session", "golem-7:epoch-2")
	mustStatus(t, r, 200)
	rec = fake.Last()
	up = lastBody(t, fake)
	if at(up, "venice_parameters", "enable_web_citations") != true || at(up, "venice_parameters", "include_venice_system_prompt") != true ||
		at(up, "venice_parameters", "enable_web_search") != "off" || up["prompt_cache_key"] != "mine" ||
		strings.Count(string(rec.Body), `"venice_parameters"`) != 1 || strings.Count(string(rec.Body), `"prompt_cache_key"`) != 1 {
		t.Fatalf("upstream body with the caller's venice_parameters %s", rec.Body)
	}

	// An Anthropic caller may send venice_parameters too; its other unknown
	// fields are Anthropic's and stay behind.
	r = apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("llama-3.3-70b", "hello from anthropic",
		`,"venice_parameters":{"enable_web_citations":true},"metadata":{"user_id":"u-1"},"top_k":12`))
	m = mustStatus(t, r, 200)
	if m["type"] != "message" || at(m, "content", 0, "text") != "echo: hello from anthropic" {
		t.Fatalf("anthropic answer %s", r.Body)
	}
	up = lastBody(t, fake)
	if at(up, "venice_parameters", "enable_web_citations") != true || at(up, "venice_parameters", "enable_web_search") != "off" ||
		up["metadata"] != nil || at(up, "messages", 0, "content") != "hello from anthropic" || up["top_k"] != float64(12) ||
		(up["max_tokens"] != float64(200) && up["max_completion_tokens"] != float64(200)) {
		t.Fatalf("upstream body from an Anthropic caller %s", fake.Last().Body)
	}
}

func TestNoLogRefused(t *testing.T) {
	for _, c := range []struct{ phrase, why string }{
		{fakeupstream.PhraseVeniceNoPrivacy, "X-Venice-Privacy-Level missing"},
		{fakeupstream.PhraseVeniceRetention + "=30d", `X-Venice-Retention-Policy is "30d"`},
		{fakeupstream.PhraseVenicePrivacy + "=anonymized", `X-Venice-Privacy-Level is "anonymized"`},
	} {
		// A gateway per case: refusals count as the provider's failures,
		// and five in a row take it out of rotation (TestRefusalsOpenCircuit).
		g, fake := start(t, "")
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
	// A TEE model takes tools (only E2EE refuses them).
	tools := `,"tools":[{"type":"function","function":{"name":"get_price","parameters":{"type":"object","properties":{}}}}]`
	mustStatus(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("tee-deepseek-r1", "plan the trade", tools)), 200)
	if up := lastBody(t, fake); at(up, "tools", 0, "function", "name") != "get_price" || up["venice_parameters"] == nil {
		t.Fatalf("TEE request with tools: %s", fake.Last().Body)
	}

	for _, c := range []struct{ phrase, why string }{
		{fakeupstream.PhraseVeniceDebug, "debug mode"},
		{fakeupstream.PhraseVeniceStale + "=45s", "too old"},
		{fakeupstream.PhraseVeniceBadSignature, "signature does not verify"},
		{fakeupstream.PhraseVeniceHashMismatch, "does not match the receipt"},
		{fakeupstream.PhraseVeniceNoReceipt, "no X-Venice-Attestation-Receipt"},
	} {
		g, _ := start(t, "") // one per case, as in TestNoLogRefused
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
	for _, c := range []struct {
		subsystem string
		strip     bool
	}{{"dream", false}, {"death", false}, {"daimon_complex", false}, {"daimon", true}, {"heartbeat_t1", true}} {
		// Venice describes itself as a specialist: it takes the intents
		// that want privacy (dream, death, daimon…); a routine heartbeat
		// reaches it only with the model pinned to it.
		model := "auto"
		if c.subsystem == "heartbeat_t1" {
			model = "venice/deepseek-r1"
		}
		ask := openAIAsk(model, "why fake:thinking", "")
		r := apitest.Post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", c.subsystem)
		m := mustStatus(t, r, 200)
		if vp, _ := lastBody(t, fake)["venice_parameters"].(map[string]any); vp["strip_thinking_response"] != c.strip {
			t.Errorf("%s: venice_parameters %v", c.subsystem, vp)
		}
		// The fake strips <think> when told to. A kept one reaches the
		// OpenAI caller as Venice sent it, inline in content: the host
		// relays an OpenAI upstream's answer to an OpenAI caller untouched
		// (as for every OpenAI-compatible provider) unless a layer reads
		// responses; decoded, it would be reasoning_content. Either form
		// counts as kept; a stripped one must be in neither.
		reasoning, _ := at(m, "choices", 0, "message", "reasoning_content").(string)
		content, _ := at(m, "choices", 0, "message", "content").(string)
		answer, inline := content, false
		if rest, ok := strings.CutPrefix(content, "<think>"); ok {
			var thinking string
			thinking, answer, inline = strings.Cut(rest, "</think>")
			inline = inline && strings.TrimSpace(thinking) != ""
			answer = strings.TrimSpace(answer)
		}
		thought := reasoning != "" || inline
		if thought == c.strip || answer != "echo: why fake:thinking" {
			t.Errorf("%s: content %q reasoning %q", c.subsystem, content, reasoning)
		}
	}
	// An Anthropic caller's answer is decoded natively: a kept <think>
	// becomes a thinking block, a stripped one leaves only the text.
	for _, c := range []struct {
		subsystem string
		strip     bool
		model     string
	}{{"dream", false, "auto"}, {"heartbeat_t1", true, "venice/deepseek-r1"}} {
		m := mustStatus(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk(c.model, "why fake:thinking", ""), "X-Bardo-Subsystem", c.subsystem), 200)
		blocks, _ := m["content"].([]any)
		last := at(m, "content", len(blocks)-1, "text")
		thinking := at(m, "content", 0, "type") == "thinking" && at(m, "content", 0, "thinking") != ""
		if thinking == c.strip || last != "echo: why fake:thinking" {
			t.Errorf("Anthropic caller, %s: %s", c.subsystem, mustJSON(m))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// streamText joins an OpenAI stream's content deltas, and says whether it
// ended with [DONE] after a usage chunk.
func streamText(t *testing.T, body []byte) (text string, usage, done bool) {
	t.Helper()
	var b strings.Builder
	evs := apitest.SSE(t, body)
	for _, ev := range evs {
		if ev[1] == "[DONE]" {
			done = true
			continue
		}
		m := apitest.JSON(t, []byte(ev[1]))
		s, _ := at(m, "choices", 0, "delta", "content").(string)
		b.WriteString(s)
		usage = usage || at(m, "usage", "prompt_tokens") != nil
	}
	return b.String(), usage, done
}

// anthropicStreamText joins an Anthropic stream's text deltas, and says
// whether it ended with message_stop.
func anthropicStreamText(t *testing.T, body []byte) (string, bool) {
	t.Helper()
	var b strings.Builder
	stop := false
	for _, ev := range apitest.SSE(t, body) {
		m := apitest.JSON(t, []byte(ev[1]))
		if s, ok := at(m, "delta", "text").(string); ok && at(m, "delta", "type") == "text_delta" {
			b.WriteString(s)
		}
		stop = stop || ev[0] == "message_stop"
	}
	return b.String(), stop
}

func TestStreams(t *testing.T) {
	g, fake := start(t, "")
	// A private model's stream whose headers confirm no retention goes
	// through, to either dialect, with the adapter's members upstream.
	r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "one two three", `,"stream":true`),
		"X-Bardo-Session", "golem-7:epoch-2")
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	if text, usage, done := streamText(t, r.Body); text != "echo: one two three" || !usage || !done {
		t.Fatalf("stream %q usage %v done %v: %s", text, usage, done, r.Body)
	}
	up := lastBody(t, fake)
	if up["stream"] != true || at(up, "stream_options", "include_usage") != true || at(up, "venice_parameters", "enable_web_search") != "off" ||
		up["prompt_cache_key"] != "golem-7:epoch-2" {
		t.Fatalf("upstream body of a stream %s", fake.Last().Body)
	}
	r = apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("llama-3.3-70b", "four five six", `,"stream":true`))
	if text, stop := anthropicStreamText(t, r.Body); r.Status != 200 || text != "echo: four five six" || !stop {
		t.Fatalf("Anthropic stream %d %q: %s", r.Status, text, r.Body)
	}
	if at(lastBody(t, fake), "venice_parameters", "include_venice_system_prompt") != false {
		t.Fatalf("upstream body of an Anthropic stream %s", fake.Last().Body)
	}

	// A stream whose headers do not confirm no retention is refused before
	// its first byte: a plain error in the caller's dialect, not a stream;
	// and not retried (the prompt went to Venice once per call).
	for _, c := range []struct{ phrase, why string }{
		{fakeupstream.PhraseVeniceNoPrivacy, "X-Venice-Privacy-Level missing"},
		{fakeupstream.PhraseVeniceRetention + "=30d", `X-Venice-Retention-Policy is "30d"`},
	} {
		g, fake := start(t, "") // one per case, as in TestNoLogRefused
		r := apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "secret plan "+c.phrase, `,"stream":true`))
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || strings.Contains(string(r.Body), "data:") {
			t.Fatalf("%s (OpenAI): a stream was started: %s %s", c.phrase, ct, r.Body)
		}
		if msg := openAIError(t, r, 502); !strings.Contains(msg, "does not confirm no retention") || !strings.Contains(msg, c.why) ||
			strings.Contains(msg, "echo") {
			t.Errorf("%s (OpenAI): %q", c.phrase, msg)
		}
		r = apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("llama-3.3-70b", "secret plan "+c.phrase, `,"stream":true`))
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || strings.Contains(string(r.Body), "event:") {
			t.Fatalf("%s (Anthropic): a stream was started: %s %s", c.phrase, ct, r.Body)
		}
		if msg := anthropicError(t, r, 502); !strings.Contains(msg, "does not confirm no retention") || !strings.Contains(msg, c.why) {
			t.Errorf("%s (Anthropic): %q", c.phrase, msg)
		}
		if n := fake.Count(fakeupstream.VeniceChatPath); n != 2 {
			t.Errorf("%s: %d upstream requests for 2 calls", c.phrase, n)
		}
	}
	// An attested model never streams: refused before anything is sent.
	g, fake = start(t, "")
	msg := anthropicError(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("tee-deepseek-r1", "hi", `,"stream":true`)), 400)
	msg2 := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("deepseek-r1-tee", "hi", `,"stream":true`)), 400)
	if !strings.Contains(msg, "attested") || !strings.Contains(msg2, "send the request without stream") {
		t.Fatalf("TEE streams: %q, %q", msg, msg2)
	}
	if n := fake.Count(fakeupstream.VeniceChatPath); n != 0 {
		t.Fatalf("a refused TEE stream reached Venice %d times", n)
	}

	// With the check off (knowingly), a stream without the headers passes.
	g, _ = start(t, "require_privacy_headers = false")
	r = apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "seven "+fakeupstream.PhraseVeniceNoPrivacy, `,"stream":true`))
	if text, _, done := streamText(t, r.Body); r.Status != 200 || !strings.HasPrefix(text, "echo: seven") || !done {
		t.Fatalf("stream with the check off: %d %s", r.Status, r.Body)
	}
}

// TestRefusalsOpenCircuit: a refused answer is a failed attempt of the
// provider (the host verifies before it counts a success), so after five in
// a row Venice is taken out of rotation: callers get a 503 and no further
// prompt reaches it until the health check lets it back. Nothing unverified
// is delivered either way.
func TestRefusalsOpenCircuit(t *testing.T) {
	g, fake := start(t, "")
	for i := range 5 {
		msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions",
			openAIAsk("llama-3.3-70b", fmt.Sprintf("secret %d %s", i, fakeupstream.PhraseVeniceNoPrivacy), `,"stream":true`)), 502)
		if !strings.Contains(msg, "does not confirm no retention") {
			t.Fatalf("refusal %d: %q", i, msg)
		}
	}
	fake.Reset()
	msg := openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("llama-3.3-70b", "a clean question", "")), 503)
	if !strings.Contains(msg, "out of service") || fake.Count(fakeupstream.VeniceChatPath) != 0 {
		t.Fatalf("after five refusals: %q, %d upstream requests", msg, fake.Count(fakeupstream.VeniceChatPath))
	}
}

// TestMalformedAnswer: the adapter's verdict is about privacy; a body that is
// not valid OpenAI JSON is the host's native decoder's to refuse, and a
// receipt never covers a body other than the one received.
func TestMalformedAnswer(t *testing.T) {
	g, _ := start(t, "")
	msg := anthropicError(t, apitest.Post(t, g.URL, "/v1/messages", anthropicAsk("llama-3.3-70b", "hi fake:malformed", "")), 502)
	if !strings.Contains(msg, "not valid") {
		t.Fatalf("malformed body, Anthropic caller: %q", msg)
	}
	// The fake signs the whole body and sends half: even an OpenAI caller,
	// whose answer would be relayed byte for byte, gets a refusal.
	msg = openAIError(t, apitest.Post(t, g.URL, "/v1/chat/completions", openAIAsk("tee-deepseek-r1", "hi fake:malformed", "")), 502)
	if !strings.Contains(msg, "does not match the receipt") {
		t.Fatalf("truncated TEE body: %q", msg)
	}
}
