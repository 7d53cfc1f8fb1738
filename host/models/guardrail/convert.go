package guardrail

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/models/onnxgraph"
)

// Names of the files Build writes and Load reads.
const (
	ModelFile  = "model.onnx"
	VocabFile  = "vocab.tsv"
	ConfigFile = "config.json"
	// SourceFile is the llm_guardrail model Build converts, inside srcDir.
	SourceFile = "prompt_injection_model.json"
)

// Graph input and output names.
const (
	InputTermIDs    = "term_ids"
	InputTermCounts = "term_counts"
	OutputProbs     = "probabilities"
)

// Kind is the config.json "kind" of a converted TF-IDF + logistic-regression
// model.
const Kind = "tfidf-logreg"

// Labels are the classifier's labels, in the order of the probabilities.
var Labels = []string{"SAFE", "INJECTION"}

// Config is config.json, written next to model.onnx by Build.
type Config struct {
	Kind      string   `json:"kind"`
	Labels    []string `json:"labels"`
	Threshold float32  `json:"threshold"`
	// NgramRange, Lowercase and TokenPattern describe the tokenisation the
	// Go Vectorizer performs (the graph takes term ids, not text).
	NgramRange   [2]int `json:"ngram_range"`
	Lowercase    bool   `json:"lowercase"`
	TokenPattern string `json:"token_pattern"`
	// Vocab is the vocabulary file: one "<id>\t<n-gram>" line per feature,
	// ascending ids.
	Vocab     string `json:"vocab"`
	VocabSize int    `json:"vocab_size"`
	// Inputs and Outputs document the graph signature.
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
	Source  Source            `json:"source"`
}

// Source records where the converted weights came from.
type Source struct {
	Package       string `json:"package"`
	Version       string `json:"version"`
	License       string `json:"license"`
	File          string `json:"file"`
	SHA256        string `json:"sha256"`
	TarballSHA256 string `json:"tarball_sha256"`
}

// tokenPatternDoc is recorded in config.json so a reader knows which \w.
const tokenPatternDoc = `\b\w\w+\b with ASCII \w and \b, as JavaScript (tfidf.js) and Go regexp; text lowercased as JavaScript toLowerCase`

// Build converts srcDir/prompt_injection_model.json (llm_guardrail's
// injection model, extracted by scripts/fetch-deps.sh to
// build/deps/llm_guardrail) into outDir/model.onnx, outDir/vocab.tsv and
// outDir/config.json. Only model files with a known checksum are accepted.
//
// The package's jailbreak and malicious models are deliberately not
// converted: on the labelled set they add little or nothing over the
// injection model plus rules (see README.md).
func Build(srcDir, outDir string) error {
	src, err := ReadSourceModel(filepath.Join(srcDir, SourceFile))
	if err != nil {
		return err
	}
	known, ok := knownSources[src.SHA256]
	if !ok {
		return fmt.Errorf("guardrail: %s has unknown sha256 %s; add it to knownSources after checking its version and licence", SourceFile, src.SHA256)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("guardrail: create output dir: %w", err)
	}
	model := Graph(src)
	model.Metadata = map[string]string{
		"kind":           Kind,
		"source_package": known.Package + "@" + known.Version,
		"source_sha256":  src.SHA256,
		"vocab_size":     strconv.Itoa(len(src.IDF)),
	}
	if err := model.WriteFile(filepath.Join(outDir, ModelFile)); err != nil {
		return fmt.Errorf("guardrail: write model: %w", err)
	}
	if err := writeVocab(filepath.Join(outDir, VocabFile), src.Vocabulary); err != nil {
		return err
	}
	threshold := src.Threshold
	if threshold == 0 {
		threshold = 0.5 // logistic_regression.js: modelData.threshold || 0.5
	}
	cfg := Config{
		Kind:         Kind,
		Labels:       Labels,
		Threshold:    float32(threshold),
		NgramRange:   [2]int{src.NgramRange[0], src.NgramRange[1]},
		Lowercase:    src.Lowercase,
		TokenPattern: tokenPatternDoc,
		Vocab:        VocabFile,
		VocabSize:    len(src.IDF),
		Inputs: map[string]string{
			InputTermIDs:    "int64 [batch, terms]: vocabulary ids of the row's n-grams, each id at most once per row; pad with id 0",
			InputTermCounts: "float32 [batch, terms]: occurrence count of each id; 0 for padding",
		},
		Outputs: map[string]string{
			OutputProbs: "float32 [batch, 2]: P(SAFE), P(INJECTION)",
		},
		Source: Source{
			Package: known.Package, Version: known.Version, License: known.License,
			File: known.File, SHA256: src.SHA256, TarballSHA256: known.TarballSHA256,
		},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("guardrail: encode config: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(outDir, ConfigFile), append(data, '\n')); err != nil {
		return err
	}
	return nil
}

// Graph returns the ONNX model computing src's scoring for a batch of sparse
// term-count rows:
//
//	w      = Gather(idf, term_ids) * term_counts        tf-idf of each term
//	norm   = max(sqrt(sum_t w^2), 1e-12)                L2 norm of the row
//	logit  = sum_t(w * Gather(coef, term_ids)) / norm + intercept
//	p      = Sigmoid(logit);  probabilities = [1-p, p]
//
// Because only the row's own terms are gathered, this equals the dense
// computation in tfidf.js and logistic_regression.js: every other feature is
// zero and contributes nothing to the norm or the dot product. It requires
// each id at most once per row (counts pre-summed), since the norm squares
// per-id weights; padding entries (id 0, count 0) give w = 0 and are inert.
// An all-padding row has norm clamped away from zero, giving logit =
// intercept exactly as tfidf.js leaves an empty vector unnormalised.
func Graph(src *SourceModel) *onnxgraph.Model {
	n := int64(len(src.IDF))
	idf := make([]float32, n)
	coef := make([]float32, n)
	for i := range idf {
		idf[i] = float32(src.IDF[i])
		coef[i] = float32(src.Coefficients[0][i])
	}
	dyn := []onnxgraph.Dim{{Param: "batch"}, {Param: "terms"}}
	node := func(op string, in []string, out string, attrs ...onnxgraph.Attr) onnxgraph.Node {
		return onnxgraph.Node{Op: op, Name: out, Inputs: in, Outputs: []string{out}, Attrs: attrs}
	}
	return &onnxgraph.Model{
		ProducerName: "bardo guardrail converter",
		DocString:    "llm_guardrail TF-IDF + logistic regression prompt-injection model over sparse term counts",
		Graph: onnxgraph.Graph{
			Name: "tfidf_logreg",
			Inputs: []onnxgraph.ValueInfo{
				{Name: InputTermIDs, DType: onnxgraph.Int64, Dims: dyn},
				{Name: InputTermCounts, DType: onnxgraph.Float, Dims: dyn},
			},
			Outputs: []onnxgraph.ValueInfo{
				{Name: OutputProbs, DType: onnxgraph.Float, Dims: []onnxgraph.Dim{{Param: "batch"}, {Value: 2}}},
			},
			Initializers: []onnxgraph.Tensor{
				{Name: "idf", DType: onnxgraph.Float, Dims: []int64{n}, Floats: idf},
				{Name: "coef", DType: onnxgraph.Float, Dims: []int64{n}, Floats: coef},
				{Name: "intercept", DType: onnxgraph.Float, Dims: []int64{1}, Floats: []float32{float32(src.Intercept[0])}},
				{Name: "eps", DType: onnxgraph.Float, Dims: []int64{1}, Floats: []float32{1e-12}},
				{Name: "one", DType: onnxgraph.Float, Dims: []int64{1}, Floats: []float32{1}},
				{Name: "axis_terms", DType: onnxgraph.Int64, Dims: []int64{1}, Int64s: []int64{1}},
			},
			Nodes: []onnxgraph.Node{
				node("Gather", []string{"idf", InputTermIDs}, "idf_t", onnxgraph.AttrInt("axis", 0)),
				node("Mul", []string{"idf_t", InputTermCounts}, "w"),
				node("Mul", []string{"w", "w"}, "w_sq"),
				node("ReduceSum", []string{"w_sq", "axis_terms"}, "sum_sq", onnxgraph.AttrInt("keepdims", 1)),
				node("Sqrt", []string{"sum_sq"}, "norm_raw"),
				node("Max", []string{"norm_raw", "eps"}, "norm"),
				node("Gather", []string{"coef", InputTermIDs}, "coef_t", onnxgraph.AttrInt("axis", 0)),
				node("Mul", []string{"w", "coef_t"}, "contrib"),
				node("ReduceSum", []string{"contrib", "axis_terms"}, "dot", onnxgraph.AttrInt("keepdims", 1)),
				node("Div", []string{"dot", "norm"}, "dot_n"),
				node("Add", []string{"dot_n", "intercept"}, "logit"),
				node("Sigmoid", []string{"logit"}, "p_injection"),
				node("Sub", []string{"one", "p_injection"}, "p_safe"),
				node("Concat", []string{"p_safe", "p_injection"}, OutputProbs, onnxgraph.AttrInt("axis", 1)),
			},
		},
	}
}

// writeVocab writes "<id>\t<n-gram>" lines in id order. N-grams are tokens
// of [a-z0-9_] joined by single spaces (plus the few non-ASCII terms
// scikit-learn kept), so they never contain a tab or newline.
func writeVocab(path string, vocab map[string]int32) error {
	terms := make([]string, len(vocab))
	for t, id := range vocab {
		if strings.ContainsAny(t, "\t\n\r") {
			return fmt.Errorf("guardrail: vocabulary term %q contains a tab or newline", t)
		}
		terms[id] = t
	}
	var b strings.Builder
	for id, t := range terms {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte('\t')
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return writeFileAtomic(path, []byte(b.String()))
}

// readVocab reads a vocab.tsv written by writeVocab.
func readVocab(path string) (map[string]int32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("guardrail: open vocab: %w", err)
	}
	defer f.Close()
	vocab := make(map[string]int32, 20000)
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		idStr, term, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			return nil, fmt.Errorf("guardrail: %s:%d: want \"<id>\\t<n-gram>\"", path, line)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("guardrail: %s:%d: bad id %q", path, line, idStr)
		}
		vocab[term] = int32(id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("guardrail: read vocab: %w", err)
	}
	return vocab, nil
}

// writeFileAtomic writes via a temporary file and rename so a reader never
// sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("guardrail: write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("guardrail: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// maxID returns the largest value in vocab, or -1.
func maxID(vocab map[string]int32) int32 {
	ids := make([]int32, 0, len(vocab))
	for _, id := range vocab {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return -1
	}
	return slices.Max(ids)
}
