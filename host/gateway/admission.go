package gateway

import (
	"context"
	"net/netip"

	"github.com/bardoinference/bardo/host/pricing"
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
	// Method and Body are the request's, for credentials that sign them
	// (an ERC-8004 delegation signs the method, path and body's hash).
	// Set by the completion endpoints; empty elsewhere (a GET, no body).
	Method string
	Body   []byte

	// What a reservation needs (Spends only).

	// InputTokens is an upper estimate of the request's input tokens.
	InputTokens int64
	// MaxTokens is the most output tokens the answer may have: the
	// request's max_tokens, else the model's max output, else
	// DefaultMaxTokens.
	MaxTokens int64
	// Direct is true when the caller pays the upstream with its own key
	// (X-Bardo-Upstream-Key): no spread and no charge; limits still apply.
	Direct bool
	// Quotes prices the asked model and then its cheaper equivalents (same
	// family, the features the request needs), dearest first: what a budget
	// downgrade may pick. Each quote carries the dearest price any enabled
	// provider asks for the model, so a reservation covers whichever
	// serves. Empty when no enabled provider prices the model.
	Quotes func() []Quote
}

// DefaultMaxTokens bounds a reservation's output when neither the request
// nor the catalog says how long the answer may be.
const DefaultMaxTokens = 4096

// Quote is one model's prices, for a reservation.
type Quote struct {
	Model  string
	Prices pricing.Prices
}

// Caller is an admitted caller.
type Caller struct {
	// Tenant is the caller's account: the layers namespace their caches,
	// PII mappings and affinity by it, and settlement bills it.
	Tenant string
	// Key is the id (public prefix) of the key that admitted the request,
	// "" without one.
	Key string
	// Tab is the request's open bill: nil when nothing is billed or
	// counted (open mode, reads).
	Tab Tab
	// Model, when set, replaces the model asked for: a budget downgrade.
	// Degraded says why, for X-Bardo-Degraded (e.g.
	// "budget-downgrade:claude-opus-4->claude-sonnet-4").
	Model    string
	Degraded []string
	// Headers are known at admission and sent with every answer, a stream's
	// too: X-Bardo-Balance, X-Remaining-Tokens.
	Headers []wire.KV
	// ErrorMembers, with a refusal, is a JSON object whose members are
	// written beside the dialect's error object in the answer's body (a
	// 402's x402 v1 requirements and inference quote). The dialect's own
	// members win a clash, so the SDKs still read their error.
	ErrorMembers []byte
}

// Tab is an admitted request's open bill: what was reserved at admission,
// settled at the settlement point.
type Tab interface {
	// Internal folds in an internal completion a layer made while serving
	// the request (s.Internal): it is charged with the request, on its
	// usage record, when the request closes.
	Internal(s *Settlement)
	// Close prices and settles the request: called exactly once, at the
	// settlement point, with the request's settlement (a stream's before
	// its terminal event when it ends cleanly). It returns what the caller
	// is shown.
	Close(s *Settlement) Bill
}

// Bill is what a closed tab shows the caller.
type Bill struct {
	// Headers: X-Bardo-Cost, X-Bardo-Savings, X-Bardo-Balance,
	// X-Bardo-Balance-Warning, X-Remaining-Tokens (non-streamed answers).
	Headers []wire.KV
	// Trailer is the same figures as one SSE comment line and its blank
	// line (pricing.Trailer), written into a stream before its terminal
	// event.
	Trailer []byte
	// Figures are the amounts behind them (cost, charge, savings), for the
	// metrics the settlement observer keeps.
	Figures pricing.Figures
}

// Admitter decides, before any layer runs, who is calling and whether they
// may. A refusal is an error in the caller's dialect (401, 403, 429…),
// settled like every other outcome; the request reaches no layer. A caller
// identified and then refused (a rate limit, a budget, the balance) comes
// back with the error and its Caller filled, Tab included: the refusal is
// settled on its tab (a usage record, no charge).
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
