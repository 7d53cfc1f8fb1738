//go:build !wasip1

package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

const base = "https://api.venice.ai/api/v1"

func text(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

func user(bs ...wire.Block) wire.Message { return wire.Message{Role: "user", Content: bs} }

func hello() wire.Request {
	return wire.Request{Model: "caller-model", Messages: []wire.Message{user(text("hello"))}}
}

func route(model string) wire.Route {
	return wire.Route{Provider: "venice", Model: model, BaseURL: base}
}

// input is an encode input from an OpenAI caller for model, with optional
// annotations as key/value pairs.
func input(model string, req wire.Request, anns ...string) wire.EncodeInput {
	in := wire.EncodeInput{Meta: wire.Meta{RequestID: "req_0123456789abcdef01234567", Dialect: wire.DialectOpenAI},
		Route: route(model), Request: req}
	for i := 0; i+1 < len(anns); i += 2 {
		in.Meta.Annotations = append(in.Meta.Annotations, wire.KV{Key: anns[i], Value: anns[i+1]})
	}
	return in
}

// encodeOK runs encode, expecting a call, and returns it with the members
// the host is to set on its native body (BodyMerge). The rest of the body is
// the host's encoding, which e2e_test.go checks at the fake upstream.
func encodeOK(t *testing.T, h *plugintest.Host, in wire.EncodeInput) (*wire.UpstreamCall, map[string]any) {
	t.Helper()
	res := h.Encode(in)
	if res.Error != nil || res.Call == nil {
		t.Fatalf("encode: error %+v, call %v", res.Error, res.Call)
	}
	c := res.Call
	if c.BodyMode != wire.BodyNative || c.BodyDialect != wire.DialectOpenAI || len(c.Body) != 0 {
		t.Fatalf("body mode %d dialect %v raw body %q: the host must encode the body", c.BodyMode, c.BodyDialect, c.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(c.BodyMerge, &m); err != nil || m == nil {
		t.Fatalf("body_merge is not a JSON object: %v\n%s", err, c.BodyMerge)
	}
	return c, m
}

// keys returns the sorted member names of m.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// encodeErr runs encode, expecting a refusal.
func encodeErr(t *testing.T, h *plugintest.Host, in wire.EncodeInput) *wire.Error {
	t.Helper()
	res := h.Encode(in)
	if res.Error == nil || res.Call != nil {
		t.Fatalf("encode was not refused: call %+v", res.Call)
	}
	return res.Error
}

func veniceParamsOf(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	vp, ok := body["venice_parameters"].(map[string]any)
	if !ok {
		t.Fatalf("no venice_parameters object in %v", body)
	}
	return vp
}

func TestDescribe(t *testing.T) {
	h := plugintest.New(t, `{}`)
	d := h.Describe()
	// Reads what encode needs and no more: the host encodes the body, so
	// the system prompt (often the bulk of a request) is never copied in.
	want := wire.PartMessages | wire.PartTools | wire.PartParams | wire.PartExtra
	if d.Name != "venice" || d.Kind != "provider" || d.ABI != plugin.ABIVersion || d.Reads != want {
		t.Fatalf("descriptor %+v", d)
	}
}

func TestEncodeCall(t *testing.T) {
	h := plugintest.New(t, `{"headers":{"X-Title":"Bardo"}}`)
	req := hello()
	req.System = []wire.Block{text("Be brief.")}
	req.Params = wire.Params{Set: wire.HasMaxTokens | wire.HasTemperature | wire.HasTopK, MaxTokens: 50, Temperature: 0.3, TopK: 40}
	call, body := encodeOK(t, h, input("llama-3.3-70b", req))
	if call.Method != "POST" || call.URL != base+"/chat/completions" || call.Stream {
		t.Fatalf("call %s %s stream %v", call.Method, call.URL, call.Stream)
	}
	// The host decodes natively, but only after decode has seen the
	// successful answer: that is where the privacy headers are checked.
	if call.ResponseDialect != wire.DialectOpenAI || !call.VerifySuccess {
		t.Fatalf("response dialect %v, verify %v: the host would decode without the adapter seeing the headers", call.ResponseDialect, call.VerifySuccess)
	}
	if wire.Header(call.Headers, "Authorization") != "Bearer ${credential}" || wire.Header(call.Headers, "X-Title") != "Bardo" ||
		wire.Header(call.Headers, headerAttestation) != "" {
		t.Fatalf("headers %v", call.Headers)
	}
	// Only Venice's members: model, messages, temperature are the host's
	// encoding. top_k is in Params, which OpenAI's format cannot carry.
	if got := keys(body); !reflect.DeepEqual(got, []string{"top_k", "venice_parameters"}) || body["top_k"] != float64(40) {
		t.Fatalf("body_merge %v", body)
	}
	vp := veniceParamsOf(t, body)
	want := map[string]any{"include_venice_system_prompt": false, "enable_web_search": "off"}
	if !reflect.DeepEqual(vp, want) {
		t.Fatalf("venice_parameters %v, want %v (no strip without a subsystem, no character without config)", vp, want)
	}
	if _, ok := body["prompt_cache_key"]; ok {
		t.Fatalf("prompt_cache_key without a session: %v", body)
	}

	res := h.Encode(wire.EncodeInput{Route: wire.Route{Provider: "venice", Model: "m"}, Request: hello()})
	if res.Error == nil || res.Error.Status != 500 {
		t.Fatalf("no base_url: %+v", res)
	}

	h2 := plugintest.New(t, `{"include_venice_system_prompt":true}`)
	if _, body := encodeOK(t, h2, input("llama-3.3-70b", hello())); veniceParamsOf(t, body)["include_venice_system_prompt"] != true {
		t.Fatalf("include_venice_system_prompt from config: %v", body)
	}
}

func TestStripThinkingPerSubsystem(t *testing.T) {
	for _, c := range []struct {
		config, subsystem string
		want              any // nil: the field is not sent
	}{
		{`{}`, "dream", false},
		{`{}`, "death", false},
		{`{}`, "daimon_complex", false},
		{`{}`, "daimon", true},
		{`{}`, "heartbeat_t1", true},
		{`{}`, "curator", true},
		{`{}`, "", nil},
		{`{"keep_thinking":["curator"]}`, "curator", false},
		{`{"keep_thinking":["curator"]}`, "dream", true},
		{`{"keep_thinking":[]}`, "death", true},
	} {
		h := plugintest.New(t, c.config)
		var anns []string
		if c.subsystem != "" {
			anns = []string{annSubsystem, c.subsystem}
		}
		_, body := encodeOK(t, h, input("deepseek-r1", hello(), anns...))
		got, ok := veniceParamsOf(t, body)["strip_thinking_response"]
		if (c.want == nil) == ok || (ok && got != c.want) {
			t.Errorf("config %s, subsystem %q: strip_thinking_response %v (sent %v), want %v", c.config, c.subsystem, got, ok, c.want)
		}
	}
}

func TestCharacterPerRole(t *testing.T) {
	h := plugintest.New(t, `{"characters":{"risk-assessor":"analytical-conservative","dream":"dream-interpreter"},"default_character":"plain"}`)
	for _, c := range []struct {
		anns []string
		want string
	}{
		{[]string{annRole, "risk-assessor"}, "analytical-conservative"},
		{[]string{annSubsystem, "dream"}, "dream-interpreter"},
		// The role header wins over the subsystem.
		{[]string{annSubsystem, "dream", annRole, "risk-assessor"}, "analytical-conservative"},
		{[]string{annSubsystem, "heartbeat_t1"}, "plain"},
		{nil, "plain"},
	} {
		_, body := encodeOK(t, h, input("llama-3.3-70b", hello(), c.anns...))
		if got := veniceParamsOf(t, body)["character_slug"]; got != c.want {
			t.Errorf("annotations %v: character_slug %v, want %q", c.anns, got, c.want)
		}
	}

	h = plugintest.New(t, `{"characters":{"negotiator":"adversarial"}}`)
	_, body := encodeOK(t, h, input("llama-3.3-70b", hello(), annRole, "risk-assessor"))
	if _, ok := veniceParamsOf(t, body)["character_slug"]; ok {
		t.Fatalf("a role with no character and no default sent one: %v", body)
	}
}

func TestCallerVeniceParameters(t *testing.T) {
	h := plugintest.New(t, `{"characters":{"dream":"dreamer"}}`)
	req := hello()
	req.Extra = []byte(`{"venice_parameters":{"enable_web_search":"auto","include_venice_system_prompt":true,"character_slug":"alan-watts","strip_thinking_response":true,"enable_web_citations":true},"response_format":{"type":"json_object"},"user":"u1"}`)
	_, body := encodeOK(t, h, input("deepseek-r1", req, annSubsystem, "dream"))
	vp := veniceParamsOf(t, body)
	want := map[string]any{"enable_web_search": "auto", "include_venice_system_prompt": true, "character_slug": "alan-watts",
		"strip_thinking_response": true, "enable_web_citations": true}
	if !reflect.DeepEqual(vp, want) {
		t.Fatalf("the caller's own venice_parameters must win:\n got %v\nwant %v", vp, want)
	}
	// The caller's other fields are forwarded by the host (e2e_test.go
	// sees them upstream); the merge must not touch them.
	if _, ok := body["response_format"]; ok || body["user"] != nil {
		t.Fatalf("the merge rewrites the caller's own fields: %v", body)
	}

	// From an Anthropic caller only venice_parameters survives: the other
	// unknown fields are Anthropic's and mean nothing to an OpenAI upstream.
	in := input("deepseek-r1", hello())
	in.Meta.Dialect = wire.DialectAnthropic
	in.Request.Extra = []byte(`{"venice_parameters":{"enable_web_search":"on"},"metadata":{"user_id":"u"}}`)
	_, body = encodeOK(t, h, in)
	if got := keys(body); !reflect.DeepEqual(got, []string{"venice_parameters"}) {
		t.Fatalf("Anthropic caller: body_merge %v", body)
	}
	if veniceParamsOf(t, body)["enable_web_search"] != "on" {
		t.Fatalf("Anthropic caller's venice_parameters lost: %v", body)
	}

	req.Extra = []byte(`{"venice_parameters":"on"}`)
	if e := encodeErr(t, h, input("deepseek-r1", req)); e.Status != 400 || !strings.Contains(e.Message, "venice_parameters") {
		t.Fatalf("non-object venice_parameters: %+v", e)
	}
}

func TestWebSearchHeader(t *testing.T) {
	h := plugintest.New(t, `{}`)
	_, body := encodeOK(t, h, input("llama-3.3-70b", hello(), annWebSearch, "On"))
	if got := veniceParamsOf(t, body)["enable_web_search"]; got != "on" {
		t.Fatalf("X-Bardo-Web-Search: enable_web_search %v", got)
	}
	if e := encodeErr(t, h, input("llama-3.3-70b", hello(), annWebSearch, "always")); e.Status != 400 {
		t.Fatalf("bad header value: %+v", e)
	}
}

func TestPromptCacheKey(t *testing.T) {
	h := plugintest.New(t, `{}`)
	in := input("llama-3.3-70b", hello())
	in.Meta.Session = "golem-7:epoch-3"
	_, body := encodeOK(t, h, in)
	if body["prompt_cache_key"] != "golem-7:epoch-3" {
		t.Fatalf("prompt_cache_key %v", body["prompt_cache_key"])
	}
	// The caller's own key wins: the host forwards it, so the merge must
	// not replace it.
	in.Request.Extra = []byte(`{"prompt_cache_key":"mine"}`)
	_, body = encodeOK(t, h, in)
	if _, ok := body["prompt_cache_key"]; ok {
		t.Fatalf("the caller's own prompt_cache_key must win: %v", body["prompt_cache_key"])
	}
	// An Anthropic caller's unknown fields are dropped by the host when it
	// translates, so the session's key goes in.
	in.Meta.Dialect = wire.DialectAnthropic
	_, body = encodeOK(t, h, in)
	if body["prompt_cache_key"] != "golem-7:epoch-3" {
		t.Fatalf("Anthropic caller: prompt_cache_key %v", body["prompt_cache_key"])
	}
}

func TestTopK(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := hello()
	req.Params = wire.Params{Set: wire.HasTopK, TopK: 20}
	in := input("llama-3.3-70b", req)
	in.Meta.Dialect = wire.DialectAnthropic
	if _, body := encodeOK(t, h, in); body["top_k"] != float64(20) {
		t.Fatalf("Anthropic top_k: %v", body)
	}
	// An OpenAI caller's top_k is an unknown field the host forwards.
	in = input("llama-3.3-70b", hello())
	in.Request.Extra = []byte(`{"top_k":7}`)
	if _, body := encodeOK(t, h, in); body["top_k"] != nil {
		t.Fatalf("OpenAI caller's top_k overwritten: %v", body)
	}
	// A negative one is clamped by the host's translation: not sent.
	req.Params.TopK = -1
	in = input("llama-3.3-70b", req)
	in.Meta.Dialect = wire.DialectAnthropic
	if _, body := encodeOK(t, h, in); body["top_k"] != nil {
		t.Fatalf("negative top_k sent: %v", body)
	}
}

func TestTierOf(t *testing.T) {
	for model, want := range map[string]tier{
		"llama-3.3-70b":                         tierPrivate,
		"tee-deepseek-r1":                       tierTEE,
		"deepseek-r1-tee":                       tierTEE,
		"TEE-Qwen3":                             tierTEE,
		"e2ee-qwen3-30b":                        tierE2EE,
		"qwen3-30b-e2ee":                        tierE2EE,
		"e2ee-qwen3:enable_web_search=on":       tierE2EE,
		"steep-model":                           tierPrivate, // "tee" inside a word is no tier
		"deepseek-r1:character_slug=tee-expert": tierPrivate, // nor in a feature suffix
	} {
		if got := tierOf(model); got != want {
			t.Errorf("tierOf(%q) = %d, want %d", model, got, want)
		}
	}
}

func TestE2EERefusals(t *testing.T) {
	h := plugintest.New(t, `{"allow_e2ee_plaintext":true}`)
	withTools := hello()
	withTools.Tools = []wire.Tool{{Name: "get_price", Schema: []byte(`{"type":"object"}`)}}
	toolHistory := hello()
	toolHistory.Messages = append(toolHistory.Messages,
		wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "get_price", Data: []byte(`{}`)}}},
		user(wire.Block{Type: wire.BlockToolResult, ID: "c1", Text: "42"}))
	searchBody := hello()
	searchBody.Extra = []byte(`{"venice_parameters":{"enable_web_search":"auto"}}`)
	searchBool := hello()
	searchBool.Extra = []byte(`{"venice_parameters":{"enable_web_search":true}}`)
	scraping := hello()
	scraping.Extra = []byte(`{"venice_parameters":{"enable_web_scraping":true}}`)
	openAISearch := hello()
	openAISearch.Extra = []byte(`{"web_search_options":{}}`)

	for _, c := range []struct {
		name string
		in   wire.EncodeInput
		why  string
	}{
		{"tools", input("e2ee-qwen3-30b", withTools), "tools"},
		{"tool history", input("e2ee-qwen3-30b", toolHistory), "tool calls in the conversation"},
		{"web search in venice_parameters", input("e2ee-qwen3-30b", searchBody), "web search"},
		{"web search as a boolean", input("e2ee-qwen3-30b", searchBool), "web search"},
		{"web search header", input("qwen3-30b-e2ee", hello(), annWebSearch, "on"), "web search"},
		{"web search model suffix", input("e2ee-qwen3-30b:enable_web_search=on", hello()), "web search"},
		{"OpenAI web_search_options", input("e2ee-qwen3-30b", openAISearch), "web search"},
		{"web scraping", input("e2ee-qwen3-30b", scraping), "web scraping"},
	} {
		e := encodeErr(t, h, c.in)
		if e.Status != 400 || e.Kind != wire.ErrInvalidRequest || e.Retryable ||
			!strings.Contains(e.Message, "may not carry "+c.why) || !strings.Contains(e.Message, "nothing was sent") {
			t.Errorf("%s: %+v", c.name, e)
		}
	}
	if h.Metrics["venice_e2ee_refused"] != 8 {
		t.Errorf("venice_e2ee_refused = %v, want 8", h.Metrics["venice_e2ee_refused"])
	}

	// The same requests pass to a model that is not E2EE (the host encodes
	// the tools: e2e_test.go sees them upstream).
	call, body := encodeOK(t, h, input("tee-qwen3-30b", withTools))
	if call == nil || body["tools"] != nil {
		t.Fatalf("TEE model with tools: %v", body)
	}

	// A clean E2EE request goes out attested (with the opt-in)...
	call, body = encodeOK(t, h, input("e2ee-qwen3-30b", hello()))
	if wire.Header(call.Headers, headerAttestation) != "required" || veniceParamsOf(t, body)["enable_web_search"] != "off" {
		t.Fatalf("clean e2ee request: %v %v", call.Headers, body)
	}
	// ...and is refused without it: the adapter does not encrypt.
	h = plugintest.New(t, `{}`)
	if e := encodeErr(t, h, input("e2ee-qwen3-30b", hello())); e.Status != 501 || !strings.Contains(e.Message, "encryption") {
		t.Fatalf("e2ee without allow_e2ee_plaintext: %+v", e)
	}
	// The constraint is still the reason given first.
	if e := encodeErr(t, h, input("e2ee-qwen3-30b", withTools)); e.Status != 400 {
		t.Fatalf("e2ee with tools, no opt-in: %+v", e)
	}
}

func TestTEEEncode(t *testing.T) {
	h := plugintest.New(t, `{}`)
	in := input("tee-deepseek-r1", hello())
	call, _ := encodeOK(t, h, in)
	if wire.Header(call.Headers, headerAttestation) != "required" {
		t.Fatalf("headers %v", call.Headers)
	}
	nonce := wire.Header(call.Headers, headerAttestationNonce)
	if len(nonce) != 32 || nonce != attestationNonce(in.Meta.RequestID) || strings.Contains(nonce, in.Meta.RequestID) {
		t.Fatalf("nonce %q", nonce)
	}
	other := input("tee-deepseek-r1", hello())
	other.Meta.RequestID = "req_ffffffffffffffffffffffff"
	if call2, _ := encodeOK(t, h, other); wire.Header(call2.Headers, headerAttestationNonce) == nonce {
		t.Fatalf("two requests share the nonce %q", nonce)
	}
	in.Meta.RequestID = ""
	if e := encodeErr(t, h, in); e.Status != 500 {
		t.Fatalf("TEE without a request id: %+v", e)
	}
}

func TestStreams(t *testing.T) {
	stream := hello()
	stream.Stream = true

	// A private model streams, verified: the host shows decode the
	// stream's headers before relaying its first byte.
	h := plugintest.New(t, `{}`)
	in := input("llama-3.3-70b", stream)
	in.Request.Extra = []byte(`{"stream_options":{"include_usage":false,"continuous_usage_stats":true}}`)
	call, body := encodeOK(t, h, in)
	if !call.Stream || call.ResponseDialect != wire.DialectOpenAI || !call.VerifySuccess || wire.Header(call.Headers, "Accept") != "text/event-stream" {
		t.Fatalf("stream call %+v", call)
	}
	// Usage is always asked for (the gateway accounts it); the caller's
	// other stream_options survive the merge, which replaces the object.
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true || so["continuous_usage_stats"] != true || len(so) != 2 {
		t.Fatalf("stream_options %v", body["stream_options"])
	}
	if _, body := encodeOK(t, h, input("llama-3.3-70b", stream)); !reflect.DeepEqual(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Fatalf("stream_options without the caller's: %v", body["stream_options"])
	}
	if _, body := encodeOK(t, h, input("llama-3.3-70b", hello())); body["stream_options"] != nil {
		t.Fatalf("stream_options on a non-stream: %v", body)
	}

	// With the header check off, a private model's answer has nothing to
	// verify; an attested one still does.
	h = plugintest.New(t, `{"require_privacy_headers":false}`)
	if call, _ := encodeOK(t, h, input("llama-3.3-70b", stream)); call.VerifySuccess {
		t.Fatalf("verify without anything to check: %+v", call)
	}
	if call, _ := encodeOK(t, h, input("tee-deepseek-r1", hello())); !call.VerifySuccess {
		t.Fatalf("TEE answer not verified with the header check off: %+v", call)
	}

	// An attested model never streams: its receipt covers the whole body.
	// unverified_streams (read before ABI v1.3) changes nothing.
	for _, config := range []string{`{}`, `{"unverified_streams":true}`, `{"require_privacy_headers":false}`} {
		h = plugintest.New(t, config)
		if e := encodeErr(t, h, input("tee-deepseek-r1", stream)); e.Status != 400 || !strings.Contains(e.Message, "attested") {
			t.Fatalf("%s: TEE stream: %+v", config, e)
		}
	}
}

// --- decode ---

const okBody = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"llama-3.3-70b","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`

func privateHeaders() []wire.KV {
	return []wire.KV{{Key: "x-venice-privacy-level", Value: "private"}, {Key: "X-Venice-Retention-Policy", Value: "none"}}
}

func decodeIn(model string, status int64, hs []wire.KV, body string) wire.DecodeInput {
	return wire.DecodeInput{Meta: wire.Meta{RequestID: "req_0123456789abcdef01234567"}, Route: route(model),
		Status: status, Headers: hs, Body: []byte(body)}
}

func TestDecodeNoLog(t *testing.T) {
	h := plugintest.New(t, `{}`)
	// Accepted: neither a response nor an error (the host decodes it).
	res := h.Decode(decodeIn("llama-3.3-70b", 200, privateHeaders(), okBody))
	if res.Error != nil || res.Response != nil {
		t.Fatalf("decode: %+v %+v", res.Error, res.Response)
	}
	// A stream is verified by its headers alone.
	st := decodeIn("llama-3.3-70b", 200, privateHeaders(), "")
	st.Meta.Stream = true
	if res := h.Decode(st); res.Error != nil || res.Response != nil {
		t.Fatalf("stream with the headers: %+v", res.Error)
	}
	st.Headers = privateHeaders()[:1]
	if res := h.Decode(st); res.Error == nil || res.Error.Status != 502 || !strings.Contains(res.Error.Message, "no retention") {
		t.Fatalf("stream without the retention header: %+v", res.Error)
	}

	for _, c := range []struct {
		name string
		hs   []wire.KV
		why  string
	}{
		{"no headers", nil, headerPrivacyLevel + " missing"},
		{"no retention header", privateHeaders()[:1], headerRetentionPolicy + " missing"},
		{"no level header", privateHeaders()[1:], headerPrivacyLevel + " missing"},
		{"retention", []wire.KV{privateHeaders()[0], {Key: headerRetentionPolicy, Value: "30d"}}, `is "30d"`},
		{"anonymized", []wire.KV{{Key: headerPrivacyLevel, Value: "anonymized"}, privateHeaders()[1]}, `is "anonymized"`},
		{"contradicting repeat", append(privateHeaders(), wire.KV{Key: headerRetentionPolicy, Value: "logged"}), `is "logged"`},
	} {
		res := h.Decode(decodeIn("llama-3.3-70b", 200, c.hs, okBody))
		if res.Response != nil || res.Error == nil || res.Error.Status != 502 || res.Error.Retryable ||
			!strings.Contains(res.Error.Message, c.why) || !strings.Contains(res.Error.Message, "discarded") {
			t.Errorf("%s: %+v", c.name, res.Error)
		}
	}
	if h.Metrics["venice_retention_refused"] != 7 {
		t.Errorf("venice_retention_refused = %v", h.Metrics["venice_retention_refused"])
	}

	h = plugintest.New(t, `{"privacy_levels":["private","anonymized"]}`)
	if res := h.Decode(decodeIn("x", 200, []wire.KV{{Key: headerPrivacyLevel, Value: "Anonymized"}, privateHeaders()[1]}, okBody)); res.Error != nil {
		t.Fatalf("configured level refused: %+v", res.Error)
	}
	h = plugintest.New(t, `{"require_privacy_headers":false}`)
	if res := h.Decode(decodeIn("x", 200, nil, okBody)); res.Error != nil || res.Response != nil {
		t.Fatalf("checks off: %+v", res.Error)
	}
}

func TestDecodeErrors(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.Decode(decodeIn("x", 429, []wire.KV{{Key: "retry-after", Value: "2"}}, `{"error":"Rate limit exceeded"}`))
	if res.Error == nil || res.Error.Status != 429 || !res.Error.Retryable || res.Error.RetryAfterMs != 2000 ||
		!strings.Contains(res.Error.Message, "Rate limit exceeded") {
		t.Fatalf("429: %+v", res.Error)
	}
	// The verdict is about privacy, not format: an invalid body is the
	// host's native decoder's to refuse (e2e_test.go, TestMalformedAnswer).
	res = h.Decode(decodeIn("x", 200, privateHeaders(), `{"choices":`))
	if res.Error != nil || res.Response != nil {
		t.Fatalf("invalid body with the headers: %+v", res.Error)
	}
}

// --- attestation receipts ---

var testKey = ed25519.NewKeyFromSeed(sha256Bytes("venice adapter unit test key"))

func sha256Bytes(s string) []byte { s2 := sha256.Sum256([]byte(s)); return s2[:] }

// testReceipt is a receipt as an enclave would write it; sign builds the
// signed message from the README's description, independently of the
// adapter's own code.
type testReceipt struct {
	Version     int
	Measurement string
	Nonce       string
	Timestamp   int64
	Model       string
	Hash        string
	Debug       bool
	NoDebug     bool // omit debug_mode
	Key         ed25519.PrivateKey
	Sig         string // overrides the signature
}

func (r testReceipt) header() string {
	msg := "venice-attestation-v1\n" + strconv.Itoa(r.Version) + "\n" + r.Measurement + "\n" + r.Nonce + "\n" +
		strconv.FormatInt(r.Timestamp, 10) + "\n" + r.Model + "\n" + r.Hash + "\n" + strconv.FormatBool(r.Debug)
	sig := r.Sig
	if sig == "" {
		sig = base64.StdEncoding.EncodeToString(ed25519.Sign(r.Key, []byte(msg)))
	}
	m := map[string]any{"version": r.Version, "enclave_measurement": r.Measurement, "nonce": r.Nonce, "timestamp": r.Timestamp,
		"model_id": r.Model, "response_hash": r.Hash, "signature": sig}
	if !r.NoDebug {
		m["debug_mode"] = r.Debug
	}
	b, _ := json.Marshal(m)
	return base64.StdEncoding.EncodeToString(b)
}

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const teeModel = "tee-deepseek-r1"

// goodReceipt attests okBody for the request of decodeIn.
func goodReceipt() testReceipt {
	sum := sha256.Sum256([]byte(okBody))
	return testReceipt{Version: 1, Measurement: "a1b2c3", Nonce: attestationNonce("req_0123456789abcdef01234567"),
		Timestamp: now.Add(-2 * time.Second).UnixMilli(), Model: teeModel, Hash: hex.EncodeToString(sum[:]), Key: testKey}
}

func keyConfig(extra string) string {
	return `{"attestation_keys":["` + base64.StdEncoding.EncodeToString(testKey.Public().(ed25519.PublicKey)) + `"]` + extra + `}`
}

func TestReceiptVerification(t *testing.T) {
	// Two trusted keys (a rotation), and one nobody trusts.
	otherKey := ed25519.NewKeyFromSeed(sha256Bytes("the previous attestation key"))
	untrusted := ed25519.NewKeyFromSeed(sha256Bytes("someone else"))
	mutate := func(f func(*testReceipt)) string { r := goodReceipt(); f(&r); return r.header() }
	good := goodReceipt().header()

	for _, c := range []struct {
		name    string
		headers []string
		body    string
		want    error // nil: verified
	}{
		{"valid", []string{good}, okBody, nil},
		{"valid, 29 s old", []string{mutate(func(r *testReceipt) { r.Timestamp = now.Add(-29 * time.Second).UnixMilli() })}, okBody, nil},
		{"debug enclave", []string{mutate(func(r *testReceipt) { r.Debug = true })}, okBody, errDebugEnclave},
		{"stale", []string{mutate(func(r *testReceipt) { r.Timestamp = now.Add(-31 * time.Second).UnixMilli() })}, okBody, errStale},
		{"from the future", []string{mutate(func(r *testReceipt) { r.Timestamp = now.Add(time.Minute).UnixMilli() })}, okBody, errFuture},
		{"signed by the other trusted key", []string{mutate(func(r *testReceipt) { r.Key = otherKey })}, okBody, nil},
		{"signed by an untrusted key", []string{mutate(func(r *testReceipt) { r.Key = untrusted })}, okBody, errSignature},
		{"signature not base64", []string{mutate(func(r *testReceipt) { r.Sig = "!!" })}, okBody, errSignature},
		{"hash mismatch", []string{good}, strings.Replace(okBody, "hi there", "hi thief", 1), errHashMismatch},
		{"another request's nonce", []string{mutate(func(r *testReceipt) { r.Nonce = attestationNonce("req_other") })}, okBody, errNonceMismatch},
		{"another model", []string{mutate(func(r *testReceipt) { r.Model = "tee-llama" })}, okBody, errModelMismatch},
		{"no receipt", nil, okBody, errNoReceipt},
		{"two receipts", []string{good, good}, okBody, errManyReceipts},
		{"not base64", []string{"%%%"}, okBody, errMalformed},
		{"debug_mode missing", []string{mutate(func(r *testReceipt) { r.NoDebug = true })}, okBody, errMalformed},
		{"unknown version", []string{mutate(func(r *testReceipt) { r.Version = 2 })}, okBody, errMalformed},
		{"newline in a field", []string{mutate(func(r *testReceipt) { r.Measurement = "a1\nb2" })}, okBody, errNewlineInField},
	} {
		chk := receiptCheck{header: c.headers, body: []byte(c.body), model: teeModel,
			nonce: attestationNonce("req_0123456789abcdef01234567"), now: now,
			keys:     []ed25519.PublicKey{otherKey.Public().(ed25519.PublicKey), testKey.Public().(ed25519.PublicKey)},
			bodyHash: sha256.Sum256, maxAgeSec: receiptMaxAgeSec}
		if err := chk.verify(); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}

	chk := receiptCheck{header: []string{good}, body: []byte(okBody), model: teeModel,
		nonce: attestationNonce("req_0123456789abcdef01234567"), now: now, bodyHash: sha256.Sum256, maxAgeSec: receiptMaxAgeSec}
	if err := chk.verify(); !errors.Is(err, errNoKey) {
		t.Fatalf("no key configured: %v", err)
	}
	chk.keys = []ed25519.PublicKey{testKey.Public().(ed25519.PublicKey)}
	chk.enclaves = []string{"ffff"}
	if err := chk.verify(); !errors.Is(err, errMeasurement) {
		t.Fatalf("measurement allow-list: %v", err)
	}
	chk.enclaves = []string{"A1B2C3"}
	if err := chk.verify(); err != nil {
		t.Fatalf("allowed measurement: %v", err)
	}
}

func TestDecodeTEE(t *testing.T) {
	h := plugintest.New(t, keyConfig(""))
	h.Clock = func() time.Time { return now }
	withReceipt := func(r string) []wire.KV {
		return append(privateHeaders(), wire.KV{Key: "x-venice-attestation-receipt", Value: r})
	}
	res := h.Decode(decodeIn(teeModel, 200, withReceipt(goodReceipt().header()), okBody))
	if res.Error != nil || res.Response != nil {
		t.Fatalf("valid receipt: %+v", res.Error)
	}
	if h.Metrics["venice_attestation_verified"] != 1 {
		t.Fatalf("metrics %v", h.Metrics)
	}

	stale := goodReceipt()
	stale.Timestamp = now.Add(-40 * time.Second).UnixMilli()
	res = h.Decode(decodeIn(teeModel, 200, withReceipt(stale.header()), okBody))
	if res.Response != nil || res.Error == nil || res.Error.Status != 502 || res.Error.Retryable ||
		!strings.Contains(res.Error.Message, "too old") || !strings.Contains(res.Error.Message, "attestation") {
		t.Fatalf("stale receipt through decode: %+v", res.Error)
	}
	// The privacy headers are checked on attested models too.
	res = h.Decode(decodeIn(teeModel, 200, []wire.KV{{Key: headerAttestationReceipt, Value: goodReceipt().header()}}, okBody))
	if res.Error == nil || !strings.Contains(res.Error.Message, "no retention") {
		t.Fatalf("TEE without privacy headers: %+v", res.Error)
	}
	// Time moves: the same receipt 40 s later is refused.
	h.Clock = func() time.Time { return now.Add(40 * time.Second) }
	res = h.Decode(decodeIn(teeModel, 200, withReceipt(goodReceipt().header()), okBody))
	if res.Error == nil || !strings.Contains(res.Error.Message, "too old") {
		t.Fatalf("receipt replayed later: %+v", res.Error)
	}
	// A stream of an attested model (encode refuses to send one) has no
	// body to check the receipt against: refused, even with a receipt.
	h.Clock = func() time.Time { return now }
	st := decodeIn(teeModel, 200, withReceipt(goodReceipt().header()), "")
	st.Meta.Stream = true
	res = h.Decode(st)
	if res.Error == nil || res.Error.Status != 502 || !strings.Contains(res.Error.Message, "cannot be streamed") {
		t.Fatalf("attested stream: %+v", res.Error)
	}
	if h.Metrics["venice_attestation_refused"] != 3 {
		t.Fatalf("metrics %v", h.Metrics)
	}
}

func TestConfigKeys(t *testing.T) {
	pub := testKey.Public().(ed25519.PublicKey)
	for _, k := range []string{base64.StdEncoding.EncodeToString(pub), base64.RawURLEncoding.EncodeToString(pub), hex.EncodeToString(pub)} {
		got, err := parseKey(k)
		if err != nil || !got.Equal(pub) {
			t.Errorf("parseKey(%q) = %x, %v", k, got, err)
		}
	}
	if _, err := parseKey("c2hvcnQ="); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}
