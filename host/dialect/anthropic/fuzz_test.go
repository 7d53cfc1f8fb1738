package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/sdk/wire"
)

// FuzzDecodeRequest: no input makes DecodeRequest panic; whatever it accepts
// re-encodes without error into valid JSON that decodes again, with encoding
// a fixed point after one normalization; and the OpenAI encoder accepts the
// same canonical request.
func FuzzDecodeRequest(f *testing.F) {
	files, _ := filepath.Glob("testdata/req_*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"system":[{"type":"x"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"}]},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"}}]}]}`))
	// issue 11: mid-conversation system messages, unknown members at every
	// level, a duplicated key, invalid UTF-8
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"s","x":1}],"cache_control":{"type":"ephemeral"}}],"tools":[{"name":"R","input_schema":{},"defer_loading":true},{"type":"mcp_toolset","mcp_server_name":"gh"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a` + "\xff" + `"}]}`))
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
			t.Fatalf("re-encoded request does not decode: %v\n%s", err, out)
		}
		out2, err := EncodeRequest(req2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", out, out2)
		}
		cross, err := openai.EncodeRequest(req)
		if err != nil {
			t.Fatalf("openai encode failed: %v\ninput: %s", err, body)
		}
		if !json.Valid(cross) {
			t.Fatalf("openai encoding is not valid JSON: %s", cross)
		}
	})
}

// FuzzStreamDecode: arbitrary events never panic the decoder, and whatever
// canonical events it yields encode without panicking in both dialects.
func FuzzStreamDecode(f *testing.F) {
	f.Add("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		[]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`))
	f.Add("", []byte(`{"type":"content_block_start","index":5,"content_block":{"type":"weird","x":{"a":[1]}}}`),
		[]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`))
	f.Fuzz(func(t *testing.T, name string, a, b []byte) {
		d := NewStreamDecoder()
		enc := NewStreamEncoder()
		oenc := openai.NewStreamEncoder(true)
		var aout, oout []byte
		// accumulators reject errors and nameless tools, which the
		// encoders pass on as the upstream sent them
		failed := false
		feed := func(evs []wire.Event) {
			for i := range evs {
				failed = failed || evs[i].Type == wire.EventError ||
					evs[i].Type == wire.EventBlockStart && evs[i].Block.Type == wire.BlockToolUse && evs[i].Block.Name == ""
				aout = enc.Encode(aout, &evs[i])
				oout = oenc.Encode(oout, &evs[i])
			}
		}
		for _, data := range [][]byte{[]byte(`{"type":"message_start","message":{"id":"m","model":"x"}}`), a, b} {
			evs, _ := d.Decode(name, data)
			feed(evs)
		}
		feed(d.Finish())
		if !failed {
			testutil.AccumulateAnthropicShape(t, aout)
			testutil.AccumulateOpenAI(t, oout)
		}
	})
}
