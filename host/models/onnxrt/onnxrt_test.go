package onnxrt

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

// The tests in this file run in source order, and the first ones need the
// environment not yet initialised (Init cannot be undone in a process).

func TestBeforeInit(t *testing.T) {
	if Initialized() {
		t.Fatal("environment initialised before any test called Init")
	}
	if _, err := SessionOptions(); err != ErrNotInitialized {
		t.Errorf("SessionOptions before Init: err = %v, want ErrNotInitialized", err)
	}
	if v := Version(); v != "" {
		t.Errorf("Version before Init = %q", v)
	}
	missing := filepath.Join(t.TempDir(), "nope.so")
	err := Init(Options{LibraryPath: missing})
	if err == nil {
		t.Fatal("Init with a missing library succeeded")
	}
	want := "onnxruntime: library not found at " + missing + " (run `make deps`, or set BARDO_ONNXRUNTIME_LIB)"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if Initialized() {
		t.Error("a failed Init left the environment marked initialised")
	}
}

func TestRepoRootAndDefaultPath(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// This package lives at host/models/onnxrt under the root.
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(root, wd); err != nil || rel != filepath.Join("host", "models", "onnxrt") {
		t.Errorf("RepoRoot = %s, working dir %s (rel %q, %v)", root, wd, rel, err)
	}
	t.Setenv(EnvLibrary, "")
	if got, want := DefaultLibraryPath(), filepath.Join(root, LibraryRelPath); got != want {
		t.Errorf("DefaultLibraryPath = %s, want %s", got, want)
	}
	t.Setenv(EnvLibrary, "/opt/ort/libonnxruntime.so")
	if got := DefaultLibraryPath(); got != "/opt/ort/libonnxruntime.so" {
		t.Errorf("with %s set, DefaultLibraryPath = %s", EnvLibrary, got)
	}
}

func TestIsModuleRoot(t *testing.T) {
	dir := t.TempDir()
	if isModuleRoot(dir) {
		t.Error("directory without go.mod taken for the root")
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644)
	if isModuleRoot(dir) {
		t.Error("another module's go.mod taken for the root")
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("// x\nmodule "+ModulePath+"\n\ngo 1.26\n"), 0o644)
	if !isModuleRoot(dir) {
		t.Error("our go.mod not recognised")
	}
}

func TestInitConcurrentAndIdempotent(t *testing.T) {
	path := DefaultLibraryPath()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("onnxruntime library missing at %s: run `make deps`", path)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = Init(Options{IntraOpThreads: 1}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Init #%d: %v", i, err)
		}
	}
	if !Initialized() || !ort.IsInitialized() {
		t.Fatal("not initialised after Init succeeded")
	}
	if LibraryPath() != path {
		t.Errorf("LibraryPath = %s, want %s", LibraryPath(), path)
	}
	// The pinned runtime is 1.24.1 (onnxruntime-node@1.24.1).
	if v := Version(); !strings.HasPrefix(v, "1.24.") {
		t.Errorf("Version = %q, want 1.24.x", v)
	}
	// Later calls, even with a bogus path, change nothing.
	if err := Init(Options{LibraryPath: "/nonexistent"}); err != nil {
		t.Errorf("second Init: %v", err)
	}
	if LibraryPath() != path {
		t.Errorf("LibraryPath changed to %s", LibraryPath())
	}
	o, err := SessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer o.Destroy()
	for key, want := range map[string]string{
		"session.intra_op.allow_spinning": "0",
		"session.inter_op.allow_spinning": "0",
	} {
		if got, err := o.GetSessionConfigEntry(key); err != nil || got != want {
			t.Errorf("config %s = %q, %v; want %q", key, got, err, want)
		}
	}
}
