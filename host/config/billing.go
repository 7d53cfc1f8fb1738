package config

import (
	"math"
	"sort"
	"time"
)

// Billing holds the [billing] table: the billing meter's tier terms and
// its commit bounds (host/billing, whose defaults apply to what is left
// out).
type Billing struct {
	// Tiers are the [billing.tiers.<tier>] overrides, by tier name (free,
	// pro, golem); only the keys the file sets are non-nil.
	Tiers map[string]BillingTier
	// MaxBatch bounds the settlements one transaction commits (0: default).
	MaxBatch int
	// MaxBacklog is the number of settlements waiting for a commit at which
	// new paid requests are refused with 503 (0: default).
	MaxBacklog int
	// CommitWait bounds how long a request waits for its settlement's
	// commit before its bill shows the meter's figures (0: default).
	CommitWait time.Duration
	// Refresh is how old an account's cached balance may grow (0: default).
	Refresh time.Duration
	// Journal is journal = false's inverse: nil or true journals each
	// settlement in the data directory so a request does not wait for its
	// commit (host/billing README, "The journal").
	Journal *bool
}

// JournalOn reports whether settlements are journaled (the default).
func (b Billing) JournalOn() bool { return b.Journal == nil || *b.Journal }

// BillingTier overrides one tier's terms; nil fields keep the defaults.
type BillingTier struct {
	// SpreadBps is spread_percent in basis points (25 % = 2500).
	SpreadBps         *int32
	RequestsPerMinute *int
	TokensPerHour     *int64
}

var (
	billingKeys     = []string{"tiers", "max_batch", "max_backlog", "commit_wait", "refresh", "journal"}
	billingTierKeys = []string{"spread_percent", "requests_per_minute", "tokens_per_hour"}
	billingTiers    = []string{"free", "pro", "golem"}
)

func (c *checker) billing(tree map[string]any) Billing {
	const p = "billing"
	var b Billing
	v, ok := tree[p]
	if !ok {
		return b
	}
	t, ok := v.(map[string]any)
	if !ok {
		c.errf(p, "must be a table ([billing]), got %s", tomlType(v))
		return b
	}
	c.unknownKeys(t, p, billingKeys)
	positive := func(key string, max int64) int {
		n, ok := c.integer(t, p, key)
		if !ok {
			return 0
		}
		if n < 1 || n > max {
			c.errf(joinKey(p, key), "must be between 1 and %d, got %d", max, n)
			return 0
		}
		return int(n)
	}
	b.MaxBatch = positive("max_batch", 10_000)
	b.MaxBacklog = positive("max_backlog", 10_000_000)
	for key, dst := range map[string]*time.Duration{"commit_wait": &b.CommitWait, "refresh": &b.Refresh} {
		if d, ok := c.duration(t, p, key); ok {
			if d <= 0 {
				c.errf(joinKey(p, key), "must be positive, got %s", d)
			} else {
				*dst = d
			}
		}
	}
	if on, ok := c.boolean(t, p, "journal"); ok {
		b.Journal = &on
	}
	tv, ok := t["tiers"]
	if !ok {
		return b
	}
	tiers, ok := tv.(map[string]any)
	if !ok {
		c.errf(joinKey(p, "tiers"), "must be a table ([billing.tiers.<tier>]), got %s", tomlType(tv))
		return b
	}
	c.unknownKeys(tiers, joinKey(p, "tiers"), billingTiers)
	names := make([]string, 0, len(tiers))
	for name := range tiers {
		names = append(names, name)
	}
	sort.Strings(names)
	b.Tiers = map[string]BillingTier{}
	for _, name := range names {
		tp := joinKey(joinKey(p, "tiers"), name)
		tt, ok := tiers[name].(map[string]any)
		if !ok {
			c.errf(tp, "must be a table, got %s", tomlType(tiers[name]))
			continue
		}
		c.unknownKeys(tt, tp, billingTierKeys)
		var bt BillingTier
		if v, ok := tt["spread_percent"]; ok {
			if bps, ok := c.spreadBps(tp, v); ok {
				bt.SpreadBps = &bps
			}
		}
		if n, ok := c.integer(tt, tp, "requests_per_minute"); ok {
			if n < 0 || n > math.MaxInt32 {
				c.errf(joinKey(tp, "requests_per_minute"), "must be 0 (no limit) or more, got %d", n)
			} else {
				rpm := int(n)
				bt.RequestsPerMinute = &rpm
			}
		}
		if n, ok := c.integer(tt, tp, "tokens_per_hour"); ok {
			if n < 0 {
				c.errf(joinKey(tp, "tokens_per_hour"), "must be 0 (no allowance) or more, got %d", n)
			} else {
				bt.TokensPerHour = &n
			}
		}
		if isTier(name) {
			b.Tiers[name] = bt
		}
	}
	return b
}

func isTier(name string) bool {
	for _, t := range billingTiers {
		if t == name {
			return true
		}
	}
	return false
}

// spreadBps converts spread_percent (an integer or a number with at most
// two decimals, 0–1000) to basis points, exactly.
func (c *checker) spreadBps(tp string, v any) (int32, bool) {
	k := joinKey(tp, "spread_percent")
	var pct float64
	switch n := v.(type) {
	case int64:
		pct = float64(n)
	case float64:
		pct = n
	default:
		c.errf(k, "must be a number of percent such as 25 or 12.5, got %s", tomlType(v))
		return 0, false
	}
	bps := math.Round(pct * 100)
	if math.IsNaN(pct) || pct < 0 || pct > 1000 || math.Abs(pct*100-bps) > 1e-6 {
		c.errf(k, "must be between 0 and 1000 with at most two decimals, got %v", v)
		return 0, false
	}
	return int32(bps), true
}
