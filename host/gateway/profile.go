package gateway

import (
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// applyProfile fills the sampling parameters the caller left unset from the
// subsystem's inference profile, mapped for the resolved provider and model
// (sdk/routing.MapProfile): a risk assessment runs cool, a dream warm. The
// caller's own values always win. What the mapping had to approximate is
// added to X-Bardo-Degraded ("profile:…"). Reasoning depth (Anthropic
// thinking budgets, reasoning_effort) is mapped but not yet sent: it needs
// dialect-specific fields the canonical request does not carry.
func applyProfile(x *pipeline.Exchange, subsystem string, res *routing.Resolution) {
	prof, ok := routing.DefaultProfile(subsystem)
	if !ok {
		return
	}
	params, notes := routing.MapProfile(&prof, res.Style, res.Features)
	p := &x.Req.Params
	changed := false
	set := func(field routing.ProfileField, flag uint32, apply func()) {
		if params.Set&field != 0 && p.Set&flag == 0 {
			apply()
			p.Set |= flag
			changed = true
		}
	}
	set(routing.FieldTemperature, wire.HasTemperature, func() { p.Temperature = params.Temperature })
	set(routing.FieldTopP, wire.HasTopP, func() { p.TopP = params.TopP })
	set(routing.FieldTopK, wire.HasTopK, func() { p.TopK = params.TopK })
	set(routing.FieldMaxTokens, wire.HasMaxTokens, func() { p.MaxTokens = params.MaxTokens })
	set(routing.FieldSeed, wire.HasSeed, func() { p.Seed = params.Seed })
	if changed {
		x.Pristine = false
	}
	for _, n := range notes {
		x.Degraded = append(x.Degraded, "profile:"+n)
	}
}
