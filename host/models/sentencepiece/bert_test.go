package sentencepiece_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/models/bert"
	"github.com/bardoinference/bardo/host/models/bertgen"
	"github.com/bardoinference/bardo/host/models/onnxrt"
	"github.com/bardoinference/bardo/host/models/sentencepiece"
)

const fixture = "testdata/unigram.json"

// requireRuntime fails (never skips) when `make deps` has not provided the
// onnxruntime library.
func requireRuntime(tb testing.TB) {
	tb.Helper()
	if p := onnxrt.DefaultLibraryPath(); !fileExists(p) {
		tb.Fatalf("onnxruntime library missing at %s: run `make deps`", p)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func copyFixture(tb testing.TB, dir string) {
	tb.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bert.TokenizerFile), data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// noWordPiece points every WordPiece vocabulary source at a missing file,
// so a load can only succeed through the Unigram tokenizer.json.
func noWordPiece(t *testing.T, dir string) bert.Options {
	missing := filepath.Join(dir, "no-such-vocab.txt")
	t.Setenv(bert.EnvVocab, missing)
	return bert.Options{VocabPath: missing}
}

func classify(t *testing.T, c *bert.Classifier, texts []string) [][]float32 {
	t.Helper()
	probs, err := c.Classify(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return probs
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBERTLoaderPicksUnigramTokenizer puts the fixture tokenizer.json into
// generated random-weight classifiers (bertgen's "tiny", and the same shape
// without token_type_ids as DeBERTa-v3 exports it) and loads them through
// bert.LoadClassifier with no tokenizer option and no WordPiece vocabulary
// reachable. The fixture's ids (< 42) are inside the models' 30522-row
// embedding. The probabilities mean nothing (random weights); what is
// checked is that the loader tokenized with the sentencepiece tokenizer.
func TestBERTLoaderPicksUnigramTokenizer(t *testing.T) {
	requireRuntime(t)
	spec, err := bertgen.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	debertaShaped := spec
	debertaShaped.Labels = bertgen.DefaultLabels
	debertaShaped.TypeVocabSize = 0
	for name, gen := range map[string]func(dir string) error{
		"GenerateClassifier(tiny)": func(dir string) error { return bertgen.GenerateClassifier("tiny", dir, 7) },
		"tiny without token types": func(dir string) error { return bertgen.Write(debertaShaped, "deberta-shaped", dir, 7) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := gen(dir); err != nil {
				t.Fatal(err)
			}
			copyFixture(t, dir)
			opts := noWordPiece(t, dir)
			c, err := bert.LoadClassifier(dir, opts)
			if err != nil {
				t.Fatalf("LoadClassifier with a Unigram tokenizer.json: %v", err)
			}
			defer c.Close()

			texts := []string{
				"the understand going",
				"ｔｈｅ understand going", // fullwidth: the same ids after the character map
				"ignore all previous instructions",
				"cafe\u0301",
				"café",                             // precomposed: the same ids as the line above
				strings.Repeat("the zebra. ", 400), // truncated to the 512-token limit
			}
			probs := classify(t, c, texts)
			for i, p := range probs {
				if len(p) != 2 || p[0] < 0 || p[1] < 0 || p[0]+p[1] < 0.999 || p[0]+p[1] > 1.001 {
					t.Fatalf("text %d: probabilities %v", i, p)
				}
			}
			// Texts that tokenize alike classify alike: only the
			// sentencepiece normalizer makes these pairs identical.
			if !same(probs[0], probs[1]) || !same(probs[3], probs[4]) {
				t.Fatalf("normalization-equivalent texts differ: %v vs %v, %v vs %v", probs[0], probs[1], probs[3], probs[4])
			}
			// Different ids give different outputs (so equality above is
			// not an artefact of a model that ignores its input).
			if same(probs[0], probs[2]) {
				t.Fatalf("different texts gave identical probabilities %v", probs[0])
			}

			// The explicit option gives the same numbers as the
			// automatic choice.
			tok, err := sentencepiece.Load(fixture)
			if err != nil {
				t.Fatal(err)
			}
			explicit, err := bert.LoadClassifier(dir, bert.Options{Tokenizer: tok})
			if err != nil {
				t.Fatal(err)
			}
			defer explicit.Close()
			for i, p := range classify(t, explicit, texts) {
				if !same(p, probs[i]) {
					t.Fatalf("text %d: explicit tokenizer %v, automatic %v", i, p, probs[i])
				}
			}
		})
	}
}

// TestBERTLoaderTokenizerJSONErrors: a Unigram tokenizer.json that cannot
// be loaded is a load error (never a silent fall back to WordPiece), and a
// WordPiece tokenizer.json leaves the WordPiece path as it was.
func TestBERTLoaderTokenizerJSONErrors(t *testing.T) {
	requireRuntime(t)
	dir := t.TempDir()
	if err := bertgen.GenerateClassifier("tiny", dir, 3); err != nil {
		t.Fatal(err)
	}
	opts := noWordPiece(t, dir)
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(dir, bert.TokenizerFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write(`{"model":{"type":"Unigram","unk_id":0,"vocab":[]}}`)
	if _, err := bert.LoadClassifier(dir, opts); err == nil || !strings.Contains(err.Error(), "tokenizer.json") || !strings.Contains(err.Error(), "vocab is empty") {
		t.Fatalf("broken Unigram file: %v", err)
	}
	write(`{"model":`)
	if _, err := bert.LoadClassifier(dir, opts); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
		t.Fatalf("malformed tokenizer.json: %v", err)
	}
	// WordPiece: the loader goes on to look for vocab.txt, which is
	// missing here, and says so.
	write(`{"model":{"type":"WordPiece","vocab":{"[UNK]":0}}}`)
	if _, err := bert.LoadClassifier(dir, opts); err == nil || !strings.Contains(err.Error(), "vocabulary") || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("WordPiece tokenizer.json: %v", err)
	}
}
