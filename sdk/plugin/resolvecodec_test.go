package plugin

import (
	"reflect"
	"testing"

	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

func TestResolveCodecRoundTrip(t *testing.T) {
	in := routing.Intent{Subsystem: "operator", Model: "x/y", Require: routing.Features(routing.ToolUse),
		Prefer: routing.Features(routing.Citations, routing.InterleavedThinking), Quality: routing.Maximum,
		MaxLatencyMs: 5000, CostSensitivity: 0.25, Security: routing.Private, DiemAvailable: true,
		InputTokens: 2000, OutputTokens: 500, Relaxed: true,
		Wallet:  routing.Wallet{Known: true, LifetimeRevenue: 300, LifetimeCost: 100, Balance: 50},
		Dropped: routing.Features(routing.VisibleThinking)}
	std := routing.Resolution{Provider: "openrouter", Model: "anthropic/claude-opus-4.6", EstimatedCostUSD: 0.0225,
		Payment: routing.PaymentPrepaid, Features: routing.Features(routing.Citations), Quality: routing.Maximum,
		LatencyMs: 2600, MaxOutput: 32000, Style: routing.StyleOpenRouter, Missing: routing.Features(routing.InterleavedThinking),
		Degraded: []string{"interleaved_thinking", "quality:maximum>high"}, Pass: 2}
	var e wire.Encoder
	for _, s := range []*routing.Resolution{&std, nil} {
		EncodeResolveInput(&e, &in, s)
		gotIn, gotStd, err := DecodeResolveInput(append([]byte(nil), e.Bytes()...))
		if err != nil || !reflect.DeepEqual(gotIn, in) || !reflect.DeepEqual(gotStd, s) {
			t.Fatalf("input round trip (standard %v): %v\n%+v\n%+v", s != nil, err, gotIn, gotStd)
		}
		// Every shorter prefix is an error, never a panic or a wrong value.
		full := append([]byte(nil), e.Bytes()...)
		for n := range len(full) {
			if _, _, err := DecodeResolveInput(full[:n]); err == nil {
				t.Fatalf("a %d-byte prefix of %d decoded", n, len(full))
			}
		}
		EncodeResolveResult(&e, s)
		got, err := DecodeResolveResult(append([]byte(nil), e.Bytes()...))
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("result round trip: %v %+v", err, got)
		}
	}
}
