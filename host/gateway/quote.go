package gateway

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/pricing"
	hostrouting "github.com/bardoinference/bardo/host/routing"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/savings"
	"github.com/bardoinference/bardo/sdk/wire"
)

// bytesPerToken is how a reservation turns a request's bytes into input
// tokens: JSON and prose run 3.5–4.5 bytes a token, so 3 over-estimates,
// which is what a reservation must do (it is released, not charged).
const bytesPerToken = 3

// estimate fills a's reservation inputs: the input tokens, the answer's
// bound and the quotes, from the request and the pipeline's catalogs.
func estimate(a *Admission, p *pipeline.Pipeline, req *wire.Request, body []byte) {
	a.InputTokens = int64(len(body)+bytesPerToken-1) / bytesPerToken
	a.MaxTokens = DefaultMaxTokens
	if req.Params.Set&wire.HasMaxTokens != 0 && req.Params.MaxTokens > 0 {
		a.MaxTokens = int64(req.Params.MaxTokens)
	} else if out := maxOutput(p, req.Model); out > 0 {
		a.MaxTokens = out
	}
	a.Quotes = func() []Quote { return quotes(p, req, a.InputTokens, a.MaxTokens) }
}

// maxOutput is the largest max output any provider's catalog gives model.
func maxOutput(p *pipeline.Pipeline, model string) int64 {
	var out int64
	for _, m := range p.Priced(model) {
		out = max(out, m.Model.MaxOutput)
	}
	return out
}

// dearest returns the highest prices any enabled provider asks for model,
// token kind by token kind, so a reservation at them covers any route.
func dearest(p *pipeline.Pipeline, model string) (pricing.Prices, bool) {
	var best pricing.Prices
	found := false
	for _, m := range p.Priced(model) {
		pr := pricing.PricesOf(m.Model, pricing.ConventionFor(model))
		if !pr.Known() {
			continue
		}
		if !found {
			best, found = pr, true
			continue
		}
		best.Input = maxPrice(best.Input, pr.Input)
		best.Output = maxPrice(best.Output, pr.Output)
		best.CacheRead = maxPrice(best.CacheRead, pr.CacheRead)
		best.CacheWrite = maxPrice(best.CacheWrite, pr.CacheWrite)
		best.Assumed |= pr.Assumed
	}
	return best, found
}

func maxPrice[P interface{ Nanos() int64 }](a, b P) P {
	if b.Nanos() > a.Nanos() {
		return b
	}
	return a
}

// quotes prices the asked model, then its cheaper equivalents, dearest
// first: models of the same family that some enabled provider prices and
// that have what the request cannot do without (tools, vision). A model
// no provider prices has no quote, and neither do its equivalents: there
// is nothing to compare them with. It walks the asked model's family (the
// pipeline's price index groups them), not every catalog entry: it runs on
// every paid request.
func quotes(p *pipeline.Pipeline, req *wire.Request, in, out int64) []Quote {
	asked, ok := dearest(p, req.Model)
	if !ok {
		return nil
	}
	family := pipeline.FamilyOf(req.Model)
	if ms := p.Priced(req.Model); len(ms) > 0 {
		family = ms[0].Family
	}
	need := hostrouting.ShapeRequires(req)
	cost := func(pr pricing.Prices) int64 {
		return pr.Input.Cost(in) + pr.Output.Cost(out)
	}
	top := cost(asked)
	qs := []Quote{{Model: req.Model, Prices: asked}}
	for _, id := range p.PricedFamily(family) {
		if id == req.Model || !hasFeatures(p.Priced(id), need) {
			continue
		}
		if pr, ok := dearest(p, id); ok && cost(pr) < top {
			qs = append(qs, Quote{Model: id, Prices: pr})
		}
	}
	slices.SortStableFunc(qs[1:], func(a, b Quote) int {
		return cmp.Or(cmp.Compare(cost(b.Prices), cost(a.Prices)), strings.Compare(a.Model, b.Model))
	})
	return qs
}

// hasFeatures reports whether some provider's entry for a model has need.
func hasFeatures(ms []pipeline.PricedModel, need routing.FeatureSet) bool {
	for _, m := range ms {
		if m.Features.HasAll(need) {
			return true
		}
	}
	return false
}

// price fills s's prices from the pipeline: the serving provider's entry
// for the model that served, or for a cache hit (no provider) the asked
// model's dearest, which is what the caller would have paid.
func price(s *Settlement, p *pipeline.Pipeline) {
	if p == nil {
		return
	}
	if s.Provider != "" && s.Model != "" {
		if m, ok := p.PricedAt(s.Provider, s.Model); ok {
			s.Prices = pricing.PricesOf(m.Model, pricing.ConventionFor(s.Model))
			s.Priced = s.Prices.Known()
		}
		return
	}
	if s.Asked != "" {
		s.Prices, s.Priced = dearest(p, s.Asked)
	}
}

// optimizations reads what the layers measured they saved from the
// exchange's X-Bardo-* headers (sdk/savings).
func optimizations(hs []wire.KV) pricing.Optimizations {
	var o pricing.Optimizations
	for _, kv := range hs {
		switch {
		case strings.EqualFold(kv.Key, savings.HeaderPrunedTokens):
			o.PrunedTokens = tokens(kv.Value)
		case strings.EqualFold(kv.Key, savings.HeaderCompressedTokens):
			o.CompressedTokens = tokens(kv.Value)
		case strings.EqualFold(kv.Key, savings.HeaderCacheBreakpoints):
			o.AlignedCache = tokens(kv.Value) > 0
		}
	}
	return o
}

// tokens parses a layer's token count; anything else counts 0.
func tokens(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
