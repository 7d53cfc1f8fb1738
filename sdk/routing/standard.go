package routing

import (
	"math"
	"path"
)

// CostScale is the blended price, in USD per million tokens, at which a
// model's cost score reaches 0. It is the normalising constant of the spec's
// backend score (MAX_COST), not a price: the score is logarithmic below it,
// so that a model at a tenth of another's price gains the same whatever the
// price range ($0.10 vs $1, or $3 vs $30).
const CostScale = 100.0

// logCostScale is log10(1 + CostScale), computed once.
var logCostScale = math.Log10(1 + CostScale)

// StandardResolve is the resolve() every provider gets unless it brings its
// own: the provider's policy decides whether it takes the intent at all;
// then its catalog is filtered (required features, security class, quality
// floor, latency budget) and the remaining models are scored by the spec's
// backend score — cost against latency and wanted features, with weights
// that shift with cost sensitivity (CheapestOnly: price alone). Ties keep
// catalog order. An explicitly requested model is looked up instead (see
// Intent.Model). It allocates nothing.
func StandardResolve(p *ProviderDescription, in *Intent) (Resolution, bool) {
	// A model named with this provider's id as prefix is addressed to it:
	// the policy's gates do not apply (the caller chose the provider).
	model, pinned := in.Model, false
	if rest, ok := cutProviderPrefix(model, p.ID); ok {
		model, pinned = rest, true
	}
	if !pinned && len(p.Policy.Subsystems) > 0 && !containsString(p.Policy.Subsystems, in.Subsystem) {
		return Resolution{}, false
	}
	if in.Security > Standard && !p.Traits.Private {
		return Resolution{}, false
	}
	secReq := in.Security.required()
	wants := in.Wants()
	if in.Security > Standard {
		wants |= Features(Privacy) | secReq
	}
	// A specialist takes only intents that want what it specialises in,
	// and answers them with a model that has it.
	served := wants & p.Policy.Serves
	diem := p.Policy.DiemFunded && in.DiemAvailable
	if !pinned && p.Policy.Serves != 0 && served == 0 && !diem {
		return Resolution{}, false
	}
	if model != "" {
		return resolveExplicit(p, in, model, secReq)
	}
	if diem {
		served = 0
	}

	floor := in.Quality
	if in.Relaxed && floor > Minimum {
		floor--
	}
	need := in.Require | secReq
	free := diem && p.Traits.Payment == PaymentDiem
	tin, tout := tokens(in)
	// A self-funding provider (Bankr) pays from the agent's revenue
	// wallet: only models the wallet affords are candidates, so a tight
	// budget (a low sustainability ratio) finds a cheaper model rather
	// than none.
	budget := math.Inf(1)
	if p.Traits.SelfFunding && !free {
		if budget = walletBudget(in); budget < 0 {
			return Resolution{}, false
		}
	}
	w := weightsFor(in.CostSensitivity)
	nWanted := float64(wants.Len())

	// Candidates are ranked by tier, then score. In pass 1 every candidate
	// is tier 0. In pass 2 a model lacking a dropped requirement, or one
	// level below the quality floor, is a fallback: requirements weigh more
	// than the level (death asks for visible thinking at Maximum; a High
	// model that shows its thinking beats a Maximum one that does not).
	best, bestTier := -1, math.MaxInt
	bestScore := math.Inf(-1)
	for i := range p.Models {
		m := &p.Models[i]
		f := m.Features | p.Features
		if f&need != need {
			continue
		}
		if served != 0 && f&served == 0 {
			continue
		}
		level := m.Level()
		if level < floor {
			continue
		}
		if in.MaxLatencyMs > 0 && m.LatencyMs > in.MaxLatencyMs {
			continue
		}
		if !free && callCost(m, tin, tout) > budget {
			continue
		}
		tier := 2 * (in.Dropped &^ f).Len()
		if level < in.Quality {
			tier++
		}
		if tier > bestTier {
			continue
		}
		price := 0.0
		if !free {
			price = blended(m, tin, tout)
		}
		var score float64
		if p.Policy.CheapestOnly {
			score = -price
		} else {
			// The spec's quality term is the same for every model of a
			// tier (all meet its floor), so it drops out.
			fs := 0.0
			if nWanted > 0 {
				fs = float64((f & wants).Len()) / nWanted
			}
			score = w.cost*costScore(price) + w.latency*latencyScore(m.LatencyMs, in.MaxLatencyMs) + w.feature*fs
		}
		if tier < bestTier || score > bestScore {
			best, bestTier, bestScore = i, tier, score
		}
	}
	if best < 0 {
		return Resolution{}, false
	}
	m := &p.Models[best]
	return p.resolution(m, m.ID, free, tin, tout), true
}

// callCost is what one call of the intent's size costs on m, in USD.
func callCost(m *ModelInfo, tin, tout int64) float64 {
	return (m.InputPrice*float64(tin) + m.OutputPrice*float64(tout)) / 1e6
}

// resolveExplicit serves an explicitly requested model: found in the
// catalog (or matched by a pattern), with every required feature. Quality,
// latency and cost do not apply.
func resolveExplicit(p *ProviderDescription, in *Intent, model string, secReq FeatureSet) (Resolution, bool) {
	free := p.Policy.DiemFunded && in.DiemAvailable && p.Traits.Payment == PaymentDiem
	tin, tout := tokens(in)
	need := in.Require | secReq
	if m := p.Find(model); m != nil {
		if (m.Features|p.Features)&need != need {
			return Resolution{}, false
		}
		// Even a model asked for by name is refused when the agent's
		// wallet cannot pay for it.
		if p.Traits.SelfFunding && !free && callCost(m, tin, tout) > walletBudget(in) {
			return Resolution{}, false
		}
		return p.resolution(m, m.ID, free, tin, tout), true
	}
	for _, pat := range p.ModelPatterns {
		if ok, _ := path.Match(pat, model); ok {
			// Not in the catalog: only the provider's own features are
			// known, and the price is unknown (0).
			if p.Features&need != need {
				return Resolution{}, false
			}
			m := ModelInfo{ID: model}
			r := p.resolution(&m, model, free, tin, tout)
			r.Quality = QualityUnset
			return r, true
		}
	}
	return Resolution{}, false
}

// Find returns the catalog entry for a model id, or nil. An exact id wins;
// otherwise a vendor prefix on either side is ignored, so that
// "anthropic/claude-opus-4-6" finds "claude-opus-4-6" and the reverse.
func (p *ProviderDescription) Find(model string) *ModelInfo {
	for i := range p.Models {
		if p.Models[i].ID == model {
			return &p.Models[i]
		}
	}
	want := baseName(model)
	for i := range p.Models {
		if baseName(p.Models[i].ID) == want {
			return &p.Models[i]
		}
	}
	return nil
}

func (p *ProviderDescription) resolution(m *ModelInfo, id string, free bool, tin, tout int64) Resolution {
	cost := 0.0
	if !free {
		cost = (m.InputPrice*float64(tin) + m.OutputPrice*float64(tout)) / 1e6
	}
	return Resolution{
		Provider:         p.ID,
		Model:            id,
		EstimatedCostUSD: cost,
		Payment:          p.Traits.Payment,
		Features:         m.Features | p.Features,
		Quality:          m.Level(),
		LatencyMs:        m.LatencyMs,
		MaxOutput:        m.MaxOutput,
		Style:            StyleFor(p.Params, m.Family, id),
	}
}

// cutProviderPrefix returns model without a leading "<id>/".
func cutProviderPrefix(model, id string) (string, bool) {
	if id != "" && len(model) > len(id)+1 && model[len(id)] == '/' && model[:len(id)] == id {
		return model[len(id)+1:], true
	}
	return model, false
}

// baseName drops a "vendor/" prefix.
func baseName(id string) string {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '/' {
			return id[i+1:]
		}
	}
	return id
}

func tokens(in *Intent) (int64, int64) {
	tin, tout := in.InputTokens, in.OutputTokens
	if tin <= 0 {
		tin = DefaultInputTokens
	}
	if tout <= 0 {
		tout = DefaultOutputTokens
	}
	return tin, tout
}

// blended is the model's price per million tokens for the call's mix of
// input and output tokens.
func blended(m *ModelInfo, tin, tout int64) float64 {
	return (m.InputPrice*float64(tin) + m.OutputPrice*float64(tout)) / float64(tin+tout)
}

// costScore maps a blended price to 1 (free) … 0 (CostScale or more),
// logarithmically.
func costScore(price float64) float64 {
	if price <= 0 {
		return 1
	}
	s := 1 - math.Log10(1+price)/logCostScale
	if s < 0 {
		return 0
	}
	return s
}

// latencyScore is the spec's 1 − latency/budget; an unknown latency scores
// as half the budget, an unlimited budget scores everyone 1.
func latencyScore(lat, budget int64) float64 {
	if budget <= 0 {
		return 1
	}
	if lat <= 0 {
		return 0.5
	}
	s := 1 - float64(lat)/float64(budget)
	if s < 0 {
		return 0
	}
	return s
}

type weights struct{ cost, quality, latency, feature float64 }

// weightsFor returns the spec's backend-score weights for a cost
// sensitivity, normalised to sum to 1:
//
//	cost    0.25 + cs·0.35   (0.25 → 0.60)
//	quality 0.40 − cs·0.20   (0.40 → 0.20)
//	latency 0.15
//	feature 0.20 − cs·0.10   (0.20 → 0.10)
func weightsFor(cs float64) weights {
	if !(cs >= 0) { // also NaN
		cs = 0
	} else if cs > 1 {
		cs = 1
	}
	w := weights{0.25 + cs*0.35, 0.40 - cs*0.20, 0.15, 0.20 - cs*0.10}
	t := w.cost + w.quality + w.latency + w.feature
	return weights{w.cost / t, w.quality / t, w.latency / t, w.feature / t}
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
