package gateway

import "testing"

// embeddingUsage finds usage.prompt_tokens wherever the answer puts it,
// and only in the top-level usage member.
func TestEmbeddingUsage(t *testing.T) {
	for _, c := range []struct {
		body string
		want int64 // -1: none
	}{
		{`{"object":"list","data":[{"embedding":[0.1,0.2]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`, 7},
		{"{\n  \"data\": [],\n  \"usage\" :\n {\"prompt_tokens\": 12}\n}\n", 12},
		{`{"usage":{"prompt_tokens":3},"data":[{"embedding":"AAAA"}],"model":"m"}`, 3},
		{`{"usage":{"prompt_tokens":3},"model":"x\"usage\":{\"prompt_tokens\":9}"}`, 3},
		{`{"data":[{"meta":{"usage":{"prompt_tokens":5}}}]}`, -1},
		{`{"data":[],"usage":{"total_tokens":4}}`, -1},
		{`{"data":[],"usage":{"prompt_tokens":-2}}`, 0},
		{`not json "usage":`, -1},
		{``, -1},
	} {
		u := embeddingUsage([]byte(c.body))
		switch {
		case c.want < 0 && u != nil:
			t.Errorf("%s: usage %+v, want none", c.body, u)
		case c.want >= 0 && (u == nil || u.InputTokens != c.want):
			t.Errorf("%s: usage %+v, want %d", c.body, u, c.want)
		}
	}
}

func FuzzEmbeddingUsage(f *testing.F) {
	f.Add([]byte(`{"data":[],"usage":{"prompt_tokens":7}}`))
	f.Add([]byte(`"usage"`))
	f.Fuzz(func(t *testing.T, b []byte) { embeddingUsage(b) })
}
