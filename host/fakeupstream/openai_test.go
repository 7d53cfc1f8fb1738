package fakeupstream

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello there, how are you today my friend?"}]}`

func TestOpenAIChatJSON(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatBody), http.StatusOK)

	hasKeys(t, m, "id", "object", "created", "model", "choices", "usage", "service_tier", "system_fingerprint")
	if id := str(t, m, "id"); !strings.HasPrefix(id, "chatcmpl-") {
		t.Errorf("id %q", id)
	}
	if str(t, m, "object") != "chat.completion" || str(t, m, "model") != "gpt-4o-mini" {
		t.Errorf("object/model: %v", m)
	}
	choice := obj(t, m, "choices", 0)
	hasKeys(t, choice, "index", "message", "logprobs", "finish_reason")
	if str(t, choice, "finish_reason") != "stop" || num(t, choice, "index") != 0 {
		t.Errorf("choice %v", choice)
	}
	msg := obj(t, choice, "message")
	hasKeys(t, msg, "role", "content", "refusal", "annotations")
	const want = "echo: hello there, how are you today my friend?"
	if str(t, msg, "role") != "assistant" || str(t, msg, "content") != want {
		t.Errorf("message %v", msg)
	}

	u := obj(t, m, "usage")
	prompt := tokens("Be brief." + "hello there, how are you today my friend?")
	if num(t, u, "prompt_tokens") != prompt || num(t, u, "completion_tokens") != tokens(want) ||
		num(t, u, "total_tokens") != prompt+tokens(want) {
		t.Errorf("usage %v, want prompt %d completion %d", u, prompt, tokens(want))
	}
	if num(t, u, "prompt_tokens_details", "cached_tokens") != 0 {
		t.Errorf("cached tokens %v", u)
	}
}

// openAIStream posts body and returns the decoded chunks before [DONE].
func openAIStream(t *testing.T, s *Server, body string) []map[string]any {
	t.Helper()
	events := sse(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), body))
	if len(events) == 0 || events[len(events)-1].Data != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %v", events)
	}
	var chunks []map[string]any
	for _, e := range events[:len(events)-1] {
		if e.Event != "" {
			t.Fatalf("OpenAI frames have no event name: %v", e)
		}
		chunks = append(chunks, decodeData(t, e))
	}
	return chunks
}

func TestOpenAIChatStream(t *testing.T) {
	s := newServer(t)
	body := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"one two three four five six seven"}]}]}`
	chunks := openAIStream(t, s, body)

	id := str(t, chunks[0], "id")
	if !strings.HasPrefix(id, "chatcmpl-") {
		t.Fatalf("id %q", id)
	}
	var text strings.Builder
	contentChunks := 0
	for i, c := range chunks {
		hasKeys(t, c, "id", "object", "created", "model", "service_tier", "system_fingerprint", "choices", "usage")
		if str(t, c, "id") != id || str(t, c, "object") != "chat.completion.chunk" || str(t, c, "model") != "gpt-4o" {
			t.Fatalf("chunk %d: %v", i, c)
		}
		if i == len(chunks)-1 {
			break // usage chunk, checked below
		}
		if c["usage"] != nil {
			t.Fatalf("chunk %d: usage should be null: %v", i, c)
		}
		choice := obj(t, c, "choices", 0)
		hasKeys(t, choice, "index", "delta", "logprobs", "finish_reason")
		delta := obj(t, choice, "delta")
		if i == 0 {
			hasKeys(t, delta, "role", "content", "refusal")
			if str(t, delta, "role") != "assistant" || str(t, delta, "content") != "" {
				t.Fatalf("first delta %v", delta)
			}
			continue
		}
		if i == len(chunks)-2 {
			hasKeys(t, delta)
			if str(t, choice, "finish_reason") != "stop" {
				t.Fatalf("finish chunk %v", c)
			}
			continue
		}
		if choice["finish_reason"] != nil {
			t.Fatalf("chunk %d finish_reason %v", i, choice["finish_reason"])
		}
		hasKeys(t, delta, "content")
		text.WriteString(str(t, delta, "content"))
		contentChunks++
	}
	const want = "echo: one two three four five six seven"
	if text.String() != want {
		t.Errorf("streamed text %q, want %q", text.String(), want)
	}
	if contentChunks < 3 {
		t.Errorf("only %d content chunks", contentChunks)
	}
	last := chunks[len(chunks)-1]
	if len(arr(t, last, "choices")) != 0 {
		t.Errorf("usage chunk has choices: %v", last)
	}
	u := obj(t, last, "usage")
	if num(t, u, "prompt_tokens") != tokens("one two three four five six seven") || num(t, u, "completion_tokens") != tokens(want) {
		t.Errorf("usage %v", u)
	}
}

func TestOpenAIStreamWithoutUsage(t *testing.T) {
	s := newServer(t)
	chunks := openAIStream(t, s, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for _, c := range chunks {
		if _, ok := c["usage"]; ok {
			t.Fatalf("usage present without include_usage: %v", c)
		}
		if len(arr(t, c, "choices")) != 1 {
			t.Fatalf("chunk without a choice: %v", c)
		}
	}
}

func TestOpenAIModels(t *testing.T) {
	s := newServer(t, WithModels("m-one", "m-two"))
	m := jsonBody(t, do(t, http.MethodGet, s.URL()+"/v1/models", openAIHeaders(), ""), http.StatusOK)
	hasKeys(t, m, "object", "data")
	data := arr(t, m, "data")
	if str(t, m, "object") != "list" || len(data) != 2 || str(t, data, 1, "id") != "m-two" {
		t.Fatalf("models %v", m)
	}
	hasKeys(t, obj(t, data, 0), "id", "object", "created", "owned_by")
	if str(t, data, 0, "object") != "model" {
		t.Fatalf("model %v", data[0])
	}
}

func TestOpenAIAuth(t *testing.T) {
	s := newServer(t, WithAPIKey("sk-right-key-123456"))
	url := s.URL() + "/v1/chat/completions"

	wrong := jsonBody(t, post(t, url, map[string]string{"Authorization": "Bearer sk-wrong-key-999999"}, chatBody), http.StatusUnauthorized)
	hasKeys(t, wrong, "error")
	e := obj(t, wrong, "error")
	hasKeys(t, e, "message", "type", "param", "code")
	if !strings.HasPrefix(str(t, e, "message"), "Incorrect API key provided: sk-") || strings.Contains(str(t, e, "message"), "sk-wrong-key-999999") ||
		str(t, e, "type") != "invalid_request_error" || e["param"] != nil || str(t, e, "code") != "invalid_api_key" {
		t.Errorf("wrong key error %v", e)
	}

	missing := obj(t, jsonBody(t, post(t, url, nil, chatBody), http.StatusUnauthorized), "error")
	if !strings.HasPrefix(str(t, missing, "message"), "You didn't provide an API key") || missing["code"] != nil {
		t.Errorf("missing key error %v", missing)
	}
	// The Anthropic header is not accepted by the OpenAI endpoint.
	jsonBody(t, do(t, http.MethodGet, s.URL()+"/v1/models", map[string]string{"x-api-key": "sk-right-key-123456"}, ""), http.StatusUnauthorized)

	jsonBody(t, post(t, url, map[string]string{"Authorization": "Bearer sk-right-key-123456"}, chatBody), http.StatusOK)
}

func TestOpenAIBadRequests(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1/chat/completions"

	e := obj(t, jsonBody(t, post(t, url, openAIHeaders(), `{"model":"gpt-4o",`), http.StatusBadRequest), "error")
	if !strings.HasPrefix(str(t, e, "message"), "We could not parse the JSON body of your request.") || str(t, e, "type") != "invalid_request_error" {
		t.Errorf("malformed JSON error %v", e)
	}
	e = obj(t, jsonBody(t, post(t, url, openAIHeaders(), `{"model":"gpt-4o"}`), http.StatusBadRequest), "error")
	if str(t, e, "code") != "missing_required_parameter" || str(t, e, "param") != "messages" {
		t.Errorf("missing messages error %v", e)
	}
	e = obj(t, jsonBody(t, post(t, url, openAIHeaders(), `{"messages":[{"role":"user","content":"x"}]}`), http.StatusBadRequest), "error")
	if str(t, e, "message") != "you must provide a model parameter" {
		t.Errorf("missing model error %v", e)
	}
	e = obj(t, jsonBody(t, post(t, url, openAIHeaders(), `{"model":"m","messages":"x"}`), http.StatusBadRequest), "error")
	if str(t, e, "param") != "messages" || str(t, e, "code") != "invalid_type" {
		t.Errorf("wrong type error %v", e)
	}
	e = obj(t, jsonBody(t, post(t, s.URL()+"/v1/nothing", openAIHeaders(), `{}`), http.StatusNotFound), "error")
	if str(t, e, "message") != "Invalid URL (POST /v1/nothing)" {
		t.Errorf("404 error %v", e)
	}
}

func TestOpenAIMaxTokensTruncates(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(),
		`{"model":"m","max_completion_tokens":2,"messages":[{"role":"user","content":"a long enough question"}]}`), http.StatusOK)
	if str(t, m, "choices", 0, "finish_reason") != "length" || str(t, m, "choices", 0, "message", "content") != "echo: a " {
		t.Errorf("truncated reply %v", m["choices"])
	}
	if num(t, m, "usage", "completion_tokens") != 2 {
		t.Errorf("usage %v", m["usage"])
	}
}

func TestOpenAIToolCall(t *testing.T) {
	s := newServer(t)
	body := `{"model":"gpt-4o","tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],` +
		`"messages":[{"role":"user","content":"find it fake:tool"}]}`
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), body), http.StatusOK)
	choice := obj(t, m, "choices", 0)
	msg := obj(t, choice, "message")
	hasKeys(t, msg, "role", "content", "tool_calls", "refusal", "annotations")
	if str(t, choice, "finish_reason") != "tool_calls" || msg["content"] != nil {
		t.Fatalf("choice %v", choice)
	}
	call := obj(t, msg, "tool_calls", 0)
	hasKeys(t, call, "id", "type", "function")
	if !strings.HasPrefix(str(t, call, "id"), "call_") || str(t, call, "type") != "function" || str(t, call, "function", "name") != "lookup" {
		t.Fatalf("tool call %v", call)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(str(t, call, "function", "arguments")), &args); err != nil || args["query"] != "find it fake:tool" {
		t.Fatalf("arguments %v (%v)", args, err)
	}

	// Streaming: the arguments arrive split over several chunks.
	s.Script(ToolCall("get_time", `{"timezone":"Europe/Paris","format":"24h"}`))
	chunks := openAIStream(t, s, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"time?"}]}`)
	first := obj(t, chunks[0], "choices", 0, "delta")
	hasKeys(t, first, "role", "content", "tool_calls", "refusal")
	if first["content"] != nil || str(t, first, "tool_calls", 0, "id")[:5] != "call_" ||
		str(t, first, "tool_calls", 0, "function", "name") != "get_time" || str(t, first, "tool_calls", 0, "function", "arguments") != "" {
		t.Fatalf("first delta %v", first)
	}
	var argsText strings.Builder
	pieces := 0
	for _, c := range chunks[1 : len(chunks)-1] {
		tc := obj(t, c, "choices", 0, "delta", "tool_calls", 0)
		hasKeys(t, tc, "index", "function")
		argsText.WriteString(str(t, tc, "function", "arguments"))
		pieces++
	}
	if argsText.String() != `{"timezone":"Europe/Paris","format":"24h"}` || pieces < 3 {
		t.Fatalf("arguments %q in %d pieces", argsText.String(), pieces)
	}
	if str(t, chunks[len(chunks)-1], "choices", 0, "finish_reason") != "tool_calls" {
		t.Fatalf("last chunk %v", chunks[len(chunks)-1])
	}
}

func TestOpenAIThinking(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(),
		`{"model":"m","messages":[{"role":"user","content":"why? fake:thinking"}]}`), http.StatusOK)
	msg := obj(t, m, "choices", 0, "message")
	reasoning := str(t, msg, "reasoning_content")
	if reasoning != "Thinking about: why? fake:thinking" || str(t, msg, "content") != "echo: why? fake:thinking" {
		t.Fatalf("message %v", msg)
	}
	if num(t, m, "usage", "completion_tokens_details", "reasoning_tokens") != tokens(reasoning) ||
		num(t, m, "usage", "completion_tokens") != tokens(reasoning)+tokens("echo: why? fake:thinking") {
		t.Fatalf("usage %v", m["usage"])
	}

	s.Script(Thinking())
	chunks := openAIStream(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"why not"}]}`)
	var thought, text strings.Builder
	for _, c := range chunks[1:] {
		d := obj(t, c, "choices", 0, "delta")
		if r, ok := d["reasoning_content"].(string); ok {
			if text.Len() > 0 {
				t.Fatal("reasoning after content")
			}
			thought.WriteString(r)
		}
		if c, ok := d["content"].(string); ok {
			text.WriteString(c)
		}
	}
	if thought.String() != "Thinking about: why not" || text.String() != "echo: why not" {
		t.Fatalf("reasoning %q, content %q", thought.String(), text.String())
	}
}

func TestOpenAICachedUsage(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(),
		`{"model":"m","messages":[{"role":"user","content":"abcd fake:cached=500"}]}`), http.StatusOK)
	u := obj(t, m, "usage")
	if num(t, u, "prompt_tokens_details", "cached_tokens") != 500 || num(t, u, "prompt_tokens") != 500+tokens("abcd fake:cached=500") {
		t.Fatalf("usage %v", u)
	}
}

func TestOpenAIToolResultIsLastUserTurn(t *testing.T) {
	s := newServer(t)
	body := `{"model":"m","messages":[{"role":"user","content":"weather? fake:tool"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"sunny, 21C"}]}`
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), body), http.StatusOK)
	if str(t, m, "choices", 0, "finish_reason") != "stop" || str(t, m, "choices", 0, "message", "content") != "echo: sunny, 21C" {
		t.Fatalf("reply %v", m["choices"])
	}
	if num(t, m, "usage", "prompt_tokens") != tokens("weather? fake:tool"+"sunny, 21C") {
		t.Fatalf("usage %v", m["usage"])
	}
}

// TestOpenAIRoles: the roles Chat Completions knows, system and developer
// messages after the first turn (Codex, translated Claude Code requests),
// and tool messages only in answer to the assistant's tool calls.
func TestOpenAIRoles(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1/chat/completions"
	ok := `{"model":"gpt-4o","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":"1"},{"role":"tool","tool_call_id":"b","content":"2"},{"role":"developer","content":"be brief"},{"role":"user","content":"q"}]}`
	jsonBody(t, post(t, url, openAIHeaders(), ok), http.StatusOK)
	for _, c := range []struct{ body, want string }{
		{`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"a","content":"1"}]}`,
			"messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{`{"model":"gpt-4o","messages":[{"role":"human","content":"hi"}]}`, "Invalid value: 'human'"},
	} {
		e := obj(t, jsonBody(t, post(t, url, openAIHeaders(), c.body), http.StatusBadRequest), "error")
		if !strings.Contains(str(t, e, "message"), c.want) {
			t.Errorf("%s: %v", c.body, e)
		}
	}
}
