package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/sdk/wire"
)

// FuzzDecodeRequest: no input makes DecodeRequest panic; whatever it
// accepts encodes for a Responses upstream into valid JSON that decodes
// again, with encoding a fixed point after one normalization, and the Chat
// and Anthropic encoders accept the same canonical request.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(fullRequest))
	f.Add([]byte(`{"model":"m","input":"hi"}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"reasoning","summary":[],"encrypted_content":"redacted_thinking:xyz"},{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]}],"tool_choice":{"type":"function","name":"f"}}`))
	f.Add([]byte(`{"model":"m","input":"a` + "\xff" + `"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err != nil {
			return
		}
		out, err := EncodeRequest(req)
		if err != nil {
			t.Fatalf("re-encode failed: %v\ninput: %s", err, body)
		}
		if !json.Valid(out) {
			t.Fatalf("re-encoded request is not valid JSON: %s", out)
		}
		req2, err := DecodeRequest(out)
		if err != nil {
			// An encoding may legitimately lose a turn the Responses API
			// cannot hold (a message whose only blocks have no input
			// form), leaving nothing: that is the one accepted refusal.
			if len(req.Messages) > 0 {
				return
			}
			t.Fatalf("re-encoded request does not decode: %v\n%s", err, out)
		}
		out2, err := EncodeRequest(req2)
		if err != nil {
			t.Fatal(err)
		}
		out3, _ := EncodeRequest(mustDecode(t, out2))
		if !bytes.Equal(out2, out3) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", out2, out3)
		}
		if b, err := openai.EncodeRequest(req); err == nil && !json.Valid(b) {
			t.Fatalf("chat encoding is not JSON: %s", b)
		}
		if b, err := anthropic.EncodeRequest(req); err == nil && !json.Valid(b) {
			t.Fatalf("anthropic encoding is not JSON: %s", b)
		}
	})
}

func mustDecode(t *testing.T, b []byte) *wire.Request {
	r, err := DecodeRequest(b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return r
}

// FuzzDecodeResponse: an upstream's body never panics the decoder, and
// what it accepts encodes as a valid response object.
func FuzzDecodeResponse(f *testing.F) {
	b, _ := EncodeResponse(&wire.Response{Model: "m", Content: []wire.Block{{Type: wire.BlockText, Text: "hi"},
		{Type: wire.BlockToolUse, ID: "c", Name: "f", Data: []byte(`{}`)}, {Type: wire.BlockThinking, Text: "t", Signature: "s"}}})
	f.Add(b)
	f.Add([]byte(`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"web_search_call"}],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":9}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeResponse(body)
		if err != nil {
			return
		}
		if r.Usage.InputTokens < 0 && r.Usage.CacheReadTokens > 0 {
			t.Fatalf("negative input with cache: %+v", r.Usage)
		}
		out, err := EncodeResponse(r)
		if err != nil || !json.Valid(out) {
			t.Fatalf("%v: %s", err, out)
		}
	})
}

// FuzzStreamDecoder: any sequence of upstream events decodes without a
// panic, and the encoder turns what comes out into valid SSE JSON.
func FuzzStreamDecoder(f *testing.F) {
	enc := NewStreamEncoder()
	var b []byte
	evs := streamEvents()
	for i := range evs {
		b = enc.Encode(b, &evs[i])
	}
	f.Add(b)
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"code\":\"x\",\"message\":\"m\"}\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		d := NewStreamDecoder()
		e := NewStreamEncoder()
		for _, ev := range bytes.Split(stream, []byte("\n\n")) {
			var name, data []byte
			for _, line := range bytes.Split(ev, []byte("\n")) {
				if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
					name = v
				}
				if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					data = v
				}
			}
			out, err := d.Decode(string(name), data)
			if err != nil {
				continue
			}
			for i := range out {
				for _, ev := range parseSSEBytes(e.Encode(nil, &out[i])) {
					if !json.Valid(ev) {
						t.Fatalf("invalid event JSON %s", ev)
					}
				}
			}
		}
	})
}

func parseSSEBytes(b []byte) [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			out = append(out, v)
		}
	}
	return out
}
