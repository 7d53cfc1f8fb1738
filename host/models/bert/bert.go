// Package bert loads BERT-family ONNX encoders and sequence classifiers from
// a model directory and serves them as models.Embedder and models.Classifier.
//
// The loader is generic: it reads the graph's input and output names from the
// model (token_type_ids and attention_mask are optional, int64 or int32), the
// pooling, query prefix, normalisation, maximum length and labels from the
// HuggingFace-style config.json beside it, and tokenizes with WordPiece or,
// when the directory's tokenizer.json is a Unigram model (DeBERTa-v3), with
// host/models/sentencepiece. Calls
// from concurrent callers are merged into micro-batches (host/models/batch)
// that wait at most 2 ms for company; each batch is padded to its longest
// sequence and the attention mask hides the padding. README.md describes the
// directory contract and how nomic-embed-text-v1.5 and DeBERTa fit it.
package bert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models/batch"
	"github.com/bardoinference/bardo/host/models/onnxrt"
	"github.com/bardoinference/bardo/host/models/sentencepiece"
	"github.com/bardoinference/bardo/host/models/wordpiece"
)

// Files in a model directory.
const (
	ModelFile           = "model.onnx"
	ConfigFile          = "config.json"
	VocabFile           = "vocab.txt"
	TokenizerConfigFile = "tokenizer_config.json"
	// TokenizerFile is read only for a SentencePiece Unigram model: when
	// its model.type is "Unigram" it replaces WordPiece (see loadTokenizer).
	TokenizerFile = "tokenizer.json"
)

// VocabRelPath is where `make deps` puts the bert-base-uncased WordPiece
// vocabulary, relative to the repository root; it is the vocabulary used when
// a model directory has no vocab.txt.
const VocabRelPath = "build/deps/wordpiece/bert-base-uncased-vocab.txt"

// EnvVocab overrides the default vocabulary path.
const EnvVocab = "BARDO_WORDPIECE_VOCAB"

// Defaults for Options.
const (
	DefaultMaxBatch = 32
	// DefaultMaxWait is the longest a batch waits for more callers, and also
	// the most MaxWait may be set to: batching must never add more than this
	// to a request's latency.
	DefaultMaxWait = 2 * time.Millisecond
	// DefaultMaxLength caps sequences when neither Options nor config.json
	// say otherwise. Attention cost grows with the square of the length, and
	// 512 is BERT's trained limit (nomic-embed-text accepts 8192, which would
	// make a single long prompt monopolise the model for seconds).
	DefaultMaxLength = 512
)

// Options configures loading. The zero value uses config.json and the
// defaults above.
type Options struct {
	// Name is what Name() returns; "" means the directory's base name.
	Name string
	// VocabPath is the WordPiece vocabulary used when the model directory has
	// no vocab.txt; "" means DefaultVocabPath().
	VocabPath string
	// Tokenizer replaces WordPiece entirely (for models whose tokenizer is
	// not WordPiece); VocabPath and tokenizer_config.json are then ignored.
	// When it is nil and the model's tokenizer.json is a Unigram model, a
	// sentencepiece.Tokenizer loaded from that file is used.
	Tokenizer Tokenizer
	// Pooling ("mean" or "cls") overrides config.json's "pooling"; encoders
	// only.
	Pooling string
	// QueryPrefix, when non-empty, overrides config.json's "query_prefix";
	// encoders only.
	QueryPrefix string
	// MaxLength, when positive, overrides the maximum sequence length in
	// tokens ([CLS] and [SEP] included); longer texts are truncated. It is
	// capped at config.json's max_position_embeddings.
	MaxLength int
	// MaxBatch caps the texts per model run; 0 means DefaultMaxBatch.
	MaxBatch int
	// MaxWait is how long a batch may wait for more callers; 0 means
	// DefaultMaxWait, negative means never wait. It may not exceed
	// DefaultMaxWait.
	MaxWait time.Duration
	// Runtime is passed to onnxrt.Init (which only the first caller in a
	// process configures).
	Runtime onnxrt.Options
}

// Tokenizer turns text into model inputs. *wordpiece.Tokenizer and
// *sentencepiece.Tokenizer implement it.
type Tokenizer interface {
	// Encode returns the ids of text with its special tokens, at most maxLen
	// long.
	Encode(text string, maxLen int) wordpiece.Encoding
	// PadID is the id that fills the tail of shorter sequences in a batch.
	PadID() int64
}

// DefaultVocabPath is $BARDO_WORDPIECE_VOCAB if set, else VocabRelPath under
// the repository root (see onnxrt.RepoRoot), else VocabRelPath relative to the
// working directory.
func DefaultVocabPath() string {
	if p := os.Getenv(EnvVocab); p != "" {
		return p
	}
	if root, err := onnxrt.RepoRoot(); err == nil {
		return filepath.Join(root, VocabRelPath)
	}
	return VocabRelPath
}

// Config is what the loader reads from config.json. Standard HuggingFace
// fields come first; the aliases cover configs that name them differently
// (nomic_bert uses n_embd and n_positions).
type Config struct {
	ModelType             string            `json:"model_type"`
	HiddenSize            int               `json:"hidden_size"`
	NEmbd                 int               `json:"n_embd"`
	DModel                int               `json:"d_model"`
	MaxPositionEmbeddings int               `json:"max_position_embeddings"`
	NPositions            int               `json:"n_positions"`
	ID2Label              map[string]string `json:"id2label"`
	// Bardo's fields.
	Pooling     string `json:"pooling"`      // "mean" (default) or "cls"
	QueryPrefix string `json:"query_prefix"` // prepended to every text
	Normalize   *bool  `json:"normalize"`    // L2-normalise vectors; default true
	MaxLength   int    `json:"max_length"`   // token limit; default min(positions, 512)
	Notice      string `json:"_notice"`      // generated models say they are random
}

// ReadConfig parses the config.json at path.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bert: read config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("bert: %s: malformed JSON: %w", path, err)
	}
	return &c, nil
}

// sidecar returns the path of a file that belongs with the model: beside
// model.onnx first (HuggingFace repositories keep an onnx/ folder with its own
// config and tokenizer files), then in the model directory. When neither
// exists it returns the model-directory path, for the error message.
func sidecar(dir, modelPath, name string) string {
	near := filepath.Join(filepath.Dir(modelPath), name)
	if _, err := os.Stat(near); err == nil {
		return near
	}
	return filepath.Join(dir, name)
}

// hidden is the configured hidden size under any of its names, or 0.
func (c *Config) hidden() int {
	for _, v := range []int{c.HiddenSize, c.NEmbd, c.DModel} {
		if v > 0 {
			return v
		}
	}
	return 0
}

// positions is the configured maximum position count, or 0.
func (c *Config) positions() int {
	if c.MaxPositionEmbeddings > 0 {
		return c.MaxPositionEmbeddings
	}
	return c.NPositions
}

// labels returns id2label as a slice ordered by id; the ids must be exactly
// 0..n-1.
func (c *Config) labels() ([]string, error) {
	if len(c.ID2Label) == 0 {
		return nil, errors.New("config.json has no id2label")
	}
	out := make([]string, len(c.ID2Label))
	for k, v := range c.ID2Label {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(out) {
			return nil, fmt.Errorf("config.json id2label: key %q is not an id in 0..%d", k, len(out)-1)
		}
		out[i] = v
	}
	return out, nil
}

// inputKind is which tensor a graph input receives.
type inputKind int

const (
	inputIDs inputKind = iota
	inputMask
	inputTypes
	inputPositions
)

var inputKinds = map[string]inputKind{
	"input_ids":      inputIDs,
	"attention_mask": inputMask,
	"token_type_ids": inputTypes,
	"position_ids":   inputPositions,
}

type graphInput struct {
	name string
	kind inputKind
	is32 bool // int32 ids instead of int64
}

// session is the part shared by encoders and classifiers: the ONNX session,
// its discovered inputs, the tokenizer and the batcher.
type session struct {
	name    string
	tok     Tokenizer
	maxLen  int
	inputs  []graphInput
	output  string
	ort     *ort.DynamicAdvancedSession
	closeMu sync.Once
}

// open does everything but the output-specific checks: it finds the model
// file, reads config.json, builds the tokenizer, initialises onnxruntime and
// discovers the graph's inputs. check validates the config before anything
// expensive happens; pick chooses the output among the graph's.
func open(dir string, opts Options, check func(*Config) error, pick func([]ort.InputOutputInfo) (string, error)) (*session, *Config, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: model directory: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("bert: model directory %s is not a directory", dir)
	}
	modelPath, err := findModel(dir)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ReadConfig(sidecar(dir, modelPath, ConfigFile))
	if err != nil {
		return nil, nil, err
	}
	if err := check(cfg); err != nil {
		return nil, nil, fmt.Errorf("bert: %s: %w", dir, err)
	}
	tok, err := loadTokenizer(dir, modelPath, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := onnxrt.Init(opts.Runtime); err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err)
	}
	so, err := onnxrt.SessionOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err)
	}
	defer so.Destroy()
	ins, outs, err := graphInfo(modelPath)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: %s: %w", modelPath, err)
	}
	s := &session{name: opts.Name, tok: tok}
	if s.name == "" {
		s.name = filepath.Base(filepath.Clean(dir))
	}
	if s.inputs, err = mapInputs(ins); err != nil {
		return nil, nil, fmt.Errorf("bert: %s: %w", modelPath, err)
	}
	if s.output, err = pick(outs); err != nil {
		return nil, nil, fmt.Errorf("bert: %s: %w", modelPath, err)
	}
	s.maxLen = maxLength(cfg, opts)
	names := make([]string, len(s.inputs))
	for i, in := range s.inputs {
		names[i] = in.name
	}
	s.ort, err = ort.NewDynamicAdvancedSession(modelPath, names, []string{s.output}, so)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: %s: %w", modelPath, err)
	}
	return s, cfg, nil
}

// graphInfo reads the model's input and output names and types.
// onnxruntime_go can only do that through a throw-away session, so that
// session skips graph optimisation, which is most of a session's creation
// time and changes nothing about the graph's interface.
func graphInfo(modelPath string) ([]ort.InputOutputInfo, []ort.InputOutputInfo, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("session options: %w", err)
	}
	defer so.Destroy()
	if err := so.SetGraphOptimizationLevel(ort.GraphOptimizationLevelDisableAll); err != nil {
		return nil, nil, fmt.Errorf("session options: %w", err)
	}
	return ort.GetInputOutputInfoWithOptions(modelPath, so)
}

// findModel accepts <dir>/model.onnx and the HuggingFace repository layout
// <dir>/onnx/model.onnx.
func findModel(dir string) (string, error) {
	for _, p := range []string{filepath.Join(dir, ModelFile), filepath.Join(dir, "onnx", ModelFile)} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("bert: no %s in %s (looked for %s and onnx/%s)", ModelFile, dir, ModelFile, ModelFile)
}

// loadTokenizer prefers Options.Tokenizer, then a SentencePiece Unigram
// tokenizer.json, then the model's vocab.txt, then Options.VocabPath or
// DefaultVocabPath(). Case handling for WordPiece follows
// tokenizer_config.json's do_lower_case (default: lower-case).
func loadTokenizer(dir, modelPath string, opts Options) (Tokenizer, error) {
	if opts.Tokenizer != nil {
		return opts.Tokenizer, nil
	}
	if tok, err := loadUnigram(sidecar(dir, modelPath, TokenizerFile)); tok != nil || err != nil {
		return tok, err
	}
	lower := true
	tcPath := sidecar(dir, modelPath, TokenizerConfigFile)
	if data, err := os.ReadFile(tcPath); err == nil {
		var tc struct {
			Lowercase *bool `json:"do_lower_case"`
		}
		if err := json.Unmarshal(data, &tc); err != nil {
			return nil, fmt.Errorf("bert: %s: malformed JSON: %w", tcPath, err)
		}
		if tc.Lowercase != nil {
			lower = *tc.Lowercase
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("bert: %w", err)
	}
	path := sidecar(dir, modelPath, VocabFile)
	if _, err := os.Stat(path); err != nil {
		path = opts.VocabPath
		if path == "" {
			path = DefaultVocabPath()
		}
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("bert: no %s in %s and vocabulary %s is missing (run `make deps`, or set %s): %w", VocabFile, dir, path, EnvVocab, err)
	}
	tok, err := wordpiece.Load(path, wordpiece.Options{Cased: !lower})
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	return tok, nil
}

// loadUnigram returns the tokenizer at path when it is a Unigram model, and
// nil (no error) when the file is absent or holds another model type, which
// leaves the WordPiece path as it was. A tokenizer.json that is malformed, or
// a Unigram model that cannot be loaded, is an error: falling back to
// WordPiece would feed the model ids from the wrong vocabulary.
func loadUnigram(path string) (Tokenizer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	tok, err := sentencepiece.Parse(data)
	switch {
	case errors.Is(err, sentencepiece.ErrNotUnigram):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	return tok, nil
}

// mapInputs recognises the graph's inputs by name. input_ids is required; an
// input the loader cannot fill is an error rather than a silent zero tensor.
func mapInputs(infos []ort.InputOutputInfo) ([]graphInput, error) {
	var out []graphInput
	haveIDs := false
	for _, in := range infos {
		kind, ok := inputKinds[in.Name]
		if !ok {
			return nil, fmt.Errorf("model input %q is not one the loader can fill (input_ids, attention_mask, token_type_ids, position_ids)", in.Name)
		}
		if in.OrtValueType != ort.ONNXTypeTensor || len(in.Dimensions) != 2 {
			return nil, fmt.Errorf("model input %q must be a [batch, sequence] tensor, is %s", in.Name, in.String())
		}
		gi := graphInput{name: in.Name, kind: kind}
		switch in.DataType {
		case ort.TensorElementDataTypeInt64:
		case ort.TensorElementDataTypeInt32:
			gi.is32 = true
		default:
			return nil, fmt.Errorf("model input %q has element type %v, want int64 or int32", in.Name, in.DataType)
		}
		haveIDs = haveIDs || kind == inputIDs
		out = append(out, gi)
	}
	if !haveIDs {
		return nil, errors.New("model has no input_ids input")
	}
	return out, nil
}

// maxLength is Options.MaxLength, else config max_length, else
// DefaultMaxLength — never more than the model's position count when the
// config states it, because a longer sequence would index past the position
// embedding and fail at run time.
func maxLength(c *Config, opts Options) int {
	n := DefaultMaxLength
	switch {
	case opts.MaxLength > 0:
		n = opts.MaxLength
	case c.MaxLength > 0:
		n = c.MaxLength
	}
	if p := c.positions(); p > 0 {
		n = min(n, p)
	}
	return n
}

func batchParams(opts Options) (int, time.Duration, error) {
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	wait := opts.MaxWait
	switch {
	case wait == 0:
		wait = DefaultMaxWait
	case wait < 0:
		wait = 0
	case wait > DefaultMaxWait:
		return 0, 0, fmt.Errorf("bert: MaxWait %v exceeds the %v bound on batching delay", wait, DefaultMaxWait)
	}
	return maxBatch, wait, nil
}

// encode tokenizes texts in the caller's goroutine, so tokenization runs in
// parallel across callers instead of inside the single batch runner.
func (s *session) encode(prefix string, texts []string) []wordpiece.Encoding {
	encs := make([]wordpiece.Encoding, len(texts))
	for i, t := range texts {
		encs[i] = s.tok.Encode(prefix+t, s.maxLen)
	}
	return encs
}

// inputTensors builds the graph inputs for a batch padded to its longest
// sequence (pad id, mask 0, type 0). It returns the padded length and the
// flat attention mask, which mean pooling needs.
func (s *session) inputTensors(encs []wordpiece.Encoding) ([]ort.Value, int, []int64, error) {
	seq := 1
	for _, e := range encs {
		seq = max(seq, e.Len())
	}
	n := len(encs) * seq
	ids, mask, types, pos := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	pad := s.tok.PadID()
	for b, e := range encs {
		row := b * seq
		copy(ids[row:], e.IDs)
		copy(mask[row:], e.AttentionMask)
		copy(types[row:], e.TypeIDs)
		for i := e.Len(); i < seq; i++ {
			ids[row+i] = pad
		}
		for i := range seq {
			pos[row+i] = int64(i)
		}
	}
	shape := ort.NewShape(int64(len(encs)), int64(seq))
	vals := make([]ort.Value, 0, len(s.inputs))
	for _, in := range s.inputs {
		data := ids
		switch in.kind {
		case inputMask:
			data = mask
		case inputTypes:
			data = types
		case inputPositions:
			data = pos
		}
		var (
			v   ort.Value
			err error
		)
		if in.is32 {
			d32 := make([]int32, len(data))
			for i, x := range data {
				d32[i] = int32(x)
			}
			v, err = ort.NewTensor(shape, d32)
		} else {
			v, err = ort.NewTensor(shape, data)
		}
		if err != nil {
			destroyAll(vals)
			return nil, 0, nil, fmt.Errorf("bert: input %s: %w", in.name, err)
		}
		vals = append(vals, v)
	}
	return vals, seq, mask, nil
}

func destroyAll(vals []ort.Value) {
	for _, v := range vals {
		if v != nil {
			v.Destroy()
		}
	}
}

// runAlloc runs the batch letting onnxruntime allocate the output, for the
// load-time probe that discovers the output's shape.
func (s *session) runAlloc(encs []wordpiece.Encoding) ([]float32, ort.Shape, error) {
	in, _, _, err := s.inputTensors(encs)
	if err != nil {
		return nil, nil, err
	}
	defer destroyAll(in)
	out := []ort.Value{nil}
	if err := s.ort.Run(in, out); err != nil {
		return nil, nil, fmt.Errorf("bert: %s: run: %w", s.name, err)
	}
	defer out[0].Destroy()
	t, ok := out[0].(*ort.Tensor[float32])
	if !ok {
		return nil, nil, fmt.Errorf("bert: %s: output %s is not a float32 tensor", s.name, s.output)
	}
	return append([]float32(nil), t.GetData()...), t.GetShape(), nil
}

// probe runs one short text through the model at load time, which both
// proves the graph runs and reveals the output's real shape.
func (s *session) probe() (ort.Shape, error) {
	_, shape, err := s.runAlloc(s.encode("", []string{"hello"}))
	if err != nil {
		return nil, fmt.Errorf("bert: %s: probe run failed: %w", s.name, err)
	}
	return shape, nil
}

func (s *session) close() {
	s.closeMu.Do(func() {
		if s.ort != nil {
			s.ort.Destroy()
		}
	})
}

// pickOutput returns the output called want if present, else the only float
// output of the given rank.
func pickOutput(outs []ort.InputOutputInfo, want string, rank int) (string, error) {
	var cands []string
	for _, o := range outs {
		if o.OrtValueType != ort.ONNXTypeTensor || len(o.Dimensions) != rank {
			continue
		}
		if o.Name == want {
			if o.DataType != ort.TensorElementDataTypeFloat {
				return "", fmt.Errorf("output %q has element type %v, want float32", o.Name, o.DataType)
			}
			return o.Name, nil
		}
		if o.DataType == ort.TensorElementDataTypeFloat {
			cands = append(cands, o.Name)
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.String()
	}
	return "", fmt.Errorf("no output %q and no single rank-%d float output to use instead (outputs: %v)", want, rank, names)
}

// runBatched wraps a batch function with the context check every batch
// needs: a closed Batcher cancels ctx, and a cancelled batch must not start.
func runBatched[Out any](fn func([]wordpiece.Encoding) ([]Out, error)) batch.Func[wordpiece.Encoding, Out] {
	return func(ctx context.Context, items []wordpiece.Encoding) ([]Out, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return fn(items)
	}
}

// l2normalize scales v to unit length in place (a zero vector stays zero).
func l2normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}
