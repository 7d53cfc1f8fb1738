package gateway

import (
	"context"
	"net/netip"

	"github.com/bardoinference/bardo/sdk/wire"
)

// AnonymousTenant is the caller of a gateway without an Admitter.
const AnonymousTenant = "anonymous"

// Admission is what the admitter sees of a request: who it may be, from
// where, and what it asks for. It runs before any layer.
type Admission struct {
	Dialect wire.Dialect
	Path    string // the endpoint, e.g. /v1/messages
	// Header reads the caller's request headers (Authorization, x-api-key,
	// payment headers); *fasthttp.RequestHeader and auth.Header fit.
	Header   interface{ Peek(name string) []byte }
	RemoteIP netip.Addr
	Model    string // empty for endpoints without one
	Spends   bool   // the request may cost money (a completion), not a read
}

// Caller is an admitted caller.
type Caller struct {
	// Tenant is the caller's account: the layers namespace their caches,
	// PII mappings and affinity by it, and settlement bills it.
	Tenant string
}

// Admitter decides, before any layer runs, who is calling and whether they
// may. A refusal is an error in the caller's dialect (401, 403, 429…),
// settled like every other outcome; the request reaches no layer.
type Admitter interface {
	Admit(ctx context.Context, a *Admission) (Caller, *wire.Error)
}

// admit is the one admission point of every endpoint that runs the
// pipeline. Without an Admitter every caller is the anonymous tenant.
func (g *Gateway) admit(ctx context.Context, a *Admission) (Caller, *wire.Error) {
	if g.Admitter == nil {
		return Caller{Tenant: AnonymousTenant}, nil
	}
	return g.Admitter.Admit(ctx, a)
}
