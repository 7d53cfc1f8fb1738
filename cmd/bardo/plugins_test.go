package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// TestPluginsCLI runs `bardo plugins` as a user does: a passing plugin
// exits 0 with "ok", a failing one exits 1 with the reason; flags may
// follow the file; config members reach the plugin.
func TestPluginsCLI(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"plugins"}, args...)...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}

	noop := wasmbuild.MustBuild(t, "testplugins/noop")
	if out, code := run("test", noop, "-calls", "200"); code != 0 || !strings.Contains(out, "ok: ") || !strings.Contains(out, "PASS  memory") {
		t.Fatalf("noop: exit %d\n%s", code, out)
	}

	panicky := wasmbuild.MustBuild(t, "testplugins/panic")
	out, code := run("test", panicky, "-probe", "panic", "-calls", "200")
	if code != 1 || !strings.Contains(out, `FAIL  request/probe-1 "panic"`) || !strings.Contains(out, "panic: boom") {
		t.Fatalf("panic: exit %d\n%s", code, out)
	}

	// -config key=value builds the plugin's config: badresolve refuses to
	// start without a mode and serves with mode=ok.
	bad := wasmbuild.MustBuild(t, "testplugins/badresolve")
	if out, code := run("test", bad, "-calls", "200"); code != 1 || !strings.Contains(out, `unknown mode ""`) {
		t.Fatalf("badresolve without config: exit %d\n%s", code, out)
	}
	if out, code := run("test", bad, "-config", "mode=ok", "-calls", "200"); code != 0 || !strings.Contains(out, `init with {"mode":"ok"}`) {
		t.Fatalf("badresolve mode=ok: exit %d\n%s", code, out)
	}

	// new: the folder, and a refusal to overwrite it.
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, code := run("new", "layer", "shout", "-dir", dir, "-sdk", filepath.Join(root, "sdk")); code != 0 || !strings.Contains(out, "bardo plugins test") {
		t.Fatalf("new: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "shout", "main.go")); err != nil {
		t.Fatal(err)
	}
	if out, code := run("new", "layer", "shout", "-dir", dir, "-sdk", filepath.Join(root, "sdk")); code == 0 || !strings.Contains(out, "exists") {
		t.Fatalf("new over an existing folder: exit %d\n%s", code, out)
	}
	if out, code := run("new", "filter", "x", "-dir", dir, "-gomod=false"); code == 0 || !strings.Contains(out, "want layer or provider") {
		t.Fatalf("new filter: exit %d\n%s", code, out)
	}
}
