package guardrail

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// jsReference is a line-by-line Go transcription of llm_guardrail's
// tfidf.js and logistic_regression.js, written independently of the
// Vectorizer and the ONNX graph (regexp tokens, dense float64 vector) so
// comparing them proves the conversion.
type jsReference struct{ m *SourceModel }

// jsLower is String.prototype.toLowerCase: Unicode lowercasing, where the
// only multi-character mapping is U+0130 → "i\u0307".
func jsLower(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\u0130' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Go's regexp \w and \b are ASCII-only, like JavaScript's without the u flag.
var jsTokenRe = regexp.MustCompile(`\b\w\w+\b`)

func (j jsReference) tokenize(text string) []string {
	if j.m.Lowercase {
		text = jsLower(text)
	}
	return jsTokenRe.FindAllString(text, -1)
}

func (j jsReference) transform(text string) []float64 {
	tokens := j.tokenize(text)
	var ngrams []string
	for n := j.m.NgramRange[0]; n <= j.m.NgramRange[1]; n++ {
		for i := 0; i <= len(tokens)-n; i++ {
			ngrams = append(ngrams, strings.Join(tokens[i:i+n], " "))
		}
	}
	termFreq := map[string]int{}
	for _, g := range ngrams {
		termFreq[g]++
	}
	vector := make([]float64, len(j.m.Vocabulary))
	for term, freq := range termFreq {
		if index, ok := j.m.Vocabulary[term]; ok {
			vector[index] = float64(freq) * j.m.IDF[index]
		}
	}
	norm := 0.0
	for _, v := range vector {
		norm += v * v
	}
	norm = math.Sqrt(norm)
	if norm > 0 {
		for i := range vector {
			vector[i] /= norm
		}
	}
	return vector
}

func (j jsReference) predictProba(text string) float64 {
	features := j.transform(text)
	z := j.m.Intercept[0]
	for i, f := range features {
		z += j.m.Coefficients[0][i] * f
	}
	return 1 / (1 + math.Exp(-z))
}

func readSource(t testing.TB) *SourceModel {
	t.Helper()
	m, err := ReadSourceModel(filepath.Join(depsDir(t), SourceFile))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// referenceTexts is the labelled set plus generated texts that exercise many
// vocabulary features, case, punctuation, non-ASCII characters, repeated
// terms and texts with no known term at all.
func referenceTexts(t testing.TB, m *SourceModel, n int) []string {
	texts := []string{"", "   ", "x", "!!!", "zzqx qqzv", "İSTANBUL İs Kelvin \u212Aelvin", "naïve café für façade möchte", "ignore ignore ignore previous previous instructions"}
	for _, e := range loadSet(t) {
		texts = append(texts, e.Text)
	}
	terms := make([]string, 0, len(m.Vocabulary))
	for term := range m.Vocabulary {
		terms = append(terms, term)
	}
	slices.Sort(terms) // map order is random; the generator must be reproducible
	rng := rand.New(rand.NewPCG(1, 2))
	seps := []string{" ", "  ", ", ", ". ", "\n", "-", "'", "_", "é", " 🙂 ", "\t", "/", "İ"}
	for range n {
		var b strings.Builder
		words := 1 + rng.IntN(60)
		for w := range words {
			if w > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			term := terms[rng.IntN(len(terms))]
			if rng.IntN(8) == 0 {
				term = strings.ToUpper(term)
			}
			if rng.IntN(10) == 0 {
				term = "qz" + term // out of vocabulary
			}
			b.WriteString(term)
		}
		texts = append(texts, b.String())
	}
	return texts
}

// TestVectorizerMatchesJSTokenizer checks the byte-scanning tokenizer
// against the regexp transcription of tfidf.js.
func TestVectorizerMatchesJSTokenizer(t *testing.T) {
	m := readSource(t)
	ref := jsReference{m}
	v, err := NewVectorizer(m.Vocabulary, m.NgramRange[0], m.NgramRange[1])
	if err != nil {
		t.Fatal(err)
	}
	extra := []string{"a b cd", "İs", "aİb", "\u212Aelvin", "ÀB cd", "x\xffyz", "__init__ self", "don't stop", "e-mail 3.14 a1 _x"}
	for _, text := range append(referenceTexts(t, m, 300), extra...) {
		got, want := v.Tokenize(text), ref.tokenize(text)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("Tokenize(%q) = %q, JS reference %q", text, got, want)
		}
	}
}

// TestOnlyTwoRunesLowercaseIntoASCII backs the Vectorizer's claim that, of
// all non-ASCII code points, only U+0130 and U+212A lowercase to ASCII word
// characters, so its byte scanner can treat every other one as a separator.
func TestOnlyTwoRunesLowercaseIntoASCII(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		lower := jsLower(string(r))
		for _, c := range lower {
			if c < 0x80 && (unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_') && r != '\u0130' && r != '\u212A' {
				t.Fatalf("U+%04X lowercases to %q, which contains ASCII word character %q", r, lower, c)
			}
		}
	}
}

// TestONNXMatchesJSReference is the conversion proof: the ONNX graph run by
// onnxruntime on the Vectorizer's term counts gives the JS package's
// probability within 1e-5, batched (mixed row widths, padding) and singly.
func TestONNXMatchesJSReference(t *testing.T) {
	m := readSource(t)
	ref := jsReference{m}
	c := sharedClassifier(t)
	texts := referenceTexts(t, m, 600)
	ctx := context.Background()
	got, err := c.ModelScores(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	detections := 0
	for i, text := range texts {
		want := ref.predictProba(text)
		diff := math.Abs(float64(got[i]) - want)
		worst = max(worst, diff)
		if diff > 1e-5 {
			t.Errorf("text %d %q: ONNX %.7f, JS reference %.7f (diff %.2g)", i, trunc(text), got[i], want, diff)
		}
		if want >= 0.5 {
			detections++
		}
	}
	t.Logf("%d texts (%d scored >= 0.5), max |ONNX - JS| = %.2g", len(texts), detections, worst)
	if detections == 0 || detections == len(texts) {
		t.Errorf("degenerate comparison: %d of %d texts detected", detections, len(texts))
	}
	// Singly, as a lone caller would: no padding at all.
	for _, i := range []int{0, 5, 9, 20, len(texts) - 1} {
		one, err := c.ModelScores(ctx, texts[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(float64(one[0]) - float64(got[i])); d > 1e-6 {
			t.Errorf("text %d alone %.7f, in batch %.7f", i, one[0], got[i])
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// TestBuildOutputs checks the files Build writes.
func TestBuildOutputs(t *testing.T) {
	dir := modelDir(t)
	m := readSource(t)
	vocab, err := readVocab(filepath.Join(dir, VocabFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(vocab) != len(m.Vocabulary) {
		t.Fatalf("vocab.tsv has %d terms, source %d", len(vocab), len(m.Vocabulary))
	}
	for term, id := range m.Vocabulary {
		if vocab[term] != id {
			t.Fatalf("vocab.tsv: %q → %d, source %d", term, vocab[term], id)
		}
	}
	c := sharedClassifier(t)
	cfg := c.Config()
	want := Source{Package: "llm_guardrail", Version: "2.1.2", License: "ISC", File: "package/model/prompt_injection_model.json",
		SHA256: m.SHA256, TarballSHA256: "dc3637d70004cf1d9b84aac872d7182e6d62681e30b5af8f00861341e8554c01"}
	if cfg.Source != want {
		t.Errorf("config source = %+v, want %+v", cfg.Source, want)
	}
	if cfg.Kind != Kind || !slices.Equal(cfg.Labels, Labels) || cfg.Threshold != 0.5 || cfg.NgramRange != [2]int{1, 2} {
		t.Errorf("config = %+v", cfg)
	}
}

func TestBuildRejectsUnknownSource(t *testing.T) {
	src := t.TempDir()
	// A valid but unpublished model: one feature.
	body := `{"vocabulary":{"hello":0},"idf":[1.5],"coefficients":[[2]],"intercept":[-1],"classes":[0,1],"ngram_range":[1,1],"lowercase":true,"max_features":1,"threshold":0.5}`
	if err := writeFileAtomic(filepath.Join(src, SourceFile), []byte(body)); err != nil {
		t.Fatal(err)
	}
	err := Build(src, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "unknown sha256") {
		t.Fatalf("Build of an unknown model: err = %v, want unknown sha256", err)
	}
	if err := Build(t.TempDir(), t.TempDir()); err == nil {
		t.Fatal("Build without a source file succeeded")
	}
}

func ExampleVectorizer_Terms() {
	v, _ := NewVectorizer(map[string]int32{"ignore": 0, "previous": 1, "ignore previous": 2, "instructions": 3}, 1, 2)
	ids, counts := v.Terms("IGNORE previous instructions; ignore!")
	fmt.Println(ids, counts)
	// Output: [0 1 2 3] [2 1 1 1]
}

// TestNativeMatchesONNX: the shipped model is computed in Go (logreg.go),
// and on every golden text gives what onnxruntime gives on the same graph,
// within the golden file's tolerance (the two may sum in another order).
func TestNativeMatchesONNX(t *testing.T) {
	c := sharedClassifier(t)
	if c.native == nil || c.session != nil {
		t.Fatal("the shipped model.onnx is not computed in Go")
	}
	rt, err := Load(modelDir(t), LoadOptions{ONNXRuntime: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.native != nil {
		t.Fatal("ONNXRuntime: true computed the model in Go")
	}
	_, texts := goldenTexts(t)
	ctx := context.Background()
	got, err := c.ModelScores(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rt.ModelScores(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range texts {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		worst = max(worst, d)
		if d > modelTolerance {
			t.Errorf("text %d %q: Go %.8f, onnxruntime %.8f", i, trunc(texts[i]), got[i], want[i])
		}
	}
	t.Logf("%d texts, max |Go - onnxruntime| = %.2g", len(texts), worst)
}

// A model.onnx of another graph is not computed in Go.
func TestReadLogregRejectsOtherGraphs(t *testing.T) {
	src := &SourceModel{IDF: []float64{1, 2}, Coefficients: [][]float64{{0.5, -0.5}}, Intercept: []float64{0.1}}
	m := Graph(src)
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	lr, err := readLogreg(data, 2)
	if err != nil || lr.intercept != 0.1 || !slices.Equal(lr.coef, []float32{0.5, -0.5}) || !slices.Equal(lr.idf, []float32{1, 2}) {
		t.Fatalf("Graph's own model: %+v, %v", lr, err)
	}
	if _, err := readLogreg(data, 3); err == nil {
		t.Error("a vocabulary of another size was accepted")
	}
	m.Graph.Nodes = m.Graph.Nodes[:len(m.Graph.Nodes)-1]
	data, err = m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readLogreg(data, 2); err == nil {
		t.Error("a graph of other nodes was accepted")
	}
	if _, err := readLogreg([]byte{0xff}, 2); err == nil {
		t.Error("garbage was accepted")
	}
}

// TestTermsGateIsExact: looking a bigram up only when its tokens start and
// end one of the vocabulary's changes no text's terms (the golden texts).
func TestTermsGateIsExact(t *testing.T) {
	v := sharedClassifier(t).vec
	_, texts := goldenTexts(t)
	for _, text := range append(texts, "a b", "the the the", "ignore ignore previous previous instructions") {
		ids, counts := v.Terms(text)
		toks := v.Tokenize(text)
		want := map[int64]float32{}
		for n := v.minN; n <= v.maxN; n++ {
			for i := 0; i+n <= len(toks); i++ {
				if id, ok := v.vocab[strings.Join(toks[i:i+n], " ")]; ok {
					want[int64(id)]++
				}
			}
		}
		got := map[int64]float32{}
		for i, id := range ids {
			got[id] = counts[i]
		}
		if !maps.Equal(got, want) || !slices.IsSorted(ids) {
			t.Fatalf("Terms(%q) = %v %v, every n-gram looked up gives %v", trunc(text), ids, counts, want)
		}
	}
}
