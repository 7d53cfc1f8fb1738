package routing

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchProviders is the benchmark configuration: 5 providers, 400
// catalog models in all (80 each), with the full stack's policies — a
// privacy specialist first, a subsystem-limited wallet, a native-feature
// specialist, the general primary, the cheapest-match fallback — and
// features, levels, prices and latencies spread like real catalogs.
func benchProviders() []ProviderDescription {
	rng := rand.New(rand.NewSource(1))
	common := []Feature{ToolUse, StructuredOutputs, PromptCaching, Vision, LowEffort, ReasoningEffort,
		AdaptiveThinking, InterleavedThinking, Citations, VisibleThinking, LongContext, Seed, TopK}
	models := func(prefix string, extra ...Feature) []ModelInfo {
		out := make([]ModelInfo, 80)
		for i := range out {
			var fs FeatureSet
			for _, f := range common {
				if rng.Intn(3) == 0 {
					fs = fs.With(f)
				}
			}
			for _, f := range extra {
				if rng.Intn(4) == 0 {
					fs = fs.With(f)
				}
			}
			if rng.Intn(40) == 0 {
				fs = fs.With(Compaction)
			}
			q := Quality(1 + rng.Intn(5))
			in := 0.05 * float64(int(1)<<rng.Intn(8)) // $0.05 … $6.40
			out[i] = ModelInfo{
				ID: prefix + "model-" + strconv.Itoa(i), Family: "bench", Quality: q, Features: fs,
				InputPrice: in, OutputPrice: in * 4, LatencyMs: int64(100 + rng.Intn(15_000)),
			}
		}
		return out
	}
	return []ProviderDescription{
		{ID: "venice", Traits: Traits{Private: true, Payment: PaymentDiem}, Features: Features(Privacy),
			Policy: Policy{Serves: Features(Privacy, TEE, E2EE)}, Models: models("v-", TEE)},
		{ID: "bankr", Traits: Traits{SelfFunding: true, Payment: PaymentWallet},
			Policy: Policy{Subsystems: []string{"operator", "autonomous", "social"}}, Models: models("b-")},
		{ID: "direct", Traits: Traits{Payment: PaymentAPIKey}, Policy: Policy{Serves: directNative},
			Models: models("d-", PredictedOutputs, BatchAPI, ResponsesAPI)},
		{ID: "blockrun", Traits: Traits{ContextEngineering: true, Payment: PaymentX402}, Models: models("")},
		{ID: "openrouter", Traits: Traits{ContextEngineering: true, Payment: PaymentPrepaid},
			Policy: Policy{CheapestOnly: true}, Models: models("or/")},
	}
}

func benchIntents() []Intent {
	out := make([]Intent, 0, len(Subsystems))
	for i := range Subsystems {
		out = append(out, Subsystems[i].Intent())
	}
	return out
}

// benchResolve times each call and reports the median and the 99th
// percentile in microseconds (the target: p50 ≤ 20 µs).
func benchResolve(b *testing.B, providers []ProviderDescription, intents []Intent) {
	healthy := func(string) bool { return true }
	for i := range intents { // every intent must resolve
		if _, err := Resolve(&intents[i], providers, healthy); err != nil {
			b.Fatal(err)
		}
	}
	d := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := &intents[i%len(intents)]
		t := time.Now()
		_, _ = Resolve(in, providers, healthy)
		d[i] = time.Since(t)
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100])/1e3, "p99-µs")
}

// BenchmarkResolve: the twelve subsystem intents in turn against 5
// providers × 80 models.
func BenchmarkResolve(b *testing.B) {
	benchResolve(b, benchProviders(), benchIntents())
}

// BenchmarkResolveWorst: the slowest path a catalog-only configuration has.
// First match wins, so scoring happens in one provider only; the most work
// is an intent no provider meets in pass 1 (it requires a feature no model
// has: all 400 models are filtered out), whose relaxed form the first
// provider then takes, scoring its whole catalog, and whose resolution
// carries degraded notes (two small allocations).
func BenchmarkResolveWorst(b *testing.B) {
	in := Intent{Subsystem: "autonomous", Quality: Low, Require: Features(CodeExecution),
		Prefer: Features(Privacy, PredictedOutputs, ToolUse), CostSensitivity: 0.5, DiemAvailable: true}
	benchResolve(b, benchProviders(), []Intent{in})
}

// BenchmarkStandardResolve: one provider's resolve over 80 models.
func BenchmarkStandardResolve(b *testing.B) {
	p := &benchProviders()[3]
	in, _ := SubsystemIntent("curator")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		StandardResolve(p, &in)
	}
}

func BenchmarkMapProfile(b *testing.B) {
	p := profile("heartbeat_t2")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		MapProfile(p, StyleGemini, capsGemini)
	}
}
