package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/sdk/wire"
)

const fullRequest = `{
 "model":"gpt-5",
 "instructions":"Be brief.",
 "input":[
  {"role":"developer","content":"Use metric units."},
  {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris?"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"low"}]},
  {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Need the tool."}],"encrypted_content":"sig=="},
  {"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
  {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},
  {"type":"function_call_output","call_id":"call_1","output":"{\"temp_c\":18}"},
  {"role":"system","content":"Answer in French."}
 ],
 "tools":[{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object"},"strict":true}],
 "tool_choice":"required",
 "max_output_tokens":300,
 "temperature":0.5,
 "metadata":{"k":"v"},
 "text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"}}}
}`

func TestDecodeRequest(t *testing.T) {
	req, err := DecodeRequest([]byte(fullRequest))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "gpt-5" || len(req.System) != 2 || req.System[0].Text != "Be brief." ||
		req.System[1].Text != "Use metric units." || req.System[1].Name != RoleDeveloper {
		t.Fatalf("model/system: %+v", req)
	}
	if len(req.Messages) != 4 {
		t.Fatalf("messages: %+v", req.Messages)
	}
	user, asst, tool, sys := req.Messages[0], req.Messages[1], req.Messages[2], req.Messages[3]
	if user.Role != "user" || len(user.Content) != 2 || user.Content[1].Type != wire.BlockImage ||
		string(user.Content[1].Data) != `{"type":"base64","media_type":"image/png","data":"AAAA","detail":"low"}` {
		t.Errorf("user: %+v", user)
	}
	if asst.Role != "assistant" || len(asst.Content) != 3 {
		t.Fatalf("assistant: %+v", asst)
	}
	if b := asst.Content[0]; b.Type != wire.BlockThinking || b.Text != "Need the tool." || b.Signature != "sig==" {
		t.Errorf("reasoning: %+v", b)
	}
	if b := asst.Content[1]; b.Type != wire.BlockText || b.Text != "Checking." || b.Extra != nil {
		t.Errorf("assistant text: %+v", b)
	}
	if b := asst.Content[2]; b.Type != wire.BlockToolUse || b.ID != "call_1" || b.Name != "get_weather" || string(b.Data) != `{"city":"Paris"}` {
		t.Errorf("function_call: %+v", b)
	}
	if tool.Role != "user" || len(tool.Content) != 1 || tool.Content[0].Type != wire.BlockToolResult || tool.Content[0].ID != "call_1" || tool.Content[0].Text != `{"temp_c":18}` {
		t.Errorf("tool result: %+v", tool)
	}
	if sys.Role != "system" || sys.Content[0].Text != "Answer in French." {
		t.Errorf("system in place: %+v", sys)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "get_weather" || string(req.Tools[0].Extra) != `{"strict":true}` {
		t.Errorf("tools: %+v", req.Tools)
	}
	if string(req.ToolChoice) != `{"type":"any"}` || req.Params.MaxTokens != 300 || req.Params.Temperature != 0.5 ||
		req.Params.Set != wire.HasMaxTokens|wire.HasTemperature {
		t.Errorf("tool_choice %s params %+v", req.ToolChoice, req.Params)
	}
	var extra map[string]json.RawMessage
	if err := json.Unmarshal(req.Extra, &extra); err != nil || len(extra) != 2 || extra["metadata"] == nil || extra["text"] == nil {
		t.Errorf("extra: %s", req.Extra)
	}
}

func TestDecodeRequestString(t *testing.T) {
	req, err := DecodeRequest([]byte(`{"model":"m","input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if !req.Stream || len(req.Messages) != 1 || req.Messages[0].Content[0].Text != "hi" {
		t.Errorf("%+v", req)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"input":"hi"}`, "model: is required"},
		{`{"model":"m"}`, "input: is required"},
		{`{"model":"m","input":5}`, "input: must be a string or an array"},
		{`{"model":"m","input":"hi","tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search"}}`, "tool_choice: only"},
		{`{"model":"m","input":[{"type":"item_reference","id":"x"}]}`, "input[0].type: item_reference is not supported"},
		{`{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role"},
		{`{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id: is required"},
		{`{"model":"m","input":"a","input":"b"}`, "input"},
		{`{"model":"m","input":"hi","tool_choice":"sometimes"}`, "tool_choice"},
	} {
		_, err := DecodeRequest([]byte(tc.body))
		if err == nil || !errors.Is(err, dialect.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", tc.body, err, tc.want)
		}
	}
}

// TestEncodeResponse: canonical blocks become output items; signed thinking
// is a reasoning item whose encrypted_content carries the signature, which
// decodes back as the same thinking block.
func TestEncodeResponse(t *testing.T) {
	resp := &wire.Response{ID: "msg_x", Model: "claude", StopReason: wire.StopToolUse,
		Usage: wire.Usage{InputTokens: 10, CacheReadTokens: 90, OutputTokens: 7},
		Content: []wire.Block{
			{Type: wire.BlockThinking, Text: "hmm", Signature: "SIG"},
			{Type: wire.BlockRedactedThinking, Data: []byte(`"opaque"`)},
			{Type: wire.BlockText, Text: "Checking."},
			{Type: wire.BlockToolUse, ID: "toolu_1", Name: "f", Data: []byte(`{"a":1}`)},
		}}
	b, err := EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type, CallID, Name, Arguments, EncryptedContent string
			Summary                                         []struct{ Text string }
			Content                                         []struct{ Type, Text string }
		} `json:"output"`
		Usage struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			TotalTokens        int64 `json:"total_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if !strings.HasPrefix(got.ID, "resp_") || got.Object != "response" || got.Status != "completed" || len(got.Output) != 4 {
		t.Fatalf("%s", b)
	}
	if u := got.Usage; u.InputTokens != 100 || u.InputTokensDetails.CachedTokens != 90 || u.OutputTokens != 7 || u.TotalTokens != 107 {
		t.Errorf("usage %+v", u)
	}
	back, err := DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Content) != 4 || back.Content[0].Signature != "SIG" || back.Content[0].Text != "hmm" ||
		back.Content[1].Type != wire.BlockRedactedThinking || string(back.Content[1].Data) != `"opaque"` ||
		back.Content[3].ID != "toolu_1" || string(back.Content[3].Data) != `{"a":1}` || back.StopReason != wire.StopToolUse ||
		back.Usage != resp.Usage {
		t.Errorf("decoded back: %+v", back)
	}
	if !json.Valid(b) || bytes.Count(b, []byte(`"object"`)) != 1 {
		t.Errorf("not one clean object: %s", b)
	}
}

// parseSSE splits an SSE text into (event, data) pairs.
func parseSSE(t *testing.T, s []byte) [][2]string {
	t.Helper()
	var out [][2]string
	for _, ev := range strings.Split(strings.TrimSpace(string(s)), "\n\n") {
		var name, data string
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
		if data == "" {
			continue
		}
		if !json.Valid([]byte(data)) {
			t.Fatalf("event %s: invalid JSON %s", name, data)
		}
		out = append(out, [2]string{name, data})
	}
	return out
}

func streamEvents() []wire.Event {
	return []wire.Event{
		{Type: wire.EventMessageStart, ID: "msg_1", Model: "m", Usage: wire.Usage{InputTokens: 5, CacheReadTokens: 3}},
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockThinking}},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaThinking, Text: "think"},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaSignature, Text: "SIG"},
		{Type: wire.EventBlockStop, Index: 0},
		{Type: wire.EventBlockStart, Index: 1, Block: wire.Block{Type: wire.BlockText}},
		{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaText, Text: "Hel"},
		{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaText, Text: "lo"},
		{Type: wire.EventBlockStop, Index: 1},
		{Type: wire.EventBlockStart, Index: 2, Block: wire.Block{Type: wire.BlockToolUse, ID: "call_9", Name: "f"}},
		{Type: wire.EventDelta, Index: 2, Delta: wire.DeltaInputJSON, Text: `{"a":`},
		{Type: wire.EventDelta, Index: 2, Delta: wire.DeltaInputJSON, Text: `1}`},
		{Type: wire.EventBlockStop, Index: 2},
		{Type: wire.EventMessageDelta, StopReason: wire.StopToolUse, Usage: wire.Usage{OutputTokens: 4}},
		{Type: wire.EventMessageStop},
	}
}

// TestStreamEncoder: the event grammar, sequence numbers, and a
// response.completed holding the whole output and usage; decoded back, the
// stream gives the same blocks.
func TestStreamEncoder(t *testing.T) {
	enc := NewStreamEncoder()
	var b []byte
	evs := streamEvents()
	for i := range evs {
		b = enc.Encode(b, &evs[i])
	}
	if !enc.Done() {
		t.Fatal("not done after message_stop")
	}
	got := parseSSE(t, b)
	var types []string
	for i, ev := range got {
		var head struct {
			Type string `json:"type"`
			Seq  int    `json:"sequence_number"`
		}
		_ = json.Unmarshal([]byte(ev[1]), &head)
		if head.Type != ev[0] || head.Seq != i {
			t.Errorf("event %d: name %q type %q seq %d", i, ev[0], head.Type, head.Seq)
		}
		types = append(types, head.Type)
	}
	want := "response.created response.in_progress " +
		"response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta " +
		"response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta " +
		"response.function_call_arguments.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(types, " "), want)
	}
	last := got[len(got)-1][1]
	for _, s := range []string{`"encrypted_content":"SIG"`, `"text":"Hello"`, `"arguments":"{\"a\":1}"`, `"call_id":"call_9"`,
		`"cached_tokens":3`, `"input_tokens":8`, `"output_tokens":4`, `"status":"completed"`} {
		if !strings.Contains(last, s) {
			t.Errorf("response.completed lacks %s: %s", s, last)
		}
	}

	d := NewStreamDecoder()
	var back []wire.Event
	for _, ev := range got {
		out, err := d.Decode(ev[0], []byte(ev[1]))
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, out...)
	}
	if !d.Done() {
		t.Error("decoder not done")
	}
	var text, args, sig string
	for _, ev := range back {
		switch ev.Delta {
		case wire.DeltaText:
			text += ev.Text
		case wire.DeltaInputJSON:
			args += ev.Text
		case wire.DeltaSignature:
			sig += ev.Text
		}
	}
	if text != "Hello" || args != `{"a":1}` || sig != "SIG" {
		t.Errorf("decoded back text %q args %q sig %q", text, args, sig)
	}
	if md := back[len(back)-2]; md.StopReason != wire.StopToolUse || md.Usage.OutputTokens != 4 || md.Usage.CacheReadTokens != 3 || md.Usage.InputTokens != 5 {
		t.Errorf("message delta %+v", md)
	}
}

// TestStreamEncoderError: an error ends the stream with "error" and
// response.failed.
func TestStreamEncoderError(t *testing.T) {
	enc := NewStreamEncoder()
	var b []byte
	evs := streamEvents()[:7]
	evs = append(evs, wire.Event{Type: wire.EventError, Error: &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "upstream x stream broke off"}})
	for i := range evs {
		b = enc.Encode(b, &evs[i])
	}
	got := parseSSE(t, b)
	n := len(got)
	if n < 2 || got[n-2][0] != "error" || got[n-1][0] != "response.failed" || !strings.Contains(got[n-1][1], `"status":"failed"`) ||
		!strings.Contains(got[n-2][1], "broke off") {
		t.Fatalf("%s", b)
	}
	if more := enc.Encode(nil, &wire.Event{Type: wire.EventMessageStop}); len(more) != 0 {
		t.Errorf("wrote after the end: %s", more)
	}
}

// TestEncodeRequestRoundTrip: the upstream encoder writes what the decoder
// reads back as the same canonical request.
func TestEncodeRequestRoundTrip(t *testing.T) {
	req, err := DecodeRequest([]byte(fullRequest))
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	req2, err := DecodeRequest(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a, _ := json.Marshal(req)
	b, _ := json.Marshal(req2)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip changed the request:\n%s\n%s\nencoded %s", a, b, out)
	}
}

// TestHostedTools: hosted tools (Codex sends web_search and a namespace of
// function tools) are kept whole and written back for a Responses upstream.
func TestHostedTools(t *testing.T) {
	body := `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"web_search","external_web_access":false},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Tools) != 3 || HostedTool(&req.Tools[0]) || !HostedTool(&req.Tools[1]) || !HostedTool(&req.Tools[2]) ||
		req.Tools[1].Name != "web_search" || req.Tools[2].Name != "ns" {
		t.Fatalf("tools %+v", req.Tools)
	}
	out, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`{"type":"web_search","external_web_access":false}`)) || !bytes.Contains(out, []byte(`{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]}`)) {
		t.Errorf("hosted tools not written back: %s", out)
	}
}

// An encoder joining a relayed stream that broke writes the error event
// alone: no response.created or response.failed naming a response of its
// own, which the SDKs would refuse as a changed identity.
func TestJoinedEncoderWritesErrorOnly(t *testing.T) {
	e := NewStreamEncoder()
	e.Joined()
	out := string(e.Encode(nil, &wire.Event{Type: wire.EventError, Error: &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "upstream x stream broke off"}}))
	if !strings.HasPrefix(out, "event: error\n") || strings.Count(out, "event: ") != 1 || !strings.Contains(out, "broke off") || !e.Done() {
		t.Fatalf("joined error: %q", out)
	}
}
