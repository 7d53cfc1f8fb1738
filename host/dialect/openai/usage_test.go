package openai

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
		{`{"id":"x","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":6}}}`,
			wire.Usage{InputTokens: 4, OutputTokens: 4, CacheReadTokens: 6}, true},
		{`{"id":"x","choices":[{"delta":{"content":"hi"}}],"usage":null}`, wire.Usage{}, false},
		{`{"id":"x"}`, wire.Usage{}, false},
		{`[DONE]`, wire.Usage{}, false},
	} {
		if u, ok := Usage([]byte(tc.in)); u != tc.want || ok != tc.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tc.in, u, ok, tc.want, tc.ok)
		}
	}
}
