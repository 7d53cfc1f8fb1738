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
	"syscall"
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

// Bundle names the bundle of every first-party plugin (bardo.wasm, built by
// scripts/bundle.sh from plugins/layers/* and plugins/providers/*) for Build.
const Bundle = "bundle:bardo"

// Build compiles the plugin package pkg (a path relative to the repository
// root, e.g. "testplugins/noop", or Bundle) and returns the .wasm path.
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
	src := pkg
	if pkg == Bundle {
		// A bundle is assembled from the plugin folders first, as `make
		// plugins` does. Test binaries of several packages build it at once:
		// a file lock keeps one from rewriting the sources another is
		// building, and the one path lets the Go build cache serve them all.
		src = "build/_bundle/test/bardo"
		if err := os.MkdirAll(filepath.Join(root, "build", "_bundle"), 0o755); err != nil {
			return "", err
		}
		lock, err := os.OpenFile(filepath.Join(root, "build", "_bundle", "test.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return "", err
		}
		defer lock.Close() // releases the lock
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			return "", fmt.Errorf("wasmbuild %s: lock: %w", pkg, err)
		}
		layers, _ := filepath.Glob(filepath.Join(root, "plugins", "layers", "*", "main.go"))
		providers, _ := filepath.Glob(filepath.Join(root, "plugins", "providers", "*", "main.go"))
		dirs := append(layers, providers...)
		args := []string{"scripts/bundle.sh", src}
		for _, d := range dirs {
			rel, _ := filepath.Rel(root, filepath.Dir(d))
			args = append(args, rel)
		}
		gen := exec.Command("bash", args...)
		gen.Dir = root
		if b, err := gen.CombinedOutput(); err != nil {
			return "", fmt.Errorf("wasmbuild %s: %w\n%s", pkg, err, b)
		}
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s", "-o", tmp.Name(), "./"+src)
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
