package routing

import (
	"math"
	"testing"
)

// TestSubsystemTable checks the table against 12-providers "Subsystem
// intents" (the Rust consts) and 01 "Subsystem intent declarations".
func TestSubsystemTable(t *testing.T) {
	cases := []struct {
		name    string
		quality Quality
		require FeatureSet
		prefer  FeatureSet
		latency int64
		cs      float64
	}{
		{"heartbeat_t0", Minimum, 0, 0, 200, 1.0},
		{"heartbeat_t1", Low, 0, Features(LowEffort), 2000, 0.8},
		{"heartbeat_t2", High, 0, Features(InterleavedThinking, Citations), 30_000, 0.3},
		{"risk", Maximum, 0, Features(InterleavedThinking, Citations), 30_000, 0.0},
		{"dream", High, 0, Features(VisibleThinking, Privacy), 120_000, 0.5},
		{"daimon", Low, 0, Features(Privacy), 1000, 0.9},
		{"daimon_complex", High, 0, Features(VisibleThinking, Privacy), 10_000, 0.5},
		{"curator", Medium, 0, Features(StructuredOutputs, Citations), 15_000, 0.5},
		{"playbook", Medium, 0, Features(PredictedOutputs), 10_000, 0.6},
		{"operator", Maximum, 0, Features(InterleavedThinking, Citations), 5000, 0.0},
		{"death", Maximum, Features(VisibleThinking), Features(Privacy), 0, 0.0}, // u64::MAX: unlimited
		{"session_compact", Medium, 0, Features(Compaction), 30_000, 0.5},
	}
	if len(cases) != len(Subsystems) {
		t.Fatalf("table has %d rows, spec 12", len(Subsystems))
	}
	for _, c := range cases {
		in, ok := SubsystemIntent(c.name)
		if !ok || in.Subsystem != c.name || in.Quality != c.quality || in.Require != c.require ||
			in.Prefer != c.prefer || in.MaxLatencyMs != c.latency || in.CostSensitivity != c.cs || in.Model != "" {
			t.Errorf("%s: %+v", c.name, in)
		}
	}
	// Only death has a hard requirement.
	for _, s := range Subsystems {
		if (s.Require != 0) != (s.Name == "death") {
			t.Errorf("%s requires %v", s.Name, s.Require)
		}
	}
	// Unknown: heartbeat_t1's values under the caller's name.
	in, ok := SubsystemIntent("context")
	if ok || in.Subsystem != "context" || in.Quality != Low || in.CostSensitivity != 0.8 || in.Prefer != Features(LowEffort) {
		t.Errorf("default: %v %+v", ok, in)
	}
}

func TestMortalityPressure(t *testing.T) {
	cases := []struct {
		subsystem string
		vitality  float64
		quality   Quality
		cs        float64
	}{
		// pressure 0: nothing changes.
		{"dream", 1.0, High, 0.5},
		// cs += (1−v)·0.3
		{"dream", 0.5, High, 0.65},
		{"heartbeat_t2", 0.3, High, 0.51}, // v = 0.3 is not below 0.3: quality kept
		// below v = 0.3 quality drops one level
		{"dream", 0.29, Medium, 0.713},
		{"heartbeat_t2", 0.1, Medium, 0.57},
		{"curator", 0.0, Low, 0.8},
		{"daimon", 0.0, Low, 1.0},           // cs capped at 1; Low stays Low
		{"heartbeat_t0", 0.0, Minimum, 1.0}, // Minimum stays Minimum
		{"heartbeat_t1", 0.2, Low, 1.0},     // 0.8 + 0.24, capped
		// exempt: risk, death, operator
		{"risk", 0.0, Maximum, 0.0},
		{"death", 0.05, Maximum, 0.0},
		{"operator", 0.1, Maximum, 0.0},
		// out of range is clamped
		{"dream", -3, Medium, 0.8},
		{"dream", 7, High, 0.5},
	}
	for _, c := range cases {
		in, _ := SubsystemIntent(c.subsystem)
		ApplyMortality(&in, c.vitality)
		if in.Quality != c.quality || math.Abs(in.CostSensitivity-c.cs) > 1e-9 {
			t.Errorf("%s at v=%v: quality %v cs %v, want %v %v", c.subsystem, c.vitality, in.Quality, in.CostSensitivity, c.quality, c.cs)
		}
	}
	in, _ := SubsystemIntent("dream")
	ApplyMortality(&in, math.NaN())
	if in.Quality != High || in.CostSensitivity != 0.5 {
		t.Errorf("NaN vitality changed the intent: %+v", in)
	}
}

// TestMortalityRouting: a dying agent's heartbeat_t2 moves from Opus to
// Sonnet; its risk assessment does not move.
func TestMortalityRouting(t *testing.T) {
	for _, c := range []struct {
		subsystem string
		vitality  float64
		model     string
	}{
		{"heartbeat_t2", 1.0, "claude-opus-4-6"},
		{"heartbeat_t2", 0.1, "claude-sonnet-4-6"},
		{"risk", 1.0, "claude-opus-4-6"},
		{"risk", 0.01, "claude-opus-4-6"},
		{"operator", 0.01, "claude-opus-4-6"},
	} {
		in, _ := SubsystemIntent(c.subsystem)
		ApplyMortality(&in, c.vitality)
		r, err := Resolve(&in, blockrunOnly(), nil)
		if err != nil || r.Model != c.model {
			t.Errorf("%s at v=%v: %s %v, want %s", c.subsystem, c.vitality, r.Model, err, c.model)
		}
	}
}
