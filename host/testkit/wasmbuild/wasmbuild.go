// Package wasmbuild compiles plugin packages to WASI reactors for tests, so
// `go test ./...` works without a prior `make plugins`. Builds go through the
// Go build cache, and each package is built once per test binary.
package wasmbuild

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Root returns the repository root (the directory holding the top go.mod).
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/bardoinference/bardo\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("wasmbuild: repository root not found above " + wd)
		}
	}
}

// Build compiles the plugin package pkg (a path relative to the repository
// root, e.g. "testplugins/noop") and returns the .wasm path.
func Build(pkg string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkg]; ok {
		return p, nil
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "build", "testwasm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_")+".wasm")
	// Test binaries of several packages build concurrently: write a private
	// file and rename it into place, which is atomic.
	tmp, err := os.CreateTemp(dir, "build-*.wasm")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s", "-o", tmp.Name(), "./"+pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("wasmbuild %s: %w\n%s", pkg, err, b)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	built[pkg] = out
	return out, nil
}

// MustBuild is Build for tests and benchmarks: it fails tb on error.
func MustBuild(tb testing.TB, pkg string) string {
	tb.Helper()
	p, err := Build(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
