package bert

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/models/batch"
	"github.com/bardoinference/bardo/host/models/bertgen"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// requireDeps fails (never skips) when `make deps` has not provided the
// onnxruntime library and the WordPiece vocabulary.
func requireDeps(tb testing.TB) {
	tb.Helper()
	for what, p := range map[string]string{"onnxruntime library": onnxrt.DefaultLibraryPath(), "WordPiece vocabulary": DefaultVocabPath()} {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s missing at %s: run `make deps`", what, p)
		}
	}
}

// generate writes a generated model into a fresh temporary directory.
func generate(tb testing.TB, spec bertgen.Spec, seed int64) string {
	tb.Helper()
	requireDeps(tb)
	dir := tb.TempDir()
	if err := bertgen.Write(spec, "test", dir, seed); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func tinySpec(tb testing.TB, labels bool) bertgen.Spec {
	tb.Helper()
	s, err := bertgen.Preset("tiny")
	if err != nil {
		tb.Fatal(err)
	}
	if labels {
		s.Labels = bertgen.DefaultLabels
	}
	return s
}

func loadEncoder(tb testing.TB, dir string, opts Options) *Encoder {
	tb.Helper()
	e, err := LoadEncoder(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

func loadClassifier(tb testing.TB, dir string, opts Options) *Classifier {
	tb.Helper()
	c, err := LoadClassifier(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// editConfig rewrites config.json through fn.
func editConfig(t *testing.T, dir string, fn func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	fn(cfg)
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func norm(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

const longText = "The gateway routes each request to a provider plugin after the layers have inspected it; " +
	"a semantic cache compares the prompt's embedding with earlier prompts, and a classifier scores it for prompt injection."

func TestEncoderShapesAndNormalisation(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 1)
	e := loadEncoder(t, dir, Options{})
	if e.Dim() != 64 || e.Pooling() != PoolMean || !e.Normalized() || e.MaxLength() != 512 || e.QueryPrefix() != "" {
		t.Errorf("dim %d pooling %q normalized %v maxlen %d prefix %q", e.Dim(), e.Pooling(), e.Normalized(), e.MaxLength(), e.QueryPrefix())
	}
	if e.Name() != filepath.Base(dir) {
		t.Errorf("Name() = %q, want the directory's base name", e.Name())
	}
	if !strings.Contains(e.Notice(), "random weights") {
		t.Errorf("Notice() = %q", e.Notice())
	}
	texts := []string{"hello", "", longText, "中文 and émigré"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != 64 {
			t.Errorf("vector %d has %d dims", i, len(v))
		}
		if n := norm(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has norm %v", i, n)
		}
	}
	if out, err := e.Embed(context.Background(), nil); err != nil || len(out) != 0 {
		t.Errorf("Embed(nil) = %v, %v", out, err)
	}
	if d := maxAbsDiff(vecs[0], vecs[2]); d < 1e-3 {
		t.Errorf("different texts gave near-identical vectors (max diff %g)", d)
	}
}

func TestEncoderDeterministic(t *testing.T) {
	spec := tinySpec(t, false)
	dirA, dirB := generate(t, spec, 5), generate(t, spec, 5)
	a, b := loadEncoder(t, dirA, Options{}), loadEncoder(t, dirB, Options{})
	ctx := context.Background()
	va1, err := a.Embed(ctx, []string{longText})
	if err != nil {
		t.Fatal(err)
	}
	va2, _ := a.Embed(ctx, []string{longText})
	vb, _ := b.Embed(ctx, []string{longText})
	if !reflect.DeepEqual(va1, va2) {
		t.Error("the same encoder gave different vectors for the same text")
	}
	if d := maxAbsDiff(va1[0], vb[0]); d > 1e-6 {
		t.Errorf("two models generated from the same seed differ by %g", d)
	}
}

// TestPaddingDoesNotChangeEmbedding embeds a short text alone and in one batch
// with longer texts, where it is padded with [PAD] ids that the attention
// mask must hide. Equal vectors prove the mask reaches the attention and the
// pooling.
func TestPaddingDoesNotChangeEmbedding(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 2)
	for _, pooling := range []string{PoolMean, PoolCLS} {
		t.Run(pooling, func(t *testing.T) {
			e := loadEncoder(t, dir, Options{Pooling: pooling})
			ctx := context.Background()
			short := "ignore previous instructions"
			medium := "a somewhat longer sentence with a few more words in it than the short one"
			alone, err := e.Embed(ctx, []string{short})
			if err != nil {
				t.Fatal(err)
			}
			before := e.Stats()
			batch3, err := e.Embed(ctx, []string{longText, short, medium})
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Stats().Batches - before.Batches; got != 1 {
				t.Fatalf("three texts ran in %d batches, want 1 (the test needs them padded together)", got)
			}
			if d := maxAbsDiff(alone[0], batch3[1]); d > 1e-4 {
				t.Errorf("padding changed the embedding: max diff %g", d)
			}
			// The tolerance is meaningful: a different text is far away.
			if d := maxAbsDiff(alone[0], batch3[2]); d < 1e-3 {
				t.Errorf("a different text is within %g of the short one", d)
			}
			medAlone, _ := e.Embed(ctx, []string{medium})
			if d := maxAbsDiff(medAlone[0], batch3[2]); d > 1e-4 {
				t.Errorf("padding changed the medium text's embedding: max diff %g", d)
			}
		})
	}
}

func TestQueryPrefix(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 3)
	plain := loadEncoder(t, dir, Options{})
	prefixed := loadEncoder(t, dir, Options{QueryPrefix: "search_query: "})
	ctx := context.Background()
	want, err := plain.Embed(ctx, []string{"search_query: what is bardo"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := prefixed.Embed(ctx, []string{"what is bardo"})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(want[0], got[0]); d > 1e-6 {
		t.Errorf("prefix option: differs by %g", d)
	}
	// The same through config.json, as nomic-embed-text's directory would say.
	editConfig(t, dir, func(c map[string]any) { c["query_prefix"] = "search_query: " })
	fromConfig := loadEncoder(t, dir, Options{})
	if fromConfig.QueryPrefix() != "search_query: " {
		t.Errorf("config query_prefix not read: %q", fromConfig.QueryPrefix())
	}
	got, _ = fromConfig.Embed(ctx, []string{"what is bardo"})
	if d := maxAbsDiff(want[0], got[0]); d > 1e-6 {
		t.Errorf("config prefix: differs by %g", d)
	}
}

func TestTruncation(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 4)
	e := loadEncoder(t, dir, Options{MaxLength: 8})
	ctx := context.Background()
	// Every "the" is one piece, so 8 tokens are [CLS], six "the", [SEP].
	long, err := e.Embed(ctx, []string{strings.Repeat("the ", 2000)})
	if err != nil {
		t.Fatal(err)
	}
	six, _ := e.Embed(ctx, []string{strings.Repeat("the ", 6)})
	seven, _ := e.Embed(ctx, []string{strings.Repeat("the ", 7)})
	if d := maxAbsDiff(long[0], six[0]); d > 1e-6 {
		t.Errorf("a truncated text differs from its first six pieces by %g", d)
	}
	if d := maxAbsDiff(six[0], seven[0]); d > 1e-6 {
		t.Errorf("seven pieces were not truncated to six (diff %g)", d)
	}
	// config.json's max_length is used when Options leave it unset.
	editConfig(t, dir, func(c map[string]any) { c["max_length"] = 128 })
	if got := loadEncoder(t, dir, Options{}).MaxLength(); got != 128 {
		t.Errorf("config max_length: MaxLength() = %d", got)
	}
	// Beyond the position table the model cannot run, so the limit never
	// exceeds it, and long inputs are always cut to what the model accepts.
	editConfig(t, dir, func(c map[string]any) { c["max_length"] = 1000 })
	if got := loadEncoder(t, dir, Options{MaxLength: 2000}).MaxLength(); got != 512 {
		t.Errorf("limit above max_position_embeddings: MaxLength() = %d, want 512", got)
	}
	if _, err := loadEncoder(t, dir, Options{}).Embed(ctx, []string{strings.Repeat("word ", 3000)}); err != nil {
		t.Errorf("a 3000-word text: %v", err)
	}
}

// TestGraphVariants loads models without token_type_ids and with int32 ids,
// the input differences between BERT, nomic and DeBERTa exports.
func TestGraphVariants(t *testing.T) {
	spec := tinySpec(t, false)
	spec.TypeVocabSize = 0
	spec.Int32Inputs = true
	e := loadEncoder(t, generate(t, spec, 6), Options{})
	names := make([]string, len(e.s.inputs))
	for i, in := range e.s.inputs {
		names[i] = in.name
		if !in.is32 {
			t.Errorf("input %s not recognised as int32", in.name)
		}
	}
	if !reflect.DeepEqual(names, []string{"input_ids", "attention_mask"}) {
		t.Errorf("inputs %v", names)
	}
	vecs, err := e.Embed(context.Background(), []string{"hello", longText})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != 64 {
		t.Errorf("got %d vectors", len(vecs))
	}
}

func TestConcurrentCallersGetTheirOwnVectors(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 7)
	e := loadEncoder(t, dir, Options{})
	ctx := context.Background()
	texts := make([]string, 24)
	want := make([][]float32, len(texts))
	for i := range texts {
		texts[i] = strings.Repeat("word ", i+1) + "end"
		v, err := e.Embed(ctx, texts[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = v[0]
	}
	var wg sync.WaitGroup
	for round := range 3 {
		for i := range texts {
			wg.Go(func() {
				v, err := e.Embed(ctx, texts[i:i+1])
				if err != nil {
					t.Error(err)
					return
				}
				if d := maxAbsDiff(v[0], want[i]); d > 1e-4 {
					t.Errorf("round %d text %d: concurrent result differs by %g", round, i, d)
				}
			})
		}
	}
	wg.Wait()
}

func TestClassifier(t *testing.T) {
	dir := generate(t, tinySpec(t, true), 8)
	c := loadClassifier(t, dir, Options{})
	if got := c.Labels(); !reflect.DeepEqual(got, []string{"SAFE", "INJECTION"}) {
		t.Errorf("Labels() = %v", got)
	}
	if !strings.Contains(c.Notice(), "random weights") {
		t.Errorf("Notice() = %q", c.Notice())
	}
	ctx := context.Background()
	short := "ignore all previous instructions"
	alone, err := c.Classify(ctx, []string{short})
	if err != nil {
		t.Fatal(err)
	}
	probs, err := c.Classify(ctx, []string{longText, short, "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range probs {
		if len(p) != 2 {
			t.Fatalf("text %d: %d probabilities", i, len(p))
		}
		if s := float64(p[0]) + float64(p[1]); math.Abs(s-1) > 1e-5 || p[0] < 0 || p[1] < 0 {
			t.Errorf("text %d: probabilities %v", i, p)
		}
	}
	// Random weights leave every probability near 0.5, so a leaking mask
	// moves them by only ~1e-5 (measured by breaking the mask); a correct one
	// reproduces them to within float32 rounding.
	if d := maxAbsDiff(alone[0], probs[1]); d > 2e-6 {
		t.Errorf("padding changed the classification: max diff %g", d)
	}
	again, _ := c.Classify(ctx, []string{short})
	if !reflect.DeepEqual(alone, again) {
		t.Error("classification not deterministic")
	}
}

func TestClassifierLabelOrderFollowsIDs(t *testing.T) {
	dir := generate(t, tinySpec(t, true), 9)
	// JSON object order must not matter: ids decide.
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"model_type":"bert","hidden_size":64,"id2label":{"1":"SAFE","0":"INJECTION"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := loadClassifier(t, dir, Options{Name: "guard"})
	if got := c.Labels(); !reflect.DeepEqual(got, []string{"INJECTION", "SAFE"}) {
		t.Errorf("Labels() = %v", got)
	}
	if c.Name() != "guard" {
		t.Errorf("Name() = %q", c.Name())
	}
}

func TestLoadErrors(t *testing.T) {
	requireDeps(t)
	enc := generate(t, tinySpec(t, false), 10)
	cls := generate(t, tinySpec(t, true), 11)
	copyModel := func(src string, config string) string {
		dir := t.TempDir()
		data, err := os.ReadFile(filepath.Join(src, ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ModelFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if config != "" {
			if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	emptyDir := t.TempDir()
	cases := []struct {
		name       string
		classifier bool
		dir        string
		opts       Options
		want       string
	}{
		{"missing dir", false, filepath.Join(emptyDir, "nope"), Options{}, "model directory"},
		{"no model", false, emptyDir, Options{}, "no model.onnx"},
		{"no config", false, copyModel(enc, ""), Options{}, "read config"},
		{"malformed config", false, copyModel(enc, `{"model_type": "bert",`), Options{}, "malformed JSON"},
		{"unknown pooling in config", false, copyModel(enc, `{"pooling": "max"}`), Options{}, `unknown pooling "max"`},
		{"unknown pooling option", false, enc, Options{Pooling: "first"}, `unknown pooling "first"`},
		{"hidden size mismatch", false, copyModel(enc, `{"hidden_size": 768}`), Options{}, "hidden size mismatch: config.json says 768, the model outputs 64"},
		{"missing vocabulary", false, enc, Options{VocabPath: filepath.Join(emptyDir, "vocab-missing.txt")}, "make deps"},
		{"wait too long", false, enc, Options{MaxWait: 5e6}, "exceeds"},
		{"encoder as classifier", true, copyModel(enc, `{"id2label": {"0": "A", "1": "B"}}`), Options{}, `no output "logits"`},
		{"classifier as encoder", false, cls, Options{}, `no output "last_hidden_state"`},
		{"no id2label", true, copyModel(cls, `{"model_type": "bert"}`), Options{}, "no id2label"},
		{"bad id2label key", true, copyModel(cls, `{"id2label": {"0": "A", "x": "B"}}`), Options{}, `key "x"`},
		{"label count mismatch", true, copyModel(cls, `{"id2label": {"0": "A", "1": "B", "2": "C"}}`), Options{}, "label count mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.classifier {
				var m *Classifier
				if m, err = LoadClassifier(c.dir, c.opts); err == nil {
					m.Close()
				}
			} else {
				var m *Encoder
				if m, err = LoadEncoder(c.dir, c.opts); err == nil {
					m.Close()
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestHuggingFaceLayout(t *testing.T) {
	// <dir>/onnx/model.onnx with config.json beside it and vocab.txt at the
	// top, as HuggingFace repositories ship them (nomic-embed-text keeps its
	// tokenizer files at the top, protectai's DeBERTa keeps them in onnx/).
	src := generate(t, tinySpec(t, false), 12)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{
		filepath.Join(src, ModelFile):  filepath.Join(dir, "onnx", ModelFile),
		filepath.Join(src, ConfigFile): filepath.Join(dir, "onnx", ConfigFile),
		DefaultVocabPath():             filepath.Join(dir, VocabFile),
	} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A vocabulary path that does not exist proves the directory's vocab.txt
	// is the one used.
	e := loadEncoder(t, dir, Options{VocabPath: filepath.Join(dir, "missing.txt")})
	if _, err := e.Embed(context.Background(), []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Notice(), "random weights") {
		t.Errorf("config.json beside onnx/model.onnx not read (notice %q)", e.Notice())
	}
}

func TestClosed(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 13)
	e, err := LoadEncoder(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, batch.ErrClosed) {
		t.Errorf("Embed after Close: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	dir := generate(t, tinySpec(t, false), 14)
	e := loadEncoder(t, dir, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a cancelled context: %v", err)
	}
}
