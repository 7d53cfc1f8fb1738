//go:build !wasip1

package main

import (
	"testing"

	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkNative runs the guest side of one call natively, to compare with
// the same work inside wasm (host/sandbox BenchmarkLayerCall).
func BenchmarkNative(b *testing.B) {
	req := fixtures.AgentRequest()
	var enc wire.Encoder
	wire.EncodeLayerRequest(&enc, &wire.Meta{RequestID: "r"}, req, wire.PartAll)
	in := enc.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		plugin.Call(plugin.OpOnRequest, in)
	}
}
