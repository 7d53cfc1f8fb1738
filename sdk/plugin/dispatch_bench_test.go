package plugin

import (
	"runtime"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkDispatch is the SDK's fixed cost of one request-phase call on a
// 4 KB agent request around a hook that reads nothing: decode, hook, result
// encoding, and the scheduling point every export ends with. Run it inside
// wasm for the guest's figure:
//
//	GOOS=wasip1 GOARCH=wasm go test -c -o p.wasm ./plugin && wazero run p.wasm -test.bench Dispatch
func BenchmarkDispatch(b *testing.B) {
	saved, savedL, savedP := entries, layer, provider
	defer func() { entries, layer, provider = saved, savedL, savedP }()
	entries, layer, provider = nil, nil, nil
	RegisterLayer(Layer{Name: "l", Phases: wire.PhaseRequest, Reads: wire.PartAll,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			res.Annotations = append(res.Annotations, wire.KV{Key: "n", Value: req.Meta.Model})
			return nil
		}})
	in := benchInput()
	b.Run("dispatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dispatch(OpOnRequest, in)
		}
	})
	b.Run("dispatch+gosched", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dispatch(OpOnRequest, in)
			runtime.Gosched()
		}
	})
}

func benchInput() []byte {
	text := func(s string) []wire.Block { return []wire.Block{{Type: wire.BlockText, Text: s}} }
	in := wire.LayerRequest{
		Meta: wire.Meta{RequestID: "req_1", Tenant: "t", Model: "m", Annotations: []wire.KV{{Key: "k", Value: "v"}}},
		Request: wire.Request{
			Model:  "gpt-4o-mini",
			System: text(strings.Repeat("You are a careful DeFi assistant. Cite the tools you used. ", 40)),
			Tools: []wire.Tool{
				{Name: "get_position", Description: "Read a lending position.", Schema: []byte(`{"type":"object"}`)},
				{Name: "get_price", Description: "Read a spot price.", Schema: []byte(`{"type":"object"}`)},
			},
			Messages: []wire.Message{
				{Role: "user", Content: text("What is my USDC position on Aave?")},
				{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "get_position", Data: []byte(`{}`)}}},
				{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "c1", Text: `{"supplied":"125000.00"}`}}},
				{Role: "assistant", Content: text(strings.Repeat("Your Aave position is healthy. ", 10))},
				{Role: "user", Content: text("Compare it with Morpho.")},
				{Role: "assistant", Content: text("I will read your Morpho position next.")},
				{Role: "user", Content: text("Go ahead.")},
			},
			Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 1024},
		},
	}
	var e wire.Encoder
	in.Encode(&e)
	return append([]byte(nil), e.Bytes()...)
}
