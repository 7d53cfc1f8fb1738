package plugincheck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/plugincheck"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// want is one failed check a plugin must show: its name (a prefix, since
// probe checks carry the probe's text) and words of its reason.
type want struct {
	check  string
	reason []string
}

// testpluginCase is a testplugin, how the kit is run on it, and every check
// that must fail — no more: a plugin failing for another reason than its
// own is a kit that says the wrong thing. No failures: a control, which
// must pass.
type testpluginCase struct {
	name   string // a case name: the plugin folder, or folder/variant
	pkg    string // testplugins/<pkg>
	config string
	probes []string
	calls  int // of the memory check; 0: 500 (the leak needs the full 10,000)
	fails  []want
}

var testpluginCases = []testpluginCase{
	{name: "panic", pkg: "panic", probes: []string{"panic"},
		fails: []want{{`request/probe-1 "panic"`, []string{"trapped", "panic: boom"}}}},
	{name: "loop", pkg: "loop", probes: []string{"loop"},
		fails: []want{{`request/probe-1 "loop"`, []string{"timed out after"}}}},
	{name: "membomb", pkg: "membomb", probes: []string{"bomb"},
		fails: []want{{`request/probe-1 "bomb"`, []string{"trapped", "out of memory"}}}},
	{name: "garbage", pkg: "garbage", probes: []string{"garbage", "badheaders", "badaction"},
		fails: []want{
			{`request/probe-1 "garbage"`, []string{"plugin error", "patched"}},
			{`request/probe-2 "badheaders"`, []string{`header "Set-Cookie" is dropped by the host`}},
			{`request/probe-3 "badaction"`, []string{"unknown action 200"}},
		}},
	{name: "slow/spin", pkg: "slow", probes: []string{"slow 3s"},
		fails: []want{{`request/probe-1 "slow 3s"`, []string{"timed out after"}}}},
	{name: "slow/sleep", pkg: "slow", probes: []string{"sleep 3s"},
		fails: []want{{`request/probe-1 "sleep 3s"`, []string{"timed out after"}}}},
	{name: "slow/init", pkg: "slow", config: `{"init": "nonsense"}`,
		fails: []want{{"load", []string{"plugin error", "init"}}}},
	{name: "leak", pkg: "leak", calls: 10_000,
		fails: []want{{"memory", []string{"grew", "something is kept per call"}}}},
	{name: "strict", pkg: "strict",
		fails: []want{{"request/unknown-fields", []string{"with unknown members: rejected", "without them: continued"}}}},
	{name: "hostcalls", pkg: "hostcalls", probes: []string{"trap!"},
		fails: []want{{`request/probe-1 "trap!"`, []string{"trapped", "hostcalls: trap requested"}}}},
	{name: "services", pkg: "services", probes: []string{"embed-missing"},
		fails: []want{{`request/probe-1 "embed-missing"`, []string{`header "X-Services-Error" is dropped by the host`}}}},
	{name: "badresolve/no-config", pkg: "badresolve",
		fails: []want{{"load", []string{"plugin error", `unknown mode ""`}}}},
	{name: "badresolve/panic", pkg: "badresolve", config: `{"mode":"panic"}`,
		fails: []want{{"resolve", []string{"trapped", "badresolve: boom"}}}},
	{name: "badresolve/nomodel", pkg: "badresolve", config: `{"mode":"nomodel"}`,
		fails: []want{{"resolve", []string{"without a model"}}}},
	{name: "badresolve/nan", pkg: "badresolve", config: `{"mode":"nan"}`,
		fails: []want{{"resolve", []string{"impossible cost (NaN)"}}}},
	{name: "badresolve/slow", pkg: "badresolve", config: `{"mode":"slow"}`,
		fails: []want{{"resolve", []string{"timed out"}}}},
	{name: "badresolve/none", pkg: "badresolve", config: `{"mode":"none"}`,
		fails: []want{{"resolve", []string{"vetoed every intent"}}}},
	// Controls: the kit passes well-behaved plugins.
	{name: "badresolve/ok", pkg: "badresolve", config: `{"mode":"ok"}`},
	{name: "noop", pkg: "noop"},
	{name: "touch", pkg: "touch"},
}

// TestTestplugins runs the kit on every plugin of testplugins/ and checks
// that it fails each misbehaving one for its own reason, and only that.
func TestTestplugins(t *testing.T) {
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	// Every testplugin has a case: a new one cannot slip past the kit.
	dirs, _ := filepath.Glob(filepath.Join(root, "testplugins", "*", "main.go"))
	for _, d := range dirs {
		pkg := filepath.Base(filepath.Dir(d))
		found := false
		for _, c := range testpluginCases {
			found = found || c.pkg == pkg
		}
		if !found {
			t.Errorf("testplugins/%s has no case in testpluginCases", pkg)
		}
	}
	for _, c := range testpluginCases {
		t.Run(c.name, func(t *testing.T) {
			opts := plugincheck.Options{
				Path:    wasmbuild.MustBuild(t, "testplugins/"+c.pkg),
				Probes:  c.probes,
				Calls:   c.calls,
				Timeout: time.Second,
			}
			if opts.Calls == 0 {
				opts.Calls = 500
			}
			if c.config != "" {
				opts.Config = []byte(c.config)
			}
			reports := plugincheck.Run(context.Background(), opts)
			if len(reports) != 1 {
				t.Fatalf("%d reports, want 1", len(reports))
			}
			r := reports[0]
			var out strings.Builder
			r.Write(&out)
			failed := r.Failed()
			if len(c.fails) == 0 {
				if !r.OK() {
					t.Fatalf("a well-behaved plugin failed:\n%s", out.String())
				}
				return
			}
			if r.OK() {
				t.Fatalf("passed; want it to fail:\n%s", out.String())
			}
			if len(failed) != len(c.fails) {
				t.Errorf("%d checks failed, want %d:\n%s", len(failed), len(c.fails), out.String())
			}
			for _, w := range c.fails {
				var got *plugincheck.Check
				for i := range failed {
					if strings.HasPrefix(failed[i].Name, w.check) {
						got = &failed[i]
						break
					}
				}
				if got == nil {
					t.Errorf("check %s did not fail:\n%s", w.check, out.String())
					continue
				}
				for _, word := range w.reason {
					if !strings.Contains(got.Detail, word) {
						t.Errorf("check %s failed with %q, want it to say %q", got.Name, got.Detail, word)
					}
				}
			}
		})
	}
}

// TestNotAPlugin: a module without the ABI's exports fails the first
// check, naming what is missing.
func TestNotAPlugin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.wasm")
	if err := os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	reports := plugincheck.Run(context.Background(), plugincheck.Options{Path: path})
	if len(reports) != 1 || reports[0].OK() {
		t.Fatalf("an empty module passed: %+v", reports)
	}
	c, ok := reports[0].Find("exports")
	if !ok || c.OK || !strings.Contains(c.Detail, "missing memory, _initialize, bardo_abi_version") {
		t.Fatalf("exports check = %+v", c)
	}
}

// TestBundleEntries: a bundle module gets one report per plugin it
// exports, and Entry picks one.
func TestBundleEntries(t *testing.T) {
	path := wasmbuild.MustBuild(t, "host/sandbox/testdata/bundle")
	all := plugincheck.Run(context.Background(), plugincheck.Options{Path: path, Calls: 200})
	if len(all) < 2 {
		t.Fatalf("%d reports for a bundle, want one per entry", len(all))
	}
	for _, r := range all {
		if r.Entry == "" || r.Entry != r.Descriptor.Name {
			t.Errorf("report for entry %q has descriptor %q", r.Entry, r.Descriptor.Name)
		}
	}
	one := plugincheck.Run(context.Background(), plugincheck.Options{Path: path, Calls: 200, Entry: all[1].Entry})
	if len(one) != 1 || one[0].Entry != all[1].Entry {
		t.Fatalf("Entry %q gave %d reports", all[1].Entry, len(one))
	}
	none := plugincheck.Run(context.Background(), plugincheck.Options{Path: path, Entry: "no-such-entry"})
	if c, ok := none[0].Find("entry"); !ok || c.OK || !strings.Contains(c.Detail, all[0].Entry) {
		t.Fatalf("unknown entry: %+v", none[0].Checks)
	}
}
