package wire

import (
	"bytes"
	"strings"
	"testing"
)

// TestResultPlainMatchesGeneral: a result that patches nothing and
// carries no answer or error encodes byte for byte as the general path
// (encode) writes it, and decodes back, whatever its headers, annotations (strings
// past a one-byte length), stream flag, action and SkipAnswer.
func TestResultPlainMatchesGeneral(t *testing.T) {
	long := strings.Repeat("x", 300)
	kvSets := [][]KV{nil, {}, {{Key: "X-Bardo-A", Value: "1"}}, {{Key: "", Value: ""}, {Key: long, Value: long + "y"}, {Key: "k", Value: strings.Repeat("z", 127)}, {Key: "k2", Value: strings.Repeat("z", 128)}}}
	var got, want Encoder
	n := 0
	for _, h := range kvSets {
		for _, a := range kvSets {
			for _, stream := range []bool{false, true} {
				for _, skip := range []bool{false, true} {
					for _, action := range []uint8{ActionContinue, 1, 2, 0x7f} {
						x := LayerResult{Action: action, Headers: h, Annotations: a, SkipAnswer: skip}
						x.Request.Stream = stream
						x.Request.Messages = []Message{{Role: "user", Extra: []byte(`{"a":1}`)}} // not written: no part patched
						x.Encode(&got)
						x.encode(&want)
						if !bytes.Equal(got.Bytes(), want.Bytes()) {
							t.Fatalf("%+v:\n got %x\nwant %x", x, got.Bytes(), want.Bytes())
						}
						var back LayerResult
						if err := back.Decode(got.Bytes()); err != nil || back.Action != action || back.SkipAnswer != skip ||
							back.Request.Stream != stream || len(back.Headers) != len(h) || len(back.Annotations) != len(a) {
							t.Fatalf("%+v decoded as %+v, %v", x, back, err)
						}
						n++
					}
				}
			}
		}
	}
	// The general path still serves the others.
	for _, x := range []LayerResult{
		{Patched: PartModel, Request: Request{Model: "m"}},
		{Answer: &Response{ID: "a"}},
		{Error: &Error{Status: 403, Kind: "blocked"}},
		{Action: 0x80},
	} {
		x.Encode(&got)
		x.encode(&want)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%+v:\n got %x\nwant %x", x, got.Bytes(), want.Bytes())
		}
	}
	if n == 0 {
		t.Fatal("no case ran")
	}
}

// BenchmarkResultEncode is one run's eight results of the shipped layers'
// usual shape (a header or two, an annotation or two, some skipping the
// answer). Run it inside wasm for the guest's figure.
func BenchmarkResultEncode(b *testing.B) {
	rs := make([]LayerResult, 8)
	for i := range rs {
		rs[i] = LayerResult{
			Headers:     []KV{{Key: "X-Bardo-Layer-" + strings.Repeat("n", i), Value: "pass"}},
			Annotations: []KV{{Key: "layer.key", Value: strings.Repeat("0123456789abcdef", 4)}},
			SkipAnswer:  i%2 == 0,
		}
	}
	var e Encoder
	for b.Loop() {
		for i := range rs {
			rs[i].Encode(&e)
		}
	}
}
