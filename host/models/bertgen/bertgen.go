// Package bertgen generates BERT-shaped ONNX encoders and sequence
// classifiers with seeded random weights.
//
// The production transformer models (nomic-embed-text-v1.5, a DeBERTa-v3
// prompt-injection classifier) are operator downloads that tests and CI cannot
// fetch, yet the loader in host/models/bert, its batching and its latency must
// still be exercised on the real graph shape. These generated models have
// exactly the BERT graph (embeddings, post-LayerNorm encoder layers with
// masked multi-head self-attention and a GELU feed-forward block, optional CLS
// pooler and classification head) and the same inputs and outputs as a
// HuggingFace export, so loading, masking, pooling and timing are honest. Their
// weights are random: the vectors and scores they produce mean nothing, and
// both the model metadata and the sidecar config.json say so.
package bertgen

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/bardoinference/bardo/host/models/onnxgraph"
)

// Notice is written into every generated model's metadata and config.json.
const Notice = "random weights — for loading/latency tests only, not a real model"

// File names inside a generated model directory (the layout host/models/bert
// loads).
const (
	ModelFile  = "model.onnx"
	ConfigFile = "config.json"
)

// Opset is the ONNX opset the graphs use: 17 has LayerNormalization but not
// Gelu (added in 20), so GELU is spelled out with Erf, which onnxruntime fuses
// back into its Gelu kernel when it optimises the graph.
const Opset = 17

// DefaultLabels are the classifier variant's labels, in logit order; they
// match protectai's DeBERTa-v3 prompt-injection model, which the generated
// classifier stands in for.
var DefaultLabels = []string{"SAFE", "INJECTION"}

// Spec is the shape of a generated model.
type Spec struct {
	Layers       int // encoder layers
	Hidden       int // hidden size
	Heads        int // attention heads; must divide Hidden
	Intermediate int // feed-forward size
	VocabSize    int // rows of the word embedding
	MaxPositions int // rows of the position embedding (longest sequence)
	// TypeVocabSize is the rows of the token-type embedding; 0 leaves out
	// the token_type_ids input, as DeBERTa-v3 and some nomic exports do.
	TypeVocabSize int
	// Int32Inputs declares the id inputs int32 instead of int64 (some
	// exporters emit int32 ids).
	Int32Inputs bool
	// Labels makes the model a sequence classifier with one logit per label;
	// empty means an encoder emitting last_hidden_state.
	Labels []string
}

var presets = map[string]Spec{
	// all-MiniLM-L6-v2's shape: the size class of a small production encoder.
	"minilm-shaped": {Layers: 6, Hidden: 384, Heads: 12, Intermediate: 1536, VocabSize: 30522, MaxPositions: 512, TypeVocabSize: 2},
	// Small enough for unit tests; keeps the full vocabulary so the real
	// WordPiece tokenizer's ids are all valid.
	"tiny": {Layers: 2, Hidden: 64, Heads: 4, Intermediate: 256, VocabSize: 30522, MaxPositions: 512, TypeVocabSize: 2},
}

// PresetNames lists the presets Preset knows, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns a named encoder shape ("minilm-shaped", "tiny").
func Preset(name string) (Spec, error) {
	s, ok := presets[name]
	if !ok {
		return Spec{}, fmt.Errorf("bertgen: unknown preset %q (have %v)", name, PresetNames())
	}
	return s, nil
}

// Generate writes an encoder of the named preset to outDir (model.onnx and
// config.json, mean pooling, L2-normalised).
func Generate(preset, outDir string, seed int64) error {
	spec, err := Preset(preset)
	if err != nil {
		return err
	}
	return Write(spec, preset, outDir, seed)
}

// GenerateClassifier writes a sequence classifier of the named preset with
// DefaultLabels to outDir.
func GenerateClassifier(preset, outDir string, seed int64) error {
	spec, err := Preset(preset)
	if err != nil {
		return err
	}
	spec.Labels = DefaultLabels
	return Write(spec, preset+"-classifier", outDir, seed)
}

// Write generates the model described by spec with weights drawn from seed
// and writes model.onnx and config.json into outDir (created if needed). name
// is recorded in the metadata. The same spec and seed give byte-identical
// files.
func Write(spec Spec, name, outDir string, seed int64) error {
	m, err := Build(spec, name, seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("bertgen: %w", err)
	}
	if err := m.WriteFile(filepath.Join(outDir, ModelFile)); err != nil {
		return fmt.Errorf("bertgen: %w", err)
	}
	cfg, err := json.MarshalIndent(configJSON(spec, name, seed), "", "  ")
	if err != nil {
		return fmt.Errorf("bertgen: config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(outDir, ConfigFile), append(cfg, '\n'), 0o644); err != nil {
		return fmt.Errorf("bertgen: config: %w", err)
	}
	return nil
}

func (s Spec) validate() error {
	switch {
	case s.Layers < 1, s.Hidden < 1, s.Heads < 1, s.Intermediate < 1,
		s.VocabSize < 1, s.MaxPositions < 1, s.TypeVocabSize < 0:
		return fmt.Errorf("bertgen: every size in %+v must be positive", s)
	case s.Hidden%s.Heads != 0:
		return fmt.Errorf("bertgen: hidden size %d is not a multiple of %d heads", s.Hidden, s.Heads)
	}
	return nil
}

// configJSON is the HuggingFace-style sidecar: the standard BertConfig fields
// plus the fields host/models/bert reads (pooling, query_prefix, normalize).
func configJSON(s Spec, name string, seed int64) map[string]any {
	arch := "BertModel"
	if len(s.Labels) > 0 {
		arch = "BertForSequenceClassification"
	}
	c := map[string]any{
		"_notice":                 Notice,
		"_generated_by":           "github.com/bardoinference/bardo/host/models/bertgen",
		"_preset":                 name,
		"_seed":                   seed,
		"model_type":              "bert",
		"architectures":           []string{arch},
		"vocab_size":              s.VocabSize,
		"hidden_size":             s.Hidden,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"intermediate_size":       s.Intermediate,
		"hidden_act":              "gelu",
		"max_position_embeddings": s.MaxPositions,
		"type_vocab_size":         s.TypeVocabSize,
		"layer_norm_eps":          layerNormEps,
		"pooling":                 "mean",
		"query_prefix":            "",
		"normalize":               true,
	}
	if len(s.Labels) > 0 {
		id2label := map[string]string{}
		label2id := map[string]int{}
		for i, l := range s.Labels {
			id2label[strconv.Itoa(i)] = l
			label2id[l] = i
		}
		c["id2label"], c["label2id"] = id2label, label2id
		c["pooling"] = "cls"
		delete(c, "normalize")
		delete(c, "query_prefix")
	}
	return c
}

// layerNormEps is BERT's LayerNorm epsilon.
const layerNormEps = 1e-12

// initStd is BERT's weight initialisation standard deviation; with it the
// random network's activations stay in the range a trained one sees.
const initStd = 0.02

// Build returns the ONNX model for spec without writing it.
func Build(spec Spec, name string, seed int64) (*onnxgraph.Model, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	b := &builder{rng: rand.New(rand.NewPCG(uint64(seed), 0x62617264_6f67656e))}
	H, N := int64(spec.Hidden), int64(spec.Heads)
	D := H / N

	// Constants shared by every layer.
	b.constInts("shape_heads", []int64{0, 0, N, D})
	b.constInts("shape_hidden", []int64{0, 0, H})
	b.constInts("axes_12", []int64{1, 2})
	b.constFloat("scale", float32(1/math.Sqrt(float64(D))))
	b.constFloat("one", 1)
	b.constFloat("half", 0.5)
	b.constFloat("inv_sqrt2", float32(1/math.Sqrt2))
	b.constFloat("mask_neg", -10000)

	// Embeddings: word + position + token type, then LayerNorm.
	b.node("Gather", []string{b.random("embeddings.word", spec.VocabSize, spec.Hidden), "input_ids"}, "emb_word")
	b.node("Shape", []string{"input_ids"}, "ids_shape")
	b.constInt("zero", 0)
	b.constInt("one_i", 1)
	b.node("Gather", []string{"ids_shape", "one_i"}, "seq_len", onnxgraph.AttrInt("axis", 0))
	b.node("Range", []string{"zero", "seq_len", "one_i"}, "position_ids")
	b.node("Gather", []string{b.random("embeddings.position", spec.MaxPositions, spec.Hidden), "position_ids"}, "emb_pos")
	b.node("Add", []string{"emb_word", "emb_pos"}, "emb_wp")
	sum := "emb_wp"
	if spec.TypeVocabSize > 0 {
		b.node("Gather", []string{b.random("embeddings.token_type", spec.TypeVocabSize, spec.Hidden), "token_type_ids"}, "emb_type")
		b.node("Add", []string{"emb_wp", "emb_type"}, "emb_sum")
		sum = "emb_sum"
	}
	x := b.layerNorm("embeddings.ln", sum, spec.Hidden)

	// Additive attention mask: 0 where attention_mask is 1, -10000 where it is
	// 0 (BERT's convention), shaped [batch, 1, 1, seq] to broadcast over heads
	// and query positions.
	b.node("Cast", []string{"attention_mask"}, "mask_f", onnxgraph.AttrInt("to", int64(onnxgraph.Float)))
	b.node("Sub", []string{"one", "mask_f"}, "mask_inv")
	b.node("Mul", []string{"mask_inv", "mask_neg"}, "mask_add2")
	b.node("Unsqueeze", []string{"mask_add2", "axes_12"}, "mask_add")

	for l := range spec.Layers {
		x = b.encoderLayer(fmt.Sprintf("layer%d", l), x, spec)
	}

	out := onnxgraph.ValueInfo{Name: "last_hidden_state", DType: onnxgraph.Float, Dims: []onnxgraph.Dim{{Param: "batch"}, {Param: "sequence"}, {Value: H}}}
	if len(spec.Labels) > 0 {
		// BertForSequenceClassification: pooler (Dense + Tanh on the [CLS]
		// position), then a linear head. Dropout is the identity at inference.
		b.node("Gather", []string{x, "zero"}, "cls", onnxgraph.AttrInt("axis", 1))
		p := b.dense("pooler", "cls", spec.Hidden, spec.Hidden)
		b.node("Tanh", []string{p}, "pooled")
		logits := b.dense("classifier", "pooled", spec.Hidden, len(spec.Labels))
		b.node("Identity", []string{logits}, "logits")
		out = onnxgraph.ValueInfo{Name: "logits", DType: onnxgraph.Float, Dims: []onnxgraph.Dim{{Param: "batch"}, {Value: int64(len(spec.Labels))}}}
	} else {
		b.node("Identity", []string{x}, "last_hidden_state")
	}

	idType := onnxgraph.Int64
	if spec.Int32Inputs {
		idType = onnxgraph.Int32
	}
	ids := func(n string) onnxgraph.ValueInfo {
		return onnxgraph.ValueInfo{Name: n, DType: idType, Dims: []onnxgraph.Dim{{Param: "batch"}, {Param: "sequence"}}}
	}
	inputs := []onnxgraph.ValueInfo{ids("input_ids"), ids("attention_mask")}
	if spec.TypeVocabSize > 0 {
		inputs = append(inputs, ids("token_type_ids"))
	}
	kind := "encoder"
	if len(spec.Labels) > 0 {
		kind = "classifier"
	}
	return &onnxgraph.Model{
		Opset:        Opset,
		ProducerName: "bardo-bertgen",
		DocString:    Notice,
		Metadata: map[string]string{
			"notice":      Notice,
			"bardo.model": name,
			"bardo.kind":  kind,
			"bardo.seed":  strconv.FormatInt(seed, 10),
		},
		Graph: onnxgraph.Graph{
			Name:         "bert_" + kind,
			Nodes:        b.nodes,
			Initializers: b.inits,
			Inputs:       inputs,
			Outputs:      []onnxgraph.ValueInfo{out},
		},
	}, nil
}

// encoderLayer appends one post-LayerNorm BERT layer reading x and returns the
// name of its output.
func (b *builder) encoderLayer(p, x string, s Spec) string {
	// Q, K, V projections, split into heads: [B,S,H] → [B,S,N,D] → [B,N,S,D]
	// (K goes to [B,N,D,S] directly so Q·Kᵀ is a plain MatMul).
	heads := func(name string, perm []int64) string {
		h := b.dense(p+"."+name, x, s.Hidden, s.Hidden)
		b.node("Reshape", []string{h, "shape_heads"}, p+"."+name+"_split")
		b.node("Transpose", []string{p + "." + name + "_split"}, p+"."+name+"_heads", onnxgraph.AttrInts("perm", perm))
		return p + "." + name + "_heads"
	}
	q := heads("query", []int64{0, 2, 1, 3})
	k := heads("key", []int64{0, 2, 3, 1})
	v := heads("value", []int64{0, 2, 1, 3})
	b.node("MatMul", []string{q, k}, p+".scores_raw")
	b.node("Mul", []string{p + ".scores_raw", "scale"}, p+".scores_scaled")
	b.node("Add", []string{p + ".scores_scaled", "mask_add"}, p+".scores")
	b.node("Softmax", []string{p + ".scores"}, p+".probs", onnxgraph.AttrInt("axis", -1))
	b.node("MatMul", []string{p + ".probs", v}, p+".context_heads")
	b.node("Transpose", []string{p + ".context_heads"}, p+".context_t", onnxgraph.AttrInts("perm", []int64{0, 2, 1, 3}))
	b.node("Reshape", []string{p + ".context_t", "shape_hidden"}, p+".context")
	attn := b.dense(p+".attention_output", p+".context", s.Hidden, s.Hidden)
	b.node("Add", []string{attn, x}, p+".attention_residual")
	x = b.layerNorm(p+".attention_ln", p+".attention_residual", s.Hidden)

	// Feed-forward with exact GELU: 0.5·h·(1 + erf(h/√2)).
	h := b.dense(p+".intermediate", x, s.Hidden, s.Intermediate)
	b.node("Mul", []string{h, "inv_sqrt2"}, p+".gelu_scaled")
	b.node("Erf", []string{p + ".gelu_scaled"}, p+".gelu_erf")
	b.node("Add", []string{p + ".gelu_erf", "one"}, p+".gelu_erf1")
	b.node("Mul", []string{h, p + ".gelu_erf1"}, p+".gelu_prod")
	b.node("Mul", []string{p + ".gelu_prod", "half"}, p+".gelu")
	o := b.dense(p+".output", p+".gelu", s.Intermediate, s.Hidden)
	b.node("Add", []string{o, x}, p+".output_residual")
	return b.layerNorm(p+".output_ln", p+".output_residual", s.Hidden)
}

// builder accumulates nodes and initializers.
type builder struct {
	rng   *rand.Rand
	nodes []onnxgraph.Node
	inits []onnxgraph.Tensor
}

func (b *builder) node(op string, inputs []string, output string, attrs ...onnxgraph.Attr) {
	b.nodes = append(b.nodes, onnxgraph.Node{Op: op, Name: output, Inputs: inputs, Outputs: []string{output}, Attrs: attrs})
}

// random adds a [rows, cols] initializer drawn from N(0, initStd²).
func (b *builder) random(name string, rows, cols int) string {
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(b.rng.NormFloat64() * initStd)
	}
	b.inits = append(b.inits, onnxgraph.Tensor{Name: name, DType: onnxgraph.Float, Dims: []int64{int64(rows), int64(cols)}, Floats: w})
	return name
}

func (b *builder) filled(name string, n int, v float32) string {
	w := make([]float32, n)
	for i := range w {
		w[i] = v
	}
	b.inits = append(b.inits, onnxgraph.Tensor{Name: name, DType: onnxgraph.Float, Dims: []int64{int64(n)}, Floats: w})
	return name
}

func (b *builder) constFloat(name string, v float32) {
	b.inits = append(b.inits, onnxgraph.Tensor{Name: name, DType: onnxgraph.Float, Floats: []float32{v}})
}

func (b *builder) constInt(name string, v int64) {
	b.inits = append(b.inits, onnxgraph.Tensor{Name: name, DType: onnxgraph.Int64, Int64s: []int64{v}})
}

func (b *builder) constInts(name string, v []int64) {
	b.inits = append(b.inits, onnxgraph.Tensor{Name: name, DType: onnxgraph.Int64, Dims: []int64{int64(len(v))}, Int64s: v})
}

// dense appends x·W + b with random W [in, out] and zero bias (BERT's init)
// and returns the output name.
func (b *builder) dense(p, x string, in, out int) string {
	w := b.random(p+".weight", in, out)
	bias := b.filled(p+".bias", out, 0)
	b.node("MatMul", []string{x, w}, p+".matmul")
	b.node("Add", []string{p + ".matmul", bias}, p+".dense")
	return p + ".dense"
}

// layerNorm appends LayerNormalization over the last axis with unit scale and
// zero bias and returns the output name.
func (b *builder) layerNorm(p, x string, hidden int) string {
	scale := b.filled(p+".weight", hidden, 1)
	bias := b.filled(p+".bias", hidden, 0)
	b.nodes = append(b.nodes, onnxgraph.Node{
		Op: "LayerNormalization", Name: p, Inputs: []string{x, scale, bias}, Outputs: []string{p + ".out"},
		Attrs: []onnxgraph.Attr{onnxgraph.AttrInt("axis", -1), onnxgraph.AttrFloat("epsilon", layerNormEps)},
	})
	return p + ".out"
}
