package bert

import (
	"context"
	"fmt"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models"
	"github.com/bardoinference/bardo/host/models/batch"
	"github.com/bardoinference/bardo/host/models/wordpiece"
)

// Pooling strategies for turning per-token hidden states into one vector.
const (
	// PoolMean averages the hidden states of the real (unmasked) tokens, as
	// sentence-transformers models and nomic-embed-text do.
	PoolMean = "mean"
	// PoolCLS takes the hidden state of the first ([CLS]) token.
	PoolCLS = "cls"
)

// Encoder is a BERT-family sentence encoder serving models.Embedder.
type Encoder struct {
	s         *session
	dim       int
	pooling   string
	prefix    string
	normalize bool
	notice    string
	batcher   *batch.Batcher[wordpiece.Encoding, []float32]
}

var _ models.Embedder = (*Encoder)(nil)

// LoadEncoder loads the encoder in dir (see README.md for the layout). Its
// ONNX graph must take input_ids (plus any of attention_mask, token_type_ids,
// position_ids) and produce a [batch, sequence, hidden] float output, named
// last_hidden_state or the graph's only rank-3 float output. Texts longer than
// the maximum length are truncated to it (their tail is dropped).
func LoadEncoder(dir string, opts Options) (*Encoder, error) {
	maxBatch, wait, err := batchParams(opts)
	if err != nil {
		return nil, err
	}
	e := &Encoder{normalize: true}
	check := func(c *Config) error {
		e.pooling = opts.Pooling
		if e.pooling == "" {
			e.pooling = c.Pooling
		}
		if e.pooling == "" {
			e.pooling = PoolMean
		}
		if e.pooling != PoolMean && e.pooling != PoolCLS {
			return fmt.Errorf("unknown pooling %q (want %q or %q)", e.pooling, PoolMean, PoolCLS)
		}
		e.prefix = c.QueryPrefix
		if opts.QueryPrefix != "" {
			e.prefix = opts.QueryPrefix
		}
		if c.Normalize != nil {
			e.normalize = *c.Normalize
		}
		e.notice = c.Notice
		return nil
	}
	pick := func(outs []ort.InputOutputInfo) (string, error) { return pickOutput(outs, "last_hidden_state", 3) }
	s, cfg, err := open(dir, opts, check, pick)
	if err != nil {
		return nil, err
	}
	e.s = s
	shape, err := s.probe()
	if err != nil {
		s.close()
		return nil, err
	}
	if len(shape) != 3 || shape[0] != 1 || shape[2] < 1 {
		s.close()
		return nil, fmt.Errorf("bert: %s: output %s has shape %v for one text, want [1, sequence, hidden]", dir, s.output, shape)
	}
	e.dim = int(shape[2])
	if h := cfg.hidden(); h > 0 && h != e.dim {
		s.close()
		return nil, fmt.Errorf("bert: %s: hidden size mismatch: config.json says %d, the model outputs %d", dir, h, e.dim)
	}
	e.batcher = batch.New(runBatched(e.run), maxBatch, wait)
	return e, nil
}

// Name is the configured model name.
func (e *Encoder) Name() string { return e.s.name }

// Dim is the hidden size, the length of every vector.
func (e *Encoder) Dim() int { return e.dim }

// Pooling is "mean" or "cls".
func (e *Encoder) Pooling() string { return e.pooling }

// QueryPrefix is the text prepended to every input (nomic's "search_query: ").
func (e *Encoder) QueryPrefix() string { return e.prefix }

// MaxLength is the token limit texts are truncated to.
func (e *Encoder) MaxLength() int { return e.s.maxLen }

// Normalized reports whether vectors are L2-normalised (config "normalize",
// default true). models.Embedder promises unit vectors, so a host should only
// register encoders for which this is true.
func (e *Encoder) Normalized() bool { return e.normalize }

// Notice is config.json's "_notice" (generated models say their weights are
// random), or "".
func (e *Encoder) Notice() string { return e.notice }

// Stats reports the batches run so far.
func (e *Encoder) Stats() batch.Stats { return e.batcher.Stats() }

// Embed returns one vector per text, prefixing each with the query prefix.
// Concurrent calls share model runs.
func (e *Encoder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	out, err := e.batcher.Do(ctx, e.s.encode(e.prefix, texts))
	if err != nil {
		return nil, fmt.Errorf("bert: %s: embed: %w", e.s.name, err)
	}
	return out, nil
}

// Close stops batching and releases the session. Embed fails afterwards.
func (e *Encoder) Close() error {
	e.batcher.Close()
	e.s.close()
	return nil
}

// run embeds one padded batch.
func (e *Encoder) run(encs []wordpiece.Encoding) ([][]float32, error) {
	in, seq, mask, err := e.s.inputTensors(encs)
	if err != nil {
		return nil, err
	}
	defer destroyAll(in)
	n, h := len(encs), e.dim
	hidden := make([]float32, n*seq*h)
	out, err := ort.NewTensor(ort.NewShape(int64(n), int64(seq), int64(h)), hidden)
	if err != nil {
		return nil, fmt.Errorf("bert: output tensor: %w", err)
	}
	defer out.Destroy()
	if err := e.s.ort.Run(in, []ort.Value{out}); err != nil {
		return nil, fmt.Errorf("bert: run: %w", err)
	}
	vecs := make([][]float32, n)
	slab := make([]float32, n*h)
	for b := range n {
		v := slab[b*h : (b+1)*h : (b+1)*h]
		rows := hidden[b*seq*h : (b+1)*seq*h]
		if e.pooling == PoolCLS {
			copy(v, rows[:h])
		} else {
			meanPool(v, rows, mask[b*seq:(b+1)*seq], h)
		}
		if e.normalize {
			l2normalize(v)
		}
		vecs[b] = v
	}
	return vecs, nil
}

// meanPool averages the rows of hidden ([seq, h]) whose mask is 1, summing in
// float64 so long sequences lose no precision.
func meanPool(dst, hidden []float32, mask []int64, h int) {
	sum := make([]float64, h)
	count := 0
	for s, m := range mask {
		if m == 0 {
			continue
		}
		count++
		for i, x := range hidden[s*h : (s+1)*h] {
			sum[i] += float64(x)
		}
	}
	if count == 0 {
		return
	}
	for i := range dst {
		dst[i] = float32(sum[i] / float64(count))
	}
}
