package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/internal/testutil"
	"github.com/bardoinference/bardo/sdk/wire"
)

// FuzzDecodeRequest: no input makes DecodeRequest panic; whatever it accepts
// re-encodes without error into valid JSON that decodes again, with encoding
// a fixed point after one normalization; and the Anthropic encoder accepts the
// same canonical request.
func FuzzDecodeRequest(f *testing.F) {
	files, _ := filepath.Glob("testdata/req_*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"tool","tool_call_id":"x","content":[{"type":"text","text":"a"}]},{"role":"system","content":[{"type":"image_url","image_url":"data:image/png;base64,AA"}]}]}`))
	// issue 11: a system message in place, unknown members at every level,
	// a duplicated key, invalid UTF-8
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1}],"z":3},{"role":"developer","content":"d"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"index":0}]},{"role":"tool","tool_call_id":"c","content":"r","name":"f"}],"tools":[{"type":"function","function":{"name":"f","strict":true}}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a` + "\xff" + `"}]}`))
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
		cross, err := anthropic.EncodeRequest(req)
		if err != nil {
			t.Fatalf("anthropic encode failed: %v\ninput: %s", err, body)
		}
		if !json.Valid(cross) {
			t.Fatalf("anthropic encoding is not valid JSON: %s", cross)
		}
	})
}

// FuzzStreamDecode: arbitrary chunks never panic the decoder, and whatever
// events it yields encode without panicking in both dialects.
func FuzzStreamDecode(f *testing.F) {
	for _, c := range upstreamChunks {
		f.Add([]byte(c), []byte(`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		d := NewStreamDecoder()
		enc := NewStreamEncoder(true)
		aenc := anthropic.NewStreamEncoder()
		var oout, aout []byte
		// accumulators reject errors and nameless tools, which the
		// encoders pass on as the upstream sent them
		failed := false
		feed := func(evs []wire.Event) {
			for i := range evs {
				failed = failed || evs[i].Type == wire.EventError ||
					evs[i].Type == wire.EventBlockStart && evs[i].Block.Type == wire.BlockToolUse && evs[i].Block.Name == ""
				oout = enc.Encode(oout, &evs[i])
				aout = aenc.Encode(aout, &evs[i])
			}
		}
		for _, chunk := range [][]byte{a, b} {
			evs, _ := d.Decode("", chunk)
			feed(evs)
		}
		feed(d.Finish())
		if !failed {
			testutil.AccumulateOpenAI(t, oout)
			testutil.AccumulateAnthropicShape(t, aout)
		}
	})
}
