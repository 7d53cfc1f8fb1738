package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/models/bert"
	"github.com/bardoinference/bardo/host/models/bertgen"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// TestFetchedDirectoryLoadsInBERTLoader fetches a directory laid out like
// the nomic entry (graph under onnx/, WordPiece tokenizer.json, HuggingFace
// config.json) from the local server and loads it with host/models/bert:
// the sidecar and the derived vocab.txt are what the loader needs. The graph
// is a small random-weight BERT from bertgen, so only the plumbing is
// checked, not embedding quality.
func TestFetchedDirectoryLoadsInBERTLoader(t *testing.T) {
	root, err := onnxrt.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	vocabPath := filepath.Join(root, bert.VocabRelPath)
	vocabText, err := os.ReadFile(vocabPath)
	if err != nil {
		t.Fatalf("%s missing: run `make deps` first: %v", vocabPath, err)
	}
	gen := t.TempDir()
	if err := bertgen.Generate("tiny", gen, 1); err != nil {
		t.Fatal(err)
	}
	model, err := os.ReadFile(filepath.Join(gen, bertgen.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	// An upstream-style config: bertgen's minus Bardo's own fields.
	var hf map[string]any
	data, err := os.ReadFile(filepath.Join(gen, bertgen.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &hf); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pooling", "query_prefix", "normalize"} {
		delete(hf, k)
	}
	hfJSON, _ := json.Marshal(hf)
	vocab := map[string]int{}
	for i, tok := range strings.Split(strings.TrimSuffix(string(vocabText), "\n"), "\n") {
		vocab[tok] = i
	}
	tokJSON, _ := json.Marshal(map[string]any{"version": "1.0", "model": map[string]any{"type": "WordPiece", "vocab": vocab}})

	s := newRepoServer(t)
	e := Entry{
		Name: "tiny-embed", Description: "test", Kind: "bert-encoder",
		Repo: "acme/tiny-embed", Revision: strings.Repeat("cd", 20), License: "Apache-2.0",
		Files: []File{
			{Path: "onnx/model.onnx", Dest: "model.onnx", SHA256: sum(model), Size: int64(len(model))},
			{Path: "tokenizer.json", Dest: "tokenizer.json", SHA256: sum(tokJSON)},
			{Path: "config.json", Dest: "hf_config.json", SHA256: sum(hfJSON)},
		},
		HFConfig:  "hf_config.json",
		VocabFrom: "tokenizer.json",
		Sidecar:   map[string]any{"pooling": "mean", "query_prefix": "search_query: ", "normalize": true},
	}
	s.add(e, e.Files[0], model)
	s.add(e, e.Files[1], tokJSON)
	s.add(e, e.Files[2], hfJSON)
	dest := t.TempDir()
	if err := Fetch(context.Background(), nil, dest, testOptions(s, e, &bytes.Buffer{})); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(dest, e.Name)
	derived, err := os.ReadFile(filepath.Join(dir, VocabFile))
	if err != nil || !bytes.Equal(derived, vocabText) {
		t.Fatalf("vocab.txt derived from tokenizer.json differs from the original (%d vs %d bytes, %v)", len(derived), len(vocabText), err)
	}

	enc, err := bert.LoadEncoder(dir, bert.Options{})
	if err != nil {
		t.Fatalf("bert.LoadEncoder on the fetched directory: %v", err)
	}
	defer enc.Close()
	if enc.Dim() != 64 {
		t.Errorf("Dim = %d, want 64", enc.Dim())
	}
	vecs, err := enc.Embed(context.Background(), []string{"what is the capital of france?"})
	if err != nil {
		t.Fatal(err)
	}
	norm := 0.0
	for _, v := range vecs[0] {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-3 {
		t.Errorf("embedding norm² = %.5f, want 1 (normalize from the sidecar)", norm)
	}
	// The query prefix from the sidecar is applied: the same text with the
	// prefix written out gives the same vector when the prefix is overridden
	// to nothing.
	raw, err := bert.LoadEncoder(dir, bert.Options{QueryPrefix: " "})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	same, err := raw.Embed(context.Background(), []string{"search_query: what is the capital of france?"})
	if err != nil {
		t.Fatal(err)
	}
	diff := 0.0
	for i := range same[0] {
		diff = math.Max(diff, math.Abs(float64(same[0][i]-vecs[0][i])))
	}
	if diff > 1e-4 {
		t.Errorf("prefix not applied as configured: max diff %.2g", diff)
	}
}
