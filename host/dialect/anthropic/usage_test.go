package anthropic

import (
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

func TestUsageFromBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want wire.Usage
		ok   bool
	}{
		{`{"id":"m","usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":7,"cache_creation_input_tokens":2}}`,
			wire.Usage{InputTokens: 3, OutputTokens: 9, CacheReadTokens: 7, CacheWriteTokens: 2}, true},
		{`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1}}}`,
			wire.Usage{InputTokens: 12, OutputTokens: 1}, true},
		{`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`,
			wire.Usage{OutputTokens: 15}, true},
		{`{"type":"content_block_delta","delta":{"type":"text_delta","text":"usage"}}`, wire.Usage{}, false},
	} {
		if u, ok := Usage([]byte(tc.in)); u != tc.want || ok != tc.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tc.in, u, ok, tc.want, tc.ok)
		}
	}
}
