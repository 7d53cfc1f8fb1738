package fakeupstream

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const messagesBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":[{"type":"text","text":"tell me a short story please"}]}]}`

func TestAnthropicMessageJSON(t *testing.T) {
	s := newServer(t)
	resp := post(t, s.URL()+"/v1/messages", anthropicHeaders(), messagesBody)
	if !strings.HasPrefix(resp.Header.Get("request-id"), "req_") {
		t.Errorf("request-id %q", resp.Header.Get("request-id"))
	}
	m := jsonBody(t, resp, http.StatusOK)
	hasKeys(t, m, "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
	if !strings.HasPrefix(str(t, m, "id"), "msg_") || str(t, m, "type") != "message" || str(t, m, "role") != "assistant" ||
		str(t, m, "model") != "claude-sonnet-4-5" || str(t, m, "stop_reason") != "end_turn" || m["stop_sequence"] != nil {
		t.Errorf("message %v", m)
	}
	content := arr(t, m, "content")
	const want = "echo: tell me a short story please"
	if len(content) != 1 {
		t.Fatalf("content %v", content)
	}
	hasKeys(t, obj(t, content, 0), "type", "text")
	if str(t, content, 0, "type") != "text" || str(t, content, 0, "text") != want {
		t.Errorf("content %v", content)
	}
	u := obj(t, m, "usage")
	if num(t, u, "input_tokens") != tokens("Be brief."+"hello"+"hi"+"tell me a short story please") ||
		num(t, u, "output_tokens") != tokens(want) || num(t, u, "cache_read_input_tokens") != 0 {
		t.Errorf("usage %v", u)
	}
}

// anthropicStream posts body and returns the events with their decoded data,
// checking that every event name equals its data's type.
func anthropicStream(t *testing.T, s *Server, body string) ([]string, []map[string]any) {
	t.Helper()
	events := sse(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), body))
	var names []string
	var data []map[string]any
	for _, e := range events {
		d := decodeData(t, e)
		if e.Event == "" || str(t, d, "type") != e.Event {
			t.Fatalf("event %q carries type %v", e.Event, d["type"])
		}
		names = append(names, e.Event)
		data = append(data, d)
	}
	return names, data
}

// collapse merges runs of content_block_delta into one name.
func collapse(names []string) []string {
	return slices.Compact(slices.Clone(names))
}

func TestAnthropicStream(t *testing.T) {
	s := newServer(t)
	names, data := anthropicStream(t, s, strings.Replace(messagesBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(collapse(names), want) {
		t.Fatalf("event order %v", names)
	}
	start := obj(t, data[0], "message")
	hasKeys(t, start, "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
	if !strings.HasPrefix(str(t, start, "id"), "msg_") || len(arr(t, start, "content")) != 0 || start["stop_reason"] != nil {
		t.Fatalf("message_start %v", start)
	}
	inputTokens := tokens("Be brief." + "hello" + "hi" + "tell me a short story please")
	if num(t, start, "usage", "input_tokens") != inputTokens {
		t.Fatalf("message_start usage %v", start["usage"])
	}
	block := obj(t, data[1], "content_block")
	if num(t, data[1], "index") != 0 || str(t, block, "type") != "text" || str(t, block, "text") != "" {
		t.Fatalf("content_block_start %v", data[1])
	}
	var text strings.Builder
	deltas := 0
	for i, n := range names {
		if n == "content_block_delta" {
			d := obj(t, data[i], "delta")
			hasKeys(t, d, "type", "text")
			if str(t, d, "type") != "text_delta" || num(t, data[i], "index") != 0 {
				t.Fatalf("delta %v", data[i])
			}
			text.WriteString(str(t, d, "text"))
			deltas++
		}
	}
	const reply = "echo: tell me a short story please"
	if text.String() != reply || deltas < 2 {
		t.Fatalf("text %q in %d deltas", text.String(), deltas)
	}
	md := data[len(data)-2]
	if str(t, md, "delta", "stop_reason") != "end_turn" || at(t, md, "delta", "stop_sequence") != nil ||
		num(t, md, "usage", "output_tokens") != tokens(reply) {
		t.Fatalf("message_delta %v", md)
	}
	hasKeys(t, data[len(data)-1], "type")
}

func TestAnthropicAuth(t *testing.T) {
	s := newServer(t, WithAPIKey("sk-ant-right"))
	url := s.URL() + "/v1/messages"
	check := func(headers map[string]string, status int, typ, message string) {
		t.Helper()
		m := jsonBody(t, post(t, url, headers, messagesBody), status)
		hasKeys(t, m, "type", "error", "request_id")
		e := obj(t, m, "error")
		hasKeys(t, e, "type", "message")
		if str(t, m, "type") != "error" || str(t, e, "type") != typ || str(t, e, "message") != message {
			t.Errorf("error body %v", m)
		}
	}
	check(map[string]string{"x-api-key": "sk-ant-wrong", "anthropic-version": "2023-06-01"}, 401, "authentication_error", "invalid x-api-key")
	check(map[string]string{"anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key header is required")
	check(map[string]string{"Authorization": "Bearer sk-ant-right", "anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key header is required")
	check(map[string]string{"x-api-key": "sk-ant-right"}, 400, "invalid_request_error", "anthropic-version: header is required")
	jsonBody(t, post(t, url, map[string]string{"x-api-key": "sk-ant-right", "anthropic-version": "2023-06-01"}, messagesBody), http.StatusOK)
}

func TestAnthropicBadRequests(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1/messages"
	e := obj(t, jsonBody(t, post(t, url, anthropicHeaders(), "{\n  \"model\": x}"), http.StatusBadRequest), "error")
	if str(t, e, "type") != "invalid_request_error" || !strings.HasPrefix(str(t, e, "message"), "The request body is not valid JSON: ") ||
		!strings.HasSuffix(str(t, e, "message"), "line 2 column 12 (char 13)") {
		t.Errorf("malformed JSON error %v", e)
	}
	e = obj(t, jsonBody(t, post(t, url, anthropicHeaders(), `{"model":"m","messages":[]}`), http.StatusBadRequest), "error")
	if str(t, e, "message") != "max_tokens: Field required" {
		t.Errorf("missing max_tokens error %v", e)
	}
	e = obj(t, jsonBody(t, post(t, url+"/nope", anthropicHeaders(), `{}`), http.StatusNotFound), "error")
	if str(t, e, "type") != "not_found_error" {
		t.Errorf("404 error %v", e)
	}
}

func TestAnthropicCountTokens(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1/messages/count_tokens", anthropicHeaders(), messagesBody), http.StatusOK)
	hasKeys(t, m, "input_tokens")
	full := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), messagesBody), http.StatusOK)
	if num(t, m, "input_tokens") != num(t, full, "usage", "input_tokens") || num(t, m, "input_tokens") == 0 {
		t.Errorf("count_tokens %v vs usage %v", m, full["usage"])
	}
	jsonBody(t, post(t, s.URL()+"/v1/messages/count_tokens", map[string]string{"anthropic-version": "2023-06-01"}, messagesBody), http.StatusUnauthorized)
	if s.Pending() != 0 || s.Count("/v1/messages/count_tokens") != 2 {
		t.Errorf("counts %v", s.Counts())
	}
}

func TestAnthropicMaxTokens(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(),
		`{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"a rather long message"}]}`), http.StatusOK)
	if str(t, m, "stop_reason") != "max_tokens" || str(t, m, "content", 0, "text") != "echo: a rath" || num(t, m, "usage", "output_tokens") != 3 {
		t.Errorf("truncated %v", m)
	}
}

func TestAnthropicToolUse(t *testing.T) {
	s := newServer(t)
	body := `{"model":"m","max_tokens":100,"tools":[{"name":"search_docs","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"look fake:tool"}]}`
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), body), http.StatusOK)
	if str(t, m, "stop_reason") != "tool_use" || len(arr(t, m, "content")) != 1 {
		t.Fatalf("message %v", m)
	}
	block := obj(t, m, "content", 0)
	hasKeys(t, block, "type", "id", "name", "input")
	if str(t, block, "type") != "tool_use" || !strings.HasPrefix(str(t, block, "id"), "toolu_") ||
		str(t, block, "name") != "search_docs" || str(t, block, "input", "query") != "look fake:tool" {
		t.Fatalf("tool_use block %v", block)
	}

	s.Script(Combine(Reply("Let me check."), ToolCall("get_weather", `{"location":"San Francisco, CA","unit":"celsius"}`)))
	names, data := anthropicStream(t, s, `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"weather?"}]}`)
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(collapse(names), want) {
		t.Fatalf("event order %v", names)
	}
	var partial strings.Builder
	pieces := 0
	for i, n := range names {
		if n == "content_block_start" && num(t, data[i], "index") == 1 {
			cb := obj(t, data[i], "content_block")
			hasKeys(t, cb, "type", "id", "name", "input")
			if str(t, cb, "type") != "tool_use" || str(t, cb, "name") != "get_weather" || len(obj(t, cb, "input")) != 0 {
				t.Fatalf("tool block start %v", cb)
			}
		}
		if n == "content_block_delta" && num(t, data[i], "index") == 1 {
			if str(t, data[i], "delta", "type") != "input_json_delta" {
				t.Fatalf("delta %v", data[i])
			}
			partial.WriteString(str(t, data[i], "delta", "partial_json"))
			pieces++
		}
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(partial.String()), &input); err != nil || input["location"] != "San Francisco, CA" || pieces < 3 {
		t.Fatalf("partial_json %q in %d pieces: %v", partial.String(), pieces, err)
	}
	if str(t, data[len(data)-2], "delta", "stop_reason") != "tool_use" {
		t.Fatalf("message_delta %v", data[len(data)-2])
	}
}

func TestAnthropicThinking(t *testing.T) {
	s := newServer(t)
	body := `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"ponder fake:thinking"}]}`
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), body), http.StatusOK)
	content := arr(t, m, "content")
	if len(content) != 2 {
		t.Fatalf("content %v", content)
	}
	think := obj(t, content, 0)
	hasKeys(t, think, "type", "thinking", "signature")
	if str(t, think, "type") != "thinking" || str(t, think, "thinking") != "Thinking about: ponder fake:thinking" || str(t, think, "signature") == "" {
		t.Fatalf("thinking block %v", think)
	}
	if str(t, content, 1, "type") != "text" {
		t.Fatalf("second block %v", content[1])
	}

	names, data := anthropicStream(t, s, strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(collapse(names), want) {
		t.Fatalf("event order %v", names)
	}
	if str(t, data[1], "content_block", "type") != "thinking" {
		t.Fatalf("first block %v", data[1])
	}
	var deltaTypes []string
	var thought strings.Builder
	signature := ""
	for i, n := range names {
		if n == "content_block_delta" && num(t, data[i], "index") == 0 {
			d := obj(t, data[i], "delta")
			deltaTypes = append(deltaTypes, str(t, d, "type"))
			switch str(t, d, "type") {
			case "thinking_delta":
				thought.WriteString(str(t, d, "thinking"))
			case "signature_delta":
				signature = str(t, d, "signature")
			}
		}
	}
	if got := slices.Compact(deltaTypes); !slices.Equal(got, []string{"thinking_delta", "signature_delta"}) {
		t.Fatalf("thinking delta types %v", deltaTypes)
	}
	if thought.String() != "Thinking about: ponder fake:thinking" || signature != str(t, think, "signature") {
		t.Fatalf("thinking %q signature %q", thought.String(), signature)
	}
}

func TestAnthropicCachedUsage(t *testing.T) {
	s := newServer(t)
	s.Script(Cached(2048, 512))
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), messagesBody), http.StatusOK)
	u := obj(t, m, "usage")
	if num(t, u, "cache_read_input_tokens") != 2048 || num(t, u, "cache_creation_input_tokens") != 512 ||
		num(t, u, "input_tokens") != tokens("Be brief."+"hello"+"hi"+"tell me a short story please") {
		t.Fatalf("usage %v", u)
	}
	_, data := anthropicStream(t, s, `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x fake:cached=7 fake:cache-write=9"}]}`)
	if num(t, data[0], "message", "usage", "cache_read_input_tokens") != 7 || num(t, data[0], "message", "usage", "cache_creation_input_tokens") != 9 {
		t.Fatalf("message_start usage %v", data[0])
	}
}

func TestAnthropicToolResultIsLastUserTurn(t *testing.T) {
	s := newServer(t)
	body := `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"weather? fake:tool"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny, 21C"}]}]}]}`
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), body), http.StatusOK)
	if str(t, m, "stop_reason") != "end_turn" || str(t, m, "content", 0, "text") != "echo: sunny, 21C" {
		t.Fatalf("reply %v", m)
	}
	if num(t, m, "usage", "input_tokens") != tokens("weather? fake:tool"+"sunny, 21C") {
		t.Fatalf("usage %v", m["usage"])
	}
}

// claudeCodeFallsBack is Claude Code 2.1.332's test of a 400 for "retry
// without mid-conversation system messages" (its jLi, read from the
// shipped binary): the fake's refusals must pass it, or a real client
// would surface them instead of recovering as it does with the real API.
func claudeCodeFallsBack(msg string) bool {
	betaRe := regexp.MustCompile(`anthropic[-_]beta`)
	placement := regexp.MustCompile(`(?i)(?:messages\.(\d{1,6}): )?(?:role .{0,2}system.{0,2} must (?:precede an|follow a)|use the top-level .{0,2}system.{0,2} parameter for the initial system prompt)`)
	textOnly := regexp.MustCompile(`(?i)text-only role .{0,2}system.{0,2} messages require`)
	roleEnum := regexp.MustCompile(`(?i)(?:unknown variant .{0,2}system\b.{0,2}, expected|Input should be) [\\'"` + "`" + `]{1,2}(?:user|assistant)\b.{0,2} or [\\'"` + "`" + `]{1,2}(?:user|assistant)\b`)
	return strings.Contains(msg, midConversationSystemBeta) && betaRe.MatchString(msg) ||
		placement.MatchString(msg) || textOnly.MatchString(msg) || roleEnum.MatchString(msg) ||
		strings.Contains(msg, "not supported") && regexp.MustCompile(`(?i)role .{0,2}system`).MatchString(msg)
}

// TestAnthropicMidConversationSystem: {"role":"system"} inside messages is
// taken by Opus 4.8 or with Claude Code's beta, where the real API allows
// it, and refused elsewhere in words Claude Code recognises.
func TestAnthropicMidConversationSystem(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1/messages"
	beta := anthropicHeaders()
	beta["anthropic-beta"] = "claude-code-20250219, " + midConversationSystemBeta
	const ok = `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"be brief"}],"cache_control":{"type":"ephemeral"}}]}`
	m := jsonBody(t, post(t, url, beta, ok), http.StatusOK)
	if str(t, arr(t, m, "content"), 0, "text") != "echo: hi" {
		t.Errorf("a system message was taken for the user's turn: %v", m)
	}
	jsonBody(t, post(t, url, anthropicHeaders(), strings.Replace(ok, "claude-sonnet-4-5", "claude-opus-4-8", 1)), http.StatusOK)

	for _, c := range []struct {
		name    string
		headers map[string]string
		body    string
		want    string
	}{
		{"no beta, other model", anthropicHeaders(), ok, `messages.1.role: Input should be 'user' or 'assistant'`},
		{"first", beta, `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
			`messages.0: use the top-level "system" parameter for the initial system prompt`},
		{"after an assistant turn", beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"},{"role":"system","content":"s"}]}`,
			`messages.2: role "system" must follow a user message`},
		{"two in a row", beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"s"},{"role":"system","content":"t"}]}`,
			`messages.1: role "system" must precede an assistant message`},
		{"an image", beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"image","source":{}}]}]}`,
			`messages.1.content.0: text-only role "system" messages require text blocks`},
	} {
		e := obj(t, jsonBody(t, post(t, url, c.headers, c.body), http.StatusBadRequest), "error")
		msg := str(t, e, "message")
		if str(t, e, "type") != "invalid_request_error" || !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s: %q, want %q", c.name, msg, c.want)
		}
		if !claudeCodeFallsBack(msg) {
			t.Errorf("%s: Claude Code would not fall back on %q", c.name, msg)
		}
	}
	// A server tool use may be followed by one.
	jsonBody(t, post(t, url, beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]},{"role":"system","content":"s"}]}`), http.StatusOK)
}
