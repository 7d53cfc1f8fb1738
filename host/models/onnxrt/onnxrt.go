// Package onnxrt owns the process-wide onnxruntime environment.
//
// onnxruntime_go keeps one global OrtEnv per process and refuses to create a
// second one, so every model package goes through Init here instead of
// calling ort.InitializeEnvironment itself. Model packages then create their
// own ort.DynamicAdvancedSession with the options from SessionOptions.
//
// The shared library is libonnxruntime.so 1.24.1 taken from the npm package
// onnxruntime-node@1.24.1 by scripts/fetch-deps.sh (`make deps`); it matches
// the C API version onnxruntime_go v1.27.0 is built against.
package onnxrt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// EnvLibrary is the environment variable that overrides where the
// onnxruntime shared library is loaded from.
const EnvLibrary = "BARDO_ONNXRUNTIME_LIB"

// ModulePath is the Go module path whose go.mod marks the repository root.
const ModulePath = "github.com/bardoinference/bardo"

// LibraryRelPath is where `make deps` puts the shared library, relative to
// the repository root.
const LibraryRelPath = "build/deps/onnxruntime/libonnxruntime.so.1"

// Options configures the environment.
type Options struct {
	// LibraryPath is the onnxruntime shared library; "" means
	// DefaultLibraryPath().
	LibraryPath string
	// IntraOpThreads is the per-session intra-op thread count used by
	// SessionOptions; 0 means 1. One thread is the right default for the
	// host: the models are small, requests are batched across callers, and
	// parallelism comes from concurrent requests rather than from splitting
	// one tiny matrix product across cores.
	IntraOpThreads int
}

var (
	mu          sync.Mutex
	initialized bool
	libPath     string
	intraOp     = 1
)

// RepoRoot finds the repository root: the nearest directory, walking up from
// the working directory and then from the running executable's directory,
// whose go.mod declares module ModulePath. Walking up from the working
// directory is what makes `go test` (which runs in the package directory)
// and `go run` from anywhere in the tree work; walking up from the
// executable covers ./build/bardo started from elsewhere.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			if isModuleRoot(dir) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("onnxrt: no go.mod for module %s above the working directory or the executable", ModulePath)
}

func isModuleRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range bytes.Lines(data) {
		f := bytes.Fields(line)
		if len(f) >= 2 && string(f[0]) == "module" && string(f[1]) == ModulePath {
			return true
		}
	}
	return false
}

// DefaultLibraryPath is where the onnxruntime shared library is looked for
// when Options.LibraryPath is empty: $BARDO_ONNXRUNTIME_LIB if set, else
// <repo root>/build/deps/onnxruntime/libonnxruntime.so.1 with the root found
// by RepoRoot, else the same relative path under the working directory.
func DefaultLibraryPath() string {
	if p := os.Getenv(EnvLibrary); p != "" {
		return p
	}
	if root, err := RepoRoot(); err == nil {
		return filepath.Join(root, LibraryRelPath)
	}
	if wd, err := os.Getwd(); err == nil {
		return filepath.Join(wd, LibraryRelPath)
	}
	return LibraryRelPath
}

// Init loads the onnxruntime library and creates the process-wide
// environment. It is idempotent and safe for concurrent use: after the first
// success later calls return nil without changing anything (the library
// cannot be swapped in a running process, so a later LibraryPath or
// IntraOpThreads is ignored). A failure is not remembered, so a caller may
// fix the cause (e.g. run `make deps`) and call Init again.
func Init(opts Options) error {
	mu.Lock()
	defer mu.Unlock()
	if initialized {
		return nil
	}
	path := opts.LibraryPath
	if path == "" {
		path = DefaultLibraryPath()
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return fmt.Errorf("onnxruntime: library not found at %s (run `make deps`, or set %s)", path, EnvLibrary)
	}
	threads := opts.IntraOpThreads
	if threads <= 0 {
		threads = 1
	}
	if !ort.IsInitialized() {
		ort.SetSharedLibraryPath(path)
		// Warnings only: onnxruntime's info log is chatty on every session.
		if err := ort.InitializeEnvironment(ort.WithLogLevelWarning()); err != nil {
			return fmt.Errorf("onnxruntime: initialise with %s: %w", path, err)
		}
	}
	initialized, libPath, intraOp = true, path, threads
	return nil
}

// Initialized reports whether Init has succeeded.
func Initialized() bool {
	mu.Lock()
	defer mu.Unlock()
	return initialized
}

// LibraryPath is the shared library the environment was created from, or ""
// before Init succeeds.
func LibraryPath() string {
	mu.Lock()
	defer mu.Unlock()
	return libPath
}

// Version is the onnxruntime library's version string (e.g. "1.24.1"), or ""
// before Init succeeds.
func Version() string {
	if !Initialized() {
		return ""
	}
	return ort.GetVersion()
}

// ErrNotInitialized is returned by SessionOptions before Init succeeds.
var ErrNotInitialized = errors.New("onnxruntime: environment not initialised (call onnxrt.Init first)")

// SessionOptions returns session options preconfigured for the host: the
// intra-op thread count from Init, one inter-op thread, sequential execution
// and no spin-waiting (spinning threads would burn the cores that concurrent
// requests and the gateway need). The caller owns the result and must
// Destroy it once the session is created.
func SessionOptions() (*ort.SessionOptions, error) {
	mu.Lock()
	ok, threads := initialized, intraOp
	mu.Unlock()
	if !ok {
		return nil, ErrNotInitialized
	}
	o, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("onnxruntime: session options: %w", err)
	}
	steps := []struct {
		what string
		fn   func() error
	}{
		{"intra-op threads", func() error { return o.SetIntraOpNumThreads(threads) }},
		{"inter-op threads", func() error { return o.SetInterOpNumThreads(1) }},
		{"execution mode", func() error { return o.SetExecutionMode(ort.ExecutionModeSequential) }},
		{"intra-op spinning", func() error { return o.AddSessionConfigEntry("session.intra_op.allow_spinning", "0") }},
		{"inter-op spinning", func() error { return o.AddSessionConfigEntry("session.inter_op.allow_spinning", "0") }},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			o.Destroy()
			return nil, fmt.Errorf("onnxruntime: session options: %s: %w", s.what, err)
		}
	}
	return o, nil
}
