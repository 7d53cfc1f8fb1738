package pricing

import (
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// TestResponsesUsage: a Responses API answer's usage (input_tokens counts
// the cached ones, input_tokens_details says how many), in a body and in
// the response.completed event of a stream — which a relayed Responses
// stream is billed by (read as $0 before).
func TestResponsesUsage(t *testing.T) {
	want := wire.Usage{InputTokens: 20, CacheReadTokens: 80, OutputTokens: 7}
	usage := `{"input_tokens":100,"input_tokens_details":{"cached_tokens":80},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":107}`
	if u, ok := BodyUsage([]byte(`{"id":"resp_1","object":"response","output":[],"usage":` + usage + `}`)); !ok || u != want {
		t.Errorf("body usage %+v %v, want %+v", u, ok, want)
	}
	var s StreamUsage
	s.Write([]byte("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}\n\n"))
	s.Write([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n"))
	s.Write([]byte("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":" + usage + "}}\n\n"))
	if u, ok := s.Usage(); !ok || u != want {
		t.Errorf("stream usage %+v %v, want %+v", u, ok, want)
	}
}
