package admit

import (
	"context"
	"testing"

	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// BenchmarkDelegate is the gateway's cost of one ERC-8004 delegation
// from an EOA once the agent's signers and tier are cached: decode the
// header, keccak256 the body, the EIP-712 digest, ecrecover, the link read
// and the replay set. Each iteration has its own signed header (signing is
// the client's, outside the timer).
//
//	go test -run X -bench Delegate -benchtime 2000x ./host/auth/admit/
func BenchmarkDelegate(b *testing.B) {
	r := newIDRig(b)
	owner := chaintest.Address(r.owner)
	if _, err := r.link(b, owner, r.owner, 0); err != nil {
		b.Fatal(err)
	}
	headers := make([]string, b.N)
	for i := range headers {
		headers[i] = r.delegation(b, owner, r.owner, 0, r.clock(), chatBody)
	}
	ctx := context.Background()
	if _, err := r.svc.Delegate(ctx, r.delegation(b, owner, r.owner, 0, r.clock(), chatBody), "POST", "/v1/chat/completions", chatBody); err != nil {
		b.Fatal(err) // warms the agent cache
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := r.svc.Delegate(ctx, headers[i], "POST", "/v1/chat/completions", chatBody); err != nil {
			b.Fatal(err)
		}
	}
}
