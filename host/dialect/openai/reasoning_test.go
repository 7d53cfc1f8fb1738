package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

func TestDecodeResponseLeadingThink(t *testing.T) {
	cases := []struct {
		content, thinking, text string
	}{
		{"<think>\nstep 1\n</think>\n\nThe answer is 4.", "\nstep 1\n", "The answer is 4."},
		{"  \n<think>x</think>y", "x", "y"},
		{"<think>cut off", "cut off", ""},
		{"Answer: use <think>tags</think> like this", "", "Answer: use <think>tags</think> like this"},
		{"<think></think>only text", "", "only text"},
	}
	for _, c := range cases {
		body, _ := json.Marshal(map[string]any{"id": "x", "model": "r1", "choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": c.content}}}})
		resp, err := DecodeResponse(body)
		if err != nil {
			t.Fatal(err)
		}
		var thinking, text string
		for _, b := range resp.Content {
			switch b.Type {
			case wire.BlockThinking:
				thinking += b.Text
				if b.Signature != "" {
					t.Errorf("%q: thinking has a signature", c.content)
				}
			case wire.BlockText:
				text += b.Text
			}
		}
		if thinking != c.thinking || text != c.text {
			t.Errorf("%q: thinking %q text %q, want %q %q", c.content, thinking, text, c.thinking, c.text)
		}
		if c.thinking != "" && resp.Content[0].Type != wire.BlockThinking {
			t.Errorf("%q: thinking is not first", c.content)
		}
	}
}

func contentChunk(s string) string {
	b, _ := json.Marshal(map[string]any{"id": "c", "model": "r1", "choices": []any{map[string]any{
		"index": 0, "delta": map[string]any{"content": s}, "finish_reason": nil}}})
	return string(b)
}

// collect sums a decoded stream's deltas per kind and reports the order the
// block kinds were opened in.
func collect(evs []wire.Event) (thinking, text string, order []wire.BlockType) {
	for _, ev := range evs {
		switch {
		case ev.Type == wire.EventBlockStart:
			order = append(order, ev.Block.Type)
		case ev.Type == wire.EventDelta && ev.Delta == wire.DeltaThinking:
			thinking += ev.Text
		case ev.Type == wire.EventDelta && ev.Delta == wire.DeltaText:
			text += ev.Text
		}
	}
	return
}

func TestStreamDecodeLeadingThinkSplit(t *testing.T) {
	const full = "\n<think>Let me see: a</b> < c.</think>\n\nIt is <think>not this</think>."
	// every way of cutting the content in two, and one chunk per byte
	var splits [][]string
	for i := 0; i <= len(full); i++ {
		splits = append(splits, []string{full[:i], full[i:]})
	}
	var bytes []string
	for i := range len(full) {
		bytes = append(bytes, full[i:i+1])
	}
	splits = append(splits, bytes)
	for _, parts := range splits {
		var chunks []string
		for _, p := range parts {
			chunks = append(chunks, contentChunk(p))
		}
		chunks = append(chunks, `{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
		evs := decodeAll(t, chunks)
		thinking, text, order := collect(evs)
		if thinking != "Let me see: a</b> < c." || text != "It is <think>not this</think>." {
			t.Fatalf("%q: thinking %q text %q", parts, thinking, text)
		}
		if len(order) != 2 || order[0] != wire.BlockThinking || order[1] != wire.BlockText {
			t.Fatalf("%q: blocks %v", parts, order)
		}
	}
}

func TestStreamDecodeThinkEdgeCases(t *testing.T) {
	end := []string{`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, "[DONE]"}
	// no leading think: the text arrives unchanged, "<th" held only briefly
	evs := decodeAll(t, append([]string{contentChunk("<th"), contentChunk("e answer")}, end...))
	if th, tx, _ := collect(evs); th != "" || tx != "<the answer" {
		t.Errorf("thinking %q text %q", th, tx)
	}
	// cut inside the think block, with a partial close tag held back
	evs = decodeAll(t, append([]string{contentChunk("<think>abc</thi")}, end...))
	if th, tx, _ := collect(evs); th != "abc</thi" || tx != "" {
		t.Errorf("thinking %q text %q", th, tx)
	}
	// the stream ends without [DONE]: Finish flushes what was held
	d := NewStreamDecoder()
	out, _ := d.Decode("", []byte(contentChunk("<thin")))
	out = append(out, d.Finish()...)
	if th, tx, _ := collect(out); th != "" || tx != "<thin" {
		t.Errorf("thinking %q text %q", th, tx)
	}
	// plain text is not delayed
	d = NewStreamDecoder()
	out, _ = d.Decode("", []byte(contentChunk("Hello")))
	if _, tx, _ := collect(out); tx != "Hello" {
		t.Errorf("text %q", tx)
	}
}

func TestRequestReasoningDetailsToAnthropic(t *testing.T) {
	body := `{"model":"claude-x","messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":null,"reasoning_content":"I think","reasoning_details":[
			{"type":"reasoning.text","text":"I think","signature":"c2lnbmF0dXJl==","format":"anthropic-claude-v1","index":0},
			{"type":"reasoning.encrypted","data":"EmwKAhgB","format":"anthropic-claude-v1","index":1}],
		 "tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"toolu_1","content":"ok"}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c := req.Messages[1].Content
	if len(c) != 3 || c[0].Type != wire.BlockThinking || c[0].Text != "I think" || c[0].Signature != "c2lnbmF0dXJl==" ||
		c[1].Type != wire.BlockRedactedThinking || string(c[1].Data) != `"EmwKAhgB"` || c[2].Type != wire.BlockToolUse {
		t.Fatalf("blocks %+v", c)
	}
	out, err := anthropic.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `{"type":"thinking","thinking":"I think","signature":"c2lnbmF0dXJl=="},{"type":"redacted_thinking","data":"EmwKAhgB"}`) {
		t.Errorf("anthropic request %s", out)
	}
	// a malformed entry is the caller's error
	if _, err := DecodeRequest([]byte(`{"model":"m","messages":[{"role":"assistant","content":"a","reasoning_details":[{"type":"reasoning.text","signature":5}]}]}`)); err == nil {
		t.Error("want an error for a non-string signature")
	}
}

func TestResponseReasoningDetailsRoundTrip(t *testing.T) {
	resp := &wire.Response{ID: "msg_1", Model: "claude", StopReason: wire.StopEndTurn, Content: []wire.Block{
		{Type: wire.BlockThinking, Text: "hmm", Signature: "SIG"},
		{Type: wire.BlockRedactedThinking, Data: []byte(`"RED"`)},
		{Type: wire.BlockText, Text: "done"},
	}}
	out, err := EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"reasoning_content":"hmm","reasoning_details":[{"type":"reasoning.text","text":"hmm","signature":"SIG","format":"anthropic-claude-v1","index":0},{"type":"reasoning.encrypted","data":"RED","format":"anthropic-claude-v1","index":1}]`) {
		t.Fatalf("got %s", out)
	}
	back, err := DecodeResponse(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Content) != 3 || back.Content[0].Signature != "SIG" || string(back.Content[1].Data) != `"RED"` || back.Content[2].Text != "done" {
		t.Errorf("decoded %+v", back.Content)
	}
	// unsigned reasoning keeps the old shape
	out, _ = EncodeResponse(&wire.Response{Content: []wire.Block{{Type: wire.BlockThinking, Text: "r"}, {Type: wire.BlockText, Text: "t"}}})
	if strings.Contains(string(out), "reasoning_details") {
		t.Errorf("unsigned reasoning got details: %s", out)
	}
}

func TestStreamEncodeReasoningDetails(t *testing.T) {
	evs := []wire.Event{
		{Type: wire.EventMessageStart, ID: "msg_1", Model: "claude"},
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockThinking}},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaThinking, Text: "a "},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaThinking, Text: "b"},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaSignature, Text: "SIG"},
		{Type: wire.EventBlockStop, Index: 0},
		{Type: wire.EventBlockStart, Index: 1, Block: wire.Block{Type: wire.BlockRedactedThinking, Data: []byte(`"RED"`)}},
		{Type: wire.EventBlockStop, Index: 1},
		{Type: wire.EventBlockStart, Index: 2, Block: textBlock()},
		{Type: wire.EventDelta, Index: 2, Delta: wire.DeltaText, Text: "ok"},
		{Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn},
		{Type: wire.EventMessageStop},
	}
	got := encodeAll(NewStreamEncoder(false), evs)
	var details []string
	var reasoning string
	for _, c := range testutil.ParseSSE(t, got) {
		if c.Data == "[DONE]" {
			continue
		}
		var m struct {
			Choices []struct {
				Delta struct {
					ReasoningContent string            `json:"reasoning_content"`
					ReasoningDetails []json.RawMessage `json:"reasoning_details"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(c.Data), &m); err != nil {
			t.Fatal(err)
		}
		for _, ch := range m.Choices {
			reasoning += ch.Delta.ReasoningContent
			for _, d := range ch.Delta.ReasoningDetails {
				details = append(details, string(d))
			}
		}
	}
	want := []string{
		`{"type":"reasoning.text","text":"a b","signature":"SIG","format":"anthropic-claude-v1","index":0}`,
		`{"type":"reasoning.encrypted","data":"RED","format":"anthropic-claude-v1","index":1}`,
	}
	if reasoning != "a b" || strings.Join(details, "\n") != strings.Join(want, "\n") {
		t.Errorf("reasoning %q details:\n%s", reasoning, strings.Join(details, "\n"))
	}
}
