package routing

// Catalogs equivalent to the ones the specification's routing examples
// assume (002 "Concrete Routing Examples", 12-providers "Routing
// examples", 01 "Multi-model orchestration routing"). The spec names the
// models and some prices; features follow its feature matrices (12-providers
// "Complete feature matrix" and "Backend availability by feature"); the
// rest is stated here.
//
// Quality levels are what the spec's assignments imply, not a benchmark:
// Opus 4.6 serves every High and Maximum subsystem through BlockRun
// (heartbeat_t2, risk, operator); Sonnet 4.6 serves the Medium ones
// (curator, playbook) and never a High one, so it is rated Medium; DeepSeek
// R1 serves dream (High) and is rated High; Gemini 3 Flash and Haiku 4.5
// are the T1 models (Low); gpt-oss-120b is the free T0 model (Minimum).
//
// Latencies are typical time until the answer starts, reasoning included:
// DeepSeek R1 thinks before it answers (12 s), which keeps it out of the
// subsystems with short budgets (heartbeat_t1 2 s, daimon 1 s, playbook
// 10 s, operator 5 s).
//
// Compaction is listed on Opus 4.6 only: the spec sends session_compact
// (Medium, like curator) to Opus but curator to Sonnet, so in its catalog
// only Opus offers the compaction API.

// Anthropic model features through a gateway: BlockRun's matrix says
// "visible thinking: no" (thinking is not surfaced), "structured outputs:
// model-dep", "prompt caching: auto".
var claudeGateway = Features(InterleavedThinking, AdaptiveThinking, ReasoningEffort, LowEffort, Citations,
	StructuredOutputs, ToolUse, PromptCaching, Vision, TopK, LongContext)

func blockrun() ProviderDescription {
	return ProviderDescription{
		ID:         "blockrun",
		Traits:     Traits{ContextEngineering: true, Payment: PaymentX402},
		CatalogURL: "https://api.blockrun.ai/v1/models",
		Models: []ModelInfo{
			// "heartbeat_t0 -> BlockRun/nvidia-gpt-oss-120b (FREE)"
			{ID: "nvidia-gpt-oss-120b", Family: "openai", Quality: Minimum, Features: Features(ToolUse, LowEffort),
				InputPrice: 0, OutputPrice: 0, LatencyMs: 180, ContextWindow: 128_000},
			// "heartbeat_t1 -> BlockRun/gemini-3-flash ($0.50/M input)"
			{ID: "gemini-3-flash", Family: "google", Quality: Low,
				Features:   Features(ToolUse, StructuredOutputs, ReasoningEffort, LowEffort, Vision, PromptCaching, LongContext),
				InputPrice: 0.50, OutputPrice: 3.00, LatencyMs: 400, ContextWindow: 1_000_000},
			{ID: "claude-haiku-4-5", Family: "anthropic", Quality: Low, Features: claudeGateway &^ Features(LongContext),
				InputPrice: 1, OutputPrice: 5, LatencyMs: 600, ContextWindow: 200_000},
			// "dream -> BlockRun/deepseek-r1 ($0.55/M, visible <think>)"
			{ID: "deepseek-r1", Family: "deepseek", Quality: High, Features: Features(VisibleThinking, ToolUse),
				InputPrice: 0.55, OutputPrice: 2.19, LatencyMs: 12_000, ContextWindow: 128_000},
			// "curator -> BlockRun/claude-sonnet-4-6 ($3/M, structured outputs)"
			{ID: "claude-sonnet-4-6", Family: "anthropic", Quality: Medium, Features: claudeGateway,
				InputPrice: 3, OutputPrice: 15, LatencyMs: 1500, ContextWindow: 1_000_000},
			// "heartbeat_t2 -> BlockRun/claude-opus-4-6 ($5/M, adaptive thinking)"
			{ID: "claude-opus-4-6", Family: "anthropic", Quality: Maximum, Features: claudeGateway | Features(Compaction, MaxEffort),
				InputPrice: 5, OutputPrice: 25, LatencyMs: 2500, ContextWindow: 1_000_000},
		},
	}
}

// openrouter is the universal fallback: 400+ models, cheapest match wins
// (spec OpenRouterProvider), prepaid credits.
func openrouter() ProviderDescription {
	return ProviderDescription{
		ID:            "openrouter",
		Traits:        Traits{ContextEngineering: true, Payment: PaymentPrepaid},
		Params:        StyleOpenRouter,
		Policy:        Policy{CheapestOnly: true},
		CatalogURL:    "https://openrouter.ai/api/v1/models",
		ModelPatterns: []string{"*/*"},
		Models: []ModelInfo{
			{ID: "anthropic/claude-opus-4-6", Family: "anthropic", Quality: Maximum, Features: claudeGateway | Features(Compaction),
				InputPrice: 5, OutputPrice: 25, LatencyMs: 2700},
			{ID: "anthropic/claude-sonnet-4-6", Family: "anthropic", Quality: Medium, Features: claudeGateway,
				InputPrice: 3, OutputPrice: 15, LatencyMs: 1700},
			{ID: "google/gemini-3-flash", Family: "google", Quality: Low, Features: Features(ToolUse, StructuredOutputs, LowEffort, Vision),
				InputPrice: 0.50, OutputPrice: 3, LatencyMs: 500},
			{ID: "deepseek/deepseek-r1", Family: "deepseek", Quality: High, Features: Features(VisibleThinking, ToolUse),
				InputPrice: 0.55, OutputPrice: 2.19, LatencyMs: 12_500},
			// "context -> OpenRouter/qwen-plus (/think toggle, cheap)"
			{ID: "qwen/qwen-plus", Family: "qwen", Quality: Medium, Features: Features(VisibleThinking, ReasoningEffort, LowEffort, ToolUse, LongContext),
				InputPrice: 0.40, OutputPrice: 1.20, LatencyMs: 800},
		},
	}
}

// venice is the private plane: zero retention, DIEM-paid, and a specialist
// that only takes intents wanting privacy (or DIEM-funded ones).
func venice() ProviderDescription {
	return ProviderDescription{
		ID:       "venice",
		Traits:   Traits{Private: true, Payment: PaymentDiem},
		Features: Features(Privacy),
		Params:   StyleVenice,
		Policy:   Policy{Serves: Features(Privacy, TEE, E2EE), DiemFunded: true},
		Models: []ModelInfo{
			// "dream -> Venice/deepseek-r1 (visible, private, DIEM-funded)"
			{ID: "deepseek-r1", Family: "deepseek", Quality: High, Features: Features(VisibleThinking, ReasoningEffort, ToolUse, TEE, MinP, TopK, Seed),
				InputPrice: 0.85, OutputPrice: 3.40, LatencyMs: 12_000},
			// "daimon -> Venice/llama-3.3-70b (private, fast)"
			{ID: "llama-3.3-70b", Family: "meta", Quality: Medium, Features: Features(ToolUse, StructuredOutputs, LowEffort, MinP, TopK, Seed),
				InputPrice: 0.70, OutputPrice: 2.80, LatencyMs: 500},
			{ID: "qwen-2.5-vl", Family: "qwen", Quality: Medium, Features: Features(Vision, StructuredOutputs, LowEffort, MinP, TopK, Seed),
				InputPrice: 1.00, OutputPrice: 4.00, LatencyMs: 900},
			{ID: "glm-4.6", Family: "zhipu", Quality: High, Features: Features(ReasoningEffort, ToolUse, StructuredOutputs, MinP, TopK, Seed),
				InputPrice: 0.85, OutputPrice: 2.75, LatencyMs: 2500},
		},
	}
}

// bankr funds inference from the agent's revenue. Its policy limits it to
// the subsystems that run on self-funding economics; the spec's config
// lists autonomous and social, and its full-stack example sends operator
// there ("self-funded from trading revenue"), so this owner adds operator.
func bankr() ProviderDescription {
	return ProviderDescription{
		ID:       "bankr",
		Traits:   Traits{SelfFunding: true, ContextEngineering: true, Payment: PaymentWallet},
		Features: Features(SelfFunding, CrossVerify),
		Policy:   Policy{Subsystems: []string{"operator", "autonomous", "social"}},
		Models: []ModelInfo{
			{ID: "claude-opus-4-6", Family: "anthropic", Quality: Maximum, Features: claudeGateway | Features(Compaction),
				InputPrice: 5, OutputPrice: 25, LatencyMs: 2600},
			{ID: "claude-sonnet-4-6", Family: "anthropic", Quality: Medium, Features: claudeGateway,
				InputPrice: 3, OutputPrice: 15, LatencyMs: 1600},
			{ID: "gpt-5.4", Family: "openai", Quality: Maximum, Features: Features(ToolUse, StructuredOutputs, ReasoningEffort, LowEffort),
				InputPrice: 2.50, OutputPrice: 15, LatencyMs: 1800},
		},
	}
}

// directNative are the features only a direct key reaches (spec
// DirectKeyProvider: "predicted_outputs | batch_api | explicit_caching |
// responses_api | direct_passthrough").
var directNative = Features(PredictedOutputs, BatchAPI, ExplicitCaching, ResponsesAPI, DirectPassthrough)

// directLocal is a local model behind the owner's own endpoint: free, on
// the box, no specialty ("heartbeat_t0 -> Direct/local/qwen3-7b (FREE, zero
// latency)"). Its only model is Minimum, so it takes nothing else.
func directLocal() ProviderDescription {
	return ProviderDescription{
		ID:     "direct/local",
		Traits: Traits{Payment: PaymentAPIKey},
		Params: StyleGeneric,
		Models: []ModelInfo{
			{ID: "qwen3-7b", Family: "qwen", Quality: Minimum, Features: Features(LowEffort, ToolUse), LatencyMs: 30},
		},
	}
}

func directAnthropic() ProviderDescription {
	return ProviderDescription{
		ID:       "direct/anthropic",
		Traits:   Traits{Payment: PaymentAPIKey},
		Features: Features(DirectPassthrough),
		Params:   StyleAnthropic,
		Policy:   Policy{Serves: directNative},
		Models: []ModelInfo{
			// Direct Anthropic returns thinking blocks: visible thinking.
			{ID: "claude-opus-4-6", Family: "anthropic", Quality: Maximum, Features: claudeGateway | Features(VisibleThinking, BatchAPI, Compaction, MaxEffort),
				InputPrice: 5, OutputPrice: 25, LatencyMs: 2400},
			// "batch dreams -> Direct/anthropic/sonnet-4-6 (Batch API, 50% discount)"
			{ID: "claude-sonnet-4-6", Family: "anthropic", Quality: Medium, Features: claudeGateway | Features(VisibleThinking, BatchAPI),
				InputPrice: 3, OutputPrice: 15, LatencyMs: 1400},
		},
	}
}

func directOpenAI() ProviderDescription {
	return ProviderDescription{
		ID:       "direct/openai",
		Traits:   Traits{Payment: PaymentAPIKey},
		Features: Features(DirectPassthrough),
		Params:   StyleOpenAI,
		Policy:   Policy{Serves: directNative},
		Models: []ModelInfo{
			// "playbook -> Direct/openai/gpt-5.4 (Predicted Outputs, 3x speed)"
			{ID: "gpt-5.4", Family: "openai", Quality: Maximum,
				Features:   Features(ToolUse, StructuredOutputs, ReasoningEffort, LowEffort, PredictedOutputs, BatchAPI, ResponsesAPI, WebSearch, Vision, PromptCaching, Seed, LongContext),
				InputPrice: 2.50, OutputPrice: 15, LatencyMs: 1500},
			{ID: "o3", Family: "openai", Quality: High, Features: Features(ToolUse, StructuredOutputs, ReasoningEffort, BatchAPI, ResponsesAPI, Seed),
				InputPrice: 2, OutputPrice: 8, LatencyMs: 6000},
		},
	}
}

// blockrunOnly is 002 §2.1: "Operator has: Bardo Inference key (BlockRun
// enabled by default)".
func blockrunOnly() []ProviderDescription { return []ProviderDescription{blockrun()} }

// fullStack is 002 §2.3 / 12-providers "Full stack: all five providers",
// in this owner's order. The spec's configuration text lists "BlockRun ->
// OpenRouter -> Venice -> Bankr -> Direct", but with first-match-wins that
// order sends dream and death to BlockRun (it can serve them, degraded) and
// never reaches Venice; the spec's own advice is the fix ("move Venice
// above BlockRun in your config"). So the specialists come first — each
// takes only what it is for (Venice: privacy; Bankr: its subsystems; direct
// keys: native features; the local model: Minimum work) — then BlockRun,
// the primary, then OpenRouter, the fallback.
func fullStack() []ProviderDescription {
	return []ProviderDescription{venice(), bankr(), directLocal(), directAnthropic(), directOpenAI(), blockrun(), openrouter()}
}
