//go:build !wasip1

package main_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkResolveCall is what an intent walking past OpenRouter costs the
// host: the input encoded as host/pipeline's resolveInPlugin does (JSON
// after a format byte), one call into the plugin under wazero, and the
// answer decoded. The standard resolve itself runs natively and is not
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
	b.ReportAllocs()
	for b.Loop() {
		payload, err := json.Marshal(struct {
			Intent   *routing.Intent     `json:"intent"`
			Standard *routing.Resolution `json:"standard"`
		}{&in, std})
		if err != nil {
			b.Fatal(err)
		}
		out, err := p.Call(context.Background(), plugin.OpResolve, append([]byte{wire.FormatVersion}, payload...), sandbox.CallInfo{})
		if err != nil {
			b.Fatal(err)
		}
		var r *routing.Resolution
		if err := json.Unmarshal(out[1:], &r); err != nil || r == nil || r.Model != "anthropic/claude-opus-4.6:nitro" {
			b.Fatalf("answer %s: %v", out, err)
		}
	}
}
