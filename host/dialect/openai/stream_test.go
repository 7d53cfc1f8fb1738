package openai

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

func encodeAll(s *StreamEncoder, evs []wire.Event) []byte {
	var out []byte
	for i := range evs {
		out = s.Encode(out, &evs[i])
	}
	return out
}

func textBlock() wire.Block { return wire.Block{Type: wire.BlockText} }

func TestStreamEncodeText(t *testing.T) {
	evs := []wire.Event{
		{Type: wire.EventMessageStart, ID: "chatcmpl-1", Model: "gpt-4o", Usage: wire.Usage{InputTokens: 10, CacheReadTokens: 2}},
		{Type: wire.EventBlockStart, Index: 0, Block: textBlock()},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "Hel"},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "lo \"w\"\n</script>\u2028"},
		{Type: wire.EventBlockStop, Index: 0},
		{Type: wire.EventPing},
		{Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn, Usage: wire.Usage{OutputTokens: 5}},
		{Type: wire.EventMessageStop},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "after the end"},
	}
	got := string(encodeAll(NewStreamEncoder(true), evs))
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o",`
	want := head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n" +
		head + `"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}` + "\n\n" +
		head + `"choices":[{"index":0,"delta":{"content":"lo \"w\"\n</script>\u2028"},"finish_reason":null}],"usage":null}` + "\n\n" +
		": ping\n\n" +
		head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
		head + `"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":2}}}` + "\n\n" +
		"data: [DONE]\n\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func toolStreamEvents() []wire.Event {
	return []wire.Event{
		{Type: wire.EventMessageStart, ID: "msg_01", Model: "claude-x"},
		{Type: wire.EventBlockStart, Index: 0, Block: textBlock()},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "Let me check."},
		{Type: wire.EventBlockStop, Index: 0},
		{Type: wire.EventBlockStart, Index: 1, Block: wire.Block{Type: wire.BlockToolUse, ID: "toolu_1", Name: "get_weather"}},
		{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaInputJSON, Text: ""},
		{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaInputJSON, Text: `{"city":`},
		{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaInputJSON, Text: `"Paris"}`},
		{Type: wire.EventBlockStop, Index: 1},
		{Type: wire.EventBlockStart, Index: 2, Block: wire.Block{Type: wire.BlockToolUse, ID: "toolu_2", Name: "get_time"}},
		{Type: wire.EventDelta, Index: 2, Delta: wire.DeltaInputJSON, Text: `{}`},
		{Type: wire.EventBlockStop, Index: 2},
		{Type: wire.EventMessageDelta, StopReason: wire.StopToolUse, Usage: wire.Usage{OutputTokens: 30}},
		{Type: wire.EventMessageStop},
	}
}

func TestStreamEncodeToolCalls(t *testing.T) {
	got := string(encodeAll(NewStreamEncoder(false), toolStreamEvents()))
	const head = `data: {"id":"msg_01","object":"chat.completion.chunk","created":1700000000,"model":"claude-x","choices":[{"index":0,"delta":`
	const tail = `,"finish_reason":null}]}` + "\n\n"
	want := head + `{"role":"assistant","content":""}` + tail +
		head + `{"content":"Let me check."}` + tail +
		head + `{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":""}}]}` + tail +
		head + `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}` + tail +
		head + `{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}` + tail +
		head + `{"tool_calls":[{"index":1,"id":"toolu_2","type":"function","function":{"name":"get_time","arguments":""}}]}` + tail +
		head + `{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}` + tail +
		head + `{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestStreamEncodeRepairsAndErrors(t *testing.T) {
	// no message_start, thinking, no message_delta
	evs := []wire.Event{
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockThinking}},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaThinking, Text: "hmm"},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaSignature, Text: "sig"},
		{Type: wire.EventMessageStop},
	}
	s := NewStreamEncoder(false)
	got := string(encodeAll(s, evs))
	chunks := testutil.ParseSSE(t, []byte(got))
	if len(chunks) != 5 || !strings.Contains(chunks[0].Data, `"delta":{"role":"assistant","content":""}`) ||
		!strings.Contains(chunks[1].Data, `"delta":{"reasoning_content":"hmm"}`) ||
		!strings.Contains(chunks[2].Data, `"delta":{"reasoning_details":[{"type":"reasoning.text","text":"hmm","signature":"sig","format":"anthropic-claude-v1","index":0}]}`) ||
		!strings.Contains(chunks[3].Data, `"finish_reason":"stop"`) || chunks[4].Data != "[DONE]" {
		t.Errorf("got:\n%s", got)
	}
	if !s.Done() {
		t.Error("not done")
	}

	s = NewStreamEncoder(true)
	got = string(encodeAll(s, []wire.Event{
		{Type: wire.EventMessageStart, ID: "x", Model: "m"},
		{Type: wire.EventError, Error: &wire.Error{Kind: wire.ErrOverloaded, Message: "Overloaded"}},
		{Type: wire.EventMessageStop},
	}))
	// The role chunk waits for content, so an error right after the start
	// is the whole stream.
	want := `data: {"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}` + "\n\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

var upstreamChunks = []string{
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"reasoning_content":"think"},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70,"prompt_tokens_details":{"cached_tokens":10}}}`,
	`[DONE]`,
}

func decodeAll(t *testing.T, chunks []string) []wire.Event {
	t.Helper()
	d := NewStreamDecoder()
	var evs []wire.Event
	for _, c := range chunks {
		out, err := d.Decode("", []byte(c))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		evs = append(evs, out...)
	}
	evs = append(evs, d.Finish()...)
	return evs
}

func TestStreamDecode(t *testing.T) {
	evs := decodeAll(t, upstreamChunks)
	testutil.Golden(t, "stream_decode.events.txt", []byte(testutil.Events(evs)), *update)
}

func TestStreamDecodeEdgeCases(t *testing.T) {
	// no [DONE]: Finish closes the stream
	d := NewStreamDecoder()
	evs, _ := d.Decode("", []byte(`{"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}`))
	if d.Done() {
		t.Error("done too early")
	}
	evs = append(evs, d.Finish()...)
	want := `{"id":"a","model":"m","t":"message_start","usage":{"InputTokens":0,"OutputTokens":0,"CacheReadTokens":0,"CacheWriteTokens":0}}
{"block":{"type":"text"},"i":0,"t":"block_start"}
{"i":0,"kind":"text","t":"delta","text":"x"}
{"i":0,"t":"block_stop"}
{"stop":"end_turn","stop_seq":"","t":"message_delta","usage":{"InputTokens":0,"OutputTokens":0,"CacheReadTokens":0,"CacheWriteTokens":0}}
{"t":"message_stop"}
`
	if got := testutil.Events(evs); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if d.Finish() != nil {
		t.Error("second Finish emitted events")
	}

	// an error chunk ends the stream
	d = NewStreamDecoder()
	evs, err := d.Decode("", []byte(`{"error":{"message":"The server had an error","type":"server_error"}}`))
	if err != nil || len(evs) != 1 || evs[0].Type != wire.EventError || evs[0].Error.Kind != wire.ErrUpstream || evs[0].Error.Message != "The server had an error" {
		t.Errorf("error chunk: %+v %v", evs, err)
	}
	if !d.Done() || d.Finish() != nil {
		t.Error("error should end the stream")
	}

	// malformed chunk
	d = NewStreamDecoder()
	if _, err := d.Decode("", []byte(`{"choices":[`)); err == nil {
		t.Error("no error for a malformed chunk")
	}
	// comments, blank data, other choices are ignored
	if evs, err := d.Decode("", nil); evs != nil || err != nil {
		t.Error("blank data produced events")
	}
	evs, _ = d.Decode("", []byte(`{"id":"a","choices":[{"index":1,"delta":{"content":"other choice"}}]}`))
	if len(evs) != 1 || evs[0].Type != wire.EventMessageStart {
		t.Errorf("choice 1 should be ignored: %s", testutil.Events(evs))
	}

	// a server that repeats index 0 with fresh ids for parallel calls
	d = NewStreamDecoder()
	evs = nil
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
	} {
		out, err := d.Decode("", []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, out...)
	}
	starts := 0
	for _, e := range evs {
		if e.Type == wire.EventBlockStart {
			starts++
		}
	}
	if starts != 2 {
		t.Errorf("want 2 tool blocks:\n%s", testutil.Events(evs))
	}
}

func TestStreamDecodeEncodeAccumulates(t *testing.T) {
	evs := decodeAll(t, upstreamChunks)
	acc := testutil.AccumulateOpenAI(t, encodeAll(NewStreamEncoder(true), evs))
	if acc.ID != "chatcmpl-x" || acc.Content != "Hi" || acc.Reasoning != "think" || acc.Finish != "tool_calls" {
		t.Errorf("accumulated %+v", acc)
	}
	if len(acc.Tools) != 2 || acc.Tools[0].ID != "call_a" || acc.Tools[0].Name != "f" || acc.Tools[0].Args != `{"a":1}` ||
		acc.Tools[1].ID != "call_b" || acc.Tools[1].Args != "{}" {
		t.Errorf("tools %+v", acc.Tools)
	}
	if acc.Usage["prompt_tokens"] != 50.0 || acc.Usage["completion_tokens"] != 20.0 {
		t.Errorf("usage %+v", acc.Usage)
	}
	acc = testutil.AccumulateOpenAI(t, encodeAll(NewStreamEncoder(false), toolStreamEvents()))
	if len(acc.Tools) != 2 || acc.Tools[0].Args != `{"city":"Paris"}` || acc.Usage != nil {
		t.Errorf("accumulated %+v", acc)
	}
}

// A tool-only answer opens the way OpenAI opens one: role, "content":null and
// the first tool call in one chunk (openai-go's accumulator reports a content
// part otherwise).
func TestStreamToolOnlyOpensWithNullContent(t *testing.T) {
	s := NewStreamEncoder(false)
	got := string(encodeAll(s, []wire.Event{
		{Type: wire.EventMessageStart, ID: "x", Model: "m"},
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockToolUse, ID: "call_1", Name: "f"}},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaInputJSON, Text: `{"a":1}`},
		{Type: wire.EventBlockStop, Index: 0},
		{Type: wire.EventMessageDelta, StopReason: wire.StopToolUse},
		{Type: wire.EventMessageStop},
	}))
	first := got[:strings.Index(got, "\n\n")]
	if !strings.Contains(first, `"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`) {
		t.Fatalf("first chunk:\n%s", first)
	}
	if strings.Count(got, `"role"`) != 1 {
		t.Fatalf("role sent more than once:\n%s", got)
	}
}
