package routing

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBuildsForWasip1 proves the package builds (and vets) for the plugin
// target: the same resolution code runs inside provider plugins.
func TestBuildsForWasip1(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go toolchain")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no go toolchain at %s", goBin)
	}
	cmd := exec.Command(goBin, "vet", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=wasip1 GOARCH=wasm go vet: %v\n%s", err, out)
	}
}
