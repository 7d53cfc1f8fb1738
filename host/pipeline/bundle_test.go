package pipeline

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// Entries that name plugins of one module load together (one compiled
// module, one pool), each with its own config; an entry naming a plugin
// its module's group already has loads apart; and one entry can point
// elsewhere — a standalone module — while the others stay bundled.
func TestBundleEntries(t *testing.T) {
	files := map[string]string{"bundle.wasm": "host/sandbox/testdata/bundle", "hostcalls.wasm": "testplugins/hostcalls", "sim.wasm": "plugins/providers/sim"}
	e := newEnv(t, files, `
[[layer]]
name = "count"
plugin = "bundle.wasm"
entry = "count"
trusted = true
[layer.config]
label = "C"

[[layer]]
name = "hc"
plugin = "hostcalls.wasm"
trusted = true

[[layer]]
name = "tag"
plugin = "bundle.wasm"
entry = "tag"
trusted = true
[layer.config]
label = "T"

[[layer]]
name = "tag-again"
plugin = "bundle.wasm"
entry = "tag"
trusted = true
[layer.config]
label = "U"
`+providerSim)
	p := e.m.Peek()
	// bundle.wasm twice (count+tag, then tag-again), hostcalls, sim.
	if len(p.held) != 4 || p.loaded != 4 {
		t.Fatalf("held %d modules, loaded %d; want 4", len(p.held), p.loaded)
	}
	if got := len(p.held[0].plugins); got != 2 {
		t.Fatalf("first module holds %d entries, want count and tag", got)
	}
	x := ask(t, e.m, "hello")
	var tags []string
	for _, h := range x.Headers {
		if h.Key == "X-Bardo-Tag" {
			tags = append(tags, h.Value)
		}
	}
	if header(x, "X-Bardo-Count") != "C:1" || header(x, "X-Bardo-Hostcalls") != "1" || len(tags) != 2 || tags[0] != "T:1" || tags[1] != "U:1" {
		t.Errorf("headers %v; want count C:1, hostcalls 1, tags T:1 then U:1", x.Headers)
	}
	made, _ := pluginOf(p, "count").Stats()
	if made2, _ := pluginOf(p, "tag").Stats(); made != 1 || made2 != 1 {
		t.Errorf("count and tag made %d and %d instances; want one they share", made, made2)
	}
	e.checkHeld(t, p)
}

func TestGroupJobs(t *testing.T) {
	spec := func(name, file, entry string, trusted bool) *config.PluginSpec {
		return &config.PluginSpec{Name: name, Plugin: file, Entry: entry, Trusted: trusted}
	}
	jobs := []*config.PluginSpec{
		spec("pii", "/l.wasm", "pii", true),
		spec("solo", "/l.wasm", "", true), // no entry: alone, as before bundles
		spec("inj", "/l.wasm", "injection", true),
		spec("pii2", "/l.wasm", "pii", true),         // pii is taken in the first group
		spec("inj-u", "/l.wasm", "injection", false), // untrusted: another runtime
		spec("inj2", "/l.wasm", "injection", true),
	}
	var got [][]string
	for _, g := range groupJobs(jobs, func(s *config.PluginSpec) *config.PluginSpec { return s }) {
		var names []string
		for _, s := range g {
			names = append(names, s.Name)
		}
		got = append(got, names)
	}
	want := [][]string{{"pii", "inj"}, {"solo"}, {"pii2", "inj2"}, {"inj-u"}}
	if len(got) != len(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("groups %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("groups %v, want %v", got, want)
			}
		}
	}
}

// BenchmarkReloadBundle times a reload of the default-like pipeline from
// bardo.wasm (the 8 layers and sim on one module) where one layer's
// timeout changed: the bundle's entries load again together — a new pool,
// every entry's Init — on the compiled module the running pipeline holds.
// fresh-code is the same with nothing left to share (a first start's load,
// decoding and validating the module).
func BenchmarkReloadBundle(b *testing.B) {
	files := map[string]string{"bardo.wasm": wasmbuild.Bundle}
	bundled := regexp.MustCompile(`plugin = "([a-z]+)\.wasm"`).ReplaceAllString(defaultLike+providerSim, "plugin = \"bardo.wasm\"\nentry = \"$1\"")
	changed := strings.Replace(bundled, `timeout = "50ms"`, `timeout = "60ms"`, 1)
	e := newEnv(b, files, bundled)
	if got := len(e.m.Peek().held); got != 1 {
		b.Fatalf("the bundled pipeline holds %d modules, want 1", got)
	}
	run := func(b *testing.B, drop bool) {
		b.StopTimer()
		for i := range b.N {
			toml := bundled
			if i%2 == 0 {
				toml = changed
			}
			e.writeConfig(b, toml)
			if drop { // nothing to share: the running pipeline's plugins close first
				e.m.Peek().Close()
				e.m.plugins = newRegistry()
			}
			b.StartTimer()
			err := e.m.Reload(context.Background())
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("shared-code", func(b *testing.B) { run(b, false) })
	b.Run("fresh-code", func(b *testing.B) { run(b, true) })
}
