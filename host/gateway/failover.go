package gateway

import (
	"context"
	"strconv"
	"time"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/telemetry/trace"
	"github.com/bardoinference/bardo/sdk/wire"
)

// routeSource yields the provider and model to try next: the planner for a
// caller's request, completionSource for a layer's internal completion. A
// nil provider with a nil error means the candidates are exhausted; an
// error ends the search (a 503 from the planner first lets the providers
// backing off after a 429 have their turn).
type routeSource interface {
	next() (*pipeline.Provider, string, *wire.Error)
}

// failoverOptions are how the callers of the one failover loop differ.
type failoverOptions struct {
	// pinModel sets the request's model to each candidate's before its
	// attempt (internal completions: no caller body to keep pristine).
	pinModel bool
}

// failoverResult is how the failover loop ended: with a final attempt (an
// answer, or a failure no other provider would fix), with the plan's own
// error, or with every candidate failed (neither set).
type failoverResult struct {
	pr      *pipeline.Provider
	route   wire.Route
	out     attemptOutcome // valid when final
	final   bool
	planErr *wire.Error
	tried   []string    // "provider:status" of failed attempts, for X-Bardo-Fallback
	lastErr *wire.Error // the last transient failure
	// waited is the time spent in attempts, waiting on upstreams: a
	// buffered answer's until its body was read, a stream's until its
	// first event (what the gateway's overhead is measured against).
	waited time.Duration
}

// failover tries the source's candidates in order until one answers or
// fails for good: each at most twice (retrySame), a provider health has
// taken out skipped, one backing off after a 429 tried after every other
// candidate, and nothing tried once the request's deadline is spent. Every
// attempt is recorded with health; every failed one is an operator event.
// It is the only failover loop: the caller's requests and the layers'
// internal completions both run it.
func (g *Gateway) failover(rctx context.Context, p *pipeline.Pipeline, x *pipeline.Exchange, src routeSource, opt failoverOptions) failoverResult {
	var (
		res failoverResult
		// Providers backing off after a 429 are tried after every other
		// candidate, not skipped: one caller's rate limit must not turn
		// the others away while the provider may still serve them.
		later     []candidate
		exhausted bool // the source has no candidate left
	)
	rid := x.Meta.RequestID
	for {
		var (
			pr    *pipeline.Provider
			model string
			werr  *wire.Error
		)
		if !exhausted {
			pr, model, werr = src.next()
			exhausted = pr == nil && (werr == nil || werr.Status == 503)
		}
		switch {
		case exhausted && len(later) > 0:
			pr, model, werr = later[0].pr, later[0].model, nil
			later = later[1:]
		case pr != nil && g.backingOff(pr.Spec.Name):
			later = append(later, candidate{pr, model})
			continue
		}
		if werr != nil {
			res.planErr = werr
			return res
		}
		if pr == nil {
			return res
		}
		route := wire.Route{Provider: pr.Spec.Name, Model: model, BaseURL: pr.Spec.BaseURL}
		if !g.available(route.Provider) {
			res.tried = append(res.tried, route.Provider+":down")
			continue
		}
		if opt.pinModel {
			x.Req.Model = model
		}
		x.Meta.Annotations = setKV(x.Meta.Annotations, AnnotationProvider, route.Provider)
		x.Meta.Annotations = setKV(x.Meta.Annotations, AnnotationModel, route.Model)
		for try := 0; try < 2; try++ {
			if rctx.Err() != nil {
				// The request's deadline is spent: no attempt can succeed
				// now (nor say anything about the provider); a kept answer
				// beats the timeout.
				return res
			}
			if !g.allow(route.Provider) {
				break // half-open and its trial slot is taken: next provider
			}
			began := time.Now()
			actx, span := trace.StartAttempt(rctx, route.Provider, route.Model, try+1)
			out := g.attempt(actx, p, x, pr, route)
			took := time.Since(began)
			attemptSpanEnd(span, &out)
			res.waited += took
			g.record(route.Provider, out, took, try > 0)
			if out.local != nil || out.resp != nil || !out.transient {
				res.pr, res.route, res.out, res.final = pr, route, out, true
				return res
			}
			res.lastErr = out.err
			res.tried = append(res.tried, route.Provider+":"+strconv.FormatInt(out.err.Status, 10))
			g.Events.Emit(eventlog.ProviderFallback, rid, map[string]any{
				"failed": route.Provider, "model": route.Model, "status": out.err.Status, "reason": out.err.Message, "try": try + 1})
			g.Log.Warn("upstream attempt failed", "request_id", rid, "provider", route.Provider,
				"try", try+1, "status", out.err.Status, "err", out.err.Message)
			wait, again := g.retrySame(out)
			if !again || try == 1 {
				break // on to the next provider
			}
			if !sleepCtx(rctx, wait) {
				break
			}
		}
	}
}
