package anthropic

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

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
// fields, unknown block types and cache_control included.
func TestRequestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/req_*.json")
	n := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasSuffix(name, ".canonical") {
			continue
		}
		n++
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
			req2, err := DecodeRequest(out)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := testutil.Request(req), testutil.Request(req2); string(a) != string(b) {
				t.Errorf("canonical form changed after a round trip:\n%s\n---\n%s", a, b)
			}
		})
	}
	if n == 0 {
		t.Fatal("no fixtures")
	}
}

func TestRequestMapping(t *testing.T) {
	req, err := DecodeRequest(readFixture(t, "req_basic.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.System) != 2 || string(req.System[0].CacheControl) != `{"type": "ephemeral"}` || req.System[1].CacheControl != nil {
		t.Errorf("system %+v", req.System)
	}
	a := req.Messages[1].Content
	if a[0].Type != wire.BlockThinking || a[0].Signature == "" || a[1].Type != wire.BlockRedactedThinking || string(a[1].Data) != `"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"` {
		t.Errorf("assistant blocks %+v", a)
	}
	u := req.Messages[2].Content
	if u[2].Type != wire.BlockDocument || strings.Contains(string(u[2].Data), "cache_control") || u[2].CacheControl == nil {
		t.Errorf("document: cache_control should move out of Data: %+v", u[2])
	}
	if u[3].Type != wire.BlockOther || u[4].Type != wire.BlockOther || u[4].CacheControl == nil {
		t.Errorf("unknown blocks %+v %+v", u[3], u[4])
	}
	p := req.Params
	if p.Set != wire.HasMaxTokens|wire.HasTemperature|wire.HasTopP|wire.HasTopK || p.MaxTokens != 1024 || p.TopK != 40 || len(p.Stop) != 2 {
		t.Errorf("params %+v", p)
	}
}

func TestRequestNormalization(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"single text block becomes a string",
			`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
			`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":"hi"}]}`},
		{"null means absent",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"system":null,"tools":null,"temperature":null,"metadata":null}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":null}`},
		{"custom and server tools keep every member",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","name":"f","input_schema":{"type":"object"},"defer_loading":true,"eager_input_streaming":true},{"type":"web_search_20250305","name":"web_search","max_uses":5},{"type":"mcp_toolset","mcp_server_name":"gh"}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","name":"f","input_schema":{"type":"object"},"defer_loading":true,"eager_input_streaming":true},{"type":"web_search_20250305","name":"web_search","max_uses":5},{"type":"mcp_toolset","mcp_server_name":"gh"}]}`},
		{"mid-conversation system message in place, with its cache_control",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"be brief","cache_control":{"type":"ephemeral"}},{"role":"assistant","content":"ok"}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"be brief","cache_control":{"type":"ephemeral"}},{"role":"assistant","content":"ok"}]}`},
		{"unknown members of blocks and messages keep",
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},"caller":{"type":"direct"}}],"future":1},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r","citations":null}],"future":2},{"type":"text","text":"q","text2":"x","id":"misplaced"}]}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},"caller":{"type":"direct"}}],"future":1},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r","citations":null}],"future":2},{"type":"text","text":"q","text2":"x","id":"misplaced"}]}]}`},
		{"tool_use without input",
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f"}]}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`},
		{"text citations keep",
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"text","text":"a","citations":[{"type":"char_location"}]},{"type":"text","text":"b"}]}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"text","text":"a","citations":[{"type":"char_location"}]},{"type":"text","text":"b"}]}]}`},
		{"thinking without signature is not sent",
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"b"}]}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"b"}]}`},
		{"empty cache_control object block",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"x","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"x","cache_control":{"type":"ephemeral"}}]}]}`},
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
		{"not json", `{`, "malformed JSON"},
		{"not an object", `"x"`, "must be a JSON object"},
		{"missing model", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model: is required"},
		{"missing max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: is required"},
		{"null max_tokens", `{"model":"m","max_tokens":null,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: must be an integer"},
		{"max_tokens string", `{"model":"m","max_tokens":"5","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: must be an integer, got a string"},
		{"missing messages", `{"model":"m","max_tokens":5}`, "messages: is required"},
		{"empty messages", `{"model":"m","max_tokens":5,"messages":[]}`, "messages: is required"},
		{"duplicated messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, `duplicate key "messages"`},
		{"duplicated nested key", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a","content":"b"}]}`, `duplicate key "content"`},
		{"invalid UTF-8", "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "invalid UTF-8"},
		{"tool role", `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, `messages[0].role: must be "user", "assistant" or "system"`},
		{"system message with an image", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"image","source":{}}]}]}`, `messages[1].content[0]: text-only role "system" messages require text blocks`},
		{"missing content", `{"model":"m","max_tokens":5,"messages":[{"role":"user"}]}`, "messages[0].content: is required"},
		{"block without type", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type: is required"},
		{"image without source", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, "messages[0].content[0].source: must be an object"},
		{"text not string", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content[0].text: must be a string"},
		{"bad is_error", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}]}`, "is_error: must be a boolean"},
		{"system number", `{"model":"m","max_tokens":5,"system":1,"messages":[{"role":"user","content":"hi"}]}`, "system: must be a string or an array"},
		{"stop_sequences string", `{"model":"m","max_tokens":5,"stop_sequences":"x","messages":[{"role":"user","content":"hi"}]}`, "stop_sequences: must be an array of strings"},
		{"tool without name", `{"model":"m","max_tokens":5,"tools":[{"input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`, "tools[0].name: is required"},
		{"tool_choice without type", `{"model":"m","max_tokens":5,"tool_choice":{},"messages":[{"role":"user","content":"hi"}]}`, "tool_choice.type: is required"},
		{"top_k float", `{"model":"m","max_tokens":5,"top_k":0.5,"messages":[{"role":"user","content":"hi"}]}`, "top_k: must be an integer"},
		{"huge number", `{"model":"m","max_tokens":5,"temperature":1e999,"messages":[{"role":"user","content":"hi"}]}`, "temperature: number out of range"},
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
		})
	}
}

func TestEncodeRequestDefaults(t *testing.T) {
	req := &wire.Request{Model: "m", Messages: []wire.Message{{Role: "user", Content: []wire.Block{
		{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"https://x/y.png","detail":"low"}`)},
		{Type: wire.BlockToolUse, ID: "c", Name: "f", Data: []byte(`"{not json"`)},
		{Type: wire.BlockRedactedThinking, Data: []byte(`abc`)},
	}}}, Params: wire.Params{Set: wire.HasSeed, Seed: 3}, Extra: []byte(`{"max_tokens":1,"metadata":{"a":1}}`)}
	out, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"tool_use","id":"c","name":"f","input":{}},{"type":"redacted_thinking","data":"abc"}]}],"metadata":{"a":1}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestEncodeRequestRejectsBadRaw(t *testing.T) {
	base := func() *wire.Request {
		return &wire.Request{Model: "m", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "hi"}}}}}
	}
	bad := []func(r *wire.Request){
		func(r *wire.Request) { r.Extra = []byte(`{"a":`) },
		func(r *wire.Request) { r.ToolChoice = []byte(`{`) },
		func(r *wire.Request) { r.Tools = []wire.Tool{{Name: "f", Schema: []byte(`nope`)}} },
		func(r *wire.Request) { r.Tools = []wire.Tool{{Name: "f", CacheControl: []byte(`{`)}} },
		func(r *wire.Request) { r.Messages[0].Content[0].CacheControl = []byte(`}`) },
		func(r *wire.Request) {
			r.Messages[0].Content[0] = wire.Block{Type: wire.BlockOther, Data: []byte(`[1]`)}
		},
		func(r *wire.Request) { r.Messages[0].Content[0] = wire.Block{Type: wire.BlockImage, Data: []byte(`{`)} },
		func(r *wire.Request) {
			r.Messages[0].Content[0] = wire.Block{Type: wire.BlockToolResult, Data: []byte(`[`)}
		},
	}
	for i, f := range bad {
		r := base()
		f(r)
		if out, err := EncodeRequest(r); err == nil {
			t.Errorf("case %d: no error, got %s", i, out)
		}
	}
}
