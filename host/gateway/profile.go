package gateway

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Annotations the inference profile writes for the provider being tried, so
// that adapters building their own bodies (BodyRaw, e.g. Gemini), which never
// see Exchange.ProfileMembers, can honour the reasoning depth too.
const (
	// AnnotationReasoningEffort is the reasoning effort the profile asks of
	// this provider: the value its style's own member carries
	// (reasoning_effort / reasoning.effort: none, low, medium, high, xhigh,
	// max), or for the Anthropic style the profile's level behind the
	// thinking budget. Absent when the profile asks nothing, the model is
	// told in the system prompt instead, or the caller's settings win.
	AnnotationReasoningEffort = "bardo.profile.reasoning_effort"
	// AnnotationVisibleThinking is "true" when the profile wants the
	// reasoning text back (visible_thinking) and the model can give it.
	AnnotationVisibleThinking = "bardo.profile.visible_thinking"
)

// profileNote prefixes the profile's degraded notes in X-Bardo-Degraded.
const profileNote = "profile:"

// Notes of the caller-wins rules: the profile's reasoning was not enabled
// because the caller's own request could not be valid with it.
const (
	noteCallerSampling = "reasoning_effort:dropped-caller-sampling"
	noteForcedTool     = "reasoning_effort:dropped-forced-tool"
)

// reasoningMembers are the body members a caller sets reasoning with, in
// any dialect: when one is present the caller chose its own reasoning.
var reasoningMembers = [...]string{"thinking", "reasoning_effort", "reasoning"}

// profileBase is the request as the caller and the layers left it, before
// any profile. Every attempt maps the profile afresh from it: what one
// provider style needs (no temperature with Anthropic thinking, no top_p for
// an OpenAI reasoning model, a max_tokens above the thinking budget) would
// leave another style's request invalid after a failover.
type profileBase struct {
	saved  bool
	params wire.Params
	system []wire.Block
}

// profilePlan is a subsystem's profile mapped for one attempt.
type profilePlan struct {
	params  routing.Params // what to fill where the caller set nothing
	notes   []string       // degraded notes, without the "profile:" prefix
	members []byte         // Exchange.ProfileMembers; nil: none
	effort  string         // AnnotationReasoningEffort; "": none
}

// applyProfile maps the subsystem's inference profile for the resolved
// provider and model (sdk/routing.MapProfile) onto the attempt about to be
// made: it fills the sampling parameters the caller left unset (a risk
// assessment runs cool, a dream warm), sets the reasoning depth as body
// members of the provider's style (Exchange.ProfileMembers: Anthropic
// thinking, reasoning_effort, reasoning.effort) and as annotations, and
// prepends the prompt fallback for a model that cannot be told how hard to
// reason. The caller's own values always win. What the mapping had to
// approximate or drop is added to X-Bardo-Degraded ("profile:…"). It runs
// on every attempt: the previous attempt's effects are undone first.
//
// profile looks the subsystem's profile up: the running pipeline.toml's
// (config.Config.Profile: the defaults with the operator's override).
func applyProfile(x *pipeline.Exchange, base *profileBase, profile func(string) (routing.InferenceProfile, bool), subsystem string, res *routing.Resolution) {
	if !base.saved {
		base.saved, base.params, base.system = true, x.Req.Params, x.Req.System
	} else {
		x.Req.Params, x.Req.System = base.params, base.system
	}
	x.ProfileMembers = nil
	x.Meta.Annotations = withoutKV(withoutKV(x.Meta.Annotations, AnnotationReasoningEffort), AnnotationVisibleThinking)
	x.Degraded = slices.DeleteFunc(x.Degraded, func(d string) bool { return strings.HasPrefix(d, profileNote) })

	prof, ok := profile(subsystem)
	if !ok {
		return
	}
	pl := planProfile(&prof, res, x.Req, x.Meta.Dialect)
	params := &pl.params
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
	if params.SystemPrefix != "" {
		// The model cannot be told how hard to reason: it is told in the
		// system prompt (spec graceful-degradation rule 3), ahead of the
		// caller's own instructions. A new slice: base.system stays the
		// caller's for the next attempt.
		sys := make([]wire.Block, 0, len(x.Req.System)+1)
		sys = append(sys, wire.Block{Type: wire.BlockText, Text: params.SystemPrefix})
		x.Req.System = append(sys, x.Req.System...)
		changed = true
	}
	if changed {
		x.Pristine = false
	}
	x.ProfileMembers = pl.members
	if pl.effort != "" {
		x.Meta.Annotations = setKV(x.Meta.Annotations, AnnotationReasoningEffort, pl.effort)
		if params.VisibleThinking {
			x.Meta.Annotations = setKV(x.Meta.Annotations, AnnotationVisibleThinking, "true")
		}
	}
	for _, n := range pl.notes {
		addDegraded(x, profileNote+n)
	}
}

// planProfile maps prof for one provider style and model (caps: its
// features) and applies the caller-wins rules against req, the request as
// the caller (dialect) sent it:
//
//   - a caller that sets its own reasoning member (thinking,
//     reasoning_effort, reasoning) keeps it: no member is added, and the
//     sampling parameters stay mapped for reasoning;
//   - Anthropic thinking is not enabled when the caller set temperature or
//     top_k, a top_p below 0.95 or a max_tokens not above the budget, or
//     forces a tool (also the one an OpenAI caller's response_format
//     becomes): the API refuses those with thinking. Nor is OpenAI
//     reasoning on a reasoning model when the caller set temperature or
//     top_p. The profile is then mapped without reasoning, noted
//     "reasoning_effort:dropped-…";
//   - Anthropic thinking with no max_tokens from anyone gets the budget plus
//     the encoder's default answer room: the default alone is not above
//     any budget.
func planProfile(prof *routing.InferenceProfile, res *routing.Resolution, req *wire.Request, dialect wire.Dialect) profilePlan {
	style, caps := res.Style, res.Features
	params, notes := routing.MapProfile(prof, style, caps)
	pl := profilePlan{params: params, notes: notes}
	for _, name := range reasoningMembers {
		if jsonscan.HasMember(req.Extra, name) {
			return pl
		}
	}
	if drop := reasoningConflict(&params, caps, req, dialect); drop != "" {
		off := *prof
		off.ReasoningEffort, off.VisibleThinking = routing.EffortUnset, routing.Unset
		pl.params, pl.notes = routing.MapProfile(&off, style, caps)
		pl.notes = append(pl.notes, drop)
		pl.notes = append(pl.notes, pl.params.FitOutput(res.MaxOutput)...)
		return pl
	}
	if params.Thinking && params.Set&routing.FieldMaxTokens == 0 && req.Params.Set&wire.HasMaxTokens == 0 {
		n := params.ThinkingBudget + anthropic.DefaultMaxTokens
		pl.params.Set |= routing.FieldMaxTokens
		pl.params.MaxTokens = n
		pl.notes = append(pl.notes, "max_tokens:"+strconv.Itoa(anthropic.DefaultMaxTokens)+">"+strconv.FormatInt(n, 10))
	}
	// The model's output limit bounds the budget and max_tokens: the
	// spec's largest budget is above what some models may produce.
	pl.notes = append(pl.notes, pl.params.FitOutput(res.MaxOutput)...)
	switch {
	case params.Thinking:
		b := append([]byte(nil), `{"thinking":{"type":"enabled","budget_tokens":`...)
		b = strconv.AppendInt(b, pl.params.ThinkingBudget, 10)
		pl.members = append(b, "}}"...)
		pl.effort = prof.ReasoningEffort.String()
		if prof.ReasoningEffort <= routing.EffortNone {
			pl.effort = routing.EffortLow.String() // visible thinking alone: the smallest budget
		}
	case params.Effort != "":
		var b []byte
		switch params.Style {
		case routing.StyleOpenRouter, routing.StyleVenice:
			b = append(b, `{"reasoning":{"effort":`...)
			b = strconv.AppendQuote(b, params.Effort)
			b = append(b, "}}"...)
		default: // OpenAI, Gemini through OpenAI compatibility, generic
			b = append(b, `{"reasoning_effort":`...)
			b = strconv.AppendQuote(b, params.Effort)
			b = append(b, '}')
		}
		pl.members = b
		pl.effort = params.Effort
	}
	// min_p where the provider takes it (Venice, OpenRouter, generic
	// servers; elsewhere MapProfile turned it into top_p or dropped it,
	// noted): the wire's sampling parameters have no field for it.
	if pl.params.Set&routing.FieldMinP != 0 {
		pl.members = addMember(pl.members, "min_p", strconv.AppendFloat(nil, pl.params.MinP, 'g', -1, 64))
	}
	return pl
}

// reasoningConflict names the note when the caller's own request cannot be
// valid with the reasoning the mapping asks for, or returns "".
func reasoningConflict(params *routing.Params, caps routing.FeatureSet, req *wire.Request, dialect wire.Dialect) string {
	c := &req.Params
	switch {
	case params.Thinking:
		if c.Set&(wire.HasTemperature|wire.HasTopK) != 0 ||
			(c.Set&wire.HasTopP != 0 && c.TopP < 0.95) ||
			(c.Set&wire.HasMaxTokens != 0 && c.MaxTokens <= params.ThinkingBudget) {
			return noteCallerSampling
		}
		if forcesTool(req) {
			return noteForcedTool
		}
		if _, _, ok := responseFormat(req.Extra); ok && dialect == wire.DialectOpenAI {
			return noteForcedTool
		}
	case params.Style == routing.StyleOpenAI && params.Effort != "" && params.Effort != "none" && caps.Has(routing.ReasoningEffort):
		// MapProfile's rule for OpenAI reasoning models: no sampling
		// parameters while reasoning.
		if c.Set&(wire.HasTemperature|wire.HasTopP) != 0 {
			return noteCallerSampling
		}
	}
	return ""
}

// withoutKV returns kvs without key (annotation keys are lower-case).
func withoutKV(kvs []wire.KV, key string) []wire.KV {
	return slices.DeleteFunc(kvs, func(kv wire.KV) bool { return kv.Key == key })
}
