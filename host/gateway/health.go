package gateway

import (
	"time"

	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/wire"
)

func (g *Gateway) available(provider string) bool {
	return g.Health == nil || g.Health.Available(provider)
}

func (g *Gateway) allow(provider string) bool {
	return g.Health == nil || g.Health.Allow(provider)
}

// record feeds one attempt's outcome to the health tracker. A response
// counts as a success once its first byte (or first stream event) is in;
// the failures are classified as the upstream reported them. retry marks
// the same-provider retry of a request's failed attempt: its failure is
// the same request's, not new evidence (health.Outcome.Retry).
func (g *Gateway) record(provider string, out attemptOutcome, took time.Duration, retry bool) {
	if g.Health == nil {
		return
	}
	k := outcomeKind(out)
	switch {
	case k == health.RateLimited && g.direct(provider):
		// A direct provider runs on the caller's own key: its rate limit is
		// that caller's, and must not make the provider back off for all.
		k = health.Client
	case (out.upStatus == 401 || out.upStatus == 403) && !g.direct(provider):
		// The gateway's own credential was refused: every caller's request
		// will fail the same way, so it counts against the provider.
		k = health.Server
	}
	g.Health.Record(provider, health.Outcome{Kind: k, Latency: took, RetryAfter: retryAfter(out.err), Retry: retry})
}

// direct reports whether provider uses the caller's own key.
func (g *Gateway) direct(provider string) bool {
	if g.Pipelines == nil {
		return false
	}
	p := g.Pipelines.Peek()
	if p == nil {
		return false
	}
	pr := p.Provider(provider)
	return pr != nil && pr.Spec.Direct
}

func outcomeKind(out attemptOutcome) health.Kind {
	if out.upStatus != 0 {
		// The upstream answered: what it said is the evidence, however the
		// decoder mapped it for the caller (an upstream 500 reaches the
		// caller as a 502, which must not read as a connection failure).
		return health.Classify(out.upStatus, nil)
	}
	e := out.err
	switch {
	case e == nil:
		return health.OK
	case out.saturated:
		// The gateway ran out of its own connections to the provider:
		// nothing was asked of it.
		return health.Client
	case out.unusable:
		// An answer the adapter refused (Venice without its no-retention
		// headers) is the deployment's doing, never the request's: like a
		// connection failure, a run of them takes the provider out.
		return health.Connect
	case e.Kind == wire.ErrTimeout:
		return health.Timeout
	case e.Status == 429 || e.Kind == wire.ErrRateLimit:
		return health.RateLimited
	case e.Kind == wire.ErrUpstream && e.Retryable && e.Status == 502:
		// The transport failed (connection refused, reset, a stream that
		// ended before its first event): nothing usable came back.
		return health.Connect
	case e.Status >= 500:
		return health.Server
	}
	// The caller's own mistake (4xx) says nothing about the provider.
	return health.Client
}

func retryAfter(e *wire.Error) time.Duration {
	if e == nil {
		return 0
	}
	return time.Duration(e.RetryAfterMs) * time.Millisecond
}

// backingOff reports whether provider answered 429 recently: it is tried
// after the other candidates (health.Tracker.BackingOff).
func (g *Gateway) backingOff(provider string) bool {
	return g.Health != nil && g.Health.BackingOff(provider)
}

// candidate is a provider and model the plan offered, kept for later.
type candidate struct {
	pr    *pipeline.Provider
	model string
}
