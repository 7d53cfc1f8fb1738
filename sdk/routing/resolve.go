package routing

import (
	"errors"
	"strconv"
	"strings"
)

// Errors Resolve wraps in a *ResolveError.
var (
	// ErrNoProvider: no configured provider can serve the intent, even with
	// its requirements relaxed.
	ErrNoProvider = errors.New("no provider can serve the intent")
	// ErrPrivateUnavailable: the security class allows only private
	// providers and none of them can serve the intent. Resolve fails closed:
	// it never falls back to a provider that retains data.
	ErrPrivateUnavailable = errors.New("no private provider can serve the intent; the security class fails closed")
	// ErrModelNotFound: no provider serves the explicitly requested model.
	ErrModelNotFound = errors.New("no provider serves the requested model")
	// ErrUnhealthy: providers that could serve the intent exist but are all
	// unhealthy.
	ErrUnhealthy = errors.New("every provider that could serve the intent is unhealthy")
)

// ResolveError says which intent failed and why (Err is one of the Err*
// values above).
type ResolveError struct {
	Subsystem string
	Model     string
	Security  SecurityClass
	// Unhealthy names a provider that would have served but is unhealthy
	// (with ErrUnhealthy).
	Unhealthy string
	Err       error
}

func (e *ResolveError) Error() string {
	var b strings.Builder
	b.WriteString("routing: ")
	if e.Subsystem != "" {
		b.WriteString("subsystem " + strconv.Quote(e.Subsystem) + ": ")
	}
	if e.Model != "" {
		b.WriteString("model " + strconv.Quote(e.Model) + ": ")
	}
	if e.Security > Standard {
		b.WriteString("security class " + e.Security.String() + ": ")
	}
	b.WriteString(e.Err.Error())
	if e.Unhealthy != "" {
		b.WriteString(" (" + e.Unhealthy + " would serve it)")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *ResolveError) Unwrap() error { return e.Err }

// Resolve walks the providers in their configured order and returns the
// first resolution (first match wins; the order is the operator's statement
// of preference, so routing stays predictable and debuggable).
//
// Pass 1 is strict. Pass 2 runs only when pass 1 found nothing: required
// features become preferences, the latency budget doubles and a provider may
// go one quality level below the intent's floor; the resolution's Degraded
// then names what was compromised. A security class above Standard admits
// only providers with the Private trait in both passes and fails closed with
// ErrPrivateUnavailable. healthy (nil: all healthy) skips providers that are
// down; to fail over after an upstream error, resolve again with the failed
// provider reported unhealthy.
//
// An explicit model with a prefix naming a configured provider
// ("venice/deepseek-r1") is served by that provider only, whatever its
// policy (custom resolvers receive the prefixed id and should do the same).
//
// Resolve does not modify in and, when nothing is degraded, allocates
// nothing.
func Resolve(in *Intent, providers []ProviderDescription, healthy func(id string) bool) (Resolution, error) {
	cur := *in
	pinned := -1
	if in.Model != "" {
		pinned = pin(in.Model, providers)
	}
	for pass := 1; pass <= 2; pass++ {
		if pass == 2 {
			cur = relax(cur)
		}
		for i := range providers {
			p := &providers[i]
			if pinned >= 0 && i != pinned {
				continue
			}
			if cur.Security > Standard && !p.Traits.Private {
				continue
			}
			if healthy != nil && !healthy(p.ID) {
				continue
			}
			r, ok := p.resolve(&cur)
			if !ok {
				continue
			}
			// Fail closed even against a lenient custom resolver.
			if cur.Security > Standard && !r.Features.HasAll(cur.Security.required()) {
				continue
			}
			finish(&r, in, pass)
			return r, nil
		}
	}
	return Resolution{}, failure(in, &cur, providers, pinned, healthy)
}

// pin returns the index of the configured provider the model's prefix
// names (the longest id wins: "direct/openai" over "direct"), or -1. The
// model keeps its prefix: the provider recognises it (see StandardResolve).
func pin(model string, providers []ProviderDescription) int {
	best, bestLen := -1, 0
	for i := range providers {
		id := providers[i].ID
		if _, ok := cutProviderPrefix(model, id); ok && len(id) > bestLen {
			best, bestLen = i, len(id)
		}
	}
	return best
}

// relax is the spec's pass-2 intent: requirements become preferences and
// the latency budget doubles; Relaxed lets providers go one quality level
// lower, Dropped remembers what was required.
func relax(in Intent) Intent {
	in.Prefer |= in.Require
	in.Dropped = in.Require
	in.Require = 0
	if in.MaxLatencyMs > 0 && in.MaxLatencyMs < 1<<62 {
		in.MaxLatencyMs *= 2
	}
	in.Relaxed = true
	return in
}

// finish records the pass and everything the resolution falls short of the
// original intent in.
func finish(r *Resolution, in *Intent, pass int) {
	r.Pass = pass
	r.Missing = in.Wants() &^ r.Features
	explicit := in.Model != ""
	lowQuality := !explicit && in.Quality != QualityUnset && r.Quality != QualityUnset && r.Quality < in.Quality
	slow := !explicit && in.MaxLatencyMs > 0 && r.LatencyMs > in.MaxLatencyMs
	if r.Missing == 0 && !lowQuality && !slow {
		return
	}
	r.Degraded = r.Missing.AppendNames(r.Degraded)
	if lowQuality {
		r.Degraded = append(r.Degraded, "quality:"+in.Quality.String()+">"+r.Quality.String())
	}
	if slow {
		r.Degraded = append(r.Degraded, "max_latency_ms:"+strconv.FormatInt(in.MaxLatencyMs, 10)+">"+strconv.FormatInt(r.LatencyMs, 10))
	}
}

// failure builds the error for an intent no provider served. It asks the
// unhealthy providers whether they would have (the error path can afford
// it) so that an outage is not reported as a configuration problem.
func failure(in, relaxed *Intent, providers []ProviderDescription, pinned int, healthy func(string) bool) error {
	e := &ResolveError{Subsystem: in.Subsystem, Model: in.Model, Security: in.Security, Err: ErrNoProvider}
	switch {
	case in.Security > Standard:
		e.Err = ErrPrivateUnavailable
	case in.Model != "":
		e.Err = ErrModelNotFound
	}
	if healthy == nil {
		return e
	}
	for i := range providers {
		p := &providers[i]
		if (pinned >= 0 && i != pinned) || healthy(p.ID) {
			continue
		}
		if relaxed.Security > Standard && !p.Traits.Private {
			continue
		}
		if _, ok := p.resolve(relaxed); ok {
			e.Err, e.Unhealthy = ErrUnhealthy, p.ID
			break
		}
	}
	return e
}
