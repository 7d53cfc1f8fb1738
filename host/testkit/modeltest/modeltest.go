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

	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
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
