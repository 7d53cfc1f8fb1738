package routing

import (
	"errors"
	"strings"
	"testing"
)

type routeCase struct {
	subsystem string
	in        *Intent // nil: the subsystem's table intent
	provider  string
	model     string
	pass      int
	degraded  string // comma-joined Resolution.Degraded
	spec      string // the spec line the case reproduces
}

func runRoutes(t *testing.T, providers []ProviderDescription, cases []routeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.subsystem, func(t *testing.T) {
			var in Intent
			if c.in != nil {
				in = *c.in
			} else {
				var ok bool
				if in, ok = SubsystemIntent(c.subsystem); !ok && c.subsystem != "context" {
					t.Fatalf("no table intent for %q", c.subsystem)
				}
			}
			r, err := Resolve(&in, providers, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.spec, err)
			}
			got := r.Provider + "/" + r.Model
			if got != c.provider+"/"+c.model || r.Pass != c.pass || strings.Join(r.Degraded, ",") != c.degraded {
				t.Errorf("spec %q\n got  %s pass %d degraded %q\n want %s/%s pass %d degraded %q",
					c.spec, got, r.Pass, strings.Join(r.Degraded, ","), c.provider, c.model, c.pass, c.degraded)
			}
		})
	}
}

// TestRoutingBlockRunOnly reproduces 002 §2.1 "Minimal Configuration:
// BlockRun Only" (the same list is in 01 "Concrete routing: BlockRun only"
// and 12-providers "Minimal: BlockRun only").
func TestRoutingBlockRunOnly(t *testing.T) {
	runRoutes(t, blockrunOnly(), []routeCase{
		{subsystem: "heartbeat_t0", provider: "blockrun", model: "nvidia-gpt-oss-120b", pass: 1,
			spec: "heartbeat_t0 → BlockRun/nvidia-gpt-oss-120b (FREE)"},
		{subsystem: "heartbeat_t1", provider: "blockrun", model: "gemini-3-flash", pass: 1,
			spec: "heartbeat_t1 → BlockRun/gemini-3-flash ($0.50/M input)"},
		{subsystem: "heartbeat_t2", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "heartbeat_t2 → BlockRun/claude-opus-4-6 ($5/M, adaptive thinking)"},
		{subsystem: "risk", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "risk → BlockRun/claude-opus-4-6 (interleaved thinking)"},
		// Dream wanted privacy too; BlockRun has none (01 "Degradation is
		// visible, not silent").
		{subsystem: "dream", provider: "blockrun", model: "deepseek-r1", pass: 1, degraded: "privacy",
			spec: "dream → BlockRun/deepseek-r1 ($0.55/M, visible <think>)"},
		{subsystem: "daimon", provider: "blockrun", model: "gemini-3-flash", pass: 1, degraded: "privacy",
			spec: "daimon → BlockRun/gemini-3-flash (cheapest, fast)"},
		{subsystem: "curator", provider: "blockrun", model: "claude-sonnet-4-6", pass: 1,
			spec: "curator → BlockRun/claude-sonnet-4-6 ($3/M, structured outputs)"},
		// "context" has no intent in the spec's table: the default
		// (heartbeat_t1's) applies, and gives the documented model.
		{subsystem: "context", provider: "blockrun", model: "gemini-3-flash", pass: 1,
			spec: "context → BlockRun/gemini-3-flash (cheap, fast)"},
		{subsystem: "playbook", provider: "blockrun", model: "claude-sonnet-4-6", pass: 1, degraded: "predicted_outputs",
			spec: "playbook → BlockRun/claude-sonnet-4-6 (full regeneration, no Predicted Outputs)"},
		{subsystem: "operator", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "operator → BlockRun/claude-opus-4-6 (best quality)"},
		// Death requires visible thinking at Maximum quality; only DeepSeek
		// R1 (High) shows its thinking through BlockRun, so pass 2 takes it
		// one level down and says so.
		{subsystem: "death", provider: "blockrun", model: "deepseek-r1", pass: 2, degraded: "privacy,quality:maximum>high",
			spec: "death → BlockRun/deepseek-r1 (visible reasoning, maximum tokens)"},
		// Not in the BlockRun-only list; the subsystem table's "Typical
		// resolution" is "BlockRun -> Anthropic (compaction API)".
		{subsystem: "session_compact", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "session_compact → BlockRun -> Anthropic (compaction API)"},
	})
}

// TestRoutingFullStack reproduces 002 §2.3 "Full Stack: BlockRun +
// OpenRouter + Venice + Bankr + Direct Keys" (also 01 "Concrete routing:
// full stack" and 12-providers "Full stack: all five providers") with the
// provider order explained at fullStack.
func TestRoutingFullStack(t *testing.T) {
	runRoutes(t, fullStack(), []routeCase{
		{subsystem: "heartbeat_t0", provider: "direct/local", model: "qwen3-7b", pass: 1,
			spec: "heartbeat_t0 → Direct/local/qwen3-7b (FREE, zero latency)"},
		{subsystem: "heartbeat_t1", provider: "blockrun", model: "gemini-3-flash", pass: 1,
			spec: "heartbeat_t1 → BlockRun/gemini-3-flash (cheapest, cached)"},
		{subsystem: "heartbeat_t2", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "heartbeat_t2 → BlockRun/claude-opus-4-6 (interleaved thinking, citations)"},
		// The Bankr cross-model verification is a second call the caller
		// makes; routing picks the primary.
		{subsystem: "risk", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "risk → BlockRun/claude-opus-4-6 + Bankr cross-model verify"},
		{subsystem: "dream", provider: "venice", model: "deepseek-r1", pass: 1,
			spec: "dream → Venice/deepseek-r1 (visible, private, DIEM-funded)"},
		{subsystem: "daimon", provider: "venice", model: "llama-3.3-70b", pass: 1,
			spec: "daimon → Venice/llama-3.3-70b (private, fast)"},
		{subsystem: "curator", provider: "blockrun", model: "claude-sonnet-4-6", pass: 1,
			spec: "curator → BlockRun/claude-sonnet-4-6 (citations for provenance)"},
		{subsystem: "playbook", provider: "direct/openai", model: "gpt-5.4", pass: 1,
			spec: "playbook → Direct/openai/gpt-5.4 (Predicted Outputs, 3x speed)"},
		{subsystem: "operator", provider: "bankr", model: "claude-opus-4-6", pass: 1, in: withWallet("operator", flush),
			spec: "operator → Bankr/claude-opus-4-6 (self-funded from trading revenue)"},
		// No Maximum-rated model shows its thinking on a provider that takes
		// death (Direct Anthropic's Opus does, but a direct key takes only
		// native-feature work); pass 2 reaches Venice first.
		{subsystem: "death", provider: "venice", model: "deepseek-r1", pass: 2, degraded: "quality:maximum>high",
			spec: "death → Venice/deepseek-r1 (visible, private, DIEM, unlimited)"},
		{subsystem: "session_compact", provider: "blockrun", model: "claude-opus-4-6", pass: 1,
			spec: "session → BlockRun/claude-opus-4-6 (Compaction with DeFi instructions)"},
		// The spec declares no intent for batch dreams; this is dream's with
		// the Batch API required and NREM replay's Medium quality.
		{subsystem: "batch_dreams", in: &Intent{Subsystem: "dream", Quality: Medium, Require: Features(BatchAPI),
			Prefer: Features(VisibleThinking, Privacy), CostSensitivity: 0.5},
			provider: "direct/anthropic", model: "claude-sonnet-4-6", pass: 1, degraded: "privacy",
			spec: "batch dreams → Direct/anthropic/sonnet-4-6 (Batch API, 50% discount)"},
	})
}

// TestRoutingFullStackContext records the one full-stack example the
// resolver does not reproduce: "context → OpenRouter/qwen-plus". The spec
// declares no intent for "context"; with the default intent BlockRun (the
// primary, ahead of the fallback) answers first, as in the BlockRun-only
// list. Reaching OpenRouter's qwen-plus would take an owner order with the
// fallback ahead of the primary.
func TestRoutingFullStackContext(t *testing.T) {
	in, _ := SubsystemIntent("context")
	r, err := Resolve(&in, fullStack(), nil)
	if err != nil || r.Provider != "blockrun" || r.Model != "gemini-3-flash" {
		t.Fatalf("context: %s/%s %v", r.Provider, r.Model, err)
	}
	// With OpenRouter first (and the same intent preferring visible
	// thinking, the /think toggle), it is qwen-plus.
	in.Prefer |= Features(VisibleThinking)
	r, err = Resolve(&in, []ProviderDescription{openrouter(), blockrun()}, nil)
	if err != nil || r.Provider != "openrouter" || r.Model != "qwen/qwen-plus" {
		t.Fatalf("context via openrouter: %s/%s %v", r.Provider, r.Model, err)
	}
}

func TestResolvePass2Degradation(t *testing.T) {
	// A hard requirement nobody meets: pass 2 relaxes it and reports it.
	in := Intent{Subsystem: "curator", Quality: Medium, Require: Features(PredictedOutputs),
		Prefer: Features(StructuredOutputs), MaxLatencyMs: 15_000, CostSensitivity: 0.5}
	r, err := Resolve(&in, blockrunOnly(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pass != 2 || r.Missing != Features(PredictedOutputs) || strings.Join(r.Degraded, ",") != "predicted_outputs" {
		t.Errorf("got %+v", r)
	}
	if in.Require != Features(PredictedOutputs) || in.Relaxed || in.MaxLatencyMs != 15_000 {
		t.Errorf("Resolve modified the intent: %+v", in)
	}

	// Pass 2 doubles the latency budget: operator's 5 s admits nothing
	// when the only Maximum model takes 7 s, 10 s does; the report names
	// the budget and the model's latency.
	slow := blockrun()
	slow.Models[5].LatencyMs = 7000 // claude-opus-4-6
	op, _ := SubsystemIntent("operator")
	r, err = Resolve(&op, []ProviderDescription{slow}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "claude-opus-4-6" || r.Pass != 2 || strings.Join(r.Degraded, ",") != "max_latency_ms:5000>7000" {
		t.Errorf("latency: %s pass %d %q", r.Model, r.Pass, r.Degraded)
	}

	// Pass 2 goes one quality level down, not more: a Maximum intent on a
	// catalog whose best is Medium fails.
	cheap := blockrun()
	cheap.Models = cheap.Models[:5] // no Opus
	cheap.Models[3].Quality = Medium
	if _, err := Resolve(&op, []ProviderDescription{cheap}, nil); !errors.Is(err, ErrNoProvider) {
		t.Errorf("two levels down: %v", err)
	}
	if _, err := Resolve(&op, nil, nil); !errors.Is(err, ErrNoProvider) {
		t.Errorf("no providers: %v", err)
	}
}

func TestResolvePrivateFailsClosed(t *testing.T) {
	in, _ := SubsystemIntent("curator")
	in.Security = Private

	// BlockRun-only: no private provider, and no fallback to one that
	// retains data, even in pass 2.
	_, err := Resolve(&in, blockrunOnly(), nil)
	if !errors.Is(err, ErrPrivateUnavailable) {
		t.Fatalf("want ErrPrivateUnavailable, got %v", err)
	}
	var re *ResolveError
	if !errors.As(err, &re) || re.Subsystem != "curator" || !strings.Contains(err.Error(), "security class private") {
		t.Errorf("error %v", err)
	}

	// Full stack: Venice takes it although curator does not ask for
	// privacy (the class implies it).
	r, err := Resolve(&in, fullStack(), nil)
	if err != nil || r.Provider != "venice" {
		t.Fatalf("full stack private: %+v %v", r, err)
	}

	// Venice down: fail closed rather than BlockRun.
	down := func(id string) bool { return id != "venice" }
	_, err = Resolve(&in, fullStack(), down)
	if !errors.Is(err, ErrUnhealthy) || !errors.As(err, &re) || re.Unhealthy != "venice" {
		t.Fatalf("venice down: %v", err)
	}

	// An explicit model on a provider that retains data: refused.
	in.Model = "claude-opus-4-6"
	if _, err = Resolve(&in, fullStack(), nil); !errors.Is(err, ErrPrivateUnavailable) {
		t.Errorf("explicit model, private: %v", err)
	}

	// TEE: only models with the tee feature; E2EE: none here, fail closed.
	tee := Intent{Subsystem: "trade", Quality: Medium, Security: TEEOnly, CostSensitivity: 0.5}
	if r, err = Resolve(&tee, fullStack(), nil); err != nil || r.Provider+"/"+r.Model != "venice/deepseek-r1" {
		t.Errorf("tee: %s/%s %v", r.Provider, r.Model, err)
	}
	e2e := Intent{Subsystem: "sealed_auction", Quality: Low, Security: E2EEOnly}
	if _, err = Resolve(&e2e, fullStack(), nil); !errors.Is(err, ErrPrivateUnavailable) {
		t.Errorf("e2ee: %v", err)
	}

	// A lenient custom resolver that ignores the class cannot leak: the walk
	// itself only admits private providers.
	leaky := blockrun()
	leaky.Resolver = func(p *ProviderDescription, in *Intent) (Resolution, bool) {
		return Resolution{Provider: p.ID, Model: "claude-opus-4-6"}, true
	}
	priv := Intent{Subsystem: "x", Security: Private}
	if _, err = Resolve(&priv, []ProviderDescription{leaky}, nil); !errors.Is(err, ErrPrivateUnavailable) {
		t.Errorf("leaky resolver: %v", err)
	}
}

func TestResolveHealthFailover(t *testing.T) {
	in, _ := SubsystemIntent("heartbeat_t2")
	// BlockRun down: OpenRouter, the fallback, serves — the cheapest High
	// model it has, which lacks what heartbeat_t2 prefers.
	r, err := Resolve(&in, fullStack(), func(id string) bool { return id != "blockrun" })
	if err != nil {
		t.Fatal(err)
	}
	if r.Provider != "openrouter" || r.Model != "deepseek/deepseek-r1" || strings.Join(r.Degraded, ",") != "interleaved_thinking,citations" {
		t.Errorf("failover: %s/%s %q", r.Provider, r.Model, r.Degraded)
	}
	// BlockRun-only and down: an outage, not a configuration problem.
	_, err = Resolve(&in, blockrunOnly(), func(string) bool { return false })
	var re *ResolveError
	if !errors.Is(err, ErrUnhealthy) || !errors.As(err, &re) || re.Unhealthy != "blockrun" {
		t.Errorf("all down: %v", err)
	}
}

func TestResolveExplicitModel(t *testing.T) {
	cases := []struct {
		name      string
		in        Intent
		providers []ProviderDescription
		want      string // provider/model, or the error
		degraded  string
	}{
		{"catalog", Intent{Model: "claude-sonnet-4-6"}, blockrunOnly(), "blockrun/claude-sonnet-4-6", ""},
		// The vendor prefix is ignored in either direction.
		{"vendor prefix", Intent{Model: "anthropic/claude-sonnet-4-6"}, blockrunOnly(), "blockrun/claude-sonnet-4-6", ""},
		{"openrouter id", Intent{Model: "claude-opus-4-6"}, []ProviderDescription{openrouter()}, "openrouter/anthropic/claude-opus-4-6", ""},
		// Quality and latency do not apply to an explicit model.
		{"below floor", Intent{Model: "gemini-3-flash", Quality: Maximum, MaxLatencyMs: 1}, blockrunOnly(), "blockrun/gemini-3-flash", ""},
		// A required feature the model lacks: pass 2 keeps the model and
		// reports it.
		{"lacks required", Intent{Model: "deepseek-r1", Require: Features(StructuredOutputs)}, blockrunOnly(), "blockrun/deepseek-r1", "structured_outputs"},
		// Full stack: Venice has deepseek-r1 too, but is a privacy
		// specialist; BlockRun serves the general request.
		{"specialist skipped", Intent{Model: "deepseek-r1"}, fullStack(), "blockrun/deepseek-r1", ""},
		{"specialist wanted", Intent{Model: "deepseek-r1", Prefer: Features(Privacy)}, fullStack(), "venice/deepseek-r1", ""},
		// A provider prefix pins the provider and passes its policy.
		{"pinned", Intent{Model: "direct/openai/gpt-5.4"}, fullStack(), "direct/openai/gpt-5.4", ""},
		{"pinned bankr", Intent{Model: "bankr/claude-sonnet-4-6", Wallet: flush}, fullStack(), "bankr/claude-sonnet-4-6", ""},
		// A self-funding provider cannot be paid without the agent's wallet,
		// not even for a model asked for by name.
		{"pinned bankr, no wallet", Intent{Model: "bankr/claude-sonnet-4-6"}, fullStack(), "model-not-found", ""},
		// Not in the catalog but matching a pattern: served, features unknown.
		{"pattern", Intent{Model: "mistralai/mistral-large", Prefer: Features(ToolUse)}, fullStack(), "openrouter/mistralai/mistral-large", "tool_use"},
		{"unknown", Intent{Model: "gpt-4o"}, blockrunOnly(), "model-not-found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Resolve(&c.in, c.providers, nil)
			if c.want == "model-not-found" {
				if !errors.Is(err, ErrModelNotFound) {
					t.Fatalf("want ErrModelNotFound, got %+v %v", r, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Provider + "/" + r.Model; got != c.want || strings.Join(r.Degraded, ",") != c.degraded {
				t.Errorf("got %s %q, want %s %q", got, r.Degraded, c.want, c.degraded)
			}
		})
	}
}

func TestResolveCostAndPolicies(t *testing.T) {
	// The estimate is the model's price for the intent's call size.
	in := Intent{Model: "claude-opus-4-6", InputTokens: 10_000, OutputTokens: 1000}
	r, _ := Resolve(&in, blockrunOnly(), nil)
	if want := (5*10_000 + 25*1000) / 1e6; r.EstimatedCostUSD != want || r.Payment != PaymentX402 {
		t.Errorf("cost %v payment %v, want %v x402", r.EstimatedCostUSD, r.Payment, want)
	}
	// DIEM pays Venice: zero cost, and the DIEM-funded policy lets Venice
	// take an intent that does not want privacy.
	d, _ := SubsystemIntent("daimon")
	d.Prefer = 0
	d.DiemAvailable = true
	r, err := Resolve(&d, fullStack(), nil)
	if err != nil || r.Provider != "venice" || r.EstimatedCostUSD != 0 || r.Payment != PaymentDiem {
		t.Errorf("diem: %+v %v", r, err)
	}
	// Direct keys bill the owner.
	p, _ := SubsystemIntent("playbook")
	if r, _ = Resolve(&p, fullStack(), nil); r.Payment != PaymentAPIKey || r.Style != StyleOpenAI {
		t.Errorf("direct: %+v", r)
	}
	// BlockRun passes parameters through by family.
	h, _ := SubsystemIntent("heartbeat_t1")
	if r, _ = Resolve(&h, blockrunOnly(), nil); r.Style != StyleGemini {
		t.Errorf("style %v", r.Style)
	}
	// A wrapping resolver: BlockRun adds its x402 premium to the estimate.
	br := blockrun()
	br.Resolver = func(p *ProviderDescription, in *Intent) (Resolution, bool) {
		r, ok := StandardResolve(p, in)
		r.EstimatedCostUSD *= 1.2
		return r, ok
	}
	base, _ := Resolve(&h, blockrunOnly(), nil)
	r, _ = Resolve(&h, []ProviderDescription{br}, nil)
	if r.Model != base.Model || r.EstimatedCostUSD <= base.EstimatedCostUSD {
		t.Errorf("wrapped: %+v vs %+v", r, base)
	}
}

func TestResolveZeroAllocs(t *testing.T) {
	providers := fullStack()
	healthy := func(string) bool { return true }
	// Every subsystem whose resolution has nothing to report (a degraded
	// note is one small allocation, by design).
	var intents []Intent
	for i := range Subsystems {
		in := Subsystems[i].Intent()
		if r, err := Resolve(&in, providers, healthy); err == nil && r.Degraded == nil {
			intents = append(intents, in)
		}
	}
	if len(intents) < 8 {
		t.Fatalf("only %d clean intents", len(intents))
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := range intents {
			if _, err := Resolve(&intents[i], providers, healthy); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run", allocs)
	}
}

// flush is an agent whose revenue covers its costs three times over, with
// $50 in its revenue wallet: a call may cost up to $7.50.
var flush = Wallet{Known: true, LifetimeRevenue: 300, LifetimeCost: 100, Balance: 50}

func withWallet(subsystem string, w Wallet) *Intent {
	in, _ := SubsystemIntent(subsystem)
	in.Wallet = w
	return &in
}

// A self-funding provider serves only agents that report their wallet, and
// only calls the wallet affords; otherwise the intent goes on to the next
// provider (spec 000, Bankr resolve; the sustainability table).
func TestSelfFundingBudget(t *testing.T) {
	bankr := ProviderDescription{ID: "bankr", Traits: Traits{SelfFunding: true, Payment: PaymentWallet},
		Models: []ModelInfo{{ID: "m", Quality: Maximum, InputPrice: 3, OutputPrice: 15}}}
	other := ProviderDescription{ID: "other", Models: []ModelInfo{{ID: "o", Quality: Maximum, InputPrice: 3, OutputPrice: 15}}}
	providers := []ProviderDescription{bankr, other}
	for _, c := range []struct {
		name   string
		wallet Wallet
		want   string
	}{
		{"no wallet reported", Wallet{}, "other"},
		{"flush", flush, "bankr"},
		{"contracting, small wallet", Wallet{Known: true, LifetimeRevenue: 10, LifetimeCost: 100, Balance: 0.2}, "other"},
		{"contracting, large wallet", Wallet{Known: true, LifetimeRevenue: 10, LifetimeCost: 100, Balance: 100}, "bankr"},
		{"bootstrapping", Wallet{Known: true, Balance: 5}, "bankr"},
		{"empty wallet", Wallet{Known: true, LifetimeRevenue: 1, LifetimeCost: 1, Balance: 0}, "other"},
	} {
		in, _ := SubsystemIntent("operator")
		in.Wallet = c.wallet
		r, err := Resolve(&in, providers, nil)
		if err != nil || r.Provider != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, r.Provider, err, c.want)
		}
	}
	for _, c := range []struct {
		ratio, mult float64
	}{{3, 1.5}, {2, 1.0}, {1.5, 1.0}, {1, 0.7}, {0.6, 0.7}, {0.5, 0.3}, {0.1, 0.3}} {
		if got := BudgetMultiplier(c.ratio); got != c.mult {
			t.Errorf("BudgetMultiplier(%v) = %v, want %v", c.ratio, got, c.mult)
		}
	}
	// A budget too small for the best model finds a cheaper one the wallet
	// affords, rather than none (spec: below ratio 0.5, "find cheaper model
	// alternatives"): $0.40 × 0.1 × 0.3 = $0.012 a call; the 2000/500-token
	// call costs $0.0135 on m (3/15 $/Mtok) and $0.0014 on cheap (0.2/2).
	// m has what operator prefers (interleaved thinking, citations), so it
	// outscores cheap whenever the wallet affords it.
	tiers := bankr
	tiers.Models = []ModelInfo{
		{ID: "m", Quality: Maximum, Features: Features(InterleavedThinking, Citations), InputPrice: 3, OutputPrice: 15},
		{ID: "cheap", Quality: Maximum, InputPrice: 0.2, OutputPrice: 2},
	}
	in, _ := SubsystemIntent("operator")
	in.Wallet = Wallet{Known: true, LifetimeRevenue: 10, LifetimeCost: 100, Balance: 0.4}
	if r, err := Resolve(&in, []ProviderDescription{tiers, other}, nil); err != nil || r.Provider != "bankr" || r.Model != "cheap" {
		t.Errorf("tight budget: %s/%s (%v), want bankr/cheap", r.Provider, r.Model, err)
	}
	in.Wallet.Balance = 50 // $1.50 a call: the best model again
	if r, _ := Resolve(&in, []ProviderDescription{tiers, other}, nil); r.Model != "m" {
		t.Errorf("ample budget: %s, want m", r.Model)
	}
	if got := (Wallet{Known: true, LifetimeRevenue: 300, LifetimeCost: 100, Balance: 50}).MaxCall(); got != 7.5 {
		t.Errorf("MaxCall = %v, want 7.5 (50 × 0.1 × 1.5)", got)
	}
}
