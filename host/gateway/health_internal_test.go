package gateway

import (
	"errors"
	"fmt"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The gateway running out of its own connections to a provider is told to
// the caller as overloaded (503, retry shortly) and never counts against
// the provider's health; a refused connection does.
func TestSaturationIsNotTheProviders(t *testing.T) {
	saturated := fmt.Errorf("%w: host: %w", upstream.ErrConnect, fasthttp.ErrNoFreeConns)
	e := upstreamFailure("openai", saturated)
	if e.Status != 503 || e.Kind != wire.ErrOverloaded || !e.Retryable || e.RetryAfterMs == 0 {
		t.Fatalf("saturated: %+v", e)
	}
	if k := outcomeKind(attemptOutcome{err: e, saturated: true}); k != health.Client {
		t.Fatalf("saturated attempt counted as %v", k)
	}
	refused := upstreamFailure("openai", fmt.Errorf("%w: host: %w", upstream.ErrConnect, errors.New("dial: connection refused")))
	if k := outcomeKind(attemptOutcome{err: refused}); k != health.Connect {
		t.Fatalf("refused connection counted as %v", k)
	}
}
