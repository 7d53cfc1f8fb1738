//go:build !wasip1

package main_test

import (
	"context"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkResolveCall is what an intent walking past OpenRouter costs the
// host: the input encoded as host/pipeline's resolveInPlugin does (the
// wire encoding of sdk/plugin's resolvecodec.go), one call into the plugin
// under wazero, and the answer decoded. The standard resolve itself runs natively and is not
// counted (sdk/routing's benchmarks).
func BenchmarkResolveCall(b *testing.B) {
	p, err := sandbox.Load(context.Background(), sandbox.Options{
		Name: "openrouter", Path: wasmbuild.MustBuild(b, "plugins/providers/openrouter"), Trusted: true,
		MemoryLimit: 64 << 20, PoolSize: 1, Timeout: time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	in, _ := routing.SubsystemIntent("operator")
	std := &routing.Resolution{Provider: "openrouter", Model: "anthropic/claude-opus-4.6", EstimatedCostUSD: 0.0225,
		Payment: routing.PaymentPrepaid, Features: routing.Features(routing.InterleavedThinking, routing.Citations),
		Quality: routing.Maximum, Style: routing.StyleOpenRouter, Pass: 1}
	enc := new(wire.Encoder)
	b.ReportAllocs()
	for b.Loop() {
		plugin.EncodeResolveInput(enc, &in, std)
		out, err := p.Call(context.Background(), plugin.OpResolve, enc.Bytes(), sandbox.CallInfo{})
		if err != nil {
			b.Fatal(err)
		}
		r, err := plugin.DecodeResolveResult(out)
		if err != nil || r == nil || r.Model != "anthropic/claude-opus-4.6:nitro" {
			b.Fatalf("answer %+v: %v", r, err)
		}
	}
}
