package pipeline

import (
	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/routing"
)

// PricedModel is one provider's catalog entry for a model: what billing
// prices an attempt at, and what a budget downgrade compares.
type PricedModel struct {
	Provider string
	Model    *catalog.Model
	// Family is the model's vendor family as the provider describes it
	// ("anthropic", "openai"…; "" when it does not say).
	Family string
	// Features are the model's resolver features, the provider's shared
	// ones included.
	Features routing.FeatureSet
}

// priceIndex maps a model id to its entries at the enabled providers, in
// pipeline.toml order. Built with the descriptions, so a refreshed
// catalog's new prices take effect where its models do.
type priceIndex map[string][]PricedModel

// Priced returns the model's entries at the enabled providers that list it
// in their (static or refreshed) catalogs, in pipeline.toml order. A
// provider that serves the model by pattern only is not among them: it
// lists no price.
func (p *Pipeline) Priced(model string) []PricedModel {
	p.Descriptions() // rebuilds the index when a refreshed catalog changed
	idx := p.prices.Load()
	if idx == nil {
		return nil
	}
	return (*idx)[model]
}

// PricedAt returns the model's entry at provider.
func (p *Pipeline) PricedAt(provider, model string) (PricedModel, bool) {
	for _, m := range p.Priced(model) {
		if m.Provider == provider {
			return m, true
		}
	}
	return PricedModel{}, false
}

// EachPriced calls fn for every priced model entry, provider by provider.
func (p *Pipeline) EachPriced(fn func(PricedModel)) {
	p.Descriptions()
	idx := p.prices.Load()
	if idx == nil {
		return
	}
	for _, ms := range *idx {
		for _, m := range ms {
			fn(m)
		}
	}
}

// indexPrices builds the price index from the providers' catalogs and
// their descriptions (which say each model's family and features).
func indexPrices(catalogs map[string][]catalog.Model, order []string, descs []routing.ProviderDescription) priceIndex {
	idx := priceIndex{}
	for i, name := range order {
		info := map[string]*routing.ModelInfo{}
		var shared routing.FeatureSet
		if i < len(descs) {
			shared = descs[i].Features
			for j := range descs[i].Models {
				info[descs[i].Models[j].ID] = &descs[i].Models[j]
			}
		}
		ms := catalogs[name]
		for j := range ms {
			m := &ms[j]
			pm := PricedModel{Provider: name, Model: m, Features: m.Features | shared}
			if mi := info[m.ID]; mi != nil {
				pm.Family = mi.Family
				pm.Features |= mi.Features
			}
			idx[m.ID] = append(idx[m.ID], pm)
		}
	}
	return idx
}
