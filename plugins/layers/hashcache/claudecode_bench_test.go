//go:build !wasip1

package main

import (
	"fmt"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkClaudeCode is the request phase on the 85 KB Claude Code-sized
// request of host/loadtest (18 tools, a 22 KB system prompt, earlier turns
// with tool calls and results), a new prompt each call as an agent's next
// turn: what the layer adds to BenchmarkAgentTTFB. Under the real runtime,
// trusted.
func BenchmarkClaudeCode(b *testing.B) {
	p := layertest.Load(b, "plugins/layers/hashcache", sandbox.Options{Trusted: true, KV: kvstore.NewMemory(8 << 20)})
	var enc wire.Encoder
	var reqs []*wire.Request
	for i := range 50 {
		req, err := anthropic.DecodeRequest(loadtest.ClaudeCode(fmt.Sprintf("Rename the field %d and update callers", i), true))
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectAnthropic, Stream: true}
	i := 0
	layertest.Measure(b, func() {
		i++
		layertest.OnRequest(b, p, &enc, &meta, reqs[i%50])
	})
}
