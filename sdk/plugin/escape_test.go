//go:build !wasip1

package plugin

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// TestHostCallWrappersDoNotAllocate compiles this package for wasip1 with
// the compiler's escape report: no value of the host-call wrappers
// (abi_wasip1.go) may be moved to the heap. A local whose address is
// handed to a wasmimport escapes, so such a wrapper allocates on every
// call inside wasm, which no native test sees (hostSHA256's sum did, for
// every plugin.SHA256 of every layer).
func TestHostCallWrappersDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package for wasip1")
	}
	cmd := exec.Command("go", "build", "-gcflags=-m", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, m := range regexp.MustCompile(`(?m)^.*abi_wasip1\.go:\d+:\d+: moved to heap: .*$`).FindAll(out, -1) {
		t.Errorf("%s", m)
	}
}
