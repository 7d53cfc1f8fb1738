package openai

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) {
	now = func() time.Time { return time.Unix(1700000000, 0) }
	os.Exit(m.Run())
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The req_*.json fixtures are written in the form the encoder produces, so a
// decode → encode round trip must give the same JSON value back, unknown
// fields, cache_control and all.
func TestRequestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/req_*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasSuffix(name, ".canonical") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			in := readFixture(t, name+".json")
			req, err := DecodeRequest(in)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, name+".canonical.json", testutil.Request(req), *update)
			out, err := EncodeRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			if !testutil.JSONEqual(in, out) {
				t.Errorf("round trip changed the request:\n--- in\n%s\n--- out\n%s", testutil.Indent(in), testutil.Indent(out))
			}
			// and the canonical form is a fixed point
			req2, err := DecodeRequest(out)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := testutil.Request(req), testutil.Request(req2); string(a) != string(b) {
				t.Errorf("canonical form changed after a round trip:\n%s\n---\n%s", a, b)
			}
		})
	}
}

func TestRequestFolding(t *testing.T) {
	req, err := DecodeRequest(readFixture(t, "req_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	// user, assistant(thinking+2 tool_use), user(2 tool_result), user, assistant(text+tool_use), user(tool_result)
	roles := []string{"user", "assistant", "user", "user", "assistant", "user"}
	if len(req.Messages) != len(roles) {
		t.Fatalf("got %d messages, want %d:\n%s", len(req.Messages), len(roles), testutil.Request(req))
	}
	for i, r := range roles {
		if req.Messages[i].Role != r {
			t.Errorf("message %d role %q, want %q", i, req.Messages[i].Role, r)
		}
	}
	a := req.Messages[1].Content
	if len(a) != 3 || a[0].Type != wire.BlockThinking || a[1].Type != wire.BlockToolUse || a[2].Type != wire.BlockToolUse {
		t.Fatalf("assistant blocks: %+v", a)
	}
	if string(a[1].Data) != `{"city": "Paris"}` {
		t.Errorf("valid arguments should be kept as JSON, got %s", a[1].Data)
	}
	if string(a[2].Data) != `"{city: Tokyo"` {
		t.Errorf("invalid arguments should become a JSON string, got %s", a[2].Data)
	}
	tr := req.Messages[2].Content
	if len(tr) != 2 || tr[0].ID != "call_1" || tr[0].Text != "18C sunny" || tr[1].ID != "call_2" || tr[1].Data == nil {
		t.Errorf("tool results: %+v", tr)
	}
	if string(req.ToolChoice) != `{"type":"tool","name":"get_weather"}` {
		t.Errorf("tool_choice %s", req.ToolChoice)
	}
	if req.Params.Set&ParamLegacyMaxTokens == 0 || req.Params.MaxTokens != 100 {
		t.Errorf("max_tokens: %+v", req.Params)
	}
}

// Inputs that are re-encoded in a normalized (equivalent) form.
func TestRequestNormalization(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"single text part becomes a string",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"stop string becomes an array",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":"x"}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["x"]}`},
		{"null means absent",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":null,"tools":null,"stop":null,"stream":null,"user":null}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"user":null}`},
		{"tool_choice strings",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`},
		{"unknown tool_choice kept verbatim",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`},
		{"both max token fields survive",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"max_completion_tokens":7}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"max_tokens":5}`},
		{"system-array content with two parts becomes two system messages",
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":"hi"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"a"},{"role":"system","content":"b"},{"role":"user","content":"hi"}]}`},
		{"strict keeps, non-function tools are dropped",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":true}},{"type":"custom","custom":{"name":"g"}}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":true}}]}`},
		{"a system message after the first turn stays in place",
			`{"model":"m","messages":[{"role":"system","content":"s","name":"boss"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"developer","content":"be brief"},{"role":"user","content":"q"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"s","name":"boss"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"developer","content":"be brief"},{"role":"user","content":"q"}]}`},
		{"unknown members of messages, parts, tool calls and tool messages keep",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1},{"type":"image_url","image_url":{"url":"https://i/a.png"},"y":2}],"z":3},{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"index":0}]},{"role":"tool","tool_call_id":"c","content":"r","name":"f"}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1},{"type":"image_url","image_url":{"url":"https://i/a.png"},"y":2}],"z":3},{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"index":0}]},{"role":"tool","tool_call_id":"c","content":"r","name":"f"}]}`},
		{"escaped keys are recognized",
			`{"mod\u0065l":"m","messages":[{"role":"user","content":"hi"}],"\u0075ser":"u"}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"user":"u"}`},
		{"integral floats accepted for integers",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1e3,"seed":2.0}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1000,"seed":2}`},
		{"arguments sent as an object",
			`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]}`,
			`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			out, err := EncodeRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			if !testutil.JSONEqual(out, []byte(c.want)) {
				t.Errorf("got  %s\nwant %s", out, c.want)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"not json", `{"model":`, "malformed JSON"},
		{"trailing garbage", `{"model":"m","messages":[]} x`, "malformed JSON"},
		{"not an object", `[1,2]`, "must be a JSON object"},
		{"duplicated messages", `{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, `duplicate key "messages"`},
		{"duplicated nested key", `{"model":"m","messages":[{"role":"user","content":"a","role":"system"}]}`, `duplicate key "role"`},
		{"invalid UTF-8", `{"model":"m","messages":[{"role":"user","content":"caf` + "\xe9" + `"}]}`, "invalid UTF-8"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, "model: is required"},
		{"model not a string", `{"model":5,"messages":[{"role":"user","content":"hi"}]}`, "model: must be a string"},
		{"missing messages", `{"model":"m"}`, "messages: is required"},
		{"empty messages", `{"model":"m","messages":[]}`, "messages: is required"},
		{"messages not an array", `{"model":"m","messages":{}}`, "messages: must be an array"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, `messages[0].role: unsupported role "robot"`},
		{"missing role", `{"model":"m","messages":[{"content":"hi"}]}`, "messages[0].role: is required"},
		{"temperature string", `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, "temperature: must be a number, got a string"},
		{"max tokens fraction", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1.5}`, "max_tokens: must be an integer"},
		{"content number", `{"model":"m","messages":[{"role":"user","content":3}]}`, "messages[0].content: must be a string or an array"},
		{"part without type", `{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type: is required"},
		{"tool without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id: is required"},
		{"stop number", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":[1]}`, "stop[0]: must be a string"},
		{"stream string", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, "stream: must be a boolean"},
		{"bad tool_choice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"sometimes"}`, "tool_choice"},
		// The canonical form's own object types are not OpenAI's: kept
		// verbatim, {"type":"tool"} read as a forced tool with no name (a
		// fuzz-found input; see testdata/fuzz).
		{"canonical tool_choice object", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"tool"}}`, `tool_choice.type: "tool" is not an OpenAI tool_choice object`},
		{"tool without name", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name: is required"},
		{"image without url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "image_url.url: is required"},
		{"bad arguments type", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":5}}]}]}`, "messages[0].tool_calls[0].function.arguments: must be a string"},
		{"invalid escape", `{"model":"m\q","messages":[]}`, "malformed JSON"},
		{"control char", "{\"model\":\"m\x01\",\"messages\":[]}", "malformed JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(c.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, dialect.ErrInvalidRequest) {
				t.Errorf("error %v does not wrap ErrInvalidRequest", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			if we := dialect.ToWireError(err); we.Status != 400 || we.Kind != wire.ErrInvalidRequest {
				t.Errorf("ToWireError = %+v", we)
			}
		})
	}
}

func TestDecodeRequestDoesNotAlias(t *testing.T) {
	in := readFixture(t, "req_tools.json")
	req, err := DecodeRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	before := string(testutil.Request(req))
	for i := range in {
		in[i] = 'x'
	}
	if after := string(testutil.Request(req)); after != before {
		t.Error("decoded request changed when the body buffer was overwritten")
	}
}

func TestEncodeStreamUsage(t *testing.T) {
	req := &wire.Request{Model: "m", Stream: true, Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "hi"}}}},
		Extra: []byte(`{"stream_options":{"include_usage":false,"include_obfuscation":false},"user":"u"}`)}
	out, err := EncodeRequestWith(req, EncodeOptions{StreamUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false},"user":"u"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if IncludeUsage(req) {
		t.Error("IncludeUsage should read the caller's false")
	}
	req.Extra = []byte(`{"stream_options":{"include_usage":true}}`)
	if !IncludeUsage(req) {
		t.Error("IncludeUsage should be true")
	}
}

func TestEncodeRequestFromAnthropicShapes(t *testing.T) {
	req := &wire.Request{
		Model:  "gpt-4o",
		System: []wire.Block{{Type: wire.BlockText, Text: "sys", CacheControl: []byte(`{"type":"ephemeral"}`)}},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{
				{Type: wire.BlockImage, Data: []byte(`{"type":"base64","media_type":"image/png","data":"AAAA"}`)},
				{Type: wire.BlockDocument, Data: []byte(`{"type":"document","title":"r.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}`)},
				{Type: wire.BlockText, Text: "look"},
			}},
			{Role: "assistant", Content: []wire.Block{
				{Type: wire.BlockThinking, Text: "secret", Signature: "sig"},
				{Type: wire.BlockRedactedThinking, Data: []byte(`"xyz"`)},
				{Type: wire.BlockText, Text: "calling"},
				{Type: wire.BlockToolUse, ID: "toolu_1", Name: "f", Data: []byte(`{"a":1}`)},
			}},
			{Role: "user", Content: []wire.Block{
				{Type: wire.BlockToolResult, ID: "toolu_1", Text: "done", Data: []byte(`[{"type":"text","text":"more"}]`), IsError: true},
				{Type: wire.BlockText, Text: "next"},
			}},
		},
		ToolChoice: []byte(`{"type":"any","disable_parallel_tool_use":true}`),
		Params:     wire.Params{Set: wire.HasMaxTokens | wire.HasTopK, MaxTokens: 10, TopK: 5},
	}
	out, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4o","messages":[
		{"role":"system","content":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}]},
		{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,JVBE"}},{"type":"text","text":"look"}]},
		{"role":"assistant","content":"calling","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
		{"role":"tool","tool_call_id":"toolu_1","content":[{"type":"text","text":"done"},{"type":"text","text":"more"}]},
		{"role":"user","content":"next"}],
		"max_completion_tokens":10,"tool_choice":"required"}`
	if !testutil.JSONEqual(out, []byte(want)) {
		t.Errorf("got\n%s", testutil.Indent(out))
	}
}

func TestEncodeRequestRejectsBadRaw(t *testing.T) {
	base := func() *wire.Request {
		return &wire.Request{Model: "m", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "hi"}}}}}
	}
	bad := []func(r *wire.Request){
		func(r *wire.Request) { r.Extra = []byte(`{"a":`) },
		func(r *wire.Request) { r.Extra = []byte(`[1]`) },
		func(r *wire.Request) { r.ToolChoice = []byte(`{`) },
		func(r *wire.Request) { r.Tools = []wire.Tool{{Name: "f", Schema: []byte(`nope`)}} },
		func(r *wire.Request) { r.Messages[0].Content[0].CacheControl = []byte(`}`) },
		func(r *wire.Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, wire.Block{Type: wire.BlockOther, Data: []byte(`{x}`)})
		},
		func(r *wire.Request) { r.Params.Set, r.Params.Temperature = wire.HasTemperature, nan() },
	}
	for i, f := range bad {
		r := base()
		f(r)
		if out, err := EncodeRequest(r); err == nil {
			t.Errorf("case %d: no error, got %s", i, out)
		}
	}
}
