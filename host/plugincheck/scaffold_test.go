package plugincheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/plugincheck"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// TestScaffold is the path a plugin author takes: scaffold a layer and a
// provider outside this module, run their own tests, build them to wasm
// and pass the conformance kit.
func TestScaffold(t *testing.T) {
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := plugincheck.FindSDK(filepath.Join(root, "host", "plugincheck"))
	if err != nil || sdk != filepath.Join(root, "sdk") {
		t.Fatalf("FindSDK = %q, %v", sdk, err)
	}
	for _, kind := range []string{"layer", "provider"} {
		t.Run(kind, func(t *testing.T) {
			name := "my-" + kind
			dir, err := plugincheck.Scaffold(plugincheck.ScaffoldOptions{Kind: kind, Name: name, Dir: t.TempDir(), SDK: sdk})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"README.md", "main.go", "main_test.go", "go.mod"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			goCmd(t, dir, nil, "vet", "./...")
			goCmd(t, dir, nil, "test", "-count=1", "./...")
			wasm := filepath.Join(dir, name+".wasm")
			goCmd(t, dir, []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"},
				"build", "-buildmode=c-shared", "-trimpath", "-o", wasm, ".")
			reports := plugincheck.Run(context.Background(), plugincheck.Options{Path: wasm, Calls: 1000})
			if !plugincheck.AllOK(reports) {
				var out strings.Builder
				for _, r := range reports {
					r.Write(&out)
				}
				t.Fatalf("the scaffolded %s fails the kit:\n%s", kind, out.String())
			}
			if _, err := plugincheck.Scaffold(plugincheck.ScaffoldOptions{Kind: kind, Name: name, Dir: filepath.Dir(dir), SDK: sdk}); err == nil {
				t.Error("Scaffold overwrote an existing folder")
			}
		})
	}
}

func TestScaffoldRefuses(t *testing.T) {
	for _, o := range []plugincheck.ScaffoldOptions{
		{Kind: "filter", Name: "x"},
		{Kind: "layer", Name: "Bad_Name"},
		{Kind: "layer", Name: "../escape"},
		{Kind: "layer", Name: "ok", SDK: t.TempDir()}, // not the sdk module
	} {
		o.Dir = t.TempDir()
		if _, err := plugincheck.Scaffold(o); err == nil {
			t.Errorf("Scaffold(%+v) succeeded", o)
		}
	}
}

// goCmd runs the go tool in dir, as a plugin author would outside this
// repository's module.
func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS="), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
