package pipeline

import (
	"strings"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/routing"
)

// PricedModel is one provider's catalog entry for a model: what billing
// prices an attempt at, and what a budget downgrade compares.
type PricedModel struct {
	Provider string
	Model    *catalog.Model
	// Family is the model's vendor family as the provider describes it
	// ("anthropic", "openai"…), else as its id says (FamilyOf).
	Family string
	// Features are the model's resolver features, the provider's shared
	// ones included.
	Features routing.FeatureSet
}

// priceIndex maps a model id to its entries at the enabled providers, in
// pipeline.toml order, and a family to the ids priced in it. Built with the
// descriptions, so a refreshed catalog's new prices take effect where its
// models do.
type priceIndex struct {
	byModel  map[string][]PricedModel
	byFamily map[string][]string
}

// Priced returns the model's entries at the enabled providers that list it
// in their (static or refreshed) catalogs, in pipeline.toml order. A
// provider that serves the model by pattern only is not among them: it
// lists no price.
func (p *Pipeline) Priced(model string) []PricedModel {
	if idx := p.priceIndex(); idx != nil {
		return idx.byModel[model]
	}
	return nil
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

// PricedFamily returns the ids of the priced models of a family (what a
// budget downgrade chooses among), in no particular order.
func (p *Pipeline) PricedFamily(family string) []string {
	if idx := p.priceIndex(); idx != nil {
		return idx.byFamily[family]
	}
	return nil
}

func (p *Pipeline) priceIndex() *priceIndex {
	p.Descriptions() // rebuilds the index when a refreshed catalog changed
	return p.prices.Load()
}

// FamilyOf guesses a model's family from its id when no catalog names it:
// the "vendor/" prefix of aggregator ids, else the id's first word.
func FamilyOf(id string) string {
	if i := strings.IndexByte(id, '/'); i > 0 {
		return id[:i]
	}
	switch {
	case strings.HasPrefix(id, "claude"):
		return "anthropic"
	case strings.HasPrefix(id, "gpt"), strings.HasPrefix(id, "o1"), strings.HasPrefix(id, "o3"), strings.HasPrefix(id, "o4"):
		return "openai"
	case strings.HasPrefix(id, "gemini"):
		return "google"
	}
	if i := strings.IndexAny(id, "-:."); i > 0 {
		return id[:i]
	}
	return id
}

// indexPrices builds the price index from the providers' catalogs and
// their descriptions (which say each model's family and features).
func indexPrices(catalogs map[string][]catalog.Model, order []string, descs []routing.ProviderDescription) priceIndex {
	idx := priceIndex{byModel: map[string][]PricedModel{}, byFamily: map[string][]string{}}
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
			if pm.Family == "" {
				pm.Family = FamilyOf(m.ID)
			}
			if len(idx.byModel[m.ID]) == 0 {
				idx.byFamily[pm.Family] = append(idx.byFamily[pm.Family], m.ID)
			}
			idx.byModel[m.ID] = append(idx.byModel[m.ID], pm)
		}
	}
	return idx
}
