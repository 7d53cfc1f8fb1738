package responses

import (
	"testing"

	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/wire"
)

// agentBody is the 4 KB agent fixture in the Responses form.
func agentBody(b *testing.B) []byte {
	req, err := openai.DecodeRequest(fixtures.AgentRequestOpenAI(false))
	if err != nil {
		b.Fatal(err)
	}
	out, err := EncodeRequest(req)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkDecodeRequest: a 4 KB agent request (system, tools, a tool
// round trip) into the canonical model.
func BenchmarkDecodeRequest(b *testing.B) {
	body := agentBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeResponse: an answer with text and a tool call.
func BenchmarkEncodeResponse(b *testing.B) {
	resp := &wire.Response{Model: "gpt-4o", StopReason: wire.StopToolUse, Usage: wire.Usage{InputTokens: 900, OutputTokens: 60},
		Content: []wire.Block{{Type: wire.BlockText, Text: "Let me check the pool's current APY before rebalancing."},
			{Type: wire.BlockToolUse, ID: "call_1", Name: "get_pool", Data: []byte(`{"pool":"aave-v3-usdc","chain":"base"}`)}}}
	for b.Loop() {
		if _, err := EncodeResponse(resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamEncoder: one text delta event.
func BenchmarkStreamEncoder(b *testing.B) {
	enc := NewStreamEncoder()
	var buf []byte
	start := []wire.Event{{Type: wire.EventMessageStart, Model: "gpt-4o"}, {Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockText}}}
	for i := range start {
		buf = enc.Encode(buf, &start[i])
	}
	ev := wire.Event{Type: wire.EventDelta, Delta: wire.DeltaText, Text: " the pool's APY"}
	for b.Loop() {
		buf = enc.Encode(buf[:0], &ev)
	}
}
