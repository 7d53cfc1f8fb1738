package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
)

// OpenRouter's model variants that choose how a model's providers are
// sorted: :nitro sorts them by throughput (and admits priority-tier
// endpoints), :floor by price (and admits discounted flex-tier endpoints)
// — https://openrouter.ai/docs/guides/routing/model-variants. The spec
// sends operator-facing, latency-sensitive work to :nitro and batch/dream
// work to :floor.
const (
	nitro = "nitro"
	floor = "floor"
)

// variantConfig is [provider.config.variants]. Unset fields take the
// defaults of defaultVariants.
type variantConfig struct {
	// Enabled turns the rule on or off (default on).
	Enabled *bool `json:"enabled"`
	// NitroSubsystems and FloorSubsystems name subsystems that always get
	// the variant (defaults: operator; dream). A subsystem may be in one
	// list only.
	NitroSubsystems []string `json:"nitro_subsystems"`
	FloorSubsystems []string `json:"floor_subsystems"`
	// NitroMaxLatencyMs: an intent whose latency budget is at or under it
	// gets :nitro (0: the rule is off).
	NitroMaxLatencyMs *int64 `json:"nitro_max_latency_ms"`
	// FloorMinCostSensitivity: an intent whose cost sensitivity is at or
	// above it gets :floor (0: the rule is off).
	FloorMinCostSensitivity *float64 `json:"floor_min_cost_sensitivity"`
}

// variantRule is the checked variantConfig.
type variantRule struct {
	enabled         bool
	nitroSubsystems []string
	floorSubsystems []string
	nitroLatencyMs  int64
	floorCost       float64
}

// defaultVariants: operator (the spec's "operator-facing low-latency") and
// budgets of a second or less, where the provider's speed is most of the
// budget, get :nitro; dream (the spec's cheapest path) and intents that
// are nearly all about cost get :floor.
var defaultVariants = variantRule{
	enabled:         true,
	nitroSubsystems: []string{"operator"},
	floorSubsystems: []string{"dream"},
	nitroLatencyMs:  1000,
	floorCost:       0.9,
}

func (c *variantConfig) rule() (variantRule, error) {
	r := defaultVariants
	if c == nil {
		return r, nil
	}
	if c.Enabled != nil {
		r.enabled = *c.Enabled
	}
	if c.NitroSubsystems != nil {
		r.nitroSubsystems = c.NitroSubsystems
	}
	if c.FloorSubsystems != nil {
		r.floorSubsystems = c.FloorSubsystems
	}
	for _, l := range [][]string{r.nitroSubsystems, r.floorSubsystems} {
		for _, s := range l {
			if strings.TrimSpace(s) == "" || strings.TrimSpace(s) != s {
				return r, fmt.Errorf("variants: subsystem %q: want a subsystem name", s)
			}
		}
	}
	for _, s := range r.nitroSubsystems {
		if slices.Contains(r.floorSubsystems, s) {
			return r, fmt.Errorf("variants: subsystem %q is in both nitro_subsystems and floor_subsystems; a model gets one variant", s)
		}
	}
	if v := c.NitroMaxLatencyMs; v != nil {
		if *v < 0 {
			return r, fmt.Errorf("variants: nitro_max_latency_ms %d: want milliseconds, 0 for off", *v)
		}
		r.nitroLatencyMs = *v
	}
	if v := c.FloorMinCostSensitivity; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return r, fmt.Errorf("variants: floor_min_cost_sensitivity %v: want 0 (off) to 1", *v)
		}
		r.floorCost = *v
	}
	return r, nil
}

// variant is the variant the rule gives an intent's resolved model, "" for
// none. A subsystem named in a list decides first (the operator's explicit
// word); then the latency budget, then cost. When both thresholds match
// (heartbeat_t0: 200 ms and cost sensitivity 1.0), :nitro wins: :floor
// admits flex-tier endpoints, which trade speed for price, and an intent
// with a tight latency budget must not be sent where it is likely to miss
// it, while the cheapest model is already chosen (CheapestOnly).
func (r *variantRule) variant(in *routing.Intent, model string) string {
	// An explicitly requested model is sent as named; a model that already
	// has a variant (":free", ":nitro", ...) keeps it, since OpenRouter
	// takes one.
	if !r.enabled || in.Model != "" || hasVariant(model) {
		return ""
	}
	switch {
	case slices.Contains(r.nitroSubsystems, in.Subsystem):
		return nitro
	case slices.Contains(r.floorSubsystems, in.Subsystem):
		return floor
	case r.nitroLatencyMs > 0 && in.MaxLatencyMs > 0 && in.MaxLatencyMs <= r.nitroLatencyMs:
		return nitro
	case r.floorCost > 0 && !math.IsNaN(in.CostSensitivity) && in.CostSensitivity >= r.floorCost:
		return floor
	}
	return ""
}

// resolve is the provider's resolve(): the standard answer (cheapest
// eligible model, computed natively by the host on the merged description)
// with the model's variant appended; everything else stays the standard's.
// No standard answer, no answer: the variant rule never invents a model.
func resolve(in *routing.Intent, standard *routing.Resolution) (routing.Resolution, bool) {
	if standard == nil || standard.Model == "" {
		return routing.Resolution{}, false
	}
	r := *standard
	if v := cfg.variants.variant(in, r.Model); v != "" {
		r.Model += ":" + v
		plugin.CounterAdd("openrouter_variant_"+v, 1)
	}
	return r, true
}

// hasVariant reports whether a model id carries a ":variant" suffix (after
// its vendor prefix, so a ':' in a vendor name would not count).
func hasVariant(model string) bool {
	return strings.Contains(model[strings.LastIndexByte(model, '/')+1:], ":")
}

// sortingVariant reports whether the model's variant is itself a sort
// (:nitro is provider.sort "throughput", :floor is "price"): its request
// leaves the configured sort out, so the two never contradict each other.
func sortingVariant(model string) bool {
	return strings.HasSuffix(model, ":"+nitro) || strings.HasSuffix(model, ":"+floor)
}
