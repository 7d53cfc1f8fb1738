package routing

import "math"

// SubsystemSpec is one row of the subsystem intent table: what a Golem
// subsystem needs from inference. Rows are data; adding a subsystem adds a
// row.
type SubsystemSpec struct {
	Name            string
	Quality         Quality
	Require         FeatureSet
	Prefer          FeatureSet
	MaxLatencyMs    int64 // 0: unlimited
	CostSensitivity float64
	// MortalityExempt subsystems keep their intent whatever the vitality
	// (risk, death, operator: safety and the owner's channel are never
	// economised on).
	MortalityExempt bool
}

// Subsystems is the subsystem intent table of the routing specification
// (01 "Subsystem intent declarations" and 12-providers "Subsystem intents"):
// the twelve subsystems, their quality floor, features, latency budget and
// cost sensitivity. Death is the only subsystem with a hard requirement.
var Subsystems = [...]SubsystemSpec{
	{Name: "heartbeat_t0", Quality: Minimum, MaxLatencyMs: 200, CostSensitivity: 1.0},
	{Name: "heartbeat_t1", Quality: Low, Prefer: Features(LowEffort), MaxLatencyMs: 2000, CostSensitivity: 0.8},
	{Name: "heartbeat_t2", Quality: High, Prefer: Features(InterleavedThinking, Citations), MaxLatencyMs: 30_000, CostSensitivity: 0.3},
	{Name: "risk", Quality: Maximum, Prefer: Features(InterleavedThinking, Citations), MaxLatencyMs: 30_000, CostSensitivity: 0.0, MortalityExempt: true},
	{Name: "dream", Quality: High, Prefer: Features(VisibleThinking, Privacy), MaxLatencyMs: 120_000, CostSensitivity: 0.5},
	{Name: "daimon", Quality: Low, Prefer: Features(Privacy), MaxLatencyMs: 1000, CostSensitivity: 0.9},
	{Name: "daimon_complex", Quality: High, Prefer: Features(VisibleThinking, Privacy), MaxLatencyMs: 10_000, CostSensitivity: 0.5},
	{Name: "curator", Quality: Medium, Prefer: Features(StructuredOutputs, Citations), MaxLatencyMs: 15_000, CostSensitivity: 0.5},
	{Name: "playbook", Quality: Medium, Prefer: Features(PredictedOutputs), MaxLatencyMs: 10_000, CostSensitivity: 0.6},
	{Name: "operator", Quality: Maximum, Prefer: Features(InterleavedThinking, Citations), MaxLatencyMs: 5000, CostSensitivity: 0.0, MortalityExempt: true},
	{Name: "death", Quality: Maximum, Require: Features(VisibleThinking), Prefer: Features(Privacy), MaxLatencyMs: 0, CostSensitivity: 0.0, MortalityExempt: true},
	{Name: "session_compact", Quality: Medium, Prefer: Features(Compaction), MaxLatencyMs: 30_000, CostSensitivity: 0.5},
}

// DefaultSubsystem is the intent of a subsystem the table does not know:
// heartbeat_t1's, the spec's "conservative default" (a cheap, fast,
// low-quality call; an unknown caller is not trusted with Opus).
const DefaultSubsystem = "heartbeat_t1"

// Intent returns the row as an intent.
func (s *SubsystemSpec) Intent() Intent {
	return Intent{
		Subsystem:       s.Name,
		Quality:         s.Quality,
		Require:         s.Require,
		Prefer:          s.Prefer,
		MaxLatencyMs:    s.MaxLatencyMs,
		CostSensitivity: s.CostSensitivity,
	}
}

// LookupSubsystem returns the table row for a subsystem name, or nil.
func LookupSubsystem(name string) *SubsystemSpec {
	for i := range Subsystems {
		if Subsystems[i].Name == name {
			return &Subsystems[i]
		}
	}
	return nil
}

// SubsystemIntent returns the static intent of a subsystem. For a name the
// table does not know it returns DefaultSubsystem's intent carrying the
// given name, and ok = false (so the caller can warn).
func SubsystemIntent(name string) (in Intent, ok bool) {
	if s := LookupSubsystem(name); s != nil {
		return s.Intent(), true
	}
	in = LookupSubsystem(DefaultSubsystem).Intent()
	in.Subsystem = name
	return in, false
}

// MortalityExempt reports whether a subsystem keeps its intent under
// mortality pressure (risk, death, operator).
func MortalityExempt(subsystem string) bool {
	s := LookupSubsystem(subsystem)
	return s != nil && s.MortalityExempt
}

// ApplyMortality is the spec's mortality pressure: a dying agent becomes
// cost-sensitive. With pressure = 1 − vitality, cost sensitivity rises by
// pressure·0.3 (capped at 1), and below vitality 0.3 (pressure > 0.7) the
// quality floor drops one level (Maximum→High→Medium→Low). Exempt
// subsystems are untouched, and so is the intent when vitality is not a
// number in 0..1 (values outside are clamped first).
func ApplyMortality(in *Intent, vitality float64) {
	if math.IsNaN(vitality) || MortalityExempt(in.Subsystem) {
		return
	}
	vitality = math.Max(0, math.Min(1, vitality))
	pressure := 1 - vitality
	in.CostSensitivity = math.Min(1, in.CostSensitivity+pressure*0.3)
	// vitality < 0.3 rather than pressure > 0.7: 1−0.3 is not exactly 0.7
	// in floating point, and the boundary must be where the spec says.
	if vitality < 0.3 {
		in.Quality = in.Quality.Downgrade()
	}
}
