package wire

import (
	"bytes"
	"testing"
)

func partsRequest() *Request {
	return &Request{
		Model:  "gpt-4o-mini",
		Stream: true,
		System: []Block{{Type: BlockText, Text: "be brief"}},
		Messages: []Message{
			{Role: "user", Content: []Block{{Type: BlockText, Text: "hi"}, {Type: BlockText, Text: "there"}}},
			{Role: "assistant", Content: []Block{{Type: BlockToolUse, ID: "c1", Name: "f", Data: []byte(`{}`)}}},
		},
		Tools:      []Tool{{Name: "f", Description: "d", Schema: []byte(`{"type":"object"}`)}},
		ToolChoice: []byte(`"auto"`),
		Params:     Params{Set: HasMaxTokens, MaxTokens: 10, Stop: []string{"x"}},
		Extra:      []byte(`{"user":"u"}`),
	}
}

// Every mask (and an unknown bit) comes out of the RequestEncoder byte for
// byte as EncodeLayerRequest writes it: without nested extras, with some in
// one part only (the others' elements then write empty ones), and after a
// part is replaced and Changed.
func TestRequestEncoderMatchesEncodeLayerRequest(t *testing.T) {
	meta := &Meta{RequestID: "r1", Tenant: "t", Dialect: DialectOpenAI, Model: "m", Annotations: []KV{{Key: "a", Value: "b"}}}
	check := func(t *testing.T, re *RequestEncoder, req *Request) {
		t.Helper()
		var want, got Encoder
		for mask := Part(0); mask <= PartAll|1<<8; mask++ {
			if mask > PartAll && mask&(1<<8) == 0 {
				continue
			}
			EncodeLayerRequest(&want, meta, req, mask)
			re.Encode(&got, meta, mask)
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("mask %b: got %x, want %x", mask, got.Bytes(), want.Bytes())
			}
			dst := make([]byte, re.Prepare(meta, mask))
			re.Put(dst)
			if !bytes.Equal(dst, want.Bytes()) {
				t.Fatalf("mask %b: put %x, want %x", mask, dst, want.Bytes())
			}
		}
	}
	var re RequestEncoder
	req := partsRequest()
	re.Reset(req)
	check(t, &re, req)

	req = partsRequest()
	req.Messages[0].Content[1].Extra = []byte(`{"k":1}`)
	re.Reset(req)
	check(t, &re, req)

	// A layer replaces the tools (with an Extra) and the model.
	req.Tools = []Tool{{Name: "g", Extra: []byte(`{"strict":true}`)}, {Name: "h"}}
	req.Model = "other"
	meta.Annotations = append(meta.Annotations, KV{Key: "c", Value: "d"})
	re.Changed(PartTools | PartModel)
	check(t, &re, req)

	// Stream is read at every call, not encoded with a part.
	req.Stream = false
	check(t, &re, req)
}

// A request phase's eight layers over the 4 KB agent request encode each
// part once; what is left per call is the head and the copies.
func BenchmarkRequestEncoder(b *testing.B) {
	req := partsRequest()
	for range 20 {
		req.Messages = append(req.Messages, Message{Role: "user", Content: []Block{{Type: BlockText, Text: "Consider gas costs and the current supply APYs on both venues, and the health factor."}}})
	}
	meta := &Meta{RequestID: "r1", Tenant: "t", Dialect: DialectOpenAI, Model: "m"}
	masks := []Part{PartSystem | PartMessages, PartModel | PartMessages, PartAll, PartAll,
		PartAll &^ PartExtra, PartModel | PartSystem | PartMessages, PartAll &^ PartParams, PartAll &^ (PartParams | PartExtra)}
	var enc Encoder
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range masks {
				EncodeLayerRequest(&enc, meta, req, m)
			}
		}
	})
	var re RequestEncoder
	dst := make([]byte, 64<<10)
	b.Run("once", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			re.Reset(req)
			for _, m := range masks {
				n := re.Prepare(meta, m)
				re.Put(dst[:n])
			}
		}
	})
}
