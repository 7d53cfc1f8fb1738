package routing

import (
	"errors"
	"math"
	"sort"
	"strconv"
)

// Effort is a reasoning-effort level, normalised across providers (see
// MapProfile for each provider's values). The zero value is "unset":
// provider default.
type Effort uint8

// Reasoning-effort levels.
const (
	EffortUnset Effort = iota
	EffortNone
	EffortLow
	EffortMedium
	EffortHigh
	EffortMax
)

var effortNames = [...]string{"", "none", "low", "medium", "high", "max"}

// String returns the level's wire name.
func (e Effort) String() string {
	if int(e) < len(effortNames) {
		return effortNames[e]
	}
	return "unknown"
}

// ParseEffort parses "none", "low", "medium", "high", "max" (also
// "maximum", "xhigh"), ignoring ASCII case.
func ParseEffort(s string) (Effort, error) {
	for e := EffortNone; e <= EffortMax; e++ {
		if nameEq(effortNames[e], s) {
			return e, nil
		}
	}
	if nameEq("maximum", s) || nameEq("xhigh", s) {
		return EffortMax, nil
	}
	return EffortUnset, &NameError{Kind: "reasoning effort", Name: s, Err: ErrUnknownName}
}

// MarshalText implements encoding.TextMarshaler.
func (e Effort) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (e *Effort) UnmarshalText(b []byte) error {
	v, err := ParseEffort(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// Toggle is an optional boolean: unset (provider default), off or on.
type Toggle uint8

// Toggle values.
const (
	Unset Toggle = iota
	Off
	On
)

// IsOn reports whether t is On.
func (t Toggle) IsOn() bool { return t == On }

// ProfileField names the numeric fields of an InferenceProfile, whose zero
// value is meaningful (temperature 0), so that "set" is a bit rather than a
// pointer (no allocation, and the profile stays a plain value).
type ProfileField uint32

// Numeric profile fields.
const (
	FieldTemperature ProfileField = 1 << iota
	FieldTopP
	FieldTopK
	FieldMinP
	FieldFrequencyPenalty
	FieldPresencePenalty
	FieldMaxTokens
	FieldSeed
)

// ResponseSchema is a structured-output schema.
type ResponseSchema struct {
	Name   string // e.g. "RiskAssessment"
	Schema []byte // JSON Schema; nil when the subsystem supplies it per call
	Strict bool
}

// InferenceProfile says how the model should reason for one call —
// sampling, reasoning depth, output format, caching hints — independently of
// which provider serves it (spec: InferenceProfile). Unset fields mean
// "provider default". MapProfile turns it into one provider's parameters.
type InferenceProfile struct {
	// Set says which numeric fields are set.
	Set ProfileField

	Temperature      float64
	TopP             float64
	TopK             int64
	MinP             float64
	FrequencyPenalty float64
	PresencePenalty  float64
	MaxTokens        int64
	Seed             int64

	ReasoningEffort Effort
	VisibleThinking Toggle
	ResponseSchema  *ResponseSchema
	Stop            []string

	// PromptCacheKey routes calls to a server with a warm cache (Venice,
	// OpenAI). See CacheKey.
	PromptCacheKey string
	// WantsCacheKey marks subsystems whose calls should carry a per-golem
	// prompt cache key (the host fills PromptCacheKey with CacheKey when it
	// knows the golem).
	WantsCacheKey bool
	// CacheControl asks for cache_control markers on static blocks
	// (Anthropic models).
	CacheControl Toggle
	WebSearch    Toggle // Venice
	TEEMode      Toggle // Venice: model suffix -tee
	// PredictedOutput is OpenAI's predicted output (the expected text).
	PredictedOutput string
}

// Has reports whether a numeric field is set.
func (p *InferenceProfile) Has(f ProfileField) bool { return p.Set&f != 0 }

// IsZero reports whether nothing is set.
func (p *InferenceProfile) IsZero() bool {
	return p.Set == 0 && p.ReasoningEffort == EffortUnset && p.VisibleThinking == Unset &&
		p.ResponseSchema == nil && len(p.Stop) == 0 && p.PromptCacheKey == "" && !p.WantsCacheKey &&
		p.CacheControl == Unset && p.WebSearch == Unset && p.TEEMode == Unset && p.PredictedOutput == ""
}

// ProfileSpec is one row of the per-subsystem parameter tables.
type ProfileSpec struct {
	Name    string
	Profile InferenceProfile
	// Locked profiles cannot be overridden by configuration (risk,
	// death_reflect, operator): an override is refused with a warning and
	// the defaults are kept.
	Locked bool
}

func schema(name string) *ResponseSchema { return &ResponseSchema{Name: name, Strict: true} }

// Profiles are the spec's per-subsystem parameter tables (waking, dream,
// hypnagogic and terminal subsystems). Where the table gives a temperature
// range (hypnagogic onset), the profile holds the start of the range; the
// caller anneals within it (spec: Dali cosine schedule). Schemas carry their
// name only; the subsystem supplies the JSON Schema per call.
var Profiles = [...]ProfileSpec{
	// Waking.
	{Name: "heartbeat_t1", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.3, TopP: 0.9,
		ReasoningEffort: EffortLow, ResponseSchema: schema("HeartbeatDecision"), CacheControl: On}},
	{Name: "heartbeat_t2", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.5, TopP: 0.95,
		ReasoningEffort: EffortHigh, ResponseSchema: schema("HeartbeatDecision"), CacheControl: On}},
	{Name: "risk", Locked: true, Profile: InferenceProfile{Set: FieldTemperature | FieldTopP | FieldTopK, Temperature: 0.1, TopP: 0.85, TopK: 40,
		ReasoningEffort: EffortMax, ResponseSchema: schema("RiskAssessment"), CacheControl: On}},
	{Name: "daimon", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.4, TopP: 0.9,
		ReasoningEffort: EffortLow, ResponseSchema: schema("DaimonAppraisal")}},
	{Name: "daimon_complex", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.6, TopP: 0.95,
		ReasoningEffort: EffortHigh, VisibleThinking: On, ResponseSchema: schema("DaimonAppraisal")}},
	{Name: "curator", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.3, TopP: 0.9,
		ReasoningEffort: EffortMedium, ResponseSchema: schema("CuratorEvaluation"), CacheControl: On}},
	// playbook's cache column says predicted_output: the caller supplies
	// the current PLAYBOOK.md as PredictedOutput.
	{Name: "playbook", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.4, TopP: 0.9,
		ReasoningEffort: EffortMedium}},
	{Name: "operator", Locked: true, Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.7, TopP: 0.95,
		ReasoningEffort: EffortHigh, CacheControl: On}},
	{Name: "mind_wandering", Profile: InferenceProfile{Set: FieldTemperature | FieldMinP, Temperature: 0.8, MinP: 0.1,
		ReasoningEffort: EffortNone}},

	// Dream.
	{Name: "dream_nrem", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.4, TopP: 0.9,
		ReasoningEffort: EffortMedium, ResponseSchema: schema("ReplayAnalysis"), WantsCacheKey: true}},
	{Name: "dream_rem", Profile: InferenceProfile{Set: FieldTemperature | FieldMinP, Temperature: 0.9, MinP: 0.1,
		ReasoningEffort: EffortHigh, VisibleThinking: On, WantsCacheKey: true, WebSearch: On}},
	{Name: "dream_rem_creative", Profile: InferenceProfile{Set: FieldTemperature | FieldMinP, Temperature: 1.2, MinP: 0.08,
		ReasoningEffort: EffortMedium}},
	{Name: "dream_integration", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.3, TopP: 0.85,
		ReasoningEffort: EffortHigh, ResponseSchema: schema("DreamIntegration"), TEEMode: On}},
	{Name: "dream_threat", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.5, TopP: 0.9,
		ReasoningEffort: EffortHigh, ResponseSchema: schema("ThreatAssessment"), WantsCacheKey: true}},

	// Hypnagogic.
	{Name: "hypnagogic_induction", Profile: InferenceProfile{Set: FieldTemperature | FieldMinP, Temperature: 1.0, MinP: 0.1,
		ReasoningEffort: EffortNone}},
	{Name: "hypnagogic_dali", Profile: InferenceProfile{Set: FieldTemperature | FieldMinP, Temperature: 1.2, MinP: 0.08,
		ReasoningEffort: EffortNone}},
	{Name: "hypnagogic_observer", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.3, TopP: 0.85,
		ReasoningEffort: EffortNone, ResponseSchema: schema("FragmentEvaluation")}},
	{Name: "hypnagogic_capture", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.5, TopP: 0.9,
		ReasoningEffort: EffortLow, ResponseSchema: schema("CaptureResult")}},
	{Name: "hypnopompic_return", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.6, TopP: 0.9,
		ReasoningEffort: EffortLow}},

	// Terminal.
	{Name: "death_reflect", Locked: true, Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.5, TopP: 0.95,
		ReasoningEffort: EffortMax, VisibleThinking: On}},
	{Name: "death_testament", Profile: InferenceProfile{Set: FieldTemperature | FieldTopP, Temperature: 0.4, TopP: 0.9,
		ReasoningEffort: EffortHigh, VisibleThinking: On, ResponseSchema: schema("DeathTestament"), TEEMode: On}},
}

// LookupProfile returns the table row for a subsystem, or nil.
func LookupProfile(subsystem string) *ProfileSpec {
	for i := range Profiles {
		if Profiles[i].Name == subsystem {
			return &Profiles[i]
		}
	}
	return nil
}

// DefaultProfile returns a subsystem's default profile (a copy; its
// ResponseSchema is shared and must not be modified), or the zero profile
// (provider defaults) and false for a subsystem without one.
func DefaultProfile(subsystem string) (InferenceProfile, bool) {
	if s := LookupProfile(subsystem); s != nil {
		return s.Profile, true
	}
	return InferenceProfile{}, false
}

// ProfileLocked reports whether a subsystem's profile is locked.
func ProfileLocked(subsystem string) bool {
	s := LookupProfile(subsystem)
	return s != nil && s.Locked
}

// ConfiguredProfile merges an owner's override (bardo.toml
// [inference.profiles.<subsystem>]) into the subsystem's defaults: fields
// the override sets win, the others keep the defaults. A locked profile
// refuses any override: the defaults come back unchanged with a warning the
// caller must log.
func ConfiguredProfile(subsystem string, override *InferenceProfile) (p InferenceProfile, warning string) {
	p, _ = DefaultProfile(subsystem)
	if override == nil || override.IsZero() {
		return p, ""
	}
	if ProfileLocked(subsystem) {
		return p, "inference profile " + strconv.Quote(subsystem) + " is locked (safety-critical); configured override ignored, defaults kept"
	}
	return Overlay(p, override), ""
}

// Overlay returns base with every field o sets replaced by o's value.
func Overlay(base InferenceProfile, o *InferenceProfile) InferenceProfile {
	set := func(f ProfileField, dst *float64, v float64) {
		if o.Set&f != 0 {
			*dst = v
		}
	}
	set(FieldTemperature, &base.Temperature, o.Temperature)
	set(FieldTopP, &base.TopP, o.TopP)
	set(FieldMinP, &base.MinP, o.MinP)
	set(FieldFrequencyPenalty, &base.FrequencyPenalty, o.FrequencyPenalty)
	set(FieldPresencePenalty, &base.PresencePenalty, o.PresencePenalty)
	if o.Set&FieldTopK != 0 {
		base.TopK = o.TopK
	}
	if o.Set&FieldMaxTokens != 0 {
		base.MaxTokens = o.MaxTokens
	}
	if o.Set&FieldSeed != 0 {
		base.Seed = o.Seed
	}
	base.Set |= o.Set
	if o.ReasoningEffort != EffortUnset {
		base.ReasoningEffort = o.ReasoningEffort
	}
	if o.VisibleThinking != Unset {
		base.VisibleThinking = o.VisibleThinking
	}
	if o.ResponseSchema != nil {
		base.ResponseSchema = o.ResponseSchema
	}
	if len(o.Stop) > 0 {
		base.Stop = o.Stop
	}
	if o.PromptCacheKey != "" {
		base.PromptCacheKey = o.PromptCacheKey
	}
	if o.WantsCacheKey {
		base.WantsCacheKey = true
	}
	if o.CacheControl != Unset {
		base.CacheControl = o.CacheControl
	}
	if o.WebSearch != Unset {
		base.WebSearch = o.WebSearch
	}
	if o.TEEMode != Unset {
		base.TEEMode = o.TEEMode
	}
	if o.PredictedOutput != "" {
		base.PredictedOutput = o.PredictedOutput
	}
	return base
}

// ErrProfileKey is returned (wrapped) for a configuration key that is not a
// profile field or has a value of the wrong type.
var ErrProfileKey = errors.New("bad inference profile key")

// ParseProfileOverride reads one [inference.profiles.<subsystem>] table as
// decoded by a TOML or JSON library (string keys; float64/int64/int/string/
// bool values). Keys: temperature, top_p, top_k, min_p, frequency_penalty,
// presence_penalty, max_tokens, seed, reasoning_effort, visible_thinking,
// cache_control, web_search, tee_mode, prompt_cache_key. Keys are reported
// in sorted order so errors are stable.
func ParseProfileOverride(m map[string]any) (InferenceProfile, error) {
	var p InferenceProfile
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := setProfileKey(&p, k, m[k]); err != nil {
			return InferenceProfile{}, &NameError{Kind: "profile key", Name: k, Err: err}
		}
	}
	return p, nil
}

func setProfileKey(p *InferenceProfile, k string, v any) error {
	num := func(f ProfileField, dst *float64) error {
		x, ok := toFloat(v)
		if !ok {
			return errors.Join(ErrProfileKey, errors.New("want a number"))
		}
		*dst = x
		p.Set |= f
		return nil
	}
	integer := func(f ProfileField, dst *int64) error {
		x, ok := toFloat(v)
		if !ok || x != math.Trunc(x) {
			return errors.Join(ErrProfileKey, errors.New("want an integer"))
		}
		*dst = int64(x)
		p.Set |= f
		return nil
	}
	toggle := func(dst *Toggle) error {
		b, ok := v.(bool)
		if !ok {
			return errors.Join(ErrProfileKey, errors.New("want true or false"))
		}
		*dst = Off
		if b {
			*dst = On
		}
		return nil
	}
	switch k {
	case "temperature":
		return num(FieldTemperature, &p.Temperature)
	case "top_p":
		return num(FieldTopP, &p.TopP)
	case "min_p":
		return num(FieldMinP, &p.MinP)
	case "frequency_penalty":
		return num(FieldFrequencyPenalty, &p.FrequencyPenalty)
	case "presence_penalty":
		return num(FieldPresencePenalty, &p.PresencePenalty)
	case "top_k":
		return integer(FieldTopK, &p.TopK)
	case "max_tokens":
		return integer(FieldMaxTokens, &p.MaxTokens)
	case "seed":
		return integer(FieldSeed, &p.Seed)
	case "reasoning_effort":
		s, ok := v.(string)
		if !ok {
			return errors.Join(ErrProfileKey, errors.New("want a string"))
		}
		e, err := ParseEffort(s)
		if err != nil {
			return errors.Join(ErrProfileKey, err)
		}
		p.ReasoningEffort = e
		return nil
	case "visible_thinking":
		return toggle(&p.VisibleThinking)
	case "cache_control":
		return toggle(&p.CacheControl)
	case "web_search":
		return toggle(&p.WebSearch)
	case "tee_mode":
		return toggle(&p.TEEMode)
	case "prompt_cache_key":
		s, ok := v.(string)
		if !ok {
			return errors.Join(ErrProfileKey, errors.New("want a string"))
		}
		p.PromptCacheKey = s
		return nil
	}
	return errors.Join(ErrProfileKey, errors.New("no such field"))
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// temperatureExempt are the subsystems whose temperature mortality does not
// compress: hypnagogia (creativity is the point), death (max effort) and the
// owner's channel.
var temperatureExempt = [...]string{"hypnagogic_induction", "hypnagogic_dali", "death_reflect", "death_testament", "operator"}

// MortalityTemperature is the spec's mortality-aware temperature: as
// vitality drops, the temperature moves toward the analytical floor 0.3,
// by half the pressure: t − (t − 0.3)·(1 − vitality)·0.5.
func MortalityTemperature(t, vitality float64, subsystem string) float64 {
	for _, s := range temperatureExempt {
		if s == subsystem {
			return t
		}
	}
	if math.IsNaN(vitality) {
		return t
	}
	pressure := 1 - math.Max(0, math.Min(1, vitality))
	return t - (t-0.3)*pressure*0.5
}

// ApplyMortalityTemperature adjusts a profile's temperature, when it sets
// one, with MortalityTemperature.
func ApplyMortalityTemperature(p *InferenceProfile, vitality float64, subsystem string) {
	if p.Has(FieldTemperature) {
		p.Temperature = MortalityTemperature(p.Temperature, vitality, subsystem)
	}
}

// CacheKey is the per-golem prompt cache key of a subsystem (spec:
// golem_cache_key): "golem-<id>-<subsystem>".
func CacheKey(golemID, subsystem string) string {
	return "golem-" + golemID + "-" + subsystem
}
