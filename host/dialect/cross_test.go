package dialect_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/sdk/wire"
)

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An OpenAI caller served by an Anthropic upstream (extras dropped, as the
// host does across dialects).
func TestOpenAIRequestToAnthropic(t *testing.T) {
	req, err := openai.DecodeRequest(fixture(t, "openai/testdata/req_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	req.Extra = nil
	out, err := anthropic.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4.1","max_tokens":100,"messages":[
		{"role":"user","content":"Weather in Paris and Tokyo?"},
		{"role":"assistant","content":[
			{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city": "Paris"}},
			{"type":"tool_use","id":"call_2","name":"get_weather","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"call_1","content":"18C sunny"},
			{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"error: bad arguments"}]}]},
		{"role":"user","content":"Thanks. And Rome?"},
		{"role":"assistant","content":[{"type":"text","text":"Calling."},{"type":"tool_use","id":"call_3","name":"get_weather","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_3","content":"25C"}]}],
		"tools":[
			{"name":"get_weather","description":"Get the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
			{"name":"noop","input_schema":{"type":"object","properties":{}}}],
		"tool_choice":{"type":"tool","name":"get_weather"}}`
	if !testutil.JSONEqual(out, []byte(want)) {
		t.Errorf("got\n%s", testutil.Indent(out))
	}
	if _, err := anthropic.DecodeRequest(out); err != nil {
		t.Errorf("the Anthropic body does not decode: %v", err)
	}

	req, err = openai.DecodeRequest(fixture(t, "openai/testdata/req_chat.json"))
	if err != nil {
		t.Fatal(err)
	}
	req.Extra = nil
	out, err = anthropic.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	back, err := anthropic.DecodeRequest(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, part := range []string{
		`"system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Answer in French."}]`,
		`{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}`,
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`,
		`{"type":"text","text":"cached part","cache_control":{"type": "ephemeral"}}`,
		`"stop_sequences":["\n\n","END"]`,
		`"max_tokens":256`,
		`"stream":true`,
	} {
		if !strings.Contains(s, part) {
			t.Errorf("missing %s in\n%s", part, s)
		}
	}
	if back.Params.Set&wire.HasSeed != 0 {
		t.Error("seed has no Anthropic form and should not survive")
	}
}

// An Anthropic caller served by an OpenAI upstream.
func TestAnthropicRequestToOpenAI(t *testing.T) {
	req, err := anthropic.DecodeRequest(fixture(t, "anthropic/testdata/req_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := openai.EncodeRequestWith(req, openai.EncodeOptions{StreamUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-opus-4-1","messages":[
		{"role":"system","content":"You can use tools."},
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"toolu_01","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"toolu_01","content":"18C"},
		{"role":"tool","tool_call_id":"toolu_02","content":[{"type":"text","text":"boom"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},
		{"role":"tool","tool_call_id":"toolu_03","content":""},
		{"role":"user","content":"And now?"}],
		"max_completion_tokens":4096,
		"tools":[
			{"type":"function","function":{"name":"get_weather","description":"Get weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
			{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],
		"tool_choice":"auto"}`
	if !testutil.JSONEqual(out, []byte(want)) {
		t.Errorf("got\n%s", testutil.Indent(out))
	}
	back, err := openai.DecodeRequest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Messages) != 4 || len(back.Messages[2].Content) != 3 || len(back.System) != 1 {
		t.Errorf("tool results should fold back into one user message:\n%s", testutil.Request(back))
	}
}

// An OpenAI upstream stream served to an Anthropic caller.
func TestOpenAIStreamToAnthropic(t *testing.T) {
	chunks := []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"reasoning_content":"Let me think."},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Checking"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" now."},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":20}}}`,
		`[DONE]`,
	}
	d := openai.NewStreamDecoder()
	enc := anthropic.NewStreamEncoder()
	var out []byte
	for _, c := range chunks {
		evs, err := d.Decode("", []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			out = enc.Encode(out, &evs[i])
		}
	}
	m := testutil.AccumulateAnthropic(t, out)
	if m.ID != "chatcmpl-1" || m.Model != "gpt-4o" || m.StopReason != "tool_use" || len(m.Content) != 3 ||
		m.Content[0].Type != "thinking" || m.Content[0].Thinking != "Let me think." ||
		m.Content[1].Text != "Checking now." ||
		m.Content[2].ID != "call_1" || m.Content[2].Input != `{"city":"Paris"}` {
		t.Errorf("accumulated %+v\n%s", m, out)
	}
	if m.Usage["input_tokens"] != 10.0 || m.Usage["cache_read_input_tokens"] != 20.0 || m.Usage["output_tokens"] != 12.0 {
		t.Errorf("usage %v", m.Usage)
	}
}

// An Anthropic upstream stream served to an OpenAI caller.
func TestAnthropicStreamToOpenAI(t *testing.T) {
	stream := fixture(t, "anthropic/testdata/stream.sse")
	d := anthropic.NewStreamDecoder()
	enc := openai.NewStreamEncoder(true)
	var out []byte
	for _, e := range testutil.ParseSSE(t, stream) {
		evs, err := d.Decode(e.Event, []byte(e.Data))
		if err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			out = enc.Encode(out, &evs[i])
		}
	}
	m := testutil.AccumulateOpenAI(t, out)
	if m.ID != "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY" || m.Content != `Okay, let's check the weather "now".` ||
		m.Reasoning != "I need to find the GCF of 1071 and 462." || m.Finish != "tool_calls" ||
		len(m.Tools) != 1 || m.Tools[0].Name != "get_weather" || m.Tools[0].Args != `{"location": "San Francisco, CA"}` {
		t.Errorf("accumulated %+v\n%s", m, out)
	}
	if m.Usage["prompt_tokens"] != 125.0 || m.Usage["completion_tokens"] != 89.0 || m.Usage["total_tokens"] != 214.0 {
		t.Errorf("usage %v", m.Usage)
	}
}

func TestResponsesAcrossDialects(t *testing.T) {
	resp, err := openai.DecodeResponse(fixture(t, "openai/testdata/resp_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := anthropic.EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"chatcmpl-abc123","type":"message","role":"assistant","model":"deepseek-reasoner","content":[{"type":"thinking","thinking":"The user wants weather.","signature":""},{"type":"tool_use","id":"call_abc123","name":"get_current_weather","input":{"location":"Boston, MA"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":18,"cache_creation_input_tokens":0,"cache_read_input_tokens":64,"output_tokens":17}}`
	if !testutil.JSONEqual(out, []byte(want)) {
		t.Errorf("got %s", out)
	}

	resp, err = anthropic.DecodeResponse(fixture(t, "anthropic/testdata/resp_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = openai.EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"message":{"role":"assistant","content":"I'll check the weather.","reasoning_details":[{"type":"reasoning.encrypted","data":"EmwKAhgB","format":"anthropic-claude-v1","index":0}],"tool_calls":[{"id":"toolu_01A09q90qw90lq917835lq9","type":"function","function":{"name":"get_weather","arguments":"{\"location\": \"San Francisco, CA\", \"unit\": \"celsius\"}"}}],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":572,"completion_tokens":89,"total_tokens":661,"prompt_tokens_details":{"cached_tokens":0}}`) {
		t.Errorf("got %s", out)
	}
}

// Errors decoded from one dialect re-encode in the other with the same
// meaning.
func TestErrorsAcrossDialects(t *testing.T) {
	e := anthropic.DecodeError(529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	status, body := openai.EncodeError(e)
	if status != 529 || string(body) != `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}` {
		t.Errorf("%d %s", status, body)
	}
	e = openai.DecodeError(429, []byte(`{"error":{"message":"Rate limit reached for gpt-4o","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`))
	status, body = anthropic.EncodeError(e)
	if status != 429 || string(body) != `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached for gpt-4o"}}` {
		t.Errorf("%d %s", status, body)
	}
}

func TestToWireError(t *testing.T) {
	_, err := openai.DecodeResponse([]byte(`{`))
	if we := dialect.ToWireError(err); we.Status != 502 || we.Kind != wire.ErrUpstream || !we.Retryable {
		t.Errorf("%+v", we)
	}
	if we := dialect.ToWireError(errors.New("x")); we.Status != 500 || we.Kind != wire.ErrInternal {
		t.Errorf("%+v", we)
	}
	if dialect.ToWireError(nil) != nil {
		t.Error("nil")
	}
}

func TestTruncate(t *testing.T) {
	if got := dialect.Truncate("héllo", 2); got != "h…" {
		t.Errorf("%q", got)
	}
	if got := dialect.Truncate("abc", 3); got != "abc" {
		t.Errorf("%q", got)
	}
}

func TestKindForStatus(t *testing.T) {
	for status, kind := range map[int]string{400: wire.ErrInvalidRequest, 401: wire.ErrAuthentication, 402: wire.ErrPermission, 403: wire.ErrPermission,
		404: wire.ErrNotFound, 408: wire.ErrTimeout, 413: wire.ErrInvalidRequest, 422: wire.ErrInvalidRequest, 429: wire.ErrRateLimit,
		500: wire.ErrUpstream, 502: wire.ErrUpstream, 503: wire.ErrOverloaded, 504: wire.ErrTimeout, 529: wire.ErrOverloaded} {
		if got := dialect.KindForStatus(status); got != kind {
			t.Errorf("KindForStatus(%d) = %s, want %s", status, got, kind)
		}
		if got := dialect.KindForStatus(dialect.DefaultStatus(kind)); got != kind && kind != wire.ErrInternal {
			t.Errorf("DefaultStatus(%s) does not map back", kind)
		}
	}
}
