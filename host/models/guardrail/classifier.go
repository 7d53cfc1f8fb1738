package guardrail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models"
	"github.com/bardoinference/bardo/host/models/batch"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// LoadOptions configures Load.
type LoadOptions struct {
	// Name is the classifier's configured name; "" means "injection".
	Name string
	// LibraryPath is passed to onnxrt.Init ("" means its default).
	LibraryPath string
	// MaxBatch caps the rows per model run; 0 means 64.
	MaxBatch int
	// MaxWait is how long a batch waits for more concurrent callers; 0
	// means 1ms, negative means never wait.
	MaxWait time.Duration
	// Threshold overrides config.json's threshold when > 0.
	Threshold float32
	// ModelOnly turns the rules and decoded views off, so scores are
	// exactly llm_guardrail's checkInjection confidence.
	ModelOnly bool
	// ONNXRuntime runs the graph with onnxruntime even when it is the one
	// Graph writes, which the classifier otherwise computes itself
	// (logreg.go); tests compare the two.
	ONNXRuntime bool
}

// Result explains one text's score.
type Result struct {
	// Score is P(INJECTION): max(Model, Rules), where Model counts in full
	// only when corroborated (context.go; otherwise at most 0.45), or
	// Model with ModelOnly.
	Score float32 `json:"score"`
	// Model is the TF-IDF model's P(INJECTION) on the text plus any hidden
	// text the rules decoded (see RuleResult.Decoded).
	Model float32 `json:"model"`
	// Rules is the rule engine's noisy-OR score (0 with ModelOnly).
	Rules float32 `json:"rules"`
	// Hits are the rules that fired.
	Hits []Hit `json:"hits,omitempty"`
	// Injection reports Score >= the classifier's threshold.
	Injection bool `json:"injection"`
	// By names what decided Score: "model" or "rules".
	By string `json:"by"`
}

// Classifier is the offline injection classifier: llm_guardrail's TF-IDF +
// logistic-regression model, computed in Go from model.onnx's weights (or
// run by onnxruntime when model.onnx is not the graph Graph writes),
// combined with the rule table. It implements models.Classifier and is safe
// for concurrent use; with onnxruntime, concurrent calls are micro-batched
// into one model run.
type Classifier struct {
	name      string
	cfg       Config
	dir       string
	vec       *Vectorizer
	native    *logreg // nil: the session runs the model
	session   *ort.DynamicAdvancedSession
	batcher   *batch.Batcher[termRow, float32]
	threshold float32
	modelOnly bool
	maxBatch  int
	closeOnce sync.Once
	closeErr  error

	// direct is held by a caller running the model itself (see score);
	// closed, set under it, sends every later caller to the batcher.
	direct sync.Mutex
	closed bool
	// shut is closed for the Go model, which takes no lock.
	shut atomic.Bool
}

var _ models.Classifier = (*Classifier)(nil)

// termRow is one text's sparse term counts, the batcher's unit of work.
type termRow struct {
	ids    []int64
	counts []float32
}

// Load opens a model directory written by Build (model.onnx, vocab.tsv,
// config.json), initialising onnxruntime if needed.
func Load(dir string, opts LoadOptions) (*Classifier, error) {
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("guardrail: read config: %w", err)
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("guardrail: parse config: %w", err)
	}
	if cfg.Kind != Kind {
		return nil, fmt.Errorf("guardrail: %s: kind %q, want %q", dir, cfg.Kind, Kind)
	}
	if len(cfg.Labels) != 2 {
		return nil, fmt.Errorf("guardrail: %s: want 2 labels, got %v", dir, cfg.Labels)
	}
	vocabName := cfg.Vocab
	if vocabName == "" {
		vocabName = VocabFile
	}
	vocab, err := readVocab(filepath.Join(dir, vocabName))
	if err != nil {
		return nil, err
	}
	if len(vocab) != cfg.VocabSize || int(maxID(vocab)) != cfg.VocabSize-1 {
		return nil, fmt.Errorf("guardrail: %s: vocabulary has %d terms (max id %d), config says %d", dir, len(vocab), maxID(vocab), cfg.VocabSize)
	}
	vec, err := NewVectorizer(vocab, cfg.NgramRange[0], cfg.NgramRange[1])
	if err != nil {
		return nil, err
	}
	c := &Classifier{
		name:      opts.Name,
		cfg:       cfg,
		dir:       dir,
		vec:       vec,
		threshold: cfg.Threshold,
		modelOnly: opts.ModelOnly,
	}
	onnx, err := os.ReadFile(filepath.Join(dir, ModelFile))
	if err != nil {
		return nil, fmt.Errorf("guardrail: %w", err)
	}
	if !opts.ONNXRuntime {
		// The graph Graph writes is a sparse dot product: computed here,
		// with no onnxruntime at all. Any other graph is onnxruntime's.
		c.native, _ = readLogreg(onnx, cfg.VocabSize)
	}
	if c.native == nil {
		if err := onnxrt.Init(onnxrt.Options{LibraryPath: opts.LibraryPath}); err != nil {
			return nil, fmt.Errorf("guardrail: %w", err)
		}
		so, err := onnxrt.SessionOptions()
		if err != nil {
			return nil, fmt.Errorf("guardrail: %w", err)
		}
		defer so.Destroy()
		c.session, err = ort.NewDynamicAdvancedSession(filepath.Join(dir, ModelFile),
			[]string{InputTermIDs, InputTermCounts}, []string{OutputProbs}, so)
		if err != nil {
			return nil, fmt.Errorf("guardrail: load %s: %w", filepath.Join(dir, ModelFile), err)
		}
	}
	if c.name == "" {
		c.name = "injection"
	}
	if opts.Threshold > 0 {
		c.threshold = opts.Threshold
	}
	if c.threshold <= 0 {
		c.threshold = 0.5
	}
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 64
	}
	wait := opts.MaxWait
	if wait == 0 {
		wait = time.Millisecond
	}
	c.maxBatch = maxBatch
	if c.session != nil {
		c.batcher = batch.New(c.run, maxBatch, wait)
	}
	return c, nil
}

// Name is the classifier's configured name.
func (c *Classifier) Name() string { return c.name }

// Labels returns ["SAFE", "INJECTION"] (from config.json).
func (c *Classifier) Labels() []string { return append([]string(nil), c.cfg.Labels...) }

// Threshold is the P(INJECTION) at or above which Result.Injection is set.
func (c *Classifier) Threshold() float32 { return c.threshold }

// Config returns the model's config.json.
func (c *Classifier) Config() Config { return c.cfg }

// Classify returns [P(SAFE), P(INJECTION)] per text, where P(INJECTION) is
// Result.Score.
func (c *Classifier) Classify(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := c.Explain(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(res))
	for i, r := range res {
		out[i] = []float32{1 - r.Score, r.Score}
	}
	return out, nil
}

// Explain scores texts like Classify and says why: the model and rule
// scores and the rules that fired. The rules cost a few microseconds per
// text on top of the model.
func (c *Classifier) Explain(ctx context.Context, texts []string) ([]Result, error) {
	res := make([]Result, len(texts))
	sc := explainScratches.Get().(*explainScratch)
	defer sc.put()
	rows := slices.Grow(sc.rows[:0], len(texts))[:len(texts)]
	layouts := slices.Grow(sc.layouts[:0], len(texts))[:len(texts)]
	// The literals of a text that is all prose (the usual short turn) are
	// its prose's: the vocabulary check below need not scan it again.
	proseFound := slices.Grow(sc.proseFound[:0], len(texts))[:len(texts)]
	sc.rows, sc.layouts, sc.proseFound = rows, layouts, proseFound
	ids, counts := sc.ids[:0], sc.counts[:0]
	for i, t := range texts {
		if !c.modelOnly {
			rr := ScoreRules(t)
			res[i].Rules, res[i].Hits = rr.Score, rr.Hits
			// The model sees the prose: code, config and log lines make
			// a bag-of-words model cry injection (context.go).
			layouts[i] = rr.layout
			if rr.layout.view == t {
				proseFound[i] = rr.found
			}
			t = rr.layout.view
			if len(rr.Decoded) > 0 {
				// Hidden text is scored as if it were visible.
				t = t + "\n" + strings.Join(rr.Decoded, "\n")
			}
		}
		// Every text's terms go into one kept buffer; a row is its span.
		at := len(ids)
		ids, counts = c.vec.appendTerms(&sc.terms, t, ids, counts)
		rows[i] = termRow{ids: ids[at:len(ids):len(ids)], counts: counts[at:len(counts):len(counts)]}
	}
	sc.ids, sc.counts = ids, counts
	scores, err := c.score(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("guardrail: classify: %w", err)
	}
	for i := range res {
		r := &res[i]
		r.Model = scores[i]
		r.Score, r.By = r.Model, "model"
		// Alone, the model is a weak signal: agents' instructions, docs
		// and code comments score 0.8–0.99 (README.md). In a text that is
		// mostly code the attack vocabulary does not let the model count:
		// code and configs say "ignore" and "override" all the time. The
		// vocabulary is only looked for when the cap would change the
		// score.
		if !c.modelOnly && r.Model > modelAloneCap && !corroborated(r.Hits, func() bool {
			return !layouts[i].code && usesAttackVocabulary(layouts[i].view, proseFound[i])
		}) {
			r.Score = modelAloneCap
		}
		if r.Rules > r.Score {
			r.Score, r.By = r.Rules, "rules"
		}
		r.Injection = r.Score >= c.threshold
	}
	return res, nil
}

// explainScratch is Explain's working memory, pooled (see termScratch):
// the texts' rows, their terms, layouts and prose literals.
type explainScratch struct {
	terms      termScratch
	rows       []termRow
	ids        []int64
	counts     []float32
	layouts    []layout
	proseFound []found
}

var explainScratches = sync.Pool{New: func() any { return new(explainScratch) }}

// put returns sc to the pool, dropping what it points into (the texts,
// their literal sets) but keeping its buffers.
func (sc *explainScratch) put() {
	clear(sc.rows)
	clear(sc.layouts)
	clear(sc.proseFound)
	explainScratches.Put(sc)
}

// ModelScores returns the model's P(INJECTION) for each text as given, with
// no rules or decoding: the converted llm_guardrail model alone.
func (c *Classifier) ModelScores(ctx context.Context, texts []string) ([]float32, error) {
	rows := make([]termRow, len(texts))
	for i, t := range texts {
		rows[i].ids, rows[i].counts = c.vec.Terms(t)
	}
	scores, err := c.score(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("guardrail: classify: %w", err)
	}
	return scores, nil
}

// score runs the model on rows: in Go when it is the known graph (a few
// dozen multiply-adds a row, nothing to batch), else with onnxruntime. With
// onnxruntime, a caller that finds no other caller running the model
// directly runs it itself: handing the rows to the
// batcher's goroutine and back costs two goroutine switches, more than
// the run of this small graph (~10 µs), and on a busy machine a wake-up
// can wait far longer. Callers that find it taken go to the batcher,
// which merges them; onnxruntime runs a session's calls concurrently.
// Rows are scored independently, so the result is the same either way.
func (c *Classifier) score(ctx context.Context, rows []termRow) ([]float32, error) {
	if c.native != nil {
		if c.shut.Load() {
			return nil, errClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out := make([]float32, len(rows))
		for i, r := range rows {
			out[i] = c.native.prob(r.ids, r.counts)
		}
		return out, nil
	}
	// TryLock is the point: a lone caller's fast path, never a wait.
	if len(rows) <= c.maxBatch && c.direct.TryLock() {
		defer c.direct.Unlock()
		if !c.closed {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return c.run(ctx, rows)
		}
	}
	return c.batcher.Do(ctx, rows)
}

// run scores one batch: rows are padded to the longest with (id 0, count
// 0), which the graph treats as absent, and at least one column so the
// tensors are never empty.
func (c *Classifier) run(_ context.Context, rows []termRow) ([]float32, error) {
	width := 1
	for _, r := range rows {
		width = max(width, len(r.ids))
	}
	n := len(rows)
	ids := make([]int64, n*width)
	counts := make([]float32, n*width)
	for i, r := range rows {
		copy(ids[i*width:], r.ids)
		copy(counts[i*width:], r.counts)
	}
	shape := ort.NewShape(int64(n), int64(width))
	idT, err := ort.NewTensor(shape, ids)
	if err != nil {
		return nil, fmt.Errorf("ids tensor: %w", err)
	}
	defer idT.Destroy()
	cntT, err := ort.NewTensor(shape, counts)
	if err != nil {
		return nil, fmt.Errorf("counts tensor: %w", err)
	}
	defer cntT.Destroy()
	outT, err := ort.NewEmptyTensor[float32](ort.NewShape(int64(n), 2))
	if err != nil {
		return nil, fmt.Errorf("output tensor: %w", err)
	}
	defer outT.Destroy()
	if err := c.session.Run([]ort.Value{idT, cntT}, []ort.Value{outT}); err != nil {
		return nil, fmt.Errorf("run %s: %w", c.dir, err)
	}
	probs := outT.GetData()
	out := make([]float32, n)
	for i := range out {
		out[i] = probs[2*i+1]
	}
	return out, nil
}

var errClosed = errors.New("classifier closed")

// Close stops the batcher and releases the onnxruntime session. Calls after
// the first return the first call's result.
func (c *Classifier) Close() error {
	c.closeOnce.Do(func() {
		c.shut.Store(true)
		c.direct.Lock()
		c.closed = true
		c.direct.Unlock()
		if c.session == nil {
			return
		}
		c.batcher.Close()
		if err := c.session.Destroy(); err != nil {
			c.closeErr = fmt.Errorf("guardrail: close session: %w", err)
		}
	})
	return c.closeErr
}
