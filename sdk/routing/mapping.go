package routing

import "strconv"

// SchemaMode is how a response schema reaches the model.
type SchemaMode uint8

// Schema modes.
const (
	SchemaNone         SchemaMode = iota
	SchemaNative                  // response_format json_schema (Venice, OpenAI, Gemini responseSchema, ...)
	SchemaToolUse                 // Anthropic: one tool whose input is the schema (the host's structured-output translation)
	SchemaPromptGuided            // the schema goes into the system prompt and the answer is validated after
)

// Anthropic thinking budgets per effort level (spec reasoning-effort
// table); anthropicMinBudget is the API's smallest budget.
var anthropicBudget = [...]int64{EffortNone: 0, EffortLow: 1024, EffortMedium: 4096, EffortHigh: 16384, EffortMax: 65536}

const anthropicMinBudget = 1024

// Reasoning-effort values per style (spec reasoning-effort table).
var (
	openAIEffort  = [...]string{EffortNone: "none", EffortLow: "low", EffortMedium: "medium", EffortHigh: "high", EffortMax: "xhigh"}
	veniceEffort  = [...]string{EffortNone: "none", EffortLow: "low", EffortMedium: "medium", EffortHigh: "high", EffortMax: "max"}
	genericEffort = [...]string{EffortNone: "none", EffortLow: "low", EffortMedium: "medium", EffortHigh: "high", EffortMax: "high"}
)

// Prompt fallbacks for a model that cannot be told how hard to reason
// (spec graceful-degradation rule 3).
const (
	PromptAnswerDirectly = "Answer directly. Do not explain your reasoning."
	PromptStepByStep     = "Think through this step by step. Show your reasoning."
	PromptJSONPrefix     = "Respond ONLY with valid JSON matching this schema:\n"
)

// Params are an InferenceProfile translated for one provider's API. The
// adapter writes them with its own field names; which name each maps to is
// noted per field. Fields the style does not support are absent (and named
// in the degraded notes MapProfile returns).
type Params struct {
	Style ParamStyle
	// Set says which numeric fields to send.
	Set              ProfileField
	Temperature      float64
	TopP             float64
	TopK             int64
	MinP             float64
	FrequencyPenalty float64
	PresencePenalty  float64
	MaxTokens        int64
	Seed             int64
	Stop             []string

	// Thinking and ThinkingBudget are Anthropic's thinking
	// {type: "enabled", budget_tokens}.
	Thinking       bool
	ThinkingBudget int64
	// Effort is the reasoning-effort value of the other styles: Venice
	// reasoning.effort, OpenAI reasoning_effort, OpenRouter reasoning.effort,
	// Gemini thinking_level, generic reasoning_effort. Empty: not sent.
	Effort string
	// VisibleThinking asks for the reasoning text: Venice
	// strip_thinking_response=false, OpenAI a reasoning summary, Anthropic
	// thinking blocks, others the reasoning field. HideThinking asks Venice
	// to strip it.
	VisibleThinking bool
	HideThinking    bool
	// SystemPrefix is prepended to the system prompt (reasoning-effort
	// prompt fallback); SystemSuffix appended (prompt-guided JSON).
	SystemPrefix string
	SystemSuffix string

	Schema       SchemaMode
	SchemaName   string
	SchemaJSON   []byte
	SchemaStrict bool
	// SchemaForceTool forces the schema tool (tool_choice). Anthropic
	// refuses forced tool use with thinking, so it is false then.
	SchemaForceTool bool

	PromptCacheKey  string // Venice and OpenAI prompt_cache_key
	CacheControl    bool   // cache_control markers on static blocks
	WebSearch       bool   // Venice venice_parameters.enable_web_search
	ModelSuffix     string // Venice "-tee"
	PredictedOutput string // OpenAI prediction.content
}

// MapProfile translates a profile for one provider style (Resolution.Style;
// StyleByFamily counts as generic) and the resolved model's features (caps;
// 0 when unknown, in which case model-dependent support is assumed and the
// upstream is left to ignore what it does not know). The second result
// lists every approximation or dropped field as degraded notes
// ("min_p:0.1>top_p:0.9", "reasoning_effort:max>high",
// "response_schema>prompt-guided", "web_search:unsupported", ...), nil when
// the profile maps exactly. Temperature, top_p, max_tokens and stop are
// always passed (the host clamps ranges for the upstream's dialect).
//
// Beyond the spec's table it applies the providers' documented
// incompatibilities so that a mapped request is valid: Anthropic thinking
// admits no temperature or top_k, top_p only ≥ 0.95, and needs max_tokens
// above the budget; OpenAI reasoning models take no sampling parameters
// while reasoning.
func MapProfile(p *InferenceProfile, style ParamStyle, caps FeatureSet) (Params, []string) {
	if style == StyleByFamily {
		style = StyleGeneric
	}
	m := mapper{p: p, caps: caps, out: Params{Style: style}}
	m.sampling(style)
	m.reasoning(style)
	m.schema(style)
	m.extras(style)
	return m.out, m.notes
}

type mapper struct {
	p     *InferenceProfile
	caps  FeatureSet
	out   Params
	notes []string
}

func (m *mapper) note(s string) { m.notes = append(m.notes, s) }

// modelDep reports whether a model-dependent feature is available: assumed
// when the model's features are unknown.
func (m *mapper) modelDep(f Feature) bool { return m.caps == 0 || m.caps.Has(f) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (m *mapper) sampling(style ParamStyle) {
	p, o := m.p, &m.out
	o.Stop = p.Stop
	if p.Has(FieldTemperature) {
		o.Set |= FieldTemperature
		o.Temperature = p.Temperature
	}
	if p.Has(FieldTopP) {
		o.Set |= FieldTopP
		o.TopP = p.TopP
	}
	if p.Has(FieldMaxTokens) {
		o.Set |= FieldMaxTokens
		o.MaxTokens = p.MaxTokens
	}
	var topK, minP, penalties, seed bool
	switch style {
	case StyleVenice:
		topK, minP, penalties, seed = true, m.modelDep(MinP), true, true
	case StyleAnthropic:
		topK = true
	case StyleOpenAI:
		penalties, seed = true, true
	case StyleGemini:
		topK, penalties, seed = true, true, true
	default: // OpenRouter, generic: whatever the model takes
		topK, minP, penalties, seed = m.modelDep(TopK), m.modelDep(MinP), true, m.modelDep(Seed)
	}
	if p.Has(FieldTopK) {
		if topK {
			o.Set |= FieldTopK
			o.TopK = p.TopK
		} else {
			m.note("top_k:dropped")
		}
	}
	if p.Has(FieldMinP) {
		switch {
		case minP:
			o.Set |= FieldMinP
			o.MinP = p.MinP
		case !p.Has(FieldTopP):
			// Spec rule 2: approximate min_p by nucleus sampling.
			o.Set |= FieldTopP
			o.TopP = 1 - p.MinP
			m.note("min_p:" + ftoa(p.MinP) + ">top_p:" + ftoa(o.TopP))
		default:
			m.note("min_p:dropped")
		}
	}
	for _, f := range [...]struct {
		field ProfileField
		v     float64
		dst   *float64
		name  string
	}{
		{FieldFrequencyPenalty, p.FrequencyPenalty, &o.FrequencyPenalty, "frequency_penalty"},
		{FieldPresencePenalty, p.PresencePenalty, &o.PresencePenalty, "presence_penalty"},
	} {
		if p.Has(f.field) {
			if penalties {
				o.Set |= f.field
				*f.dst = f.v
			} else {
				m.note(f.name + ":dropped")
			}
		}
	}
	if p.Has(FieldSeed) {
		if seed {
			o.Set |= FieldSeed
			o.Seed = p.Seed
		} else {
			m.note("seed:dropped")
		}
	}
}

func (m *mapper) reasoning(style ParamStyle) {
	p, o := m.p, &m.out
	e := p.ReasoningEffort
	visible := p.VisibleThinking == On
	if e == EffortUnset && !visible {
		if p.VisibleThinking == Off && style == StyleVenice {
			o.HideThinking = true
		}
		return
	}
	switch style {
	case StyleAnthropic:
		if !m.modelDep(AdaptiveThinking) {
			m.promptFallback(e)
			if visible {
				m.note("visible_thinking:unsupported")
			}
			return
		}
		budget := int64(0)
		if e != EffortUnset {
			budget = anthropicBudget[e]
		}
		if visible && budget == 0 {
			// Thinking blocks need thinking: the smallest budget.
			if e == EffortNone {
				m.note("reasoning_effort:none>low")
			}
			budget = anthropicMinBudget
		}
		if budget > 0 {
			o.Thinking, o.ThinkingBudget, o.VisibleThinking = true, budget, visible
			m.anthropicThinkingLimits()
		}
	case StyleVenice:
		if e != EffortUnset {
			if !m.modelDep(ReasoningEffort) {
				m.promptFallback(e)
			} else {
				o.Effort = veniceEffort[e]
				if e == EffortMax && !m.caps.Has(MaxEffort) {
					// Venice's "max" exists on few models (Opus 4.6 at the
					// time of the spec); the catalog says which.
					o.Effort = "high"
					m.note("reasoning_effort:max>high")
				}
			}
		}
		m.visible(visible, VisibleThinking)
		o.HideThinking = p.VisibleThinking == Off
	case StyleOpenAI:
		if e != EffortUnset {
			if !m.modelDep(ReasoningEffort) {
				m.promptFallback(e)
			} else {
				o.Effort = openAIEffort[e]
				if e != EffortNone {
					m.openAIReasoningLimits()
				}
			}
		}
		m.visible(visible, ReasoningEffort)
	default: // OpenRouter, Gemini, generic
		if e != EffortUnset {
			if !m.modelDep(ReasoningEffort) {
				m.promptFallback(e)
			} else {
				o.Effort = genericEffort[e]
				if e == EffortMax {
					m.note("reasoning_effort:max>high")
				}
			}
		}
		m.visible(visible, VisibleThinking)
	}
}

// visible asks for the reasoning text when the model can give it.
func (m *mapper) visible(want bool, capability Feature) {
	if !want {
		return
	}
	if m.modelDep(capability) {
		m.out.VisibleThinking = true
	} else {
		m.note("visible_thinking:unsupported")
	}
}

// promptFallback is spec rule 3: a model that cannot be told how hard to
// reason is told in the system prompt.
func (m *mapper) promptFallback(e Effort) {
	switch e {
	case EffortUnset:
		return
	case EffortNone:
		m.out.SystemPrefix = PromptAnswerDirectly
	case EffortHigh, EffortMax:
		m.out.SystemPrefix = PromptStepByStep
	}
	m.note("reasoning_effort:" + e.String() + ">prompt")
}

// anthropicThinkingLimits makes a thinking request valid: no temperature or
// top_k, top_p at least 0.95, max_tokens above the budget (max_tokens
// counts the thinking; the answer keeps the room the profile asked for).
func (m *mapper) anthropicThinkingLimits() {
	o := &m.out
	if o.Set&FieldTemperature != 0 {
		o.Set &^= FieldTemperature
		m.note("temperature:dropped-with-thinking")
	}
	if o.Set&FieldTopK != 0 {
		o.Set &^= FieldTopK
		m.note("top_k:dropped-with-thinking")
	}
	if o.Set&FieldTopP != 0 && o.TopP < 0.95 {
		m.note("top_p:" + ftoa(o.TopP) + ">0.95")
		o.TopP = 0.95
	}
	if o.Set&FieldMaxTokens != 0 && o.MaxTokens <= o.ThinkingBudget {
		n := o.ThinkingBudget + o.MaxTokens
		m.note("max_tokens:" + strconv.FormatInt(o.MaxTokens, 10) + ">" + strconv.FormatInt(n, 10))
		o.MaxTokens = n
	}
}

// openAIReasoningLimits: OpenAI reasoning models reject sampling
// parameters unless reasoning is off.
func (m *mapper) openAIReasoningLimits() {
	o := &m.out
	if !m.caps.Has(ReasoningEffort) {
		return // not known to be a reasoning model: leave it to the upstream
	}
	if o.Set&FieldTemperature != 0 {
		o.Set &^= FieldTemperature
		m.note("temperature:dropped-with-reasoning")
	}
	if o.Set&FieldTopP != 0 {
		o.Set &^= FieldTopP
		m.note("top_p:dropped-with-reasoning")
	}
}

func (m *mapper) schema(style ParamStyle) {
	s := m.p.ResponseSchema
	if s == nil {
		return
	}
	o := &m.out
	o.SchemaName, o.SchemaJSON, o.SchemaStrict = s.Name, s.Schema, s.Strict
	switch style {
	case StyleAnthropic:
		o.Schema = SchemaToolUse
		o.SchemaForceTool = !o.Thinking
		if o.Thinking {
			m.note("response_schema:tool-unforced-with-thinking")
		}
		return
	case StyleOpenAI, StyleGemini:
		o.Schema = SchemaNative
		return
	}
	if m.modelDep(StructuredOutputs) {
		o.Schema = SchemaNative
		return
	}
	// Spec rule 4: prompt-guided JSON, validated after the answer.
	o.Schema = SchemaPromptGuided
	if len(s.Schema) > 0 {
		o.SystemSuffix = PromptJSONPrefix + string(s.Schema)
	}
	m.note("response_schema>prompt-guided")
}

func (m *mapper) extras(style ParamStyle) {
	p, o := m.p, &m.out
	// Caching hints are provider-exclusive and silently ignored elsewhere
	// (spec rule 6: no functional degradation, only a higher price).
	if p.PromptCacheKey != "" && (style == StyleVenice || style == StyleOpenAI) {
		o.PromptCacheKey = p.PromptCacheKey
	}
	if p.CacheControl == On && (style == StyleVenice || style == StyleAnthropic) {
		o.CacheControl = true
	}
	// Provider-exclusive features are dropped where unsupported, and
	// reported (spec rule 5).
	if p.WebSearch == On {
		if style == StyleVenice {
			o.WebSearch = true
		} else {
			m.note("web_search:unsupported")
		}
	}
	if p.TEEMode == On {
		if style == StyleVenice && m.modelDep(TEE) {
			o.ModelSuffix = "-tee"
		} else {
			m.note("tee_mode:unsupported")
		}
	}
	if p.PredictedOutput != "" {
		if style == StyleOpenAI && m.modelDep(PredictedOutputs) {
			o.PredictedOutput = p.PredictedOutput
		} else {
			m.note("predicted_output:unsupported")
		}
	}
}

// minAnswer is the room a thinking budget leaves for the answer itself
// when a model's output limit forces the budget down.
const minAnswer = 1024

// FitOutput fits the mapped parameters under a model's output limit
// (maxOutput, thinking included; 0 = unknown, nothing changes): the
// spec's Anthropic budgets go up to 65,536 tokens, above what some models
// may produce at all, and the API refuses such a request. A thinking
// budget is cut to leave minAnswer for the answer (never under the
// smallest budget), max_tokens to the limit. It returns the degraded notes.
func (o *Params) FitOutput(maxOutput int64) []string {
	if maxOutput <= 0 {
		return nil
	}
	var notes []string
	if o.Thinking && o.ThinkingBudget+minAnswer > maxOutput {
		b := max(maxOutput-minAnswer, anthropicMinBudget)
		if b < o.ThinkingBudget {
			notes = append(notes, "thinking_budget:"+strconv.FormatInt(o.ThinkingBudget, 10)+">"+strconv.FormatInt(b, 10))
			o.ThinkingBudget = b
		}
	}
	if o.Set&FieldMaxTokens != 0 && o.MaxTokens > maxOutput {
		notes = append(notes, "max_tokens:"+strconv.FormatInt(o.MaxTokens, 10)+">"+strconv.FormatInt(maxOutput, 10))
		o.MaxTokens = maxOutput
	}
	return notes
}
