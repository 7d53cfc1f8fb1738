package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/wire"
)

func openaiExchange(t *testing.T, body string) *pipeline.Exchange {
	t.Helper()
	req, err := openai.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &pipeline.Exchange{Meta: wire.Meta{Dialect: wire.DialectOpenAI, Model: req.Model}, Req: req, Original: []byte(body)}
}

func encodeFor(t *testing.T, x *pipeline.Exchange, d wire.Dialect) string {
	t.Helper()
	g := &Gateway{}
	b, werr := g.upstreamBody(x, &wire.UpstreamCall{BodyMode: wire.BodyNative, BodyDialect: d}, wire.Route{Provider: "p", Model: x.Req.Model})
	if werr != nil {
		t.Fatal(werr.Message)
	}
	return string(b)
}

func TestStructuredOutputRequest(t *testing.T) {
	x := openaiExchange(t, `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}},"user":"u1"}`)
	body := encodeFor(t, x, wire.DialectAnthropic)
	if !strings.Contains(body, `"name":"person"`) || !strings.Contains(body, `"input_schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`) ||
		!strings.Contains(body, `"tool_choice":{"name":"person","type":"tool"}`) || strings.Contains(body, "response_format") {
		t.Fatalf("anthropic body %s", body)
	}
	if x.StructuredTool != "person" {
		t.Fatalf("StructuredTool %q", x.StructuredTool)
	}
	if strings.Join(x.Degraded, ",") != "dropped-fields:user" {
		t.Errorf("degraded %v", x.Degraded)
	}
	if len(x.Req.Tools) != 0 || x.Req.ToolChoice != nil {
		t.Errorf("the caller's request was changed: %+v", x.Req)
	}
	// a failover to an OpenAI upstream gets the caller's request, unwrapping off
	body = encodeFor(t, x, wire.DialectOpenAI)
	if x.StructuredTool != "" || strings.Contains(body, `"tools"`) {
		t.Errorf("openai body %s (tool %q)", body, x.StructuredTool)
	}

	x = openaiExchange(t, `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`)
	body = encodeFor(t, x, wire.DialectAnthropic)
	if !strings.Contains(body, `"tools":[{"name":"json_response"`) || !strings.Contains(body, `"input_schema":{"type":"object"}`) || x.StructuredTool != "json_response" {
		t.Fatalf("json_object body %s", body)
	}

	x = openaiExchange(t, `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}}`)
	if body = encodeFor(t, x, wire.DialectAnthropic); strings.Contains(body, "tools") || x.StructuredTool != "" {
		t.Fatalf("text format body %s", body)
	}

	// the caller forces its own tool: no workaround, a degraded note
	x = openaiExchange(t, `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","response_format":{"type":"json_object"}}`)
	body = encodeFor(t, x, wire.DialectAnthropic)
	if x.StructuredTool != "" || strings.Contains(body, "json_response") || !strings.Contains(body, `"tool_choice":{"type":"any"}`) {
		t.Fatalf("forced body %s", body)
	}
	if !strings.Contains(strings.Join(x.Degraded, ","), "structured-output-unsupported") {
		t.Errorf("degraded %v", x.Degraded)
	}
}

func TestUnwrapStructuredResponse(t *testing.T) {
	resp, err := anthropic.DecodeResponse([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"toolu_1","name":"person","input":{"name":"Ada"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	x := &pipeline.Exchange{StructuredTool: "person"}
	unwrapStructured(x, resp)
	out, err := openai.EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"content":"{\"name\":\"Ada\"}"`) || !strings.Contains(string(out), `"finish_reason":"stop"`) || strings.Contains(string(out), "tool_calls") {
		t.Errorf("got %s", out)
	}
	// another tool call is left alone, and so is the stop reason
	resp = &wire.Response{StopReason: wire.StopToolUse, Content: []wire.Block{{Type: wire.BlockToolUse, Name: "other", Data: []byte(`{}`)}}}
	unwrapStructured(x, resp)
	if resp.Content[0].Type != wire.BlockToolUse || resp.StopReason != wire.StopToolUse {
		t.Errorf("other tool: %+v", resp)
	}
}

func TestUnwrapStructuredStream(t *testing.T) {
	sse := [][2]string{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"person","input":{}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"name\":"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Ada\"}"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	dec := anthropic.NewStreamDecoder()
	enc := openai.NewStreamEncoder(false)
	st := newStructuredStream(&pipeline.Exchange{StructuredTool: "person"})
	var out []byte
	for _, e := range sse {
		evs, err := dec.Decode(e[0], []byte(e[1]))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range st.events(evs) {
			out = enc.Encode(out, &ev)
		}
	}
	s := string(out)
	if !strings.Contains(s, `"delta":{"content":"{\"name\":"}`) || !strings.Contains(s, `"delta":{"content":"\"Ada\"}"}`) ||
		!strings.Contains(s, `"finish_reason":"stop"`) || strings.Contains(s, "tool_calls") {
		t.Errorf("got %s", s)
	}
	if newStructuredStream(&pipeline.Exchange{}) != nil {
		t.Error("no structured tool: want no rewriting")
	}
}

func TestClampSampling(t *testing.T) {
	x := openaiExchange(t, `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":1.6,"top_p":1.5}`)
	body := encodeFor(t, x, wire.DialectAnthropic)
	if !strings.Contains(body, `"temperature":1,`) || !strings.Contains(body, `"top_p":1`) {
		t.Fatalf("body %s", body)
	}
	if got := strings.Join(x.Degraded, ","); got != "temperature-clamped:1.6>1,top_p-clamped:1.5>1" {
		t.Errorf("degraded %q", got)
	}
	if x.Req.Params.Temperature != 1.6 {
		t.Errorf("the caller's request was changed")
	}
	// in range: untouched
	x = openaiExchange(t, `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.7}`)
	if body = encodeFor(t, x, wire.DialectAnthropic); !strings.Contains(body, `"temperature":0.7`) || len(x.Degraded) != 0 {
		t.Errorf("body %s degraded %v", body, x.Degraded)
	}
	// Anthropic caller, OpenAI upstream: 2 is the limit there; negative top_k
	req, err := anthropic.DecodeRequest([]byte(`{"model":"gpt-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"temperature":-0.5,"top_k":-3}`))
	if err != nil {
		t.Fatal(err)
	}
	x = &pipeline.Exchange{Meta: wire.Meta{Dialect: wire.DialectAnthropic}, Req: req}
	body = encodeFor(t, x, wire.DialectOpenAI)
	if !strings.Contains(body, `"temperature":0`) || strings.Join(x.Degraded, ",") != "temperature-clamped:-0.5>0,top_k-clamped:-3>0" {
		t.Errorf("body %s degraded %v", body, x.Degraded)
	}
	// same dialect: the gateway does not second-guess the caller
	x = openaiExchange(t, `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"temperature":1.6}`)
	x.Pristine = false
	if body = encodeFor(t, x, wire.DialectOpenAI); !strings.Contains(body, `"temperature":1.6`) || len(x.Degraded) != 0 {
		t.Errorf("same-dialect body %s degraded %v", body, x.Degraded)
	}
}

// Issue 11 (items 4, 5): an Anthropic caller's mid-conversation system
// message and unknown members, re-encoded (not pristine) for each dialect.
func TestTranslateSystemMessagesAndNestedExtras(t *testing.T) {
	const in = `{"model":"claude-x","max_tokens":9,"system":"top","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"hi","citations":null}]},` +
		`{"role":"system","content":"be brief","cache_control":{"type":"ephemeral"}},` +
		`{"role":"assistant","content":"ok"},{"role":"user","content":"q"}],` +
		`"tools":[{"name":"Read","input_schema":{"type":"object"},"defer_loading":true},{"type":"web_search_20250305","name":"web_search"}]}`
	anth := func() *pipeline.Exchange {
		req, err := anthropic.DecodeRequest([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		return &pipeline.Exchange{Meta: wire.Meta{Dialect: wire.DialectAnthropic, Model: req.Model}, Req: req, Original: []byte(in)}
	}

	// Same dialect after a layer's change: everything as the caller sent it.
	x := anth()
	x.Pristine = false
	if body := encodeFor(t, x, wire.DialectAnthropic); !jsonEqual(t, body, in) || len(x.Degraded) != 0 {
		t.Fatalf("anthropic re-encode changed the request (%v):\n%s", x.Degraded, body)
	}

	// OpenAI upstream: the system message in place, the rest dropped and named.
	x = anth()
	body := encodeFor(t, x, wire.DialectOpenAI)
	want := `{"model":"claude-x","max_completion_tokens":9,"messages":[{"role":"system","content":"top"},` +
		`{"role":"user","content":"hi"},{"role":"system","content":"be brief"},` +
		`{"role":"assistant","content":"ok"},{"role":"user","content":"q"}],` +
		`"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}]}`
	if !jsonEqual(t, body, want) {
		t.Fatalf("openai body\n%s\nwant\n%s", body, want)
	}
	if got := strings.Join(x.Degraded, ","); got != "dropped-fields:messages[].cache_control,messages[].content[].citations,tools[].defer_loading,tools[web_search]" {
		t.Errorf("degraded %q", got)
	}
	if x.Req.Tools[0].Extra == nil || len(x.Req.Tools) != 2 || x.Req.Messages[1].Extra == nil {
		t.Error("translating changed the caller's request")
	}

	// Anthropic's tool_choice option has no OpenAI tool_choice form.
	x = anth()
	x.Req.ToolChoice = []byte(`{"type":"auto","disable_parallel_tool_use":true}`)
	if body = encodeFor(t, x, wire.DialectOpenAI); !strings.Contains(body, `"tool_choice":"auto"`) ||
		!strings.Contains(strings.Join(x.Degraded, ","), "tool_choice.disable_parallel_tool_use") {
		t.Fatalf("tool_choice: %s (%v)", body, x.Degraded)
	}

	// An OpenAI caller's system message after the first turn, for an
	// Anthropic upstream: moved to the top-level system prompt, said so.
	x = openaiExchange(t, `{"model":"claude-x","messages":[{"role":"system","content":"top"},{"role":"user","content":"hi"},{"role":"system","content":"later"},{"role":"user","content":"q"}]}`)
	body = encodeFor(t, x, wire.DialectAnthropic)
	if !strings.Contains(body, `"system":[{"type":"text","text":"top"},{"type":"text","text":"later"}]`) || strings.Contains(body, `"role":"system"`) ||
		strings.Join(x.Degraded, ",") != "system-moved" {
		t.Fatalf("anthropic body %s (%v)", body, x.Degraded)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}
