package routing

import (
	"strings"
	"testing"
)

// The resolved models' features, as a Resolution carries them.
var (
	capsOpus     = claudeGateway | Features(Compaction, MaxEffort)
	capsSonnet   = claudeGateway
	capsGPT      = Features(ToolUse, StructuredOutputs, ReasoningEffort, LowEffort, PredictedOutputs, Seed)
	capsGPT41    = Features(ToolUse, StructuredOutputs, PredictedOutputs, Seed) // no reasoning
	capsDeepSeek = Features(Privacy, VisibleThinking, ReasoningEffort, ToolUse, TEE, MinP, TopK, Seed)
	capsGemini   = Features(ToolUse, StructuredOutputs, ReasoningEffort, LowEffort, Vision)
)

func profile(name string) *InferenceProfile {
	p, ok := DefaultProfile(name)
	if !ok {
		panic(name)
	}
	return &p
}

func TestMapProfile(t *testing.T) {
	playbook := *profile("playbook")
	playbook.PredictedOutput = "# PLAYBOOK\n..."
	withMax := *profile("heartbeat_t2")
	withMax.Set |= FieldMaxTokens
	withMax.MaxTokens = 4096
	schemaJSON := *profile("curator")
	schemaJSON.ResponseSchema = &ResponseSchema{Name: "CuratorEvaluation", Schema: []byte(`{"type":"object"}`), Strict: true}
	hidden := InferenceProfile{VisibleThinking: Off}

	cases := []struct {
		name  string
		p     *InferenceProfile
		style ParamStyle
		caps  FeatureSet
		check func(Params) bool
		notes string
	}{
		// Risk on Anthropic: Max effort is a 65536-token budget; thinking
		// admits neither temperature 0.1 nor top_k, and top_p ≥ 0.95; the
		// schema tool cannot be forced while thinking.
		{"risk/anthropic", profile("risk"), StyleAnthropic, capsOpus,
			func(o Params) bool {
				return o.Thinking && o.ThinkingBudget == 65536 && o.Set&(FieldTemperature|FieldTopK) == 0 && o.TopP == 0.95 &&
					o.Schema == SchemaToolUse && !o.SchemaForceTool && o.CacheControl && o.Effort == ""
			},
			"temperature:dropped-with-thinking,top_k:dropped-with-thinking,top_p:0.85>0.95,response_schema:tool-unforced-with-thinking"},
		// Risk on OpenAI: xhigh; a reasoning model takes no sampling
		// parameters; OpenAI has no top_k.
		{"risk/openai", profile("risk"), StyleOpenAI, capsGPT,
			func(o Params) bool {
				return o.Effort == "xhigh" && o.Set == 0 && o.Schema == SchemaNative && !o.CacheControl && !o.Thinking
			},
			"top_k:dropped,temperature:dropped-with-reasoning,top_p:dropped-with-reasoning"},
		// Risk on Venice's DeepSeek: "max" only where the catalog says so;
		// no structured outputs on this model → prompt-guided.
		{"risk/venice", profile("risk"), StyleVenice, capsDeepSeek,
			func(o Params) bool {
				return o.Effort == "high" && o.Temperature == 0.1 && o.TopK == 40 && o.Set&FieldTopK != 0 &&
					o.Schema == SchemaPromptGuided && o.CacheControl
			},
			"reasoning_effort:max>high,response_schema>prompt-guided"},
		{"risk/venice-max", profile("risk"), StyleVenice, capsDeepSeek | Features(MaxEffort, StructuredOutputs),
			func(o Params) bool { return o.Effort == "max" && o.Schema == SchemaNative }, ""},
		// REM dream on Anthropic: min_p approximated by top_p, then thinking
		// limits apply; web search is Venice's.
		{"dream_rem/anthropic", profile("dream_rem"), StyleAnthropic, capsSonnet,
			func(o Params) bool {
				return o.Thinking && o.ThinkingBudget == 16384 && o.VisibleThinking && o.TopP == 0.95 &&
					o.Set&(FieldMinP|FieldTemperature) == 0 && !o.WebSearch
			},
			"min_p:0.1>top_p:0.9,temperature:dropped-with-thinking,top_p:0.9>0.95,web_search:unsupported"},
		// REM dream on Venice: everything native.
		{"dream_rem/venice", profile("dream_rem"), StyleVenice, capsDeepSeek,
			func(o Params) bool {
				return o.MinP == 0.1 && o.Set&FieldMinP != 0 && o.Temperature == 0.9 && o.Effort == "high" &&
					o.VisibleThinking && o.WebSearch && !o.HideThinking
			}, ""},
		// mind_wandering on Anthropic: effort none is no thinking, so the
		// temperature stays.
		{"mind_wandering/anthropic", profile("mind_wandering"), StyleAnthropic, capsSonnet,
			func(o Params) bool { return !o.Thinking && o.Temperature == 0.8 && o.TopP == 0.9 },
			"min_p:0.1>top_p:0.9"},
		{"heartbeat_t1/gemini", profile("heartbeat_t1"), StyleGemini, capsGemini,
			func(o Params) bool {
				return o.Effort == "low" && o.Schema == SchemaNative && o.Temperature == 0.3 && o.TopP == 0.9 && !o.CacheControl
			}, ""},
		// A model that cannot be told how hard to think is told in the
		// system prompt.
		{"heartbeat_t2/gpt-4.1", profile("heartbeat_t2"), StyleOpenAI, capsGPT41,
			func(o Params) bool {
				return o.Effort == "" && o.SystemPrefix == PromptStepByStep && o.Temperature == 0.5
			}, "reasoning_effort:high>prompt"},
		{"mind_wandering/gpt-4.1", profile("mind_wandering"), StyleOpenAI, capsGPT41,
			func(o Params) bool { return o.SystemPrefix == PromptAnswerDirectly && o.TopP == 0.9 },
			"min_p:0.1>top_p:0.9,reasoning_effort:none>prompt"},
		// Anthropic max_tokens counts the thinking budget.
		{"max_tokens/anthropic", &withMax, StyleAnthropic, capsOpus,
			func(o Params) bool { return o.MaxTokens == 16384+4096 && o.ThinkingBudget == 16384 },
			"temperature:dropped-with-thinking,max_tokens:4096>20480,response_schema:tool-unforced-with-thinking"},
		{"death_testament/openai", profile("death_testament"), StyleOpenAI, capsGPT,
			func(o Params) bool { return o.VisibleThinking && o.Effort == "high" && o.ModelSuffix == "" },
			"temperature:dropped-with-reasoning,top_p:dropped-with-reasoning,tee_mode:unsupported"},
		{"death_testament/venice", profile("death_testament"), StyleVenice, capsDeepSeek,
			func(o Params) bool { return o.ModelSuffix == "-tee" && o.VisibleThinking }, "response_schema>prompt-guided"},
		{"playbook/openai", &playbook, StyleOpenAI, capsGPT,
			func(o Params) bool { return o.PredictedOutput == playbook.PredictedOutput && o.Effort == "medium" },
			"temperature:dropped-with-reasoning,top_p:dropped-with-reasoning"},
		{"playbook/anthropic", &playbook, StyleAnthropic, capsSonnet,
			func(o Params) bool { return o.PredictedOutput == "" && o.ThinkingBudget == 4096 },
			"temperature:dropped-with-thinking,top_p:0.9>0.95,predicted_output:unsupported"},
		// Prompt-guided JSON carries the schema into the system prompt.
		{"curator/generic", &schemaJSON, StyleGeneric, Features(ToolUse, ReasoningEffort),
			func(o Params) bool {
				return o.Schema == SchemaPromptGuided && o.SystemSuffix == PromptJSONPrefix+`{"type":"object"}` && o.Effort == "medium"
			}, "response_schema>prompt-guided"},
		// Unknown features: model-dependent support is assumed.
		{"risk/openrouter-unknown", profile("risk"), StyleOpenRouter, 0,
			func(o Params) bool { return o.Effort == "high" && o.TopK == 40 && o.Schema == SchemaNative },
			"reasoning_effort:max>high"},
		{"hidden/venice", &hidden, StyleVenice, capsDeepSeek,
			func(o Params) bool { return o.HideThinking && !o.VisibleThinking }, ""},
		{"empty", &InferenceProfile{}, StyleAnthropic, capsOpus,
			func(o Params) bool { return o.Set == 0 && !o.Thinking && o.Schema == SchemaNone }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, notes := MapProfile(c.p, c.style, c.caps)
			if !c.check(o) {
				t.Errorf("params %+v", o)
			}
			if got := strings.Join(notes, ","); got != c.notes {
				t.Errorf("notes %q\nwant  %q", got, c.notes)
			}
		})
	}
}

// TestReasoningEffortTables checks the per-provider values of 01
// "ReasoningEffort enum" / "Provider normalization" exactly.
func TestReasoningEffortTables(t *testing.T) {
	efforts := []Effort{EffortNone, EffortLow, EffortMedium, EffortHigh, EffortMax}
	budgets := []int64{0, 1024, 4096, 16384, 65536}
	openai := []string{"none", "low", "medium", "high", "xhigh"}
	venice := []string{"none", "low", "medium", "high", "max"}
	generic := []string{"none", "low", "medium", "high", "high"}
	for i, e := range efforts {
		p := InferenceProfile{ReasoningEffort: e}
		if o, _ := MapProfile(&p, StyleAnthropic, capsOpus); o.ThinkingBudget != budgets[i] || o.Thinking != (budgets[i] > 0) {
			t.Errorf("anthropic %v: %d", e, o.ThinkingBudget)
		}
		if o, _ := MapProfile(&p, StyleOpenAI, capsGPT); o.Effort != openai[i] {
			t.Errorf("openai %v: %q", e, o.Effort)
		}
		if o, _ := MapProfile(&p, StyleVenice, capsDeepSeek|Features(MaxEffort)); o.Effort != venice[i] {
			t.Errorf("venice %v: %q", e, o.Effort)
		}
		for _, s := range []ParamStyle{StyleOpenRouter, StyleGemini, StyleGeneric} {
			if o, _ := MapProfile(&p, s, capsGemini); o.Effort != generic[i] {
				t.Errorf("%v %v: %q", s, e, o.Effort)
			}
		}
	}
}

// TestMapProfileBankr: Bankr passes parameters through to the underlying
// vendor, chosen by the model's family (StyleByFamily).
func TestMapProfileBankr(t *testing.T) {
	p := InferenceProfile{ReasoningEffort: EffortMax}
	for _, c := range []struct {
		family, model string
		check         func(Params) bool
	}{
		{"anthropic", "claude-opus-4-6", func(o Params) bool { return o.ThinkingBudget == 65536 }},
		{"", "claude-opus-4-6", func(o Params) bool { return o.ThinkingBudget == 65536 }},
		{"openai", "gpt-5.4", func(o Params) bool { return o.Effort == "xhigh" }},
		{"", "openai/gpt-5.4", func(o Params) bool { return o.Effort == "xhigh" }},
		{"moonshot", "kimi-k2", func(o Params) bool { return o.Effort == "high" }},
	} {
		o, _ := MapProfile(&p, StyleFor(StyleByFamily, c.family, c.model), 0)
		if !c.check(o) {
			t.Errorf("%s %s: %+v", c.family, c.model, o)
		}
	}
}
