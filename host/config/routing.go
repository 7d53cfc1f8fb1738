package config

import (
	"errors"
	"time"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/routing"
)

// Routing keys of a [[provider]]: what the intent resolver knows about it
// (sdk/routing). A provider without [[provider.model]] entries still serves
// explicit models by its `models` globs; intents need a catalog.
var providerRoutingKeys = []string{"traits", "model", "subsystems", "catalog_refresh", "catalog_shape", "direct"}

func (c *checker) providerRouting(p string, t map[string]any, pr *Provider) {
	if v, ok := t["traits"]; ok {
		k := joinKey(p, "traits")
		tt, ok := v.(map[string]any)
		if !ok {
			c.errf(k, "must be a table, got %s", tomlType(v))
		} else {
			c.unknownKeys(tt, k, []string{"private", "self_funding", "context_engineering", "payment"})
			if b, ok := c.boolean(tt, k, "private"); ok {
				pr.Traits.Private = b
				pr.TraitsSet |= TraitPrivate
			}
			if b, ok := c.boolean(tt, k, "self_funding"); ok {
				pr.Traits.SelfFunding = b
				pr.TraitsSet |= TraitSelfFunding
			}
			if b, ok := c.boolean(tt, k, "context_engineering"); ok {
				pr.Traits.ContextEngineering = b
				pr.TraitsSet |= TraitContextEngineering
			}
			if s, ok := c.str(tt, k, "payment"); ok {
				if err := pr.Traits.Payment.UnmarshalText([]byte(s)); err != nil {
					c.errf(joinKey(k, "payment"), `unknown payment mode %q: want "x402", "prepaid", "api_key", "diem" or "wallet"`, s)
				}
				pr.TraitsSet |= TraitPayment
			}
		}
	}
	c.strings(t, p, "subsystems", func(k string, _ int, s string) {
		if routing.LookupSubsystem(s) == nil {
			c.errf(k, "unknown subsystem %q", s)
			return
		}
		pr.Subsystems = append(pr.Subsystems, s)
	})
	if v, ok := c.boolean(t, p, "direct"); ok {
		pr.Direct = v
		if v && pr.Credential != "" {
			c.errf(joinKey(p, "direct"), "a direct provider uses the caller's own key: remove its credential")
		}
	}
	if v, ok := c.str(t, p, "catalog_refresh"); ok && v == "off" {
		pr.CatalogRefreshOff = true
	} else if ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			c.errf(joinKey(p, "catalog_refresh"), `must be a duration such as "1h", or "off", got %q`, v)
		case d < time.Minute:
			c.errf(joinKey(p, "catalog_refresh"), "must be at least 1m (a backend's catalog changes slowly), got %s", d)
		default:
			pr.CatalogRefresh = d
		}
	}
	if v, ok := c.str(t, p, "catalog_shape"); ok {
		if _, err := catalog.ParseShape(v); err != nil {
			c.errf(joinKey(p, "catalog_shape"), "%v", err)
		} else {
			pr.CatalogShape = v
		}
	}
	tables := c.entries(t, "model")
	if len(tables) == 0 {
		return
	}
	for i := range tables {
		if tables[i] == nil {
			tables[i] = map[string]any{}
		}
	}
	models, err := catalog.FromTOML(pr.Name, tables)
	var ve *catalog.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, fe := range ve.Errors {
			c.errf(joinKey(indexKey(joinKey(p, "model"), fe.Index), fe.Field), "%s", fe.Msg)
		}
	case err != nil:
		c.errf(joinKey(p, "model"), "%v", err)
	default:
		pr.Catalog = models
	}
}

// TraitSet names the traits a [[provider]] entry set explicitly: those
// override what the plugin's describe() says.
type TraitSet uint8

// Traits an entry can set.
const (
	TraitPrivate TraitSet = 1 << iota
	TraitSelfFunding
	TraitContextEngineering
	TraitPayment
)

// Overlay returns the plugin's self-description (the zero description for
// a plugin without describe()) with what this entry states laid over it:
// the operator's name, the traits it set, its static catalog (replacing the
// plugin's models), its `models` globs and its `subsystems`. The plugin's
// policy, parameter style, shared features and catalog URL stay.
func (p *Provider) Overlay(d routing.ProviderDescription) routing.ProviderDescription {
	d.ID = p.Name
	if p.TraitsSet&TraitPrivate != 0 {
		d.Traits.Private = p.Traits.Private
	}
	if p.TraitsSet&TraitSelfFunding != 0 {
		d.Traits.SelfFunding = p.Traits.SelfFunding
	}
	if p.TraitsSet&TraitContextEngineering != 0 {
		d.Traits.ContextEngineering = p.Traits.ContextEngineering
	}
	if p.TraitsSet&TraitPayment != 0 {
		d.Traits.Payment = p.Traits.Payment
	}
	if len(p.Models) > 0 {
		d.ModelPatterns = p.Models
	}
	if len(p.Subsystems) > 0 {
		d.Policy.Subsystems = p.Subsystems
	}
	if len(p.Catalog) > 0 {
		d.Models = make([]routing.ModelInfo, 0, len(p.Catalog))
		for i := range p.Catalog {
			d.Models = append(d.Models, p.Catalog[i].Info())
		}
	}
	return d
}
