package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

func mustProfile(t *testing.T, subsystem string) routing.InferenceProfile {
	t.Helper()
	p, ok := routing.DefaultProfile(subsystem)
	if !ok {
		t.Fatalf("no profile %q", subsystem)
	}
	return p
}

// The reasoning members per provider style, for risk (effort max) and
// mind_wandering (effort none), straight from MapProfile's Params.
func TestProfileMembersPerStyle(t *testing.T) {
	var (
		thinking = routing.Features(routing.AdaptiveThinking)
		effort   = routing.Features(routing.ReasoningEffort)
		maxEff   = routing.Features(routing.MaxEffort)
		toolUse  = routing.Features(routing.ToolUse)
	)
	for _, c := range []struct {
		name      string
		subsystem string
		style     routing.ParamStyle
		caps      routing.FeatureSet
		members   string // "" = none
		effort    string
		prefix    string // SystemPrefix
	}{
		{"anthropic", "risk", routing.StyleAnthropic, thinking, `{"thinking":{"type":"enabled","budget_tokens":65536}}`, "max", ""},
		{"anthropic unknown caps", "risk", routing.StyleAnthropic, 0, `{"thinking":{"type":"enabled","budget_tokens":65536}}`, "max", ""},
		{"anthropic none", "mind_wandering", routing.StyleAnthropic, thinking, "", "", ""},
		{"anthropic cannot think", "risk", routing.StyleAnthropic, toolUse, "", "", routing.PromptStepByStep},
		{"openai", "risk", routing.StyleOpenAI, effort, `{"reasoning_effort":"xhigh"}`, "xhigh", ""},
		{"openai none", "mind_wandering", routing.StyleOpenAI, effort, `{"reasoning_effort":"none"}`, "none", ""},
		{"openai medium", "curator", routing.StyleOpenAI, effort, `{"reasoning_effort":"medium"}`, "medium", ""},
		{"openrouter", "risk", routing.StyleOpenRouter, effort, `{"reasoning":{"effort":"high"}}`, "high", ""},
		{"venice max", "risk", routing.StyleVenice, effort | maxEff, `{"reasoning":{"effort":"max"}}`, "max", ""},
		{"venice", "risk", routing.StyleVenice, effort, `{"reasoning":{"effort":"high"}}`, "high", ""},
		{"gemini", "risk", routing.StyleGemini, effort, `{"reasoning_effort":"high"}`, "high", ""},
		{"generic", "heartbeat_t1", routing.StyleGeneric, effort, `{"reasoning_effort":"low"}`, "low", ""},
		{"by family", "risk", routing.StyleByFamily, 0, `{"reasoning_effort":"high"}`, "high", ""},
		{"generic cannot reason", "risk", routing.StyleGeneric, toolUse, "", "", routing.PromptStepByStep},
		{"no effort in profile", "mind_wandering", routing.StyleGeneric, toolUse, "", "", routing.PromptAnswerDirectly},
	} {
		prof := mustProfile(t, c.subsystem)
		req := &wire.Request{}
		pl := planProfile(&prof, &routing.Resolution{Style: c.style, Features: c.caps}, req, wire.DialectOpenAI)
		if string(pl.members) != c.members || pl.effort != c.effort || pl.params.SystemPrefix != c.prefix {
			t.Errorf("%s: members %s effort %q prefix %q, want %s %q %q", c.name, pl.members, pl.effort, pl.params.SystemPrefix,
				c.members, c.effort, c.prefix)
		}
		if pl.members != nil && !json.Valid(pl.members) {
			t.Errorf("%s: members are not JSON: %s", c.name, pl.members)
		}
	}
}

// Anthropic thinking: the parameters the gateway fills are those of a valid
// thinking request, and a caller that set no max_tokens gets one above the
// budget (the encoder's default would be below it).
func TestProfileAnthropicThinkingParams(t *testing.T) {
	prof := mustProfile(t, "risk")
	caps := routing.Features(routing.AdaptiveThinking)
	pl := planProfile(&prof, &routing.Resolution{Style: routing.StyleAnthropic, Features: caps}, &wire.Request{}, wire.DialectAnthropic)
	p := pl.params
	if p.Set&(routing.FieldTemperature|routing.FieldTopK) != 0 || p.Set&routing.FieldTopP == 0 || p.TopP < 0.95 {
		t.Fatalf("sampling with thinking: set %b top_p %v", p.Set, p.TopP)
	}
	if p.Set&routing.FieldMaxTokens == 0 || p.MaxTokens <= p.ThinkingBudget || p.MaxTokens != 65536+4096 {
		t.Fatalf("max_tokens %d (set %v), budget %d", p.MaxTokens, p.Set&routing.FieldMaxTokens != 0, p.ThinkingBudget)
	}
	for _, n := range []string{"temperature:dropped-with-thinking", "top_k:dropped-with-thinking", "top_p:0.85>0.95", "max_tokens:4096>69632"} {
		if !slices.Contains(pl.notes, n) {
			t.Errorf("note %q missing: %v", n, pl.notes)
		}
	}
	// The caller's own max_tokens above the budget is kept: no bump.
	req := &wire.Request{Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 70000}}
	pl = planProfile(&prof, &routing.Resolution{Style: routing.StyleAnthropic, Features: caps}, req, wire.DialectAnthropic)
	if pl.members == nil || pl.params.Set&routing.FieldMaxTokens != 0 || slices.Contains(pl.notes, "max_tokens:4096>69632") {
		t.Fatalf("caller max_tokens 70000: members %s set %b notes %v", pl.members, pl.params.Set, pl.notes)
	}
}

// A model whose output limit is below the spec's budget (risk: max effort,
// 65,536 tokens) gets the budget and max_tokens fitted under the limit,
// noted, so the API does not refuse the request.
func TestProfileFitsModelOutputLimit(t *testing.T) {
	prof := mustProfile(t, "risk")
	res := &routing.Resolution{Style: routing.StyleAnthropic, Features: routing.Features(routing.AdaptiveThinking), MaxOutput: 32000}
	pl := planProfile(&prof, res, &wire.Request{}, wire.DialectAnthropic)
	p := pl.params
	if p.ThinkingBudget != 32000-1024 || p.MaxTokens != 32000 || p.MaxTokens <= p.ThinkingBudget {
		t.Fatalf("budget %d max_tokens %d, want 30976 / 32000", p.ThinkingBudget, p.MaxTokens)
	}
	if !strings.Contains(string(pl.members), `"budget_tokens":30976`) {
		t.Fatalf("members %s", pl.members)
	}
	for _, n := range []string{"thinking_budget:65536>30976", "max_tokens:69632>32000"} {
		if !slices.Contains(pl.notes, n) {
			t.Errorf("note %q missing: %v", n, pl.notes)
		}
	}
	// Unknown limit: the spec's budget as is.
	res.MaxOutput = 0
	if pl := planProfile(&prof, res, &wire.Request{}, wire.DialectAnthropic); pl.params.ThinkingBudget != 65536 {
		t.Fatalf("unknown limit changed the budget: %d", pl.params.ThinkingBudget)
	}
}

// The caller's values win: reasoning that would make the caller's request
// invalid is not enabled, the profile is mapped without it, and the note
// says so.
func TestProfileCallerWins(t *testing.T) {
	var (
		thinking = routing.Features(routing.AdaptiveThinking)
		effort   = routing.Features(routing.ReasoningEffort)
	)
	tools := []wire.Tool{{Name: "f", Schema: []byte(`{"type":"object"}`)}}
	for _, c := range []struct {
		name    string
		style   routing.ParamStyle
		caps    routing.FeatureSet
		dialect wire.Dialect
		req     wire.Request
		drop    string // the note; "" = reasoning kept
	}{
		{"temperature", routing.StyleAnthropic, thinking, wire.DialectOpenAI,
			wire.Request{Params: wire.Params{Set: wire.HasTemperature, Temperature: 0.9}}, noteCallerSampling},
		{"top_k", routing.StyleAnthropic, thinking, wire.DialectAnthropic,
			wire.Request{Params: wire.Params{Set: wire.HasTopK | wire.HasMaxTokens, TopK: 5, MaxTokens: 100000}}, noteCallerSampling},
		{"top_p below 0.95", routing.StyleAnthropic, thinking, wire.DialectAnthropic,
			wire.Request{Params: wire.Params{Set: wire.HasTopP | wire.HasMaxTokens, TopP: 0.9, MaxTokens: 100000}}, noteCallerSampling},
		{"top_p 0.97", routing.StyleAnthropic, thinking, wire.DialectAnthropic,
			wire.Request{Params: wire.Params{Set: wire.HasTopP | wire.HasMaxTokens, TopP: 0.97, MaxTokens: 100000}}, ""},
		{"max_tokens not above the budget", routing.StyleAnthropic, thinking, wire.DialectAnthropic,
			wire.Request{Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 65536}}, noteCallerSampling},
		{"forced tool", routing.StyleAnthropic, thinking, wire.DialectAnthropic,
			wire.Request{Tools: tools, ToolChoice: []byte(`{"type":"any"}`), Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 100000}}, noteForcedTool},
		{"auto tool", routing.StyleAnthropic, thinking, wire.DialectAnthropic,
			wire.Request{Tools: tools, ToolChoice: []byte(`{"type":"auto"}`), Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 100000}}, ""},
		{"response_format", routing.StyleAnthropic, thinking, wire.DialectOpenAI,
			wire.Request{Extra: []byte(`{"response_format":{"type":"json_object"}}`)}, noteForcedTool},
		{"openai reasoning model, temperature", routing.StyleOpenAI, effort, wire.DialectOpenAI,
			wire.Request{Params: wire.Params{Set: wire.HasTemperature, Temperature: 0.9}}, noteCallerSampling},
		{"openai reasoning model, top_p", routing.StyleOpenAI, effort, wire.DialectOpenAI,
			wire.Request{Params: wire.Params{Set: wire.HasTopP, TopP: 0.5}}, noteCallerSampling},
		{"openai reasoning model, max_tokens", routing.StyleOpenAI, effort, wire.DialectOpenAI,
			wire.Request{Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 10}}, ""},
		{"openai, model unknown", routing.StyleOpenAI, 0, wire.DialectOpenAI,
			wire.Request{Params: wire.Params{Set: wire.HasTemperature, Temperature: 0.9}}, ""},
		{"generic has no such rule", routing.StyleGeneric, effort, wire.DialectOpenAI,
			wire.Request{Params: wire.Params{Set: wire.HasTemperature, Temperature: 0.9}}, ""},
	} {
		prof := mustProfile(t, "risk")
		pl := planProfile(&prof, &routing.Resolution{Style: c.style, Features: c.caps}, &c.req, c.dialect)
		dropped := slices.Contains(pl.notes, c.drop)
		switch {
		case c.drop == "" && (pl.members == nil || slices.Contains(pl.notes, noteCallerSampling) || slices.Contains(pl.notes, noteForcedTool)):
			t.Errorf("%s: reasoning dropped: members %s notes %v", c.name, pl.members, pl.notes)
		case c.drop != "" && (pl.members != nil || pl.effort != "" || !dropped || pl.params.Thinking || pl.params.Effort != ""):
			t.Errorf("%s: members %s effort %q notes %v, want none and %q", c.name, pl.members, pl.effort, pl.notes, c.drop)
		}
		if c.drop != "" && c.style == routing.StyleAnthropic {
			// Without thinking the profile's own sampling applies again.
			if p := pl.params; p.Set&routing.FieldTopK == 0 || p.TopP != 0.85 || slices.Contains(pl.notes, "temperature:dropped-with-thinking") {
				t.Errorf("%s: params not mapped without thinking: set %b top_p %v notes %v", c.name, p.Set, p.TopP, pl.notes)
			}
		}
	}
}

// A caller that asks for reasoning itself keeps its own: no member is
// added (whatever the style), yet the sampling the profile fills stays
// valid for the thinking the caller enabled.
func TestProfileCallerReasoningMember(t *testing.T) {
	prof := mustProfile(t, "risk")
	caps := routing.Features(routing.AdaptiveThinking)
	for _, extra := range []string{
		`{"thinking":{"type":"enabled","budget_tokens":2048}}`,
		`{"reasoning_effort":"low"}`,
		`{"reasoning":{"effort":"low"}}`,
	} {
		req := &wire.Request{Extra: []byte(extra), Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 4096}}
		pl := planProfile(&prof, &routing.Resolution{Style: routing.StyleAnthropic, Features: caps}, req, wire.DialectAnthropic)
		if pl.members != nil || pl.effort != "" || slices.Contains(pl.notes, noteCallerSampling) {
			t.Errorf("%s: members %s effort %q notes %v", extra, pl.members, pl.effort, pl.notes)
		}
		if pl.params.Set&routing.FieldTemperature != 0 {
			t.Errorf("%s: temperature filled beside the caller's thinking", extra)
		}
	}
}

// applyProfile runs on every attempt: a failover to another style undoes
// the previous attempt's parameters, members, annotations, system prefix
// and notes, and maps again from the caller's request.
func TestApplyProfileEveryAttempt(t *testing.T) {
	x := openaiExchange(t, `{"model":"auto","messages":[{"role":"system","content":"You assess risk."},{"role":"user","content":"assess"}]}`)
	x.Meta.Annotations = []wire.KV{{Key: AnnotationSubsystem, Value: "risk"}}
	x.Degraded = []string{"citations"}
	callerSystem := append([]wire.Block(nil), x.Req.System...)
	var base profileBase
	has := func(flag uint32) bool { return x.Req.Params.Set&flag != 0 }

	// 1. Anthropic, a thinking model.
	applyProfile(x, &base, routing.DefaultProfile, "risk", &routing.Resolution{Provider: "claude", Model: "claude-opus",
		Style: routing.StyleAnthropic, Features: routing.Features(routing.AdaptiveThinking)})
	if string(x.ProfileMembers) != `{"thinking":{"type":"enabled","budget_tokens":65536}}` ||
		annotation(x.Meta.Annotations, AnnotationReasoningEffort) != "max" {
		t.Fatalf("anthropic: members %s annotations %v", x.ProfileMembers, x.Meta.Annotations)
	}
	if has(wire.HasTemperature) || has(wire.HasTopK) || x.Req.Params.TopP != 0.95 || x.Req.Params.MaxTokens != 69632 || x.Pristine {
		t.Fatalf("anthropic params %+v pristine %v", x.Req.Params, x.Pristine)
	}
	if !slices.Contains(x.Degraded, "profile:temperature:dropped-with-thinking") || !slices.Contains(x.Degraded, "citations") {
		t.Fatalf("anthropic degraded %v", x.Degraded)
	}

	// 2. Failover to an OpenAI reasoning model: no thinking member, no
	// Anthropic top_p or max_tokens left behind.
	applyProfile(x, &base, routing.DefaultProfile, "risk", &routing.Resolution{Provider: "up", Model: "gpt-5",
		Style: routing.StyleOpenAI, Features: routing.Features(routing.ReasoningEffort)})
	if string(x.ProfileMembers) != `{"reasoning_effort":"xhigh"}` || annotation(x.Meta.Annotations, AnnotationReasoningEffort) != "xhigh" {
		t.Fatalf("openai: members %s annotations %v", x.ProfileMembers, x.Meta.Annotations)
	}
	if x.Req.Params.Set != 0 { // OpenAI has no top_k either
		t.Fatalf("openai params %+v", x.Req.Params)
	}
	if slices.Contains(x.Degraded, "profile:temperature:dropped-with-thinking") || !slices.Contains(x.Degraded, "profile:temperature:dropped-with-reasoning") {
		t.Fatalf("openai degraded %v", x.Degraded)
	}

	// 3. A model that cannot reason: told in the system prompt, once.
	for range 2 {
		applyProfile(x, &base, routing.DefaultProfile, "risk", &routing.Resolution{Provider: "cheap", Model: "cheap-1",
			Style: routing.StyleGeneric, Features: routing.Features(routing.ToolUse)})
	}
	if x.ProfileMembers != nil || annotation(x.Meta.Annotations, AnnotationReasoningEffort) != "" {
		t.Fatalf("generic: members %s annotations %v", x.ProfileMembers, x.Meta.Annotations)
	}
	if len(x.Req.System) != len(callerSystem)+1 || x.Req.System[0].Text != routing.PromptStepByStep || x.Req.System[1].Text != "You assess risk." {
		t.Fatalf("generic system %+v", x.Req.System)
	}
	if x.Req.Params.Temperature != 0.1 || x.Req.Params.TopP != 0.85 || !has(wire.HasTemperature) {
		t.Fatalf("generic params %+v", x.Req.Params)
	}
	if n := strings.Count(strings.Join(x.Degraded, ","), "profile:reasoning_effort:max>prompt"); n != 1 {
		t.Fatalf("generic degraded %v", x.Degraded)
	}

	// 4. Back to a thinking model: the caller's system prompt again.
	applyProfile(x, &base, routing.DefaultProfile, "risk", &routing.Resolution{Style: routing.StyleAnthropic})
	if len(x.Req.System) != len(callerSystem) || x.Req.System[0].Text != "You assess risk." || x.ProfileMembers == nil {
		t.Fatalf("system %+v members %s", x.Req.System, x.ProfileMembers)
	}

	// 5. A subsystem without a profile clears everything.
	applyProfile(x, &base, routing.DefaultProfile, "no_such_subsystem", &routing.Resolution{Style: routing.StyleAnthropic})
	if x.ProfileMembers != nil || annotation(x.Meta.Annotations, AnnotationReasoningEffort) != "" || x.Req.Params.Set != 0 {
		t.Fatalf("no profile: members %s annotations %v params %+v", x.ProfileMembers, x.Meta.Annotations, x.Req.Params)
	}
	for _, d := range x.Degraded {
		if strings.HasPrefix(d, "profile:") {
			t.Fatalf("stale note %q", d)
		}
	}
	if annotation(x.Meta.Annotations, AnnotationSubsystem) != "risk" {
		t.Fatalf("other annotations lost: %v", x.Meta.Annotations)
	}
}

// Visible thinking reaches BodyRaw adapters as an annotation.
func TestApplyProfileVisibleThinkingAnnotation(t *testing.T) {
	x := &pipeline.Exchange{Req: &wire.Request{}, Meta: wire.Meta{Dialect: wire.DialectOpenAI}}
	var base profileBase
	applyProfile(x, &base, routing.DefaultProfile, "daimon_complex", &routing.Resolution{Style: routing.StyleGemini})
	if annotation(x.Meta.Annotations, AnnotationReasoningEffort) != "high" || annotation(x.Meta.Annotations, AnnotationVisibleThinking) != "true" {
		t.Fatalf("annotations %v", x.Meta.Annotations)
	}
	applyProfile(x, &base, routing.DefaultProfile, "risk", &routing.Resolution{Style: routing.StyleGemini})
	if annotation(x.Meta.Annotations, AnnotationVisibleThinking) != "" {
		t.Fatalf("visible thinking left behind: %v", x.Meta.Annotations)
	}
}

// min_p reaches providers that take it as a member; others get top_p.
func TestProfileMinP(t *testing.T) {
	prof := mustProfile(t, "dream_rem") // temperature 0.9, min_p 0.1, effort high
	pl := planProfile(&prof, &routing.Resolution{Style: routing.StyleOpenRouter}, &wire.Request{}, wire.DialectOpenAI)
	if string(pl.members) != `{"reasoning":{"effort":"high"},"min_p":0.1}` {
		t.Errorf("openrouter members %s", pl.members)
	}
	pl = planProfile(&prof, &routing.Resolution{Style: routing.StyleOpenAI, Features: routing.Features(routing.ReasoningEffort)}, &wire.Request{}, wire.DialectOpenAI)
	if strings.Contains(string(pl.members), "min_p") {
		t.Errorf("openai got min_p: %s", pl.members)
	}
	pl = planProfile(&prof, &routing.Resolution{Style: routing.StyleVenice}, &wire.Request{}, wire.DialectOpenAI)
	if !strings.Contains(string(pl.members), `"min_p":0.1`) {
		t.Errorf("venice members %s", pl.members)
	}
}
