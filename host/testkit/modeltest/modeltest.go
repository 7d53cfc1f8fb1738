// Package modeltest gives tests the offline models `make models` builds:
// their directory, and the pipeline.toml snippet that declares them. A test
// that needs them fails — it does not skip — when they are missing, with the
// command that makes them: a silently skipped model test is a test that
// never runs.
package modeltest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/models/registry"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/host/vectorindex"
)

// The offline models, by directory under build/models.
const (
	Glove     = "glove-100d"
	Injection = "guardrail-injection"
	Encoder   = "generated/minilm-shaped"
	Classify  = "generated/tiny-classifier"
)

// Dir returns the absolute path of build/models/<name>, failing tb when the
// model is not built.
func Dir(tb testing.TB, name string) string {
	tb.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, "build", "models", name)
	if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
		tb.Fatalf("model %s is not built (%v): run `make models` (it fetches the pinned sources and converts them)", name, err)
	}
	return dir
}

// TOML declares the offline embedder as "embed" and the injection
// classifier as "injection", with absolute paths, for a test pipeline.
func TOML(tb testing.TB) string {
	tb.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		tb.Fatal(err)
	}
	Dir(tb, Glove)
	Dir(tb, Injection)
	return `
[models]
dir = "` + filepath.Join(root, "build", "models") + `"

[[model]]
name = "embed"
kind = "glove"
path = "` + Glove + `"

[[model]]
name = "injection"
kind = "tfidf-logreg"
path = "` + Injection + `"
`
}

// Services returns the host services over the offline models — "embed"
// (GloVe) and "injection" (TF-IDF + rules) — and a vector index, as the
// daemon wires them, for runtime tests and benchmarks of layers that use
// them. Everything is closed when tb ends.
func Services(tb testing.TB) sandbox.Services {
	tb.Helper()
	reg := registry.New(nil)
	tb.Cleanup(reg.Close)
	err := reg.Sync(config.Models{Threads: 1}, []config.Model{
		{Name: "embed", Kind: "glove", Path: Dir(tb, Glove), MaxBatch: 32, BatchWait: 2 * time.Millisecond},
		{Name: "injection", Kind: "tfidf-logreg", Path: Dir(tb, Injection), MaxBatch: 32, BatchWait: 2 * time.Millisecond},
	})
	if err != nil {
		tb.Fatal(err)
	}
	vs := vectorindex.NewSpaces(vectorindex.SpacesConfig{MaxEntries: 100_000})
	tb.Cleanup(vs.Close)
	return sandbox.Services{Models: reg, Vectors: vs}
}
