package anthropic

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

func TestResponseRoundTrip(t *testing.T) {
	for _, name := range []string{"resp_text", "resp_tools"} {
		t.Run(name, func(t *testing.T) {
			in := readFixture(t, name+".json")
			resp, err := DecodeResponse(in)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, name+".canonical.json", testutil.Response(resp), *update)
			out, err := EncodeResponse(resp)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, name+".encoded.json", append([]byte(testutil.Indent(out)), '\n'), *update)
			resp2, err := DecodeResponse(out)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := testutil.Response(resp), testutil.Response(resp2); string(a) != string(b) {
				t.Errorf("decode(encode(x)) differs:\n%s\n---\n%s", a, b)
			}
		})
	}
}

func TestEncodeResponseShapes(t *testing.T) {
	out, err := EncodeResponse(&wire.Response{ID: "chatcmpl-1", Model: "gpt-4o", StopReason: wire.StopContentFilter,
		Content: []wire.Block{{Type: wire.BlockThinking, Text: "r"}, {Type: wire.BlockText, Text: "t"}},
		Usage:   wire.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"chatcmpl-1","type":"message","role":"assistant","model":"gpt-4o","content":[{"type":"thinking","thinking":"r","signature":""},{"type":"text","text":"t"}],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":1,"cache_creation_input_tokens":4,"cache_read_input_tokens":3,"output_tokens":2}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	out, _ = EncodeResponse(&wire.Response{})
	if !strings.HasPrefix(string(out), `{"id":"msg_`) || !strings.Contains(string(out), `"stop_reason":"end_turn"`) {
		t.Errorf("got %s", out)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	for _, in := range []string{`[]`, `{"content":[{"type":"text"}]}`, `{"usage":{"input_tokens":"1"}}`, `{"content":5}`} {
		if _, err := DecodeResponse([]byte(in)); !errors.Is(err, dialect.ErrInvalidResponse) {
			t.Errorf("%s: error %v", in, err)
		}
	}
}

func TestEncodeError(t *testing.T) {
	cases := []struct {
		e      wire.Error
		status int
		body   string
	}{
		{wire.Error{Kind: wire.ErrInvalidRequest, Message: "bad"}, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`},
		{wire.Error{Kind: wire.ErrInvalidRequest, Status: 413, Message: "big"}, 413, `{"type":"error","error":{"type":"request_too_large","message":"big"}}`},
		{wire.Error{Kind: wire.ErrAuthentication, Message: "x"}, 401, `{"type":"error","error":{"type":"authentication_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrPermission, Message: "x"}, 403, `{"type":"error","error":{"type":"permission_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrPermission, Status: 402, Message: "x"}, 402, `{"type":"error","error":{"type":"billing_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrNotFound, Message: "x"}, 404, `{"type":"error","error":{"type":"not_found_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrRateLimit, Message: "x"}, 429, `{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrOverloaded}, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{wire.Error{Kind: wire.ErrTimeout, Message: "x"}, 504, `{"type":"error","error":{"type":"timeout_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrUpstream, Message: "x"}, 502, `{"type":"error","error":{"type":"api_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrInternal}, 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
		{wire.Error{Status: 404, Message: "x"}, 404, `{"type":"error","error":{"type":"not_found_error","message":"x"}}`},
		{wire.Error{Kind: wire.ErrRateLimit, Status: 503, Message: "x"}, 503, `{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`},
	}
	for _, c := range cases {
		status, body := EncodeError(&c.e)
		if status != c.status || string(body) != c.body {
			t.Errorf("EncodeError(%+v) = %d %s\nwant %d %s", c.e, status, body, c.status, c.body)
		}
	}
	if status, _ := EncodeError(nil); status != 500 {
		t.Errorf("nil error: %d", status)
	}
}

func TestDecodeErrorShapes(t *testing.T) {
	e := DecodeError(529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`))
	if e.Kind != wire.ErrOverloaded || e.Status != 529 || e.Message != "Overloaded" || !e.Retryable {
		t.Errorf("%+v", e)
	}
	e = DecodeError(413, []byte(`{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`))
	if e.Kind != wire.ErrInvalidRequest || e.Retryable {
		t.Errorf("%+v", e)
	}
	e = DecodeError(400, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`))
	if e.Kind != wire.ErrInvalidRequest || e.Status != 400 {
		t.Errorf("%+v", e)
	}
}

func sseEvents(t *testing.T, b []byte) []testutil.SSE { return testutil.ParseSSE(t, b) }

func decodeStream(t *testing.T, stream []byte) []wire.Event {
	t.Helper()
	d := NewStreamDecoder()
	var evs []wire.Event
	for _, e := range sseEvents(t, stream) {
		out, err := d.Decode(e.Event, []byte(e.Data))
		if err != nil {
			t.Fatalf("%s: %v", e.Data, err)
		}
		evs = append(evs, out...)
	}
	if !d.Done() {
		t.Error("decoder not done after message_stop")
	}
	return append(evs, d.Finish()...)
}

func encodeAll(s *StreamEncoder, evs []wire.Event) []byte {
	var out []byte
	for i := range evs {
		out = s.Encode(out, &evs[i])
	}
	return out
}

func TestStreamDecode(t *testing.T) {
	evs := decodeStream(t, readFixture(t, "stream.sse"))
	testutil.Golden(t, "stream.events.txt", []byte(testutil.Events(evs)), *update)
}

// Decoding an Anthropic stream and encoding it again must give the same
// message to an SDK accumulator.
func TestStreamRoundTrip(t *testing.T) {
	in := readFixture(t, "stream.sse")
	want := testutil.AccumulateAnthropic(t, in)
	out := encodeAll(NewStreamEncoder(), decodeStream(t, in))
	got := testutil.AccumulateAnthropic(t, out)
	delete(want.Usage, "service_tier")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("accumulated messages differ:\n got %+v\nwant %+v\n%s", got, want, out)
	}
	if len(got.Content) != 4 || got.Content[2].Input != `{"location": "San Francisco, CA"}` || got.Content[1].Text != `Okay, let's check the weather "now".` {
		t.Errorf("content %+v", got.Content)
	}
}

func TestStreamEncodeText(t *testing.T) {
	evs := []wire.Event{
		{Type: wire.EventMessageStart, ID: "msg_1", Model: "claude-x", Usage: wire.Usage{InputTokens: 10, CacheReadTokens: 5, OutputTokens: 1}},
		{Type: wire.EventPing},
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockText}},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "Hi \"you\"\n"},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: ""},
		{Type: wire.EventBlockStop, Index: 0},
		{Type: wire.EventMessageDelta, StopReason: wire.StopSequence, StopSeq: "###", Usage: wire.Usage{OutputTokens: 7}},
		{Type: wire.EventMessageStop},
		{Type: wire.EventPing},
	}
	got := string(encodeAll(NewStreamEncoder(), evs))
	want := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \\\"you\\\"\\n\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"###\"},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestStreamEncodeToolUse(t *testing.T) {
	// indexes as an OpenAI-sourced stream may number them, with a gap and an
	// unclosed block; usage arriving at the end
	evs := []wire.Event{
		{Type: wire.EventMessageStart, ID: "chatcmpl-1", Model: "gpt-4o"},
		{Type: wire.EventBlockStart, Index: 3, Block: wire.Block{Type: wire.BlockToolUse, ID: "call_1", Name: "get_weather"}},
		{Type: wire.EventDelta, Index: 3, Delta: wire.DeltaInputJSON, Text: `{"city":`},
		{Type: wire.EventDelta, Index: 3, Delta: wire.DeltaInputJSON, Text: `"Paris"}`},
		{Type: wire.EventDelta, Index: 9, Delta: wire.DeltaInputJSON, Text: `"lost"`},
		{Type: wire.EventMessageDelta, StopReason: wire.StopToolUse, Usage: wire.Usage{InputTokens: 40, CacheReadTokens: 10, OutputTokens: 20}},
		{Type: wire.EventMessageStop},
	}
	got := string(encodeAll(NewStreamEncoder(), evs))
	want := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"chatcmpl-1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"gpt-4o\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":0}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20,\"input_tokens\":40,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":10}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	testutil.AccumulateAnthropic(t, []byte(got))
}

func TestStreamEncodeRepairsAndErrors(t *testing.T) {
	// no message_start, no message_delta, a block left open
	evs := []wire.Event{
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockThinking}},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaThinking, Text: "a"},
		{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaSignature, Text: "sig"},
		{Type: wire.EventBlockStart, Index: 1, Block: wire.Block{Type: wire.BlockOther, Data: []byte("{\n \"type\": \"server_tool_use\",\n \"id\": \"s\", \"name\": \"web_search\", \"input\": {}\n}")}},
		{Type: wire.EventMessageStop},
	}
	s := NewStreamEncoder()
	got := encodeAll(s, evs)
	m := testutil.AccumulateAnthropic(t, got)
	if len(m.Content) != 2 || m.Content[0].Thinking != "a" || m.Content[0].Signature != "sig" || m.Content[1].Type != "server_tool_use" || m.StopReason != "end_turn" {
		t.Errorf("accumulated %+v\n%s", m, got)
	}
	if !s.Done() {
		t.Error("not done")
	}

	s = NewStreamEncoder()
	out := encodeAll(s, []wire.Event{
		{Type: wire.EventMessageStart, ID: "x", Model: "m"},
		{Type: wire.EventError, Error: &wire.Error{Kind: wire.ErrOverloaded, Message: "Overloaded"}},
		{Type: wire.EventMessageStop},
	})
	if !strings.HasSuffix(string(out), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n") {
		t.Errorf("got %s", out)
	}
}

func TestStreamDecodeEdgeCases(t *testing.T) {
	d := NewStreamDecoder()
	evs, err := d.Decode("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	if err != nil || len(evs) != 1 || evs[0].Error == nil || evs[0].Error.Kind != wire.ErrOverloaded || evs[0].Error.Status != 529 || !evs[0].Error.Retryable {
		t.Errorf("%+v %v", evs, err)
	}
	if !d.Done() || d.Finish() != nil {
		t.Error("an error ends the stream")
	}

	// cut short: Finish closes the open block
	d = NewStreamDecoder()
	for _, data := range []string{
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial"}}`,
	} {
		if _, err := d.Decode("", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if d.Done() {
		t.Error("done too early")
	}
	got := testutil.Events(d.Finish())
	want := `{"i":0,"t":"block_stop"}
{"stop":"end_turn","stop_seq":"","t":"message_delta","usage":{"InputTokens":0,"OutputTokens":0,"CacheReadTokens":0,"CacheWriteTokens":0}}
{"t":"message_stop"}
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	d = NewStreamDecoder()
	if _, err := d.Decode("message_start", []byte(`{"type":"message_start",`)); !errors.Is(err, dialect.ErrInvalidResponse) {
		t.Errorf("malformed event: %v", err)
	}
	if evs, err := d.Decode("future_event", []byte(`{"type":"future_event"}`)); evs != nil || err != nil {
		t.Errorf("unknown events should be skipped: %v %v", evs, err)
	}
}
