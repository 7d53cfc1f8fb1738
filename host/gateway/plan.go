package gateway

import (
	"errors"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/pipeline"
	hostrouting "github.com/bardoinference/bardo/host/routing"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Intent routing headers.
const (
	HeaderSubsystem = "X-Bardo-Subsystem" // request: the caller's subsystem intent
	HeaderVitality  = "X-Bardo-Vitality"  // request: 0..1, mortality pressure
	HeaderIntent    = "X-Bardo-Intent"    // response: where the intent came from (subsystem:<name> or task:<type>)
	HeaderCostEst   = "X-Bardo-Cost-Estimate"
)

// planner yields the provider and model to try next. A request that names a
// model is planned by the providers' model globs, in file order (the
// explicit model is never swapped); a request that leaves the choice to the
// gateway (model "auto", a subsystem, a `bardo` object) is resolved from its
// intent against the providers' catalogs, and resolved again without each
// provider that failed.
type planner struct {
	g    *Gateway
	p    *pipeline.Pipeline
	x    *pipeline.Exchange
	tier string

	// explicit
	cands []*pipeline.Provider
	i     int

	// intent
	intent   *routing.Intent
	built    hostrouting.Built
	failed   map[string]bool
	attempts int
	profile  profileBase // the request before the subsystem's profile
}

// newPlanner decides how the request is routed; an error is the caller's
// (a malformed bardo object or vitality) or says no provider can serve.
func (g *Gateway) newPlanner(h Header, p *pipeline.Pipeline, x *pipeline.Exchange) (*planner, *wire.Error) {
	pl := &planner{g: g, p: p, x: x}
	sub := string(h.Peek(HeaderSubsystem))
	bardo := hostrouting.BardoObject(x.Req.Extra)
	if bardo != nil {
		// The bardo object is the gateway's, never the upstream's.
		x.Req.Extra = withoutMember(x.Req.Extra, hostrouting.BodyField)
		x.Pristine = false
	}
	if !hostrouting.IsAutoModel(x.Req.Model) && sub == "" && bardo == nil {
		cands, werr := p.Candidates(x)
		if werr != nil {
			return nil, werr
		}
		pl.cands = preferred(cands, x.Meta.Annotations)
		return pl, nil
	}
	built, err := hostrouting.Build(&hostrouting.Sources{
		Model: x.Req.Model, Subsystem: sub, Vitality: string(h.Peek(HeaderVitality)),
		Wallet: string(h.Peek(hostrouting.HeaderWallet)),
		Bardo:  bardo, Request: x.Req, Tier: pl.tier,
	})
	if err != nil {
		return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()}
	}
	if !hostrouting.IsAutoModel(x.Req.Model) && sub == "" && bardo == nil {
		built.Intent.Model = x.Req.Model
	}
	pl.built = built
	pl.intent = &pl.built.Intent
	pl.failed = map[string]bool{}
	if built.Intent.Subsystem != "" {
		x.Meta.Annotations = setKV(x.Meta.Annotations, AnnotationSubsystem, built.Intent.Subsystem)
	}
	return pl, nil
}

// next returns the next provider and model to try, or a final error when
// there is none (nil when the explicit candidates are exhausted: the caller
// reports the last upstream failure).
func (pl *planner) next() (*pipeline.Provider, string, *wire.Error) {
	if pl.intent == nil {
		if pl.i >= len(pl.cands) {
			return nil, "", nil
		}
		pr := pl.cands[pl.i]
		pl.i++
		return pr, pl.x.Req.Model, nil
	}
	healthy := func(id string) bool {
		if pl.failed[id] || !pl.g.available(id) {
			return false
		}
		// A provider that only serves as a first choice (the simulator)
		// never takes over a failed request.
		pr := pl.p.Provider(id)
		return pr != nil && (pl.attempts == 0 || pr.Spec.Failover)
	}
	descs := pl.p.Descriptions()
	res, err := routing.Resolve(pl.intent, descs, healthy)
	if pl.attempts == 0 && err == nil {
		// Session affinity (a layer's bardo.route.prefer): the provider
		// whose prompt cache is warm serves the intent when it can — only
		// when it satisfies the intent, never in place of a requirement.
		if want := annotation(pl.x.Meta.Annotations, AnnotationPrefer); want != "" && want != res.Provider {
			for i := range descs {
				if descs[i].ID == want {
					if r2, err2 := routing.Resolve(pl.intent, descs[i:i+1], healthy); err2 == nil && len(r2.Degraded) <= len(res.Degraded) {
						res = r2
					}
					break
				}
			}
		}
	}
	if err != nil {
		if pl.attempts > 0 {
			return nil, "", nil // failover exhausted: report the upstream failure
		}
		return nil, "", resolveError(err)
	}
	pl.attempts++
	pl.failed[res.Provider] = true // a second resolve must choose another
	pr := pl.p.Provider(res.Provider)
	x := pl.x
	if len(res.Degraded) > 0 {
		x.Degraded = append(x.Degraded, res.Degraded...)
	}
	if pl.intent.Subsystem != "" {
		// Every attempt: the profile's parameters and reasoning members
		// depend on the resolved provider's style.
		applyProfile(x, &pl.profile, pl.p.Config.Profile, pl.intent.Subsystem, &res)
	}
	pl.emitResolved(&res)
	x.Headers = setKV(x.Headers, HeaderIntent, pl.source())
	x.Headers = setKV(x.Headers, HeaderCostEst, strconv.FormatFloat(res.EstimatedCostUSD, 'f', 6, 64))
	return pr, res.Model, nil
}

// emitResolved reports the resolution, and the profile's approximations for
// it, on the operator's event stream (the spec's provider:resolved and
// inference:profile_degraded).
func (pl *planner) emitResolved(res *routing.Resolution) {
	ev := pl.g.Events
	if ev == nil {
		return
	}
	rid := pl.x.Meta.RequestID
	ev.Emit(eventlog.ProviderResolved, rid, map[string]any{
		"subsystem": pl.intent.Subsystem, "source": pl.source(), "provider": res.Provider, "model": res.Model,
		"features": res.Features.AppendNames(nil), "degraded": res.Degraded, "pass": res.Pass,
		"attempt": pl.attempts, "estimated_cost_usd": res.EstimatedCostUSD,
	})
	var notes []string
	for _, d := range pl.x.Degraded {
		if n, ok := strings.CutPrefix(d, profileNote); ok {
			notes = append(notes, n)
		}
	}
	if len(notes) > 0 {
		ev.Emit(eventlog.ProfileDegraded, rid, map[string]any{"subsystem": pl.intent.Subsystem, "provider": res.Provider, "degraded": notes})
	}
}

func (pl *planner) source() string {
	if pl.built.Source == "task" {
		return "task:" + pl.built.Task.String()
	}
	if pl.intent.Subsystem != "" {
		return "subsystem:" + pl.intent.Subsystem
	}
	return pl.built.Source
}

// resolveError turns a resolver failure into the caller's error: a private
// request with no private provider fails closed (403), an intent nothing in
// the catalogs satisfies is the caller's to change (400), and one only
// unhealthy providers would serve is temporary (503).
func resolveError(err error) *wire.Error {
	var re *routing.ResolveError
	msg := err.Error()
	switch {
	case errors.Is(err, routing.ErrPrivateUnavailable):
		return &wire.Error{Status: 403, Kind: wire.ErrPermission, Message: msg + "; the request was not sent anywhere"}
	case errors.As(err, &re) && re.Unhealthy != "", errors.Is(err, routing.ErrUnhealthy):
		return &wire.Error{Status: 503, Kind: wire.ErrOverloaded, RetryAfterMs: 30_000, Message: msg}
	case errors.Is(err, routing.ErrModelNotFound):
		return &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: msg}
	}
	return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: msg}
}

// annotation returns the last value of key in anns, or "".
func annotation(anns []wire.KV, key string) string {
	for i := len(anns) - 1; i >= 0; i-- {
		if anns[i].Key == key {
			return anns[i].Value
		}
	}
	return ""
}

// setKV replaces or adds key in kvs (headers, whose names are
// case-insensitive, and annotations, whose keys are lower-case).
func setKV(kvs []wire.KV, key, value string) []wire.KV {
	for i := range kvs {
		if strings.EqualFold(kvs[i].Key, key) {
			kvs[i].Value = value
			return kvs
		}
	}
	return append(kvs, wire.KV{Key: key, Value: value})
}
