package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bardoinference/bardo/host/pipeline"
	hostrouting "github.com/bardoinference/bardo/host/routing"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// AnnotationSubsystem carries a request's routing intent (X-Bardo-Subsystem,
// or the subsystem of an internal completion).
const AnnotationSubsystem = "bardo.route.subsystem"

// defaultCompleteMaxTokens bounds an internal completion that names no limit:
// summaries are short, and an unbounded internal call is a cost surprise.
const defaultCompleteMaxTokens = 1024

// Complete serves the complete host function (sandbox.Completer): a plugin's
// internal, non-streamed completion of a whole canonical request (tools and
// tool blocks included, so a layer can run a tool loop), routed and failed
// over like a caller's request. It skips the layers on purpose: a layer must
// not recurse into itself, and what it passes already went through the
// layers before it (L7 masks personal data before L5 summarises, so nothing
// private leaves).
func (g *Gateway) Complete(ctx context.Context, tenant string, c sandbox.Completion) (res sandbox.CompletionResult, err error) {
	// Settled once, charged to the caller whose request caused it.
	s := Settlement{RequestID: newRequestID(), Tenant: tenant, Dialect: wire.DialectOpenAI, Path: PathInternal, Internal: true}
	began := time.Now()
	var p *pipeline.Pipeline
	defer func() {
		s.Latency = time.Since(began)
		s.Status = 200
		if err != nil {
			if s.Err == nil {
				s.Err = &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: err.Error()}
			}
			s.Status = int(s.Err.Status)
		} else if res.Response != nil {
			s.Usage = &res.Response.Usage
		}
		price(&s, p)
		if pr := pipelineProvider(p, s.Provider); pr != nil {
			s.Direct = pr.Spec.Direct
		}
		if tab := tabOf(ctx); tab != nil {
			tab.Internal(&s) // charged with the request that caused it
		}
		g.settle(&s)
	}()
	if g.Pipelines == nil {
		return sandbox.CompletionResult{}, errors.New("the gateway is not serving yet")
	}
	req := c.Request
	if req == nil || len(req.Messages) == 0 {
		return sandbox.CompletionResult{}, errors.New("an internal completion needs messages")
	}
	s.Asked = req.Model
	req.Stream = false
	if req.Params.Set&wire.HasMaxTokens == 0 || req.Params.MaxTokens <= 0 {
		req.Params.MaxTokens = defaultCompleteMaxTokens
		req.Params.Set |= wire.HasMaxTokens
	}

	p0, release := g.Pipelines.Acquire()
	defer release()
	p = p0
	x := &pipeline.Exchange{
		Meta: wire.Meta{
			RequestID: s.RequestID,
			Tenant:    tenant,
			Dialect:   wire.DialectOpenAI, // internal: any dialect does, nothing is written back
			Model:     req.Model,
		},
		Req: req,
	}
	if c.Subsystem != "" {
		x.Meta.Annotations = setKV(x.Meta.Annotations, AnnotationSubsystem, c.Subsystem)
	}
	src, err := completionRoutes(p, x, c.Subsystem)
	if err != nil {
		return sandbox.CompletionResult{}, err
	}
	fr := g.failover(ctx, p, x, src, failoverOptions{pinModel: true})
	s.Tried = fr.tried
	if fr.final {
		s.Provider, s.Model = fr.route.Provider, fr.route.Model
		s.Upstream = fr.out.resp != nil || fr.out.upStatus != 0
	}
	switch {
	case fr.planErr != nil:
		s.Err = fr.planErr
		return sandbox.CompletionResult{}, errors.New(fr.planErr.Message)
	case fr.final && (fr.out.resp != nil || fr.out.local != nil):
		resp, werr := g.completeResponse(ctx, p, fr.pr, fr.route, x, fr.out)
		if werr != nil {
			s.Err = werr
			return sandbox.CompletionResult{}, errors.New(werr.Message)
		}
		return sandbox.CompletionResult{Response: resp, Provider: fr.route.Provider, Model: fr.route.Model}, nil
	case fr.final:
		s.Err = fr.out.err
		return sandbox.CompletionResult{}, errors.New(fr.out.err.Message)
	case fr.lastErr == nil:
		return sandbox.CompletionResult{}, errors.New("no provider serves the internal completion")
	}
	s.Err = fr.lastErr
	return sandbox.CompletionResult{}, fmt.Errorf("every provider failed; last: %s", fr.lastErr.Message)
}

// completionRoutes yields the providers to try for an internal completion:
// by the models globs for an explicit model, else by resolving the
// subsystem's intent against the catalogs (again without each one that
// failed), as for a caller's request.
func completionRoutes(p *pipeline.Pipeline, x *pipeline.Exchange, subsystem string) (routeSource, error) {
	if !hostrouting.IsAutoModel(x.Req.Model) {
		cands, werr := p.Candidates(x)
		if werr != nil {
			return nil, errors.New(werr.Message)
		}
		model, i := x.Req.Model, 0
		return completionSource(func() (*pipeline.Provider, string) {
			if i == len(cands) {
				return nil, ""
			}
			i++
			return cands[i-1], model
		}), nil
	}
	in, _ := routing.SubsystemIntent(subsystem)
	tried := map[string]bool{}
	first := true
	var resolveErr error
	next := func() (*pipeline.Provider, string) {
		res, err := routing.Resolve(&in, p.Descriptions(), func(id string) bool {
			pr := p.Provider(id)
			return !tried[id] && pr != nil && (first || pr.Spec.Failover)
		})
		if err != nil {
			if first {
				resolveErr = err
			}
			return nil, ""
		}
		first = false
		tried[res.Provider] = true
		return p.Provider(res.Provider), res.Model
	}
	// Resolve once up front so "nothing can serve this" is an error, not
	// an empty loop.
	pr, model := next()
	if pr == nil {
		return nil, fmt.Errorf("internal completion (%s): %w", subsystem, resolveErr)
	}
	pending := true
	return completionSource(func() (*pipeline.Provider, string) {
		if pending {
			pending = false
			return pr, model
		}
		return next()
	}), nil
}

// completionSource is an internal completion's candidates as a routeSource:
// it has no error of its own beyond the first resolution.
type completionSource func() (*pipeline.Provider, string)

func (f completionSource) next() (*pipeline.Provider, string, *wire.Error) {
	pr, model := f()
	return pr, model, nil
}

// completeResponse decodes a successful attempt into the canonical response.
func (g *Gateway) completeResponse(ctx context.Context, p *pipeline.Pipeline, pr *pipeline.Provider, route wire.Route, x *pipeline.Exchange, out attemptOutcome) (*wire.Response, *wire.Error) {
	if out.local != nil {
		return out.local, nil
	}
	defer out.resp.Close()
	if out.call.ResponseDialect != wire.DialectNone {
		r, err := codecFor(out.call.ResponseDialect).DecodeResponse(out.resp.Body)
		if err != nil {
			return nil, &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "upstream " + route.Provider + " returned an invalid response: " + err.Error()}
		}
		return r, nil
	}
	return p.Decode(ctx, x, pr, route, out.resp.Status, out.resp.Headers, out.resp.Body)
}

// pipelineProvider is p's enabled provider name, or nil.
func pipelineProvider(p *pipeline.Pipeline, name string) *pipeline.Provider {
	if p == nil || name == "" {
		return nil
	}
	return p.Provider(name)
}
