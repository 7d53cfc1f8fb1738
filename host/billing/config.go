package billing

import (
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
)

// FromConfig is the meter's Config for pipeline.toml's [billing] table over
// st: each tier's keys the file sets replace DefaultTiers' values, the
// rest keep them. The caller sets Log (and may set Now).
func FromConfig(b config.Billing, st Store) Config {
	c := Config{Store: st, MaxBatch: b.MaxBatch, MaxBacklog: b.MaxBacklog, CommitWait: b.CommitWait, Refresh: b.Refresh}
	if len(b.Tiers) == 0 {
		return c
	}
	c.Tiers = map[store.Tier]Tier{}
	for name, o := range b.Tiers {
		t := DefaultTiers[store.Tier(name)]
		if o.SpreadBps != nil {
			t.Spread = pricing.Spread(*o.SpreadBps)
		}
		if o.RequestsPerMinute != nil {
			t.RequestsPerMinute = *o.RequestsPerMinute
		}
		if o.TokensPerHour != nil {
			t.TokensPerHour = *o.TokensPerHour
		}
		c.Tiers[store.Tier(name)] = t
	}
	return c
}
