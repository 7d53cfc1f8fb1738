//go:build !wasip1

package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat/compattest"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

const base = "https://openrouter.ai/api/v1"

// prefsConfig sets attribution headers and every kind of preference value:
// a string sort, lists, booleans, percentile cutoffs, prices.
const prefsConfig = `{
	"http_referer": "https://bardo.example",
	"x_title": "Bardo Inference",
	"provider": {
		"sort": "price",
		"order": ["anthropic", "openai"],
		"allow_fallbacks": false,
		"data_collection": "deny",
		"quantizations": ["fp8", "bf16"],
		"preferred_max_latency": {"p90": 3},
		"preferred_min_throughput": 50,
		"max_price": {"prompt": 1, "completion": 2}
	}
}`

func encodeCall(t *testing.T, h *plugintest.Host, model string, stream bool) *wire.UpstreamCall {
	t.Helper()
	return compattest.Encode(t, h, wire.Route{Provider: "openrouter", Model: model, BaseURL: base}, stream)
}

func TestDescribe(t *testing.T) {
	plugintest.New(t, "")
	d := plugintest.ProviderDescription(t)
	want := &routing.ProviderDescription{
		Traits:     routing.Traits{Payment: routing.PaymentPrepaid, ContextEngineering: true},
		Params:     routing.StyleOpenRouter,
		CatalogURL: "/models",
		// Custom: the SDK marks a provider with a Resolve hook, so the
		// host calls the plugin's resolve for it.
		Policy: routing.Policy{CheapestOnly: true, Custom: true},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("description\n got %+v\nwant %+v", d, want)
	}
}

func TestEncodePreferences(t *testing.T) {
	h := plugintest.New(t, prefsConfig)
	c := encodeCall(t, h, "anthropic/claude-sonnet-4.6", false)
	if c.URL != base+"/chat/completions" || c.BodyMode != wire.BodyNative || c.BodyDialect != wire.DialectOpenAI ||
		c.ResponseDialect != wire.DialectOpenAI || len(c.Body) != 0 {
		t.Fatalf("call %+v", c)
	}
	if wire.Header(c.Headers, "Authorization") != "Bearer ${credential}" || wire.Header(c.Headers, "HTTP-Referer") != "https://bardo.example" ||
		wire.Header(c.Headers, "X-Title") != "Bardo Inference" {
		t.Fatalf("headers %+v", c.Headers)
	}
	full := `{"provider":{"sort":"price","order":["anthropic","openai"],"allow_fallbacks":false,"data_collection":"deny",
		"quantizations":["fp8","bf16"],"preferred_max_latency":{"p90":3},"preferred_min_throughput":50,
		"max_price":{"prompt":1,"completion":2}}}`
	compattest.JSONEq(t, "provider member", c.BodyMerge, full)

	// A :nitro or :floor model is its own sort: the configured one is left
	// out so the two cannot contradict each other. Other variants keep it.
	unsorted := strings.Replace(full, `"sort":"price",`, "", 1)
	compattest.JSONEq(t, ":nitro", encodeCall(t, h, "anthropic/claude-sonnet-4.6:nitro", true).BodyMerge, unsorted)
	compattest.JSONEq(t, ":floor", encodeCall(t, h, "deepseek/deepseek-r1:floor", false).BodyMerge, unsorted)
	compattest.JSONEq(t, ":free", encodeCall(t, h, "meta-llama/llama-3.3-70b-instruct:free", false).BodyMerge, full)
}

func TestEncodeSortObjectOnly(t *testing.T) {
	h := plugintest.New(t, `{"provider":{"sort":{"by":"throughput","partition":"none"}}}`)
	compattest.JSONEq(t, "provider member", encodeCall(t, h, "openai/gpt-4o", false).BodyMerge,
		`{"provider":{"sort":{"by":"throughput","partition":"none"}}}`)
	// Nothing left without the sort: no member at all.
	if m := encodeCall(t, h, "openai/gpt-4o:nitro", false).BodyMerge; m != nil {
		t.Fatalf("merge %s for a :nitro model with only a sort configured", m)
	}
}

func TestEncodeWithoutPreferences(t *testing.T) {
	h := plugintest.New(t, "")
	c := encodeCall(t, h, "openai/gpt-4o", true)
	if c.BodyMerge != nil || wire.Header(c.Headers, "X-Title") != "" || !c.Stream || wire.Header(c.Headers, "Accept") != "text/event-stream" {
		t.Fatalf("call %+v", c)
	}
}

// Every mistake in the config fails the load, naming what is wrong.
func TestConfigRefused(t *testing.T) {
	compattest.Refused(t, prefsConfig, map[string]string{
		`{"provider":{"sort":"cheapest"}}`:                          "sort",
		`{"provider":{"sort":{"by":"price","partition":"vendor"}}}`: "partition",
		`{"provider":{"sort":{"by":"price","group":"model"}}}`:      "group",
		`{"provider":{"allow_fallback":false}}`:                     "allow_fallback",
		`{"provider":{"data_collection":"never"}}`:                  "data_collection",
		`{"provider":{"quantizations":["int3"]}}`:                   "quantizations",
		`{"provider":{"order":[""]}}`:                               "order[0]",
		`{"provider":{"preferred_max_latency":{}}}`:                 "p50",
		`{"provider":{"preferred_max_latency":{"p95":2}}}`:          "p95",
		`{"provider":{"preferred_min_throughput":-3}}`:              "positive",
		`{"provider":{"max_price":{"prompt":-1}}}`:                  "max_price",
		`{"provider":{"max_price":{"tokens":1}}}`:                   "tokens",
		`{"providers":{"sort":"price"}}`:                            "providers",
		`{"x_title":"a","headers":{"x-title":"b"}}`:                 "x_title",
		`{"headers":{"Content-Type":"text/plain"}}`:                 "Content-Type",
		`{"variants":{"nitro_subsystems":["dream"]}}`:               "both",
		`{"variants":{"floor_min_cost_sensitivity":1.5}}`:           "floor_min_cost_sensitivity",
		`{"variants":{"nitro_max_latency_ms":-1}}`:                  "nitro_max_latency_ms",
		`{"variants":{"enable":false}}`:                             "enable",
	})
}

// standard is what the host's standard resolver answers for OpenRouter:
// the cheapest eligible model with its cost, features and style.
func standard(model string) *routing.Resolution {
	return &routing.Resolution{Provider: "openrouter", Model: model, EstimatedCostUSD: 0.0042,
		Payment: routing.PaymentPrepaid, Features: routing.Features(routing.ToolUse, routing.Reasoning),
		Quality: routing.High, LatencyMs: 900, Style: routing.StyleOpenRouter, Pass: 1}
}

func subsystem(t *testing.T, name string) routing.Intent {
	t.Helper()
	in, ok := routing.SubsystemIntent(name)
	if !ok {
		t.Fatalf("unknown subsystem %s", name)
	}
	return in
}

func TestResolveVariants(t *testing.T) {
	h := plugintest.New(t, "")
	intent := func(f func(*routing.Intent)) routing.Intent {
		in := routing.Intent{Subsystem: "custom", Quality: routing.Medium, MaxLatencyMs: 30_000, CostSensitivity: 0.5}
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name  string
		in    routing.Intent
		model string
		want  string
	}{
		{"operator: latency-sensitive by name", subsystem(t, "operator"), "anthropic/claude-opus-4.6", "anthropic/claude-opus-4.6:nitro"},
		{"dream: cheapest path by name", subsystem(t, "dream"), "deepseek/deepseek-r1", "deepseek/deepseek-r1:floor"},
		{"daimon: a 1 s budget", subsystem(t, "daimon"), "meta-llama/llama-3.3-70b-instruct", "meta-llama/llama-3.3-70b-instruct:nitro"},
		{"heartbeat_t0: both thresholds, nitro wins", subsystem(t, "heartbeat_t0"), "qwen/qwen-2.5-7b", "qwen/qwen-2.5-7b:nitro"},
		{"curator: neither", subsystem(t, "curator"), "qwen/qwen-plus", "qwen/qwen-plus"},
		{"risk: neither (30 s, cost 0)", subsystem(t, "risk"), "anthropic/claude-opus-4.6", "anthropic/claude-opus-4.6"},
		{"budget at the threshold", intent(func(in *routing.Intent) { in.MaxLatencyMs = 1000 }), "a/b", "a/b:nitro"},
		{"budget over the threshold", intent(func(in *routing.Intent) { in.MaxLatencyMs = 1001 }), "a/b", "a/b"},
		{"cost at the threshold", intent(func(in *routing.Intent) { in.CostSensitivity = 0.9 }), "a/b", "a/b:floor"},
		{"cost under the threshold", intent(func(in *routing.Intent) { in.CostSensitivity = 0.89 }), "a/b", "a/b"},
		{"unlimited budget, cost 1", intent(func(in *routing.Intent) { in.MaxLatencyMs, in.CostSensitivity = 0, 1 }), "a/b", "a/b:floor"},
		{"already a variant", subsystem(t, "operator"), "meta-llama/llama-3.3-70b-instruct:free", "meta-llama/llama-3.3-70b-instruct:free"},
		{"explicit model", intent(func(in *routing.Intent) { in.Subsystem, in.Model = "operator", "anthropic/claude-opus-4.6" }),
			"anthropic/claude-opus-4.6", "anthropic/claude-opus-4.6"},
	} {
		got := plugintest.Resolve(t, tc.in, standard(tc.model))
		if got == nil {
			t.Fatalf("%s: no answer", tc.name)
		}
		// Only the model changes: cost, features, quality, style, pass are
		// the standard's.
		want := standard(tc.want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, want)
		}
	}
	if h.Metrics["openrouter_variant_nitro"] != 4 || h.Metrics["openrouter_variant_floor"] != 3 {
		t.Errorf("metrics %v", h.Metrics)
	}
	// No standard answer: no answer (the rule never invents a model).
	if got := plugintest.Resolve(t, subsystem(t, "operator"), nil); got != nil {
		t.Fatalf("answered %+v without a standard answer", got)
	}
}

func TestResolveConfigured(t *testing.T) {
	plugintest.New(t, `{"variants":{"nitro_subsystems":["heartbeat_t1"],"floor_subsystems":["operator","curator"],
		"nitro_max_latency_ms":0,"floor_min_cost_sensitivity":0}}`)
	for sub, want := range map[string]string{
		"heartbeat_t1": "x/m:nitro", // named
		"operator":     "x/m:floor", // moved to the floor list
		"curator":      "x/m:floor",
		"daimon":       "x/m", // 1 s budget, but the latency rule is off
		"heartbeat_t0": "x/m", // cost 1.0, but the cost rule is off
		"dream":        "x/m", // no longer named
	} {
		if got := plugintest.Resolve(t, subsystem(t, sub), standard("x/m")); got == nil || got.Model != want {
			t.Errorf("%s: %+v, want model %s", sub, got, want)
		}
	}

	plugintest.New(t, `{"variants":{"enabled":false}}`)
	for _, sub := range []string{"operator", "dream", "heartbeat_t0"} {
		if got := plugintest.Resolve(t, subsystem(t, sub), standard("x/m")); got == nil || got.Model != "x/m" {
			t.Errorf("variants off, %s: %+v", sub, got)
		}
	}
}
