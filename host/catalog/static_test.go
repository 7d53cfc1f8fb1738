package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/bardoinference/bardo/sdk/routing"
)

// decodeModels decodes a TOML document's [[model]] tables as the config
// package would hand them over.
func decodeModels(t *testing.T, doc string) []map[string]any {
	t.Helper()
	var tree map[string]any
	if _, err := toml.Decode(doc, &tree); err != nil {
		t.Fatal(err)
	}
	raw, _ := tree["model"].([]map[string]any)
	return raw
}

func TestFromTOML(t *testing.T) {
	tables := decodeModels(t, `
[[model]]
id = "llama-3.3-70b"
name = "Llama 3.3 70B"
context_window = 131072
max_output = 8192
input_price = "0.70"
output_price = 2.8
cache_read_price = 0
features = ["tool_use", "structured_outputs", "private"]
quality = "Medium"

[[model]]
id = "deepseek-r1-671b"
input_price = 3
`)
	ms, err := FromTOML("venice", tables)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d models", len(ms))
	}
	m := ms[0]
	if m.ID != "llama-3.3-70b" || m.Provider != "venice" || m.Name != "Llama 3.3 70B" || m.ContextWindow != 131072 ||
		m.MaxOutput != 8192 || m.Input.String() != "0.7" || m.Output.String() != "2.8" || m.CacheRead.String() != "0" ||
		m.CacheWrite.Known() || m.Features != routing.Features(routing.ToolUse, routing.StructuredOutputs, routing.Privacy) || m.Quality != routing.Medium ||
		m.Origin != OriginStatic {
		t.Errorf("model = %+v", m)
	}
	want := FieldName | FieldContextWindow | FieldMaxOutput | FieldInputPrice | FieldOutputPrice | FieldCacheReadPrice | FieldFeatures | FieldQuality
	if m.Set != want {
		t.Errorf("Set = %b, want %b", m.Set, want)
	}
	if ms[1].Set != FieldInputPrice || ms[1].Input.String() != "3" || ms[1].Output.Known() {
		t.Errorf("second model = %+v", ms[1])
	}
	if got, err := FromTOML("x", nil); err != nil || len(got) != 0 {
		t.Errorf("no tables: %v, %v", got, err)
	}
}

func TestFromTOMLErrors(t *testing.T) {
	tables := decodeModels(t, `
[[model]]
name = "no id"

[[model]]
id = "has space"

[[model]]
id = "a"
input_price = "abc"
output_price = "-1"
cache_read_price = true
context_window = 1.5
max_output = -3
features = ["tool_use", "telepathy"]
quality = "stellar"
colour = "blue"

[[model]]
id = "b"
context_window = 1000
max_output = 2000

[[model]]
id = "b"
name = 7
features = "vision"
`)
	_, err := FromTOML("venice", tables)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Error("errors.As cannot reach a *FieldError")
	}
	msg := err.Error()
	for _, want := range []string{
		`provider "venice", model #1: id: missing`,
		`model #2: id: "has space" contains whitespace`,
		`model "a": input_price: want USD per million tokens: "abc": not a decimal number`,
		`model "a": output_price: want USD per million tokens: "-1": negative`,
		`model "a": cache_read_price: want a decimal string (USD per million tokens), got a boolean`,
		`model "a": context_window: want an integer number of tokens, got a float`,
		`model "a": max_output: must be positive, got -3`,
		`model "a": features: unknown feature "telepathy" (known: interleaved_thinking, visible_thinking, `,
		`model "a": quality: unknown tier "stellar"`,
		`model "a": colour: unknown key`,
		`model "b": max_output: 2000 is larger than context_window 1000`,
		`model "b": id: duplicate of model #4`,
		`model "b": name: want a string, got an integer`,
		`model "b": features: want an array of strings, got a string`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if n := len(ve.Errors); n != 14 {
		t.Errorf("%d errors, want 14:\n%s", n, msg)
	}
}

// TestStaticFeatureNames: every name host/catalog used to define (its 19
// features and their aliases) still reads in a static features list, as the
// routing feature of the same meaning.
func TestStaticFeatureNames(t *testing.T) {
	for name, want := range map[string]routing.Feature{
		"tool_use": routing.ToolUse, "tools": routing.ToolUse, "function_calling": routing.ToolUse,
		"vision":    routing.Vision,
		"reasoning": routing.Reasoning, "thinking": routing.Reasoning,
		"reasoning_effort":     routing.ReasoningEffort,
		"visible_thinking":     routing.VisibleThinking,
		"interleaved_thinking": routing.InterleavedThinking,
		"structured_outputs":   routing.StructuredOutputs, "response_schema": routing.StructuredOutputs, "structured_output": routing.StructuredOutputs,
		"prompt_caching": routing.PromptCaching, "caching": routing.PromptCaching,
		// routing tells Gemini-style explicit caching apart.
		"explicit_caching": routing.ExplicitCaching,
		"citations":        routing.Citations,
		"web_search":       routing.WebSearch,
		"tee":              routing.TEE,
		"e2ee":             routing.E2EE,
		"zero_retention":   routing.Privacy, "private": routing.Privacy, "privacy": routing.Privacy,
		"audio_input":       routing.AudioInput,
		"video_input":       routing.VideoInput,
		"predicted_outputs": routing.PredictedOutputs,
		"batch":             routing.BatchAPI, "batch_api": routing.BatchAPI,
		"compaction": routing.Compaction,
		"logprobs":   routing.Logprobs,
	} {
		ms, err := FromTOML("p", []map[string]any{{"id": "m", "features": []any{name}}})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := ms[0].Features; got != routing.Features(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}

	// Case, '-' for '_' and surrounding space are forgiven.
	ms, err := FromTOML("p", []map[string]any{{"id": "m", "features": []any{" Tool_Use", "function-calling ", "THINKING"}}})
	if err != nil || ms[0].Features != routing.Features(routing.ToolUse, routing.Reasoning) {
		t.Fatalf("%v, %v", ms, err)
	}
	if !ms[0].Has(routing.Features(routing.ToolUse, routing.Reasoning)) || ms[0].Has(routing.Features(routing.ToolUse, routing.TEE)) {
		t.Error("Has")
	}

	// An unknown name is an error naming it and every known name.
	_, err = FromTOML("p", []map[string]any{{"id": "m", "features": []any{"vision", "telepathy", "x-ray"}}})
	if err == nil {
		t.Fatal("unknown features accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `features: unknown features "telepathy", "x-ray" (known: interleaved_thinking, `) {
		t.Errorf("error: %s", msg)
	}
	for _, n := range routing.AllFeatures.AppendNames(nil) {
		if !strings.Contains(msg, n) {
			t.Errorf("error does not name %q: %s", n, msg)
		}
	}
}

func TestStaticQuality(t *testing.T) {
	for s, want := range map[string]routing.Quality{
		"minimum": routing.Minimum, "low": routing.Low, "Medium": routing.Medium, " high ": routing.High,
		"maximum": routing.Maximum, "max": routing.Maximum, "min": routing.Minimum,
	} {
		ms, err := FromTOML("p", []map[string]any{{"id": "m", "quality": s}})
		if err != nil || ms[0].Quality != want || ms[0].Set != FieldQuality {
			t.Errorf("%q: %+v, %v", s, ms, err)
		}
	}
	for _, s := range []string{"", "unset", "stellar"} {
		if _, err := FromTOML("p", []map[string]any{{"id": "m", "quality": s}}); err == nil ||
			!strings.Contains(err.Error(), "(want minimum, low, medium, high or maximum)") {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// TestModelJSON: features encode as routing's wire names, quality as its
// name (left out when unrated), and both decode back.
func TestModelJSON(t *testing.T) {
	m := Model{ID: "m", Provider: "p", Features: routing.Features(routing.Privacy, routing.ToolUse, routing.BatchAPI),
		Quality: routing.High, Origin: OriginStatic}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"m","provider":"p","input_price":null,"output_price":null,"cache_read_price":null,"cache_write_price":null,` +
		`"features":["tool_use","batch_api","privacy"],"quality":"high","origin":"static"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Model
	if err := json.Unmarshal(b, &back); err != nil || back != m {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	b, err = json.Marshal(Model{ID: "m"})
	if err != nil || !strings.Contains(string(b), `"features":[]`) || strings.Contains(string(b), "quality") {
		t.Errorf("empty: %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"m","features":["telepathy"]}`), &back); !errors.Is(err, routing.ErrUnknownFeature) {
		t.Errorf("unknown feature: %v", err)
	}
}

func TestModelInfo(t *testing.T) {
	ms, err := FromTOML("venice", decodeModels(t, `
[[model]]
id = "llama-3.3-70b"
context_window = 131072
input_price = "0.70"
output_price = "2.80"
features = ["tool_use", "zero_retention"]
quality = "medium"

[[model]]
id = "claude-opus-4-6"
context_window = 200000
features = ["interleaved_thinking"]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := ms[0].Info()
	want := routing.ModelInfo{ID: "llama-3.3-70b", Quality: routing.Medium, Features: routing.Features(routing.ToolUse, routing.Privacy),
		ContextWindow: 131072, InputPrice: 0.7, OutputPrice: 2.8}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// 200k tokens is long context; unknown prices are 0 (never NaN: the
	// resolver scores and encodes them).
	got = ms[1].Info()
	want = routing.ModelInfo{ID: "claude-opus-4-6", Features: routing.Features(routing.InterleavedThinking, routing.LongContext),
		ContextWindow: 200000}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if ms[1].Features.Has(routing.LongContext) {
		t.Error("Info changed the model")
	}
	if _, err := json.Marshal(got); err != nil {
		t.Error(err)
	}
	// An exact price converts to the nearest float.
	m := Model{ID: "x", Input: mustPrice(t, "0.075"), Output: mustPrice(t, "0")}
	if mi := m.Info(); mi.InputPrice != 0.075 || mi.OutputPrice != 0 || mi.Quality != routing.QualityUnset || mi.Features != 0 {
		t.Errorf("%+v", mi)
	}
}
