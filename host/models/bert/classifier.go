package bert

import (
	"context"
	"fmt"
	"math"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models"
	"github.com/bardoinference/bardo/host/models/batch"
	"github.com/bardoinference/bardo/host/models/wordpiece"
)

// Classifier is a BERT-family sequence classifier serving models.Classifier.
type Classifier struct {
	s       *session
	labels  []string
	notice  string
	batcher *batch.Batcher[wordpiece.Encoding, []float32]
}

var _ models.Classifier = (*Classifier)(nil)

// LoadClassifier loads the sequence classifier in dir (see README.md). Its
// ONNX graph must take input_ids (plus any of attention_mask, token_type_ids,
// position_ids) and produce [batch, labels] float logits, named logits or the
// graph's only rank-2 float output; config.json's id2label names the labels in
// logit order. Texts longer than the maximum length are truncated to it.
func LoadClassifier(dir string, opts Options) (*Classifier, error) {
	maxBatch, wait, err := batchParams(opts)
	if err != nil {
		return nil, err
	}
	c := &Classifier{}
	check := func(cfg *Config) error {
		labels, err := cfg.labels()
		if err != nil {
			return err
		}
		c.labels, c.notice = labels, cfg.Notice
		return nil
	}
	pick := func(outs []ort.InputOutputInfo) (string, error) { return pickOutput(outs, "logits", 2) }
	s, _, err := open(dir, opts, check, pick)
	if err != nil {
		return nil, err
	}
	c.s = s
	shape, err := s.probe()
	if err != nil {
		s.close()
		return nil, err
	}
	if len(shape) != 2 || shape[0] != 1 {
		s.close()
		return nil, fmt.Errorf("bert: %s: output %s has shape %v for one text, want [1, labels]", dir, s.output, shape)
	}
	if int(shape[1]) != len(c.labels) {
		s.close()
		return nil, fmt.Errorf("bert: %s: label count mismatch: config.json id2label has %d labels, the model outputs %d logits", dir, len(c.labels), shape[1])
	}
	c.batcher = batch.New(runBatched(c.run), maxBatch, wait)
	return c, nil
}

// Name is the configured model name.
func (c *Classifier) Name() string { return c.s.name }

// Labels names the probabilities Classify returns, in id2label order.
func (c *Classifier) Labels() []string { return append([]string(nil), c.labels...) }

// MaxLength is the token limit texts are truncated to.
func (c *Classifier) MaxLength() int { return c.s.maxLen }

// Notice is config.json's "_notice" (generated models say their weights are
// random), or "".
func (c *Classifier) Notice() string { return c.notice }

// Stats reports the batches run so far.
func (c *Classifier) Stats() batch.Stats { return c.batcher.Stats() }

// Classify returns, per text, the softmax of the model's logits (one
// probability per label, aligned with Labels). Concurrent calls share model
// runs.
func (c *Classifier) Classify(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	out, err := c.batcher.Do(ctx, c.s.encode("", texts))
	if err != nil {
		return nil, fmt.Errorf("bert: %s: classify: %w", c.s.name, err)
	}
	return out, nil
}

// Close stops batching and releases the session. Classify fails afterwards.
func (c *Classifier) Close() error {
	c.batcher.Close()
	c.s.close()
	return nil
}

func (c *Classifier) run(encs []wordpiece.Encoding) ([][]float32, error) {
	in, _, _, err := c.s.inputTensors(encs)
	if err != nil {
		return nil, err
	}
	defer destroyAll(in)
	n, l := len(encs), len(c.labels)
	logits := make([]float32, n*l)
	out, err := ort.NewTensor(ort.NewShape(int64(n), int64(l)), logits)
	if err != nil {
		return nil, fmt.Errorf("bert: output tensor: %w", err)
	}
	defer out.Destroy()
	if err := c.s.ort.Run(in, []ort.Value{out}); err != nil {
		return nil, fmt.Errorf("bert: run: %w", err)
	}
	probs := make([][]float32, n)
	for b := range n {
		probs[b] = softmax(logits[b*l : (b+1)*l])
	}
	return probs, nil
}

// softmax computes in float64 after subtracting the maximum, so large logits
// neither overflow nor lose the small probabilities.
func softmax(logits []float32) []float32 {
	m := math.Inf(-1)
	for _, x := range logits {
		m = math.Max(m, float64(x))
	}
	var sum float64
	exp := make([]float64, len(logits))
	for i, x := range logits {
		exp[i] = math.Exp(float64(x) - m)
		sum += exp[i]
	}
	out := make([]float32, len(logits))
	for i := range exp {
		out[i] = float32(exp[i] / sum)
	}
	return out
}
