package fakeupstream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const (
	gmGenerate = "/v1beta/models/gemini-2.5-flash:generateContent"
	gmStream   = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	gmBody     = `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hello"}]},{"role":"model","parts":[{"text":"hi"}]},{"role":"user","parts":[{"text":"tell me a short story please"}]}]}`
	gmPrompt   = "Be brief." + "hello" + "hi" + "tell me a short story please"
)

func geminiHeaders() map[string]string {
	return map[string]string{"x-goog-api-key": DefaultAPIKey, "Content-Type": "application/json"}
}

// geminiStream posts body to the SSE endpoint and returns the decoded chunks.
func geminiStream(t *testing.T, s *Server, path, body string) []map[string]any {
	t.Helper()
	var chunks []map[string]any
	for _, e := range sse(t, post(t, s.URL()+path, geminiHeaders(), body)) {
		if e.Event != "" {
			t.Fatalf("Gemini frames have no event name: %v", e)
		}
		chunks = append(chunks, decodeData(t, e))
	}
	if len(chunks) == 0 {
		t.Fatal("empty stream")
	}
	return chunks
}

// parts returns candidates[0].content.parts of a response or chunk.
func parts(t *testing.T, m map[string]any) []any {
	t.Helper()
	return arr(t, m, "candidates", 0, "content", "parts")
}

func TestGeminiGenerateJSON(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), gmBody), http.StatusOK)
	hasKeys(t, m, "candidates", "usageMetadata", "modelVersion", "responseId")
	if str(t, m, "modelVersion") != "gemini-2.5-flash" || str(t, m, "responseId") == "" {
		t.Errorf("response %v", m)
	}
	cand := obj(t, m, "candidates", 0)
	hasKeys(t, cand, "content", "finishReason", "index")
	if str(t, cand, "finishReason") != "STOP" || num(t, cand, "index") != 0 || str(t, cand, "content", "role") != "model" {
		t.Errorf("candidate %v", cand)
	}
	const want = "echo: tell me a short story please"
	ps := parts(t, m)
	if len(ps) != 1 || str(t, ps, 0, "text") != want {
		t.Fatalf("parts %v", ps)
	}
	hasKeys(t, obj(t, ps, 0), "text")
	u := obj(t, m, "usageMetadata")
	hasKeys(t, u, "promptTokenCount", "candidatesTokenCount", "totalTokenCount", "promptTokensDetails")
	if num(t, u, "promptTokenCount") != tokens(gmPrompt) || num(t, u, "candidatesTokenCount") != tokens(want) ||
		num(t, u, "totalTokenCount") != tokens(gmPrompt)+tokens(want) || str(t, u, "promptTokensDetails", 0, "modality") != "TEXT" {
		t.Errorf("usage %v", u)
	}
	if s.Count("/v1beta/models/gemini-2.5-flash:generateContent") != 1 {
		t.Errorf("counts %v", s.Counts())
	}
	// The same under /v1, and with the key as a query parameter.
	jsonBody(t, post(t, s.URL()+"/v1/models/gemini-2.5-flash:generateContent?key="+DefaultAPIKey, nil, gmBody), http.StatusOK)
}

func TestGeminiStream(t *testing.T) {
	s := newServer(t)
	resp := post(t, s.URL()+gmStream, geminiHeaders(), gmBody)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "data: {") || !strings.HasSuffix(string(raw), "}\r\n\r\n") || strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("framing %q", raw)
	}
	events, err := ParseSSE(strings.NewReader(string(raw)))
	if err != nil || len(events) < 3 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	var text strings.Builder
	id := ""
	for i, e := range events {
		c := decodeData(t, e)
		hasKeys(t, c, "candidates", "usageMetadata", "modelVersion", "responseId")
		if id == "" {
			id = str(t, c, "responseId")
		}
		if str(t, c, "responseId") != id {
			t.Fatalf("responseId changes: %v", c)
		}
		text.WriteString(str(t, parts(t, c), 0, "text"))
		cand := obj(t, c, "candidates", 0)
		last := i == len(events)-1
		if _, has := cand["finishReason"]; has != last {
			t.Fatalf("chunk %d of %d: finishReason %v", i, len(events), cand)
		}
		u := obj(t, c, "usageMetadata")
		if num(t, u, "promptTokenCount") != tokens(gmPrompt) {
			t.Fatalf("usage %v", u)
		}
		if last && (str(t, cand, "finishReason") != "STOP" || num(t, u, "candidatesTokenCount") != tokens("echo: tell me a short story please")) {
			t.Fatalf("last chunk %v", c)
		}
	}
	if text.String() != "echo: tell me a short story please" {
		t.Fatalf("text %q", text.String())
	}

	// Without alt=sse Gemini streams one JSON array.
	resp = post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent", geminiHeaders(), gmBody)
	b, _ := io.ReadAll(resp.Body)
	var list []map[string]any
	if err := json.Unmarshal(b, &list); err != nil || len(list) != 1 || str(t, parts(t, list[0]), 0, "text") != "echo: tell me a short story please" {
		t.Fatalf("array stream %s: %v", b, err)
	}
}

func geminiErrorBody(t *testing.T, resp *http.Response, status int, rpc string) map[string]any {
	t.Helper()
	m := jsonBody(t, resp, status)
	hasKeys(t, m, "error")
	e := obj(t, m, "error")
	if num(t, e, "code") != status || str(t, e, "status") != rpc || str(t, e, "message") == "" {
		t.Fatalf("error %v", e)
	}
	return e
}

func TestGeminiAuth(t *testing.T) {
	s := newServer(t, WithAPIKey("AIza-right"))
	url := s.URL() + gmGenerate
	e := geminiErrorBody(t, post(t, url, nil, gmBody), http.StatusForbidden, "PERMISSION_DENIED")
	if !strings.HasPrefix(str(t, e, "message"), "Method doesn't allow unregistered callers") {
		t.Errorf("missing key %v", e)
	}
	geminiErrorBody(t, post(t, url, map[string]string{"Authorization": "Bearer AIza-right"}, gmBody), http.StatusForbidden, "PERMISSION_DENIED")
	e = geminiErrorBody(t, post(t, url, map[string]string{"x-goog-api-key": "AIza-wrong"}, gmBody), http.StatusBadRequest, "INVALID_ARGUMENT")
	if str(t, e, "message") != "API key not valid. Please pass a valid API key." ||
		str(t, e, "details", 0, "reason") != "API_KEY_INVALID" || str(t, e, "details", 1, "@type") != "type.googleapis.com/google.rpc.LocalizedMessage" {
		t.Errorf("wrong key %v", e)
	}
	jsonBody(t, post(t, url, map[string]string{"x-goog-api-key": "AIza-right"}, gmBody), http.StatusOK)
	if s.Pending() != 0 {
		t.Fatal("pending")
	}
}

func TestGeminiBadRequests(t *testing.T) {
	s := newServer(t)
	url := s.URL() + gmGenerate
	bad := func(body, wantMsg string) {
		t.Helper()
		e := geminiErrorBody(t, post(t, url, geminiHeaders(), body), http.StatusBadRequest, "INVALID_ARGUMENT")
		if !strings.Contains(str(t, e, "message"), wantMsg) {
			t.Errorf("body %s: message %q, want %q", body, str(t, e, "message"), wantMsg)
		}
	}
	bad(`{"contents": [`, "Invalid JSON payload received.")
	bad(`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"max_tokens":5}`, `Unknown name "max_tokens": Cannot find field.`)
	bad(`{"contents":[]}`, "contents is not specified")
	bad(`{"contents":[{"role":"user","parts":[]}]}`, "contents[0].parts: contents.parts must not be empty.")
	bad(`{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, "Please use a valid role: user, model.")
	bad(`{"contents":[{"role":"user","parts":[{"functionResponse":{"response":{"output":"x"}}}]}]}`, "contents[0].parts[0].function_response.name: Name cannot be empty.")
	tool := func(params string) string {
		return `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":` + params + `}]}]}`
	}
	bad(tool(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`),
		`Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters': Cannot find field.`)
	bad(tool(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","$schema":"x"}}}}}`),
		`Unknown name "$schema" at 'tools[0].function_declarations[0].parameters.properties[0].value.properties[0].value'`)
	bad(tool(`{"type":"object","properties":{}}`), "parameters.properties: should be non-empty for OBJECT type")
	jsonBody(t, post(t, url, geminiHeaders(), tool(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["x"]}}},"required":["a"]}`)), http.StatusOK)

	geminiErrorBody(t, post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:embedText", geminiHeaders(), gmBody), http.StatusNotFound, "NOT_FOUND")
	geminiErrorBody(t, post(t, s.URL()+"/v1beta/tunedModels", geminiHeaders(), gmBody), http.StatusNotFound, "NOT_FOUND")
	if s.Pending() != 0 {
		t.Fatal("pending")
	}
}

func TestGeminiToolCall(t *testing.T) {
	s := newServer(t)
	body := `{"tools":[{"functionDeclarations":[{"name":"search_docs","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}]}],"contents":[{"role":"user","parts":[{"text":"look fake:tool"}]}]}`
	m := jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), body), http.StatusOK)
	ps := parts(t, m)
	if len(ps) != 1 || str(t, m, "candidates", 0, "finishReason") != "STOP" {
		t.Fatalf("response %v", m)
	}
	fc := obj(t, ps, 0, "functionCall")
	hasKeys(t, fc, "name", "args")
	if str(t, fc, "name") != "search_docs" || str(t, fc, "args", "query") != "look fake:tool" {
		t.Fatalf("functionCall %v", fc)
	}

	s.Script(Combine(Reply("Let me check."), ToolCall("get_weather", `{"location":"Paris"}`)))
	chunks := geminiStream(t, s, gmStream, `{"contents":[{"role":"user","parts":[{"text":"weather?"}]}]}`)
	last := chunks[len(chunks)-1]
	if str(t, last, "candidates", 0, "finishReason") != "STOP" || str(t, parts(t, last), 0, "functionCall", "args", "location") != "Paris" {
		t.Fatalf("last chunk %v", last)
	}
	var text strings.Builder
	for _, c := range chunks[:len(chunks)-1] {
		text.WriteString(str(t, parts(t, c), 0, "text"))
	}
	if text.String() != "Let me check." {
		t.Fatalf("text before the call %q", text.String())
	}
}

func TestGeminiFunctionResponseIsLastUserTurn(t *testing.T) {
	s := newServer(t)
	body := `{"contents":[{"role":"user","parts":[{"text":"weather? fake:tool"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"sunny, 21C"}}}]}]}`
	m := jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), body), http.StatusOK)
	if str(t, parts(t, m), 0, "text") != "echo: sunny, 21C" {
		t.Fatalf("reply %v", m)
	}
	if num(t, m, "usageMetadata", "promptTokenCount") != tokens("weather? fake:tool"+"sunny, 21C") {
		t.Fatalf("usage %v", m["usageMetadata"])
	}
}

func TestGeminiThinking(t *testing.T) {
	s := newServer(t)
	const q = `{"contents":[{"role":"user","parts":[{"text":"ponder fake:thinking"}]}]}`
	const thought = "Thinking about: ponder fake:thinking"
	// Without includeThoughts: no thought part, but a signature and thought tokens.
	m := jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), q), http.StatusOK)
	ps := parts(t, m)
	if len(ps) != 1 || str(t, ps, 0, "text") != "echo: ponder fake:thinking" || str(t, ps, 0, "thoughtSignature") == "" {
		t.Fatalf("parts %v", ps)
	}
	if num(t, m, "usageMetadata", "thoughtsTokenCount") != tokens(thought) {
		t.Fatalf("usage %v", m["usageMetadata"])
	}
	sig := str(t, ps, 0, "thoughtSignature")

	withThoughts := strings.Replace(q, `{"contents"`, `{"generationConfig":{"thinkingConfig":{"includeThoughts":true}},"contents"`, 1)
	m = jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), withThoughts), http.StatusOK)
	ps = parts(t, m)
	if len(ps) != 2 || str(t, ps, 0, "text") != thought || at(t, ps, 0, "thought") != true || str(t, ps, 1, "thoughtSignature") != sig {
		t.Fatalf("parts %v", ps)
	}
	hasKeys(t, obj(t, ps, 0), "text", "thought")

	chunks := geminiStream(t, s, gmStream, withThoughts)
	var thoughts, text strings.Builder
	for i, c := range chunks {
		p := obj(t, parts(t, c), 0)
		if p["thought"] == true {
			thoughts.WriteString(str(t, p, "text"))
		} else {
			text.WriteString(str(t, p, "text"))
		}
		if _, has := p["thoughtSignature"]; has != (i == len(chunks)-1) {
			t.Fatalf("chunk %d: %v", i, p)
		}
	}
	if thoughts.String() != thought || text.String() != "echo: ponder fake:thinking" {
		t.Fatalf("thoughts %q text %q", thoughts.String(), text.String())
	}

	// With a tool call the signature rides on the functionCall part.
	m = jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), `{"contents":[{"role":"user","parts":[{"text":"x fake:tool fake:thinking"}]}]}`), http.StatusOK)
	ps = parts(t, m)
	if len(ps) != 1 || str(t, ps, 0, "functionCall", "name") != "get_weather" || str(t, ps, 0, "thoughtSignature") == "" {
		t.Fatalf("parts %v", ps)
	}
}

func TestGemini3ThoughtSignatures(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1beta/models/gemini-3-pro-preview:generateContent"
	history := func(sig string) string {
		s := ""
		if sig != "" {
			s = `,"thoughtSignature":"` + sig + `"`
		}
		return `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}` + s + `}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"sunny"}}}]}]}`
	}
	e := geminiErrorBody(t, post(t, url, geminiHeaders(), history("")), http.StatusBadRequest, "INVALID_ARGUMENT")
	if !strings.Contains(str(t, e, "message"), "Function call `get_weather` in the 2. content block is missing a `thought_signature`") {
		t.Fatalf("error %v", e)
	}
	jsonBody(t, post(t, url, geminiHeaders(), history("c2lnbmF0dXJl")), http.StatusOK)
	// A previous turn (before the last user text) is not checked.
	old := strings.TrimSuffix(history(""), "]}") + `,{"role":"model","parts":[{"text":"It is sunny."}]},{"role":"user","parts":[{"text":"thanks"}]}]}`
	jsonBody(t, post(t, url, geminiHeaders(), old), http.StatusOK)
	// Gemini 2.5 does not enforce them.
	jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), history("")), http.StatusOK)
}

func TestGeminiFailures(t *testing.T) {
	s := newServer(t)
	url := s.URL() + gmGenerate

	s.Script(RateLimited(7))
	resp := post(t, url, geminiHeaders(), gmBody)
	if resp.Header.Get("retry-after") != "" {
		t.Errorf("Gemini sends no retry-after header, got %q", resp.Header.Get("retry-after"))
	}
	e := geminiErrorBody(t, resp, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED")
	details := arr(t, e, "details")
	found := false
	for i := range details {
		if str(t, details, i, "@type") == "type.googleapis.com/google.rpc.RetryInfo" {
			found = str(t, details, i, "retryDelay") == "7s"
		}
	}
	if !found || !strings.Contains(str(t, e, "message"), "You exceeded your current quota") {
		t.Fatalf("429 %v", e)
	}

	s.Script(Fail(500))
	geminiErrorBody(t, post(t, url, geminiHeaders(), gmBody), http.StatusInternalServerError, "INTERNAL")
	s.Script(Fail(503))
	if e := geminiErrorBody(t, post(t, url, geminiHeaders(), gmBody), http.StatusServiceUnavailable, "UNAVAILABLE"); str(t, e, "message") != gmOverloaded {
		t.Fatalf("503 %v", e)
	}
	s.Script(Overloaded())
	geminiErrorBody(t, post(t, url, geminiHeaders(), gmBody), http.StatusServiceUnavailable, "UNAVAILABLE")
	geminiErrorBody(t, post(t, url, geminiHeaders(), `{"contents":[{"role":"user","parts":[{"text":"x fake:status=504"}]}]}`), http.StatusGatewayTimeout, "DEADLINE_EXCEEDED")
}

func TestGeminiCutAndMalformedStreams(t *testing.T) {
	s := newServer(t)
	long := `{"contents":[{"role":"user","parts":[{"text":"a b c d e f g h i j k l"}]}]}`
	s.Script(CutAfter(2))
	events, err := ParseSSE(post(t, s.URL()+gmStream, geminiHeaders(), long).Body)
	if err == nil || len(events) != 2 {
		t.Fatalf("cut stream: %d events, err %v", len(events), err)
	}
	for _, e := range events {
		if _, has := obj(t, decodeData(t, e), "candidates", 0)["finishReason"]; has {
			t.Fatalf("a cut stream must not reach its finishReason: %v", e)
		}
	}
	// A short reply is cut before its last chunk too.
	s.Script(CutAfter(50))
	events, err = ParseSSE(post(t, s.URL()+gmStream, geminiHeaders(), long).Body)
	if err == nil || len(events) == 0 {
		t.Fatalf("cut stream: %d events, err %v", len(events), err)
	}

	s.Script(MalformedAfter(1))
	events, err = ParseSSE(post(t, s.URL()+gmStream, geminiHeaders(), long).Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if json.Unmarshal([]byte(events[1].Data), &m) == nil {
		t.Fatalf("frame 1 should be malformed: %q", events[1].Data)
	}

	s.Script(CutAfter(0))
	resp := post(t, s.URL()+gmGenerate, geminiHeaders(), long)
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a cut non-stream body must not read cleanly")
	}
}

func TestGeminiCachedUsageAndMaxTokens(t *testing.T) {
	s := newServer(t)
	s.Script(Cached(2048, 512))
	u := obj(t, jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(), gmBody), http.StatusOK), "usageMetadata")
	if num(t, u, "cachedContentTokenCount") != 2048 || num(t, u, "promptTokenCount") != tokens(gmPrompt)+2048 ||
		num(t, u, "cacheTokensDetails", 0, "tokenCount") != 2048 {
		t.Fatalf("usage %v", u)
	}
	chunks := geminiStream(t, s, gmStream, `{"contents":[{"role":"user","parts":[{"text":"x fake:cached=7"}]}]}`)
	if num(t, chunks[0], "usageMetadata", "cachedContentTokenCount") != 7 {
		t.Fatalf("first chunk %v", chunks[0])
	}

	m := jsonBody(t, post(t, s.URL()+gmGenerate, geminiHeaders(),
		`{"generationConfig":{"maxOutputTokens":3},"contents":[{"role":"user","parts":[{"text":"a rather long message"}]}]}`), http.StatusOK)
	if str(t, m, "candidates", 0, "finishReason") != "MAX_TOKENS" || str(t, parts(t, m), 0, "text") != "echo: a rath" {
		t.Fatalf("truncated %v", m)
	}
}

func TestGeminiCountTokens(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:countTokens", geminiHeaders(), gmBody), http.StatusOK)
	if num(t, m, "totalTokens") != tokens(gmPrompt) {
		t.Fatalf("countTokens %v", m)
	}
	m = jsonBody(t, post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:countTokens", geminiHeaders(), `{"generateContentRequest":`+gmBody+`}`), http.StatusOK)
	if num(t, m, "totalTokens") != tokens(gmPrompt) {
		t.Fatalf("countTokens %v", m)
	}
}
