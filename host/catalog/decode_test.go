package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/routing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// byID indexes decoded models.
func byID(ms []Model) map[string]Model {
	out := make(map[string]Model, len(ms))
	for _, m := range ms {
		out[m.ID] = m
	}
	return out
}

type wantModel struct {
	name                          string
	ctx, maxOut                   int64
	in, out, cacheRead, cacheWrit string // "" = unknown
	features                      routing.FeatureSet
}

func checkModel(t *testing.T, m Model, w wantModel) {
	t.Helper()
	price := func(p Price) string {
		if !p.Known() {
			return ""
		}
		return p.String()
	}
	got := wantModel{m.Name, m.ContextWindow, m.MaxOutput, price(m.Input), price(m.Output), price(m.CacheRead), price(m.CacheWrite), m.Features}
	if got != w {
		t.Errorf("%s:\n got %+v (features %v)\nwant %+v (features %v)", m.ID, got, got.features, w, w.features)
	}
	if m.Origin != OriginDynamic {
		t.Errorf("%s: origin %s", m.ID, m.Origin)
	}
}

func TestDecodeOpenRouter(t *testing.T) {
	d, err := Decode("openrouter", ShapeAuto, readTestdata(t, "openrouter_models.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Shape != ShapeOpenRouter || len(d.Models) != 4 || d.Skipped != 1 {
		t.Fatalf("shape %s, %d models, %d skipped (the image-output model)", d.Shape, len(d.Models), d.Skipped)
	}
	ms := byID(d.Models)
	checkModel(t, ms["anthropic/claude-sonnet-4"], wantModel{"Anthropic: Claude Sonnet 4", 200000, 64000, "3", "15", "0.3", "3.75",
		routing.Features(routing.ToolUse, routing.Reasoning, routing.Vision, routing.PromptCaching, routing.TopK)})
	checkModel(t, ms["openai/gpt-4o-mini"], wantModel{"OpenAI: GPT-4o-mini", 128000, 16384, "0.15", "0.6", "0.075", "",
		routing.Features(routing.ToolUse, routing.StructuredOutputs, routing.Logprobs, routing.WebSearch, routing.Vision, routing.PromptCaching, routing.Seed)})
	checkModel(t, ms["deepseek/deepseek-r1:free"], wantModel{"DeepSeek: R1 (free)", 163840, 0, "0", "0", "", "",
		routing.Features(routing.Reasoning, routing.TopK, routing.Seed)})
	// "-1" is OpenRouter's "varies": unknown, never negative or free.
	checkModel(t, ms["openrouter/auto"], wantModel{"Auto Router", 2000000, 0, "", "", "", "", 0})
	if len(d.Problems) != 0 {
		t.Errorf("problems: %v", d.Problems)
	}

	// Every supported parameter and input modality that names a feature.
	one := `{"data":[{"id":"m","context_length":1000,"supported_parameters":["tools","tool_choice","reasoning",` +
		`"include_reasoning","structured_outputs","logprobs","top_logprobs","web_search_options","top_k","min_p","seed",` +
		`"temperature","response_format"],"architecture":{"input_modalities":["text","image","audio","video","file"],` +
		`"output_modalities":["text"]}}]}`
	d, err = Decode("openrouter", ShapeAuto, []byte(one))
	if err != nil || d.Shape != ShapeOpenRouter {
		t.Fatalf("%v, %s", err, d.Shape)
	}
	checkModel(t, d.Models[0], wantModel{"", 1000, 0, "", "", "", "", routing.Features(routing.ToolUse, routing.Reasoning,
		routing.StructuredOutputs, routing.Logprobs, routing.WebSearch, routing.TopK, routing.MinP, routing.Seed,
		routing.Vision, routing.AudioInput, routing.VideoInput)})
}

func TestDecodeVenice(t *testing.T) {
	d, err := Decode("venice", ShapeAuto, readTestdata(t, "venice_models.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Shape != ShapeVenice || len(d.Models) != 3 || d.Skipped != 2 {
		t.Fatalf("shape %s, %d models, %d skipped (offline and image)", d.Shape, len(d.Models), d.Skipped)
	}
	ms := byID(d.Models)
	checkModel(t, ms["llama-3.3-70b"], wantModel{"Llama 3.3 70B", 65536, 8192, "0.7", "2.8", "", "",
		routing.Features(routing.ToolUse, routing.Logprobs, routing.StructuredOutputs, routing.WebSearch, routing.Privacy)})
	checkModel(t, ms["deepseek-r1-671b"], wantModel{"DeepSeek R1", 131072, 32768, "3.5", "14", "", "",
		routing.Features(routing.Reasoning, routing.ReasoningEffort, routing.TEE, routing.E2EE, routing.WebSearch, routing.Privacy)})
	checkModel(t, ms["claude-opus-4-5"], wantModel{"Claude Opus 4.5", 198000, 64000, "6", "30", "0.6", "7.5",
		routing.Features(routing.ToolUse, routing.Reasoning, routing.StructuredOutputs, routing.Vision, routing.WebSearch, routing.PromptCaching)})

	// Every capability flag that names a feature; other flags (and false
	// ones) add nothing: in particular not feature 0, interleaved_thinking.
	one := `{"data":[{"id":"m","type":"text","model_spec":{"privacy":"Private","capabilities":{` +
		`"supportsFunctionCalling":true,"supportsVision":true,"supportsReasoning":true,"supportsReasoningEffort":true,` +
		`"supportsResponseSchema":true,"supportsWebSearch":true,"supportsTeeAttestation":true,"supportsE2EE":true,` +
		`"supportsLogProbs":true,"supportsAudioInput":true,"supportsVideoInput":true,` +
		`"supportsMultipleImages":true,"supportsXSearch":true,"optimizedForCode":true,"quantization":"fp8"}}}]}`
	d, err = Decode("venice", ShapeAuto, []byte(one))
	if err != nil || d.Shape != ShapeVenice {
		t.Fatalf("%v, %s", err, d.Shape)
	}
	checkModel(t, d.Models[0], wantModel{"", 0, 0, "", "", "", "", routing.Features(routing.ToolUse, routing.Vision,
		routing.Reasoning, routing.ReasoningEffort, routing.StructuredOutputs, routing.WebSearch, routing.TEE, routing.E2EE,
		routing.Logprobs, routing.AudioInput, routing.VideoInput, routing.Privacy)})
	d, err = Decode("venice", ShapeAuto, []byte(`{"data":[{"id":"m","model_spec":{"privacy":"anonymized","capabilities":{"supportsXSearch":true,"supportsVision":false}}}]}`))
	if err != nil || d.Models[0].Features != 0 {
		t.Errorf("%v, %v", d.Models, err)
	}
}

func TestDecodeBlockRun(t *testing.T) {
	d, err := Decode("blockrun", ShapeAuto, readTestdata(t, "blockrun_models.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Shape != ShapeBlockRun || len(d.Models) != 3 || d.Skipped != 2 {
		t.Fatalf("shape %s, %d models, %d skipped (unavailable and image)", d.Shape, len(d.Models), d.Skipped)
	}
	ms := byID(d.Models)
	checkModel(t, ms["openai/gpt-5.4"], wantModel{"GPT-5.4", 1000000, 32768, "2.5", "15", "", "", routing.Features(routing.Vision)})
	checkModel(t, ms["anthropic/claude-opus-4.6"], wantModel{"Claude Opus 4.6", 1000000, 128000, "5", "25", "", "", routing.Features(routing.Reasoning, routing.Vision)})
	checkModel(t, ms["nvidia/gpt-oss-120b"], wantModel{"GPT-OSS 120B", 128000, 16384, "0", "0", "", "", routing.Features(routing.Reasoning)})

	// The "data" + pricing{input,output} variant reads the same.
	alt := `{"data":[{"id":"openai/gpt-5.2","name":"GPT-5.2","pricing":{"input":1.75,"output":14},"context_window":400000,"categories":["chat"]}]}`
	d, err = Decode("blockrun", ShapeAuto, []byte(alt))
	if err != nil || d.Shape != ShapeBlockRun {
		t.Fatalf("alt: %v, %s", err, d.Shape)
	}
	checkModel(t, d.Models[0], wantModel{"GPT-5.2", 400000, 0, "1.75", "14", "", "", 0})
}

func TestDecodeOpenAIAndAnthropic(t *testing.T) {
	d, err := Decode("openai", ShapeAuto, readTestdata(t, "openai_models.json"))
	if err != nil || d.Shape != ShapeOpenAI || len(d.Models) != 3 {
		t.Fatalf("openai: %v, %s, %d", err, d.Shape, len(d.Models))
	}
	checkModel(t, d.Models[0], wantModel{})
	if d.Models[0].ID != "gpt-4o-mini" || d.Models[0].Set != 0 {
		t.Errorf("openai model %+v", d.Models[0])
	}
	d, err = Decode("anthropic", ShapeAuto, readTestdata(t, "anthropic_models.json"))
	if err != nil || d.Shape != ShapeOpenAI || len(d.Models) != 2 {
		t.Fatalf("anthropic: %v, %s, %d", err, d.Shape, len(d.Models))
	}
	if d.Models[0].Name != "Claude Sonnet 4.5" || d.Models[0].Set != FieldName {
		t.Errorf("anthropic model %+v", d.Models[0])
	}
}

// A configured shape is used as is: OpenRouter's payload read as a plain
// OpenAI list has ids and names only.
func TestDecodeExplicitShape(t *testing.T) {
	d, err := Decode("openrouter", ShapeOpenAI, readTestdata(t, "openrouter_models.json"))
	if err != nil || d.Shape != ShapeOpenAI {
		t.Fatal(err, d.Shape)
	}
	for _, m := range d.Models {
		if m.Input.Known() || m.ContextWindow != 0 || m.Features != 0 {
			t.Errorf("%s read OpenRouter fields under the openai shape", m.ID)
		}
	}
	if _, err := ParseShape("graphql"); err == nil {
		t.Error("ParseShape accepted an unknown shape")
	}
	if s, err := ParseShape(" OpenRouter "); err != nil || s != ShapeOpenRouter {
		t.Error("ParseShape is not case-insensitive")
	}
}

func TestDecodeMalformed(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"empty body", "", "want a JSON object"},
		{"html", "<html>502 Bad Gateway</html>", "want a JSON object"},
		{"array", `[{"id":"a"}]`, "want a JSON object"},
		{"truncated", `{"data":[{"id":"a"}`, "decode model list"},
		{"no data", `{"object":"list"}`, "no data (or models) array"},
		{"data not array", `{"data":"gpt-4o"}`, "decode model list"},
		{"empty list", `{"data":[]}`, "no usable model"},
		{"only junk", `{"data":[{"id":""},{"name":"x"},{"id":"img","type":"image"}]}`, "no usable model"},
	}
	for _, c := range cases {
		_, err := Decode("p", ShapeAuto, []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Decode("p", ShapeAuto, []byte(`{"data":[]}`)); !errors.Is(err, ErrEmpty) {
		t.Error("empty list is not ErrEmpty")
	}
}

// One bad entry or field does not cost the others.
func TestDecodeSkipsBadEntries(t *testing.T) {
	body := `{"data":[
		{"id": 5},
		"not an object",
		{"id":"dup","pricing":{"prompt":"0.000001","completion":"x"}},
		{"id":"dup"},
		{"id":"ok","context_length":"8192","pricing":{"prompt":"1e-6","completion":"0.000002"},"top_provider":{"max_completion_tokens":16384}},
		{"id":"ctx","context_length":{"bad":1}}
	]}`
	d, err := Decode("or", ShapeAuto, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d.Shape != ShapeOpenRouter || len(d.Models) != 2 || d.Skipped != 4 {
		t.Fatalf("shape %s, %d models, %d skipped", d.Shape, len(d.Models), d.Skipped)
	}
	ms := byID(d.Models)
	if m := ms["dup"]; m.Input.String() != "1" || m.Output.Known() {
		t.Errorf("dup: %+v", m)
	}
	// max output above the context window is dropped, not trusted.
	if m := ms["ok"]; m.ContextWindow != 8192 || m.MaxOutput != 0 || m.Input.String() != "1" || m.Output.String() != "2" {
		t.Errorf("ok: %+v", m)
	}
	if len(d.Problems) != 5 {
		t.Errorf("problems: %q", d.Problems)
	}
}
