package gateway

import (
	"time"

	"github.com/bardoinference/bardo/host/health"
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
// the failures are classified as the upstream reported them.
func (g *Gateway) record(provider string, out attemptOutcome, took time.Duration) {
	if g.Health == nil {
		return
	}
	g.Health.Record(provider, health.Outcome{Kind: outcomeKind(out), Latency: took,
		RetryAfter: retryAfter(out.err)})
}

func outcomeKind(out attemptOutcome) health.Kind {
	e := out.err
	switch {
	case e == nil:
		return health.OK
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
