//go:build !wasip1

package main_test

// The layer compiled to WASM under the real sandbox: its per-request cost on
// the shared 4 KB agent request.

import (
	"slices"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/sdk/wire"
)

func load(tb testing.TB, config string, trusted bool) *sandbox.Plugin {
	tb.Helper()
	return layertest.Load(tb, "plugins/layers/promptcache", sandbox.Options{Trusted: trusted, Config: []byte(config), KV: kvstore.NewMemory(8 << 20)})
}

func call(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta *wire.Meta, req *wire.Request) wire.LayerResult {
	tb.Helper()
	return layertest.OnRequest(tb, p, enc, meta, req)
}

// BenchmarkLayerCall measures one request-phase call like host/sandbox's
// BenchmarkLayerCall: "openai" is an OpenAI caller (nothing to change:
// hash the prefix, compare it with the session's last), "anthropic" an
// Anthropic caller getting three breakpoints (system, tool, turn), which
// re-encodes system, tools and messages.
func BenchmarkLayerCall(b *testing.B) {
	req := fixtures.AgentRequest()
	for _, tc := range []struct {
		name, config string
		dialect      wire.Dialect
		patched      wire.Part
	}{
		{"openai", `{}`, wire.DialectOpenAI, 0},
		{"anthropic", `{"min_prefix_tokens":0}`, wire.DialectAnthropic, wire.PartSystem | wire.PartTools | wire.PartMessages},
	} {
		for _, trusted := range []bool{true, false} {
			b.Run(tc.name+map[bool]string{true: "/trusted", false: "/untrusted"}[trusted], func(b *testing.B) {
				p := load(b, tc.config, trusted)
				meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Session: "sess-1", Dialect: tc.dialect, Model: req.Model}
				var enc wire.Encoder
				if res := call(b, p, &enc, &meta, req); res.Patched != tc.patched {
					b.Fatalf("patched %b, want %b", res.Patched, tc.patched)
				}
				var lat []time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					t0 := time.Now()
					call(b, p, &enc, &meta, req)
					lat = append(lat, time.Since(t0))
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}
