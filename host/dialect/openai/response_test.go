package openai

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

func nan() float64 { return math.NaN() }

func TestResponseRoundTrip(t *testing.T) {
	for _, name := range []string{"resp_text", "resp_tools"} {
		t.Run(name, func(t *testing.T) {
			resp, err := DecodeResponse(readFixture(t, name+".json"))
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

func TestResponseUsage(t *testing.T) {
	resp, err := DecodeResponse(readFixture(t, "resp_text.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Usage{InputTokens: 1117 - 1024, OutputTokens: 46, CacheReadTokens: 1024}
	if resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	resp.Usage.CacheWriteTokens = 10
	out, _ := EncodeResponse(resp)
	if !strings.Contains(string(out), `"usage":{"prompt_tokens":1127,"completion_tokens":46,"total_tokens":1173,"prompt_tokens_details":{"cached_tokens":1024}}`) {
		t.Errorf("usage not re-summed: %s", out)
	}
	// DeepSeek reports cache hits outside prompt_tokens_details
	resp, err = DecodeResponse(readFixture(t, "resp_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (wire.Usage{InputTokens: 18, OutputTokens: 17, CacheReadTokens: 64}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
}

func TestStopReasonMapping(t *testing.T) {
	for finish, stop := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use", "content_filter": "content_filter"} {
		if got := StopReason(finish); got != stop {
			t.Errorf("StopReason(%q) = %q, want %q", finish, got, stop)
		}
	}
	for stop, finish := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls", "content_filter": "content_filter", "refusal": "stop", "pause_turn": "stop", "": "stop"} {
		if got := FinishReason(stop); got != finish {
			t.Errorf("FinishReason(%q) = %q, want %q", stop, got, finish)
		}
	}
}

func TestEncodeResponseShapes(t *testing.T) {
	resp := &wire.Response{ID: "msg_1", Model: "claude", StopReason: wire.StopRefusal,
		Content: []wire.Block{{Type: wire.BlockText, Text: "I can't help with that."}}}
	out, err := EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_1","object":"chat.completion","created":1700000000,"model":"claude","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	resp = &wire.Response{Model: "m", StopReason: wire.StopEndTurn, Content: []wire.Block{
		{Type: wire.BlockThinking, Text: "hmm", Signature: "s"},
		{Type: wire.BlockText, Text: "a"},
		{Type: wire.BlockOther, Data: []byte(`{"type":"server_tool_use"}`)},
		{Type: wire.BlockText, Text: "b"},
	}}
	out, err = EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"message":{"role":"assistant","content":"ab","reasoning_content":"hmm","reasoning_details":[{"type":"reasoning.text","text":"hmm","signature":"s","format":"anthropic-claude-v1","index":0}],"refusal":null}`) {
		t.Errorf("got %s", out)
	}
	if !strings.Contains(string(out), `"id":"chatcmpl-`) {
		t.Errorf("no id generated: %s", out)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	for _, in := range []string{`nope`, `{"choices":[{"message":{"content":5}}]}`, `{"usage":{"prompt_tokens":"x"}}`, `{"choices":{}}`} {
		_, err := DecodeResponse([]byte(in))
		if !errors.Is(err, dialect.ErrInvalidResponse) {
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
		{wire.Error{Kind: wire.ErrInvalidRequest, Message: "bad \"x\""}, 400, `{"error":{"message":"bad \"x\"","type":"invalid_request_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrAuthentication, Message: "no key"}, 401, `{"error":{"message":"no key","type":"authentication_error","param":null,"code":"invalid_api_key"}}`},
		{wire.Error{Kind: wire.ErrPermission}, 403, `{"error":{"message":"Permission denied.","type":"permission_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrPermission, Status: 402, Message: "top up"}, 402, `{"error":{"message":"top up","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
		{wire.Error{Kind: wire.ErrNotFound, Message: "no model"}, 404, `{"error":{"message":"no model","type":"not_found_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrRateLimit, Message: "slow down"}, 429, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{wire.Error{Kind: wire.ErrOverloaded, Message: "busy"}, 503, `{"error":{"message":"busy","type":"server_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrTimeout, Message: "slow"}, 504, `{"error":{"message":"slow","type":"server_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrUpstream, Message: "up"}, 502, `{"error":{"message":"up","type":"server_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrInternal, Message: "oops"}, 500, `{"error":{"message":"oops","type":"server_error","param":null,"code":null}}`},
		{wire.Error{Kind: wire.ErrOverloaded, Status: 529, Message: "busy"}, 529, `{"error":{"message":"busy","type":"server_error","param":null,"code":null}}`},
		{wire.Error{Status: 429, Message: "x"}, 429, `{"error":{"message":"x","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{wire.Error{Kind: "weird", Message: "x"}, 500, `{"error":{"message":"x","type":"server_error","param":null,"code":null}}`},
	}
	for _, c := range cases {
		status, body := EncodeError(&c.e)
		if status != c.status || string(body) != c.body {
			t.Errorf("EncodeError(%+v) = %d %s\nwant %d %s", c.e, status, body, c.status, c.body)
		}
	}
}

func TestDecodeError(t *testing.T) {
	long := strings.Repeat("é", 2000)
	cases := []struct {
		status    int
		body      string
		kind      string
		msg       string
		retryable bool
	}{
		{401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, wire.ErrAuthentication, "Incorrect API key provided", false},
		{429, `{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, wire.ErrRateLimit, "Rate limit reached", true},
		{400, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, wire.ErrInvalidRequest, "This model's maximum context length is 8192 tokens", false},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, wire.ErrOverloaded, "Overloaded", true},
		{500, `{"type":"error","error":{"type":"api_error","message":"Internal"}}`, wire.ErrUpstream, "Internal", true},
		{404, `{"object":"error","message":"The model x does not exist.","type":"NotFoundError","param":null,"code":404}`, wire.ErrNotFound, "The model x does not exist.", false},
		{422, `{"detail":[{"loc":["body"],"msg":"field required"}]}`, wire.ErrInvalidRequest, `[{"loc":["body"],"msg":"field required"}]`, false},
		{502, `<html><body>Bad Gateway</body></html>`, wire.ErrUpstream, `<html><body>Bad Gateway</body></html>`, true},
		{503, ``, wire.ErrOverloaded, "upstream returned HTTP 503", true},
		{429, `[{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}]`, wire.ErrRateLimit, "Resource exhausted", true},
		{400, `{"error":"plain string error"}`, wire.ErrInvalidRequest, "plain string error", false},
		{0, `{"error":{"message":"mid-stream","type":"server_error"}}`, wire.ErrUpstream, "mid-stream", true},
		{500, long, wire.ErrUpstream, dialect.Truncate(long, dialect.MaxUpstreamText), true},
		{400, "bad\x00\x1b[31m\xffbytes", wire.ErrInvalidRequest, "bad  [31m\uFFFDbytes", false},
	}
	for _, c := range cases {
		e := DecodeError(c.status, []byte(c.body))
		if e.Kind != c.kind || e.Message != c.msg || e.Retryable != c.retryable {
			t.Errorf("DecodeError(%d, %.60q) = %+v\nwant kind %s msg %q retryable %v", c.status, c.body, e, c.kind, c.msg, c.retryable)
		}
		if len(e.Message) > dialect.MaxUpstreamText+3 {
			t.Errorf("message too long: %d bytes", len(e.Message))
		}
		if c.status >= 400 && e.Status != int64(c.status) {
			t.Errorf("status %d, want %d", e.Status, c.status)
		}
		if c.status == 0 && e.Status == 0 {
			t.Errorf("no status for a stream error")
		}
	}
}
