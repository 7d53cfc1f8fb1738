//go:build !wasip1

package main_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkLayerCall is L8's per-request cost on the typical 4 KB agent
// request, trusted, under the real runtime with the offline classifier:
// "fresh" classifies every user text (a new text each call), "new-turn"
// only the last user turn (new each call), "seen" is the same conversation
// again, its scores reused from the tenant's kv.
func BenchmarkLayerCall(b *testing.B) {
	p := layertest.Load(b, "plugins/layers/injection", sandbox.Options{Trusted: true,
		KV: kvstore.NewMemory(64 << 20), Services: modeltest.Services(b), Config: []byte(`{"action":"flag"}`)})
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI}
	var enc wire.Encoder
	b.Run("fresh", func(b *testing.B) {
		n := 0
		layertest.Measure(b, func() {
			req := fixtures.AgentRequest()
			last := &req.Messages[len(req.Messages)-1]
			n++
			last.Content = append(last.Content, wire.Block{Type: wire.BlockText, Text: "and one more thing, number " + strconv.Itoa(n)})
			// Every text of the conversation is new to this tenant.
			m := meta
			m.Tenant = "bench-" + strconv.Itoa(n)
			if res := layertest.OnRequest(b, p, &enc, &m, req); res.Action != wire.ActionContinue {
				b.Fatal("blocked")
			}
		})
	})
	// The live workload: one tenant's conversation whose earlier texts
	// are scored already, with a new last user turn each call.
	b.Run("new-turn", func(b *testing.B) {
		n := 0
		layertest.Measure(b, func() {
			req := fixtures.AgentRequest()
			last := &req.Messages[len(req.Messages)-1]
			n++
			last.Content[0].Text += " (request " + strconv.Itoa(n) + ")"
			if res := layertest.OnRequest(b, p, &enc, &meta, req); res.Action != wire.ActionContinue {
				b.Fatal("blocked")
			}
		})
	})
	b.Run("seen", func(b *testing.B) {
		req := fixtures.AgentRequest()
		layertest.OnRequest(b, p, &enc, &meta, req)
		layertest.Measure(b, func() { layertest.OnRequest(b, p, &enc, &meta, req) })
	})
	// A tool result sent as an array of three text blocks (~3 KB), its
	// scores reused: the cost of walking the array in the guest.
	b.Run("seen-tool-blocks", func(b *testing.B) {
		req := fixtures.AgentRequest()
		para := strings.Repeat("The pool's utilisation rose to 91% after the rate change; borrowers moved to the stable market. ", 10)
		blocks, _ := json.Marshal([]map[string]string{{"type": "text", "text": para}, {"type": "text", "text": "Note: \"quoted\" " + para}, {"type": "text", "text": para + "."}})
		req.Messages = append(req.Messages,
			wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "call_2", Name: "get_position", Data: []byte(`{}`)}}},
			wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "call_2", Data: blocks}}})
		layertest.OnRequest(b, p, &enc, &meta, req)
		layertest.Measure(b, func() { layertest.OnRequest(b, p, &enc, &meta, req) })
	})
}
