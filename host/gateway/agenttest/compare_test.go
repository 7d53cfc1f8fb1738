package agenttest

import (
	"net/http"
	"strings"
	"testing"
)

// The comparator must pass the documented layer edits and nothing else: a
// lost unknown member anywhere is a diff.
func TestCompareForwarded(t *testing.T) {
	const client = `{"model":"m","max_tokens":9,"stream":true,
		"system":[{"type":"text","text":"sys"}],
		"tools":[{"name":"b","input_schema":{},"defer_loading":true},{"name":"a","input_schema":{}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"mail x@y.example now"}]}]}`
	cases := []struct {
		name      string
		up        string
		h         http.Header
		anthropic bool
		want      string // a substring of the diffs; "" for none
	}{
		{"identical", client, nil, true, ""},
		{"sorted tools and a breakpoint", `{"model":"m","max_tokens":9,"stream":true,
			"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
			"tools":[{"name":"a","input_schema":{}},{"name":"b","input_schema":{},"defer_loading":true}],
			"messages":[{"role":"user","content":[{"type":"text","text":"mail x@y.example now"}]}]}`,
			http.Header{"X-Bardo-Cache-Breakpoints": {"1"}}, true, ""},
		{"an unannounced breakpoint", `{"model":"m","max_tokens":9,"stream":true,
			"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
			"tools":[{"name":"b","input_schema":{},"defer_loading":true},{"name":"a","input_schema":{}}],
			"messages":[{"role":"user","content":[{"type":"text","text":"mail x@y.example now"}]}]}`,
			nil, true, "cache_control: 1 added"},
		{"a lost tool field", strings.Replace(client, `,"defer_loading":true`, "", 1), nil, true, "tools[b].defer_loading: lost"},
		{"a pruned tool, announced", strings.Replace(client, `,{"name":"a","input_schema":{}}`, "", 1),
			http.Header{"X-Bardo-Tools": {"1/2"}}, true, ""},
		{"a pruned tool, unannounced", strings.Replace(client, `,{"name":"a","input_schema":{}}`, "", 1), nil, true, "removed without X-Bardo-Tools"},
		{"masked", strings.Replace(client, "x@y.example", "[EMAIL_1]", 1), http.Header{"X-Bardo-Pii": {"1 masked"}}, true, ""},
		{"masked, unannounced", strings.Replace(client, "x@y.example", "[EMAIL_1]", 1), nil, true, "differ at byte 5"},
		{"usage asked of an OpenAI upstream", strings.Replace(client, `"stream":true`, `"stream":true,"stream_options":{"include_usage":true}`, 1), nil, false, ""},
		{"usage asked of an Anthropic upstream", strings.Replace(client, `"stream":true`, `"stream":true,"stream_options":{"include_usage":true}`, 1), nil, true, ".stream_options: added"},
		{"a lone text block as a string", strings.Replace(client, `[{"type":"text","text":"mail x@y.example now"}]`, `"mail x@y.example now"`, 1), nil, true, "note: .messages[0].content"},
		{"a lost top-level member", strings.Replace(client, `"max_tokens":9,`, "", 1), nil, true, ".max_tokens: lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.h
			if h == nil {
				h = http.Header{}
			}
			diffs := strings.Join(compareForwarded([]byte(client), []byte(c.up), editsOf(h), c.anthropic), "\n")
			switch {
			case c.want == "" && diffs != "":
				t.Errorf("unexpected diffs:\n%s", diffs)
			case c.want != "" && !strings.Contains(diffs, c.want):
				t.Errorf("diffs lack %q:\n%s", c.want, diffs)
			}
		})
	}
}

// A stream's error is found at the start of a line, never inside content.
func TestGatewayError(t *testing.T) {
	for body, want := range map[string]bool{
		"event: message_start\ndata: {}\n\nevent: error\ndata: {\"type\":\"error\"}\n\n":                        true,
		"data: {\"choices\":[]}\n\ndata: {\"error\":{\"message\":\"x\"}}\n\n":                                   true,
		"data: {\"choices\":[{\"delta\":{\"content\":\"event: error \\\"error\\\": x\"}}]}\n\ndata: [DONE]\n\n": false,
	} {
		if got := gatewayError(exchange{Status: 200, RespBody: []byte(body)}) != ""; got != want {
			t.Errorf("%q: error found %v, want %v", body, got, want)
		}
	}
}
