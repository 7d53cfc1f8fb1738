package bertgen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models/onnxrt"
)

func TestPresets(t *testing.T) {
	if got := PresetNames(); !reflect.DeepEqual(got, []string{"minilm-shaped", "tiny"}) {
		t.Errorf("PresetNames() = %v", got)
	}
	m, err := Preset("minilm-shaped")
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Layers: 6, Hidden: 384, Heads: 12, Intermediate: 1536, VocabSize: 30522, MaxPositions: 512, TypeVocabSize: 2}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("minilm-shaped = %+v, want %+v", m, want)
	}
	if _, err := Preset("deberta-shaped"); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("unknown preset: %v", err)
	}
	if err := Generate("nope", t.TempDir(), 1); err == nil {
		t.Error("Generate accepted an unknown preset")
	}
}

func TestSpecValidation(t *testing.T) {
	bad := []Spec{
		{Layers: 1, Hidden: 10, Heads: 3, Intermediate: 4, VocabSize: 5, MaxPositions: 8, TypeVocabSize: 2},
		{Layers: 0, Hidden: 8, Heads: 2, Intermediate: 4, VocabSize: 5, MaxPositions: 8, TypeVocabSize: 2},
		{Layers: 1, Hidden: 8, Heads: 2, Intermediate: 4, VocabSize: 5, MaxPositions: 8, TypeVocabSize: -1},
	}
	for _, s := range bad {
		if _, err := Build(s, "bad", 1); err == nil {
			t.Errorf("Build accepted %+v", s)
		}
	}
}

// small keeps these tests fast; the presets' only difference is size.
var small = Spec{Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, VocabSize: 100, MaxPositions: 64, TypeVocabSize: 2}

func TestDeterministic(t *testing.T) {
	marshal := func(seed int64) []byte {
		m, err := Build(small, "small", seed)
		if err != nil {
			t.Fatal(err)
		}
		data, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b, c := marshal(7), marshal(7), marshal(8)
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different models")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same model")
	}
}

func TestSidecarConfig(t *testing.T) {
	dir := t.TempDir()
	if err := GenerateClassifier("tiny", dir, 3); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	checks := map[string]any{
		"_notice":                 Notice,
		"model_type":              "bert",
		"hidden_size":             64.0,
		"num_hidden_layers":       2.0,
		"num_attention_heads":     4.0,
		"vocab_size":              30522.0,
		"max_position_embeddings": 512.0,
		"pooling":                 "cls",
		"id2label":                map[string]any{"0": "SAFE", "1": "INJECTION"},
		"label2id":                map[string]any{"SAFE": 0.0, "INJECTION": 1.0},
		"architectures":           []any{"BertForSequenceClassification"},
	}
	for k, want := range checks {
		if !reflect.DeepEqual(cfg[k], want) {
			t.Errorf("config %s = %#v, want %#v", k, cfg[k], want)
		}
	}
}

// TestLoadsInOnnxruntime proves the generated graph is valid ONNX that
// onnxruntime accepts, with the inputs, outputs and metadata it advertises.
func TestLoadsInOnnxruntime(t *testing.T) {
	if err := onnxrt.Init(onnxrt.Options{}); err != nil {
		t.Fatalf("%v — run `make deps` to fetch the onnxruntime library", err)
	}
	cases := []struct {
		name    string
		spec    Spec
		inputs  []string
		itype   ort.TensorElementDataType
		output  string
		outDims ort.Shape
	}{
		{"encoder", small, []string{"input_ids", "attention_mask", "token_type_ids"}, ort.TensorElementDataTypeInt64, "last_hidden_state", ort.Shape{-1, -1, 16}},
		{"classifier", withLabels(small), []string{"input_ids", "attention_mask", "token_type_ids"}, ort.TensorElementDataTypeInt64, "logits", ort.Shape{-1, 2}},
		{"no-token-types-int32", Spec{Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, VocabSize: 100, MaxPositions: 64, Int32Inputs: true}, []string{"input_ids", "attention_mask"}, ort.TensorElementDataTypeInt32, "last_hidden_state", ort.Shape{-1, -1, 16}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(c.spec, c.name, dir, 1); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, ModelFile)
			ins, outs, err := ort.GetInputOutputInfo(path)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, in := range ins {
				names = append(names, in.Name)
				if in.DataType != c.itype || !reflect.DeepEqual(in.Dimensions, ort.Shape{-1, -1}) {
					t.Errorf("input %s", in.String())
				}
			}
			if !reflect.DeepEqual(names, c.inputs) {
				t.Errorf("inputs %v, want %v", names, c.inputs)
			}
			if len(outs) != 1 || outs[0].Name != c.output || !reflect.DeepEqual(outs[0].Dimensions, c.outDims) {
				t.Errorf("outputs %v, want %s %v", outs, c.output, c.outDims)
			}
			md, err := ort.GetModelMetadata(path)
			if err != nil {
				t.Fatal(err)
			}
			defer md.Destroy()
			if v, ok, err := md.LookupCustomMetadataMap("notice"); err != nil || !ok || v != Notice {
				t.Errorf("metadata notice = %q, %v, %v", v, ok, err)
			}
		})
	}
}

func withLabels(s Spec) Spec {
	s.Labels = DefaultLabels
	return s
}
