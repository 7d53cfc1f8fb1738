package routing

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestProfileTables spot-checks the per-subsystem parameter tables (01
// "Per-subsystem parameter table") and the locked set.
func TestProfileTables(t *testing.T) {
	cases := []struct {
		name   string
		temp   float64
		topP   float64
		minP   float64
		topK   int64
		effort Effort
		schema string
	}{
		{"heartbeat_t1", 0.3, 0.9, 0, 0, EffortLow, "HeartbeatDecision"},
		{"heartbeat_t2", 0.5, 0.95, 0, 0, EffortHigh, "HeartbeatDecision"},
		{"risk", 0.1, 0.85, 0, 40, EffortMax, "RiskAssessment"},
		{"daimon", 0.4, 0.9, 0, 0, EffortLow, "DaimonAppraisal"},
		{"daimon_complex", 0.6, 0.95, 0, 0, EffortHigh, "DaimonAppraisal"},
		{"curator", 0.3, 0.9, 0, 0, EffortMedium, "CuratorEvaluation"},
		{"playbook", 0.4, 0.9, 0, 0, EffortMedium, ""},
		{"operator", 0.7, 0.95, 0, 0, EffortHigh, ""},
		{"mind_wandering", 0.8, 0, 0.1, 0, EffortNone, ""},
		{"dream_nrem", 0.4, 0.9, 0, 0, EffortMedium, "ReplayAnalysis"},
		{"dream_rem", 0.9, 0, 0.1, 0, EffortHigh, ""},
		{"dream_rem_creative", 1.2, 0, 0.08, 0, EffortMedium, ""},
		{"dream_integration", 0.3, 0.85, 0, 0, EffortHigh, "DreamIntegration"},
		{"dream_threat", 0.5, 0.9, 0, 0, EffortHigh, "ThreatAssessment"},
		{"hypnagogic_induction", 1.0, 0, 0.1, 0, EffortNone, ""},
		{"hypnagogic_dali", 1.2, 0, 0.08, 0, EffortNone, ""},
		{"hypnagogic_observer", 0.3, 0.85, 0, 0, EffortNone, "FragmentEvaluation"},
		{"hypnagogic_capture", 0.5, 0.9, 0, 0, EffortLow, "CaptureResult"},
		{"hypnopompic_return", 0.6, 0.9, 0, 0, EffortLow, ""},
		{"death_reflect", 0.5, 0.95, 0, 0, EffortMax, ""},
		{"death_testament", 0.4, 0.9, 0, 0, EffortHigh, "DeathTestament"},
	}
	if len(cases) != len(Profiles) {
		t.Errorf("%d profiles, %d cases", len(Profiles), len(cases))
	}
	for _, c := range cases {
		p, ok := DefaultProfile(c.name)
		schema := ""
		if p.ResponseSchema != nil {
			schema = p.ResponseSchema.Name
		}
		if !ok || p.Temperature != c.temp || p.TopP != c.topP || p.MinP != c.minP || p.TopK != c.topK ||
			p.ReasoningEffort != c.effort || schema != c.schema || !p.Has(FieldTemperature) ||
			p.Has(FieldTopP) != (c.topP != 0) || p.Has(FieldMinP) != (c.minP != 0) {
			t.Errorf("%s: %+v", c.name, p)
		}
	}
	var locked []string
	for _, s := range Profiles {
		if s.Locked {
			locked = append(locked, s.Name)
		}
	}
	if strings.Join(locked, ",") != "risk,operator,death_reflect" {
		t.Errorf("locked: %v", locked)
	}
}

// TestLockedProfiles: the spec's bardo.toml example — heartbeat_t1 and
// dream_rem overridden, risk "ignored with a warning".
func TestLockedProfiles(t *testing.T) {
	o, err := ParseProfileOverride(map[string]any{"temperature": 0.3, "reasoning_effort": "low"})
	if err != nil {
		t.Fatal(err)
	}
	p, warn := ConfiguredProfile("heartbeat_t1", &o)
	if warn != "" || p.Temperature != 0.3 || p.ReasoningEffort != EffortLow || p.TopP != 0.9 {
		t.Errorf("heartbeat_t1: %q %+v", warn, p)
	}

	o, _ = ParseProfileOverride(map[string]any{"temperature": 1.0, "min_p": 0.08})
	p, warn = ConfiguredProfile("dream_rem", &o)
	if warn != "" || p.Temperature != 1.0 || p.MinP != 0.08 || p.ReasoningEffort != EffortHigh || p.WebSearch != On {
		t.Errorf("dream_rem: %q %+v", warn, p)
	}

	for _, name := range []string{"risk", "death_reflect", "operator"} {
		def, _ := DefaultProfile(name)
		o, _ = ParseProfileOverride(map[string]any{"temperature": 0.9, "reasoning_effort": "none", "top_k": int64(5)})
		p, warn = ConfiguredProfile(name, &o)
		if warn == "" || !strings.Contains(warn, "locked") || p.Temperature != def.Temperature ||
			p.ReasoningEffort != def.ReasoningEffort || p.TopK != def.TopK {
			t.Errorf("%s: override took effect: %q %+v", name, warn, p)
		}
		// No override, no warning.
		if _, warn = ConfiguredProfile(name, &InferenceProfile{}); warn != "" {
			t.Errorf("%s: warning without override: %q", name, warn)
		}
		if _, warn = ConfiguredProfile(name, nil); warn != "" {
			t.Errorf("%s: warning without override: %q", name, warn)
		}
		if !ProfileLocked(name) {
			t.Errorf("%s not locked", name)
		}
	}
	// A subsystem without defaults takes the override as is.
	o, _ = ParseProfileOverride(map[string]any{"temperature": 0.2, "visible_thinking": true})
	if p, warn = ConfiguredProfile("negotiate", &o); warn != "" || p.Temperature != 0.2 || p.VisibleThinking != On {
		t.Errorf("negotiate: %+v", p)
	}
}

func TestParseProfileOverride(t *testing.T) {
	p, err := ParseProfileOverride(map[string]any{
		"temperature": 0.5, "top_p": 0.9, "top_k": int64(40), "min_p": 0.05, "frequency_penalty": 0.1,
		"presence_penalty": 0.2, "max_tokens": int64(1024), "seed": 7, "reasoning_effort": "MAX",
		"visible_thinking": false, "cache_control": true, "web_search": true, "tee_mode": false,
		"prompt_cache_key": "golem-1-curator",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := FieldTemperature | FieldTopP | FieldTopK | FieldMinP | FieldFrequencyPenalty | FieldPresencePenalty | FieldMaxTokens | FieldSeed
	if p.Set != want || p.TopK != 40 || p.Seed != 7 || p.ReasoningEffort != EffortMax || p.VisibleThinking != Off ||
		p.CacheControl != On || p.TEEMode != Off || p.PromptCacheKey != "golem-1-curator" {
		t.Errorf("%+v", p)
	}
	for _, bad := range []map[string]any{
		{"temprature": 0.5},
		{"temperature": "hot"},
		{"top_k": 1.5},
		{"reasoning_effort": "extreme"},
		{"web_search": "yes"},
	} {
		if _, err := ParseProfileOverride(bad); !errors.Is(err, ErrProfileKey) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func TestMortalityTemperature(t *testing.T) {
	cases := []struct {
		t, v      float64
		subsystem string
		want      float64
	}{
		{0.9, 1.0, "dream_rem", 0.9},
		{0.9, 0.5, "dream_rem", 0.75}, // 0.9 − 0.6·0.5·0.5
		{0.9, 0.0, "dream_rem", 0.6},  // halfway to the 0.3 floor
		{0.3, 0.0, "curator", 0.3},
		{1.2, 0.0, "hypnagogic_dali", 1.2},
		{0.7, 0.0, "operator", 0.7},
		{0.5, 0.0, "death_reflect", 0.5},
		{0.4, 0.0, "death_testament", 0.4},
		{0.9, -1, "dream_rem", 0.6}, // clamped
	}
	for _, c := range cases {
		if got := MortalityTemperature(c.t, c.v, c.subsystem); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s t=%v v=%v: %v, want %v", c.subsystem, c.t, c.v, got, c.want)
		}
	}
	p, _ := DefaultProfile("dream_rem")
	ApplyMortalityTemperature(&p, 0, "dream_rem")
	if math.Abs(p.Temperature-0.6) > 1e-9 {
		t.Errorf("profile temperature %v", p.Temperature)
	}
	if CacheKey("g1", "curator") != "golem-g1-curator" {
		t.Error(CacheKey("g1", "curator"))
	}
}
