package glove

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models"
	"github.com/bardoinference/bardo/host/models/batch"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// Defaults of LoadOptions.
const (
	DefaultMaxBatch = 32
	DefaultMaxWait  = 2 * time.Millisecond
	// DefaultMaxWords caps the distinct known words per text. Texts are
	// embedded as bags of words (each distinct word once, with its count
	// as weight), so this bounds the tensor width, not the text length;
	// 4096 distinct words is a long article.
	DefaultMaxWords = 4096
)

// LoadOptions configures Load.
type LoadOptions struct {
	// Name is the embedder's name; "" means the name in config.json.
	Name string
	// MaxBatch caps the texts per model run; 0 means DefaultMaxBatch.
	MaxBatch int
	// MaxWait bounds how long a request waits for concurrent ones to share
	// its batch; 0 means DefaultMaxWait. A lone request never waits (see
	// package batch).
	MaxWait time.Duration
	// MaxWords caps the distinct words used per text (the first ones seen);
	// 0 means DefaultMaxWords.
	MaxWords int
	// Runtime configures the onnxruntime environment if this Load is the
	// first to initialise it.
	Runtime onnxrt.Options
}

// Vocab maps words to the model's ids and tokenizes text the way the model
// expects.
type Vocab struct {
	words []string
	ids   map[string]int32
}

// ReadVocab reads vocab.txt: one word per line, id = line number (0-based),
// line 0 the padding entry.
func ReadVocab(path string) (*Vocab, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("glove: %w", err)
	}
	defer f.Close()
	v := &Vocab{ids: map[string]int32{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := sc.Text()
		if len(v.words) > 0 {
			if _, dup := v.ids[w]; dup || w == "" {
				return nil, fmt.Errorf("glove: %s line %d: empty or duplicate word %q", path, len(v.words)+1, w)
			}
			v.ids[w] = int32(len(v.words))
		}
		v.words = append(v.words, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("glove: read %s: %w", path, err)
	}
	if len(v.words) < 2 || v.words[0] != padToken {
		return nil, fmt.Errorf("glove: %s: want %q on line 1 and at least one word", path, padToken)
	}
	return v, nil
}

// Size is the number of ids, the padding id included.
func (v *Vocab) Size() int { return len(v.words) }

// ID returns a word's id, or 0 and false for an unknown word.
func (v *Vocab) ID(w string) (int32, bool) {
	id, ok := v.ids[w]
	return id, ok
}

// Word returns the word with the given id.
func (v *Vocab) Word(id int32) string { return v.words[id] }

// Tokens splits text into the words the model looks up, unknown ones
// included (they are dropped by Bag).
func (v *Vocab) Tokens(text string) []string {
	return tokenize(text, func(w string) bool { _, ok := v.ids[w]; return ok })
}

// Bag is a text as the model consumes it: its distinct known words (in order
// of first appearance) and how often each occurs.
type Bag struct {
	IDs    []int64
	Counts []float32
}

// Bag turns text into a bag of known words, keeping at most maxWords
// distinct words (0 means no limit). Order does not affect the embedding (a
// weighted mean), so counting repeated words once with their count keeps
// long texts cheap.
func (v *Vocab) Bag(text string, maxWords int) Bag {
	var b Bag
	pos := map[int32]int{}
	known := func(w string) bool { _, ok := v.ids[w]; return ok }
	words(text, func(w string) {
		expand(w, known, func(t string) {
			id, ok := v.ids[t]
			if !ok {
				return
			}
			if i, seen := pos[id]; seen {
				b.Counts[i]++
				return
			}
			if maxWords > 0 && len(b.IDs) >= maxWords {
				return
			}
			pos[id] = len(b.IDs)
			b.IDs = append(b.IDs, int64(id))
			b.Counts = append(b.Counts, 1)
		})
	})
	return b
}

// Embedder is the GloVe embedder; it implements models.Embedder.
type Embedder struct {
	name     string
	dim      int
	maxWords int
	cfg      Config
	vocab    *Vocab

	sess    *ort.DynamicAdvancedSession
	batcher *batch.Batcher[Bag, []float32]

	closeOnce sync.Once
	closeErr  error
}

var _ models.Embedder = (*Embedder)(nil)

// Load opens the model directory dir written by Build. It checks the files
// against the checksums in config.json, initialises onnxruntime if needed
// and starts the micro-batcher.
func Load(dir string, opts LoadOptions) (*Embedder, error) {
	e, err := load(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("glove: load %s: %w", dir, err)
	}
	return e, nil
}

func load(dir string, opts LoadOptions) (*Embedder, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("%w (build it with `make models`)", err)
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	if cfg.Kind != "glove" {
		return nil, fmt.Errorf("%s: kind %q, want \"glove\"", ConfigFile, cfg.Kind)
	}
	if cfg.Dim <= 0 || cfg.Inputs.IDs == "" || cfg.Inputs.Weights == "" || cfg.Output == "" {
		return nil, fmt.Errorf("%s: incomplete (dim %d, inputs %q/%q, output %q)", ConfigFile, cfg.Dim, cfg.Inputs.IDs, cfg.Inputs.Weights, cfg.Output)
	}
	// The model is hashed as a stream and then loaded by onnxruntime from
	// the file, so its 10 MB never sit in the Go heap as well.
	modelPath := filepath.Join(dir, ModelFile)
	modelSum, err := fileSHA256(modelPath)
	if err != nil {
		return nil, err
	}
	if err := matchSum(ModelFile, modelSum, cfg.ModelSHA256); err != nil {
		return nil, err
	}
	vocabPath := filepath.Join(dir, VocabFile)
	vocabData, err := os.ReadFile(vocabPath)
	if err != nil {
		return nil, err
	}
	if err := checkSum(VocabFile, vocabData, cfg.VocabSHA256); err != nil {
		return nil, err
	}
	vocab, err := ReadVocab(vocabPath)
	if err != nil {
		return nil, err
	}
	if vocab.Size() != cfg.Words+1 {
		return nil, fmt.Errorf("%s has %d entries, %s says %d words + pad", VocabFile, vocab.Size(), ConfigFile, cfg.Words)
	}

	if err := onnxrt.Init(opts.Runtime); err != nil {
		return nil, err
	}
	so, err := onnxrt.SessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	sess, err := ort.NewDynamicAdvancedSession(modelPath,
		[]string{cfg.Inputs.IDs, cfg.Inputs.Weights}, []string{cfg.Output}, so)
	if err != nil {
		return nil, fmt.Errorf("onnxruntime session: %w", err)
	}

	e := &Embedder{
		name:     opts.Name,
		dim:      cfg.Dim,
		maxWords: opts.MaxWords,
		cfg:      cfg,
		vocab:    vocab,
		sess:     sess,
	}
	if e.name == "" {
		e.name = cfg.Name
	}
	if e.maxWords <= 0 {
		e.maxWords = DefaultMaxWords
	}
	maxBatch, maxWait := opts.MaxBatch, opts.MaxWait
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	e.batcher = batch.New(e.run, maxBatch, maxWait)
	return e, nil
}

func checkSum(name string, data []byte, want string) error {
	sum := sha256.Sum256(data)
	return matchSum(name, hex.EncodeToString(sum[:]), want)
}

func matchSum(name, got, want string) error {
	if want == "" {
		return fmt.Errorf("%s: %s has no checksum for it", name, ConfigFile)
	}
	if got != want {
		return fmt.Errorf("%s: sha256 %s, %s says %s (rebuild with `make models`)", name, got, ConfigFile, want)
	}
	return nil
}

// Name implements models.Embedder.
func (e *Embedder) Name() string { return e.name }

// Dim implements models.Embedder.
func (e *Embedder) Dim() int { return e.dim }

// Config returns the model's config.json.
func (e *Embedder) Config() Config { return e.cfg }

// Vocab returns the model's vocabulary and tokenizer.
func (e *Embedder) Vocab() *Vocab { return e.vocab }

// BatchStats reports the micro-batcher's counters.
func (e *Embedder) BatchStats() batch.Stats { return e.batcher.Stats() }

// Embed implements models.Embedder. Texts are tokenized on the caller's
// goroutine and then run through the micro-batcher with other concurrent
// callers' texts. A text with no known word (empty, or only unknown words
// and punctuation) yields the zero vector, whose cosine with anything is 0:
// "no evidence of similarity" rather than an arbitrary direction.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	bags := make([]Bag, len(texts))
	for i, t := range texts {
		bags[i] = e.vocab.Bag(t, e.maxWords)
	}
	out, err := e.batcher.Do(ctx, bags)
	if err != nil {
		return nil, fmt.Errorf("glove %s: %w", e.name, err)
	}
	return out, nil
}

// errClosed is returned by a batch that runs after Close started.
var errClosed = errors.New("embedder closed")

// run is the batch function: one onnxruntime call for the whole batch,
// texts padded with id 0 / weight 0 to the longest bag.
func (e *Embedder) run(ctx context.Context, bags []Bag) ([][]float32, error) {
	if ctx.Err() != nil {
		return nil, errClosed
	}
	seq := 1 // a batch of empty texts still needs a non-empty axis
	for _, b := range bags {
		seq = max(seq, len(b.IDs))
	}
	n := len(bags)
	ids := make([]int64, n*seq)
	ws := make([]float32, n*seq)
	for i, b := range bags {
		copy(ids[i*seq:], b.IDs)
		copy(ws[i*seq:], b.Counts)
	}
	idT, err := ort.NewTensor(ort.NewShape(int64(n), int64(seq)), ids)
	if err != nil {
		return nil, fmt.Errorf("input tensor: %w", err)
	}
	defer idT.Destroy()
	wT, err := ort.NewTensor(ort.NewShape(int64(n), int64(seq)), ws)
	if err != nil {
		return nil, fmt.Errorf("input tensor: %w", err)
	}
	defer wT.Destroy()
	flat := make([]float32, n*e.dim)
	outT, err := ort.NewTensor(ort.NewShape(int64(n), int64(e.dim)), flat)
	if err != nil {
		return nil, fmt.Errorf("output tensor: %w", err)
	}
	defer outT.Destroy()
	if err := e.sess.Run([]ort.Value{idT, wT}, []ort.Value{outT}); err != nil {
		return nil, fmt.Errorf("onnxruntime run: %w", err)
	}
	// The output tensor wraps flat, so the vectors are already in Go memory;
	// each text gets a capped sub-slice of it.
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*e.dim : (i+1)*e.dim : (i+1)*e.dim]
	}
	return out, nil
}

// Close implements models.Embedder: it stops the batcher (queued requests
// fail) and releases the onnxruntime session.
func (e *Embedder) Close() error {
	e.closeOnce.Do(func() {
		e.batcher.Close()
		if err := e.sess.Destroy(); err != nil {
			e.closeErr = fmt.Errorf("glove %s: close: %w", e.name, err)
		}
	})
	return e.closeErr
}

// String describes the embedder for logs.
func (e *Embedder) String() string {
	return fmt.Sprintf("glove %s (%d-d, %d words, %s)", e.name, e.dim, e.cfg.Words, strings.ToLower(e.cfg.Storage))
}
