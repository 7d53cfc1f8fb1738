package guardrail

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// The converted model is built once per test binary into a temporary
// directory that TestMain removes.
var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
	tmpRoot   string

	loadOnce  sync.Once
	shared    *Classifier
	sharedErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

// depsDir is build/deps/llm_guardrail; the test fails (not skips) when it is
// missing, because the artefacts are part of a normal build.
func depsDir(t testing.TB) string {
	t.Helper()
	root, err := onnxrt.RepoRoot()
	if err != nil {
		t.Fatalf("locate repo root: %v", err)
	}
	dir := filepath.Join(root, "build", "deps", "llm_guardrail")
	if _, err := os.Stat(filepath.Join(dir, SourceFile)); err != nil {
		t.Fatalf("%s missing: run `make deps` (scripts/fetch-deps.sh) first: %v", filepath.Join(dir, SourceFile), err)
	}
	return dir
}

// modelDir returns a directory holding Build's output.
func modelDir(t testing.TB) string {
	t.Helper()
	src := depsDir(t)
	buildOnce.Do(func() {
		tmpRoot, buildErr = os.MkdirTemp("", "guardrail-test-")
		if buildErr != nil {
			return
		}
		builtDir = filepath.Join(tmpRoot, "injection")
		buildErr = Build(src, builtDir)
	})
	if buildErr != nil {
		t.Fatalf("Build: %v", buildErr)
	}
	return builtDir
}

// sharedClassifier is one loaded Classifier (rules on) for the whole binary.
func sharedClassifier(t testing.TB) *Classifier {
	t.Helper()
	dir := modelDir(t)
	loadOnce.Do(func() { shared, sharedErr = Load(dir, LoadOptions{}) })
	if sharedErr != nil {
		t.Fatalf("Load: %v (the onnxruntime library comes from `make deps`, or set %s)", sharedErr, onnxrt.EnvLibrary)
	}
	return shared
}

// example is one line of the labelled set.
type example struct {
	Text   string `json:"text"`
	Label  string `json:"label"`
	Source string `json:"source"`
}

func loadSet(t testing.TB) []example { return loadSetFile(t, "set.jsonl") }

func loadSetFile(t testing.TB, name string) []example {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "injection", name))
	if err != nil {
		t.Fatalf("read labelled set: %v", err)
	}
	var out []example
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var e example
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("labelled set line %d: %v", len(out)+1, err)
		}
		out = append(out, e)
	}
	return out
}
