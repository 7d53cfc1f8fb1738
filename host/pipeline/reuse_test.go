package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The tests here run a Manager on a pipeline.toml in a temporary directory
// whose plugins/ holds copies of the built plugins (copies, so a test can
// rewrite one as a rebuild would).

var (
	cacheOnce sync.Once
	cache     wazero.CompilationCache
	cacheErr  error
)

// testCache is the wazero compilation cache every test gateway of the
// repository shares: compiling each plugin once is the slow part.
func testCache(tb testing.TB) wazero.CompilationCache {
	tb.Helper()
	cacheOnce.Do(func() {
		root, err := wasmbuild.Root()
		if err != nil {
			cacheErr = err
			return
		}
		cache, cacheErr = wazero.NewCompilationCacheWithDir(filepath.Join(root, "build", "testcache"))
	})
	if cacheErr != nil {
		tb.Fatal(cacheErr)
	}
	return cache
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type env struct {
	dir  string
	m    *Manager
	logs *lockedBuffer
}

// newEnv copies the plugin packages of files (file name → package) into a
// new plugins/ directory, writes toml and starts a Manager on it. Cleanup
// closes the Manager and checks that every plugin loaded was closed.
func newEnv(tb testing.TB, files map[string]string, toml string) *env {
	tb.Helper()
	return newEnvWith(tb, files, toml, nil)
}

// newEnvWith is newEnv with the Manager's deps adjusted by with.
func newEnvWith(tb testing.TB, files map[string]string, toml string, with func(*Deps)) *env {
	tb.Helper()
	e := &env{dir: tb.TempDir(), logs: &lockedBuffer{}}
	if err := os.Mkdir(filepath.Join(e.dir, "plugins"), 0o755); err != nil {
		tb.Fatal(err)
	}
	for file, pkg := range files {
		b, err := os.ReadFile(wasmbuild.MustBuild(tb, pkg))
		if err != nil {
			tb.Fatal(err)
		}
		e.writePlugin(tb, file, b)
	}
	e.writeConfig(tb, toml)
	deps := Deps{
		Log:   slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Cache: testCache(tb),
		KV:    kvstore.NewMemory(1 << 20),
	}
	if with != nil {
		with(&deps)
	}
	m, err := NewManager(context.Background(), filepath.Join(e.dir, "pipeline.toml"), deps)
	if err != nil {
		tb.Fatal(err)
	}
	e.m = m
	tb.Cleanup(func() {
		m.Close()
		eventually(tb, "every plugin loaded is closed after the Manager closes", func() bool {
			live, loads, closes := m.plugins.counts()
			return live == 0 && loads == closes
		})
	})
	return e
}

func (e *env) writePlugin(tb testing.TB, file string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "plugins", file), b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func (e *env) readPlugin(tb testing.TB, file string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "plugins", file))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func (e *env) writeConfig(tb testing.TB, toml string) {
	tb.Helper()
	head := "[server]\nplugin_dir = \"plugins\"\n"
	if err := os.WriteFile(filepath.Join(e.dir, "pipeline.toml"), []byte(head+toml), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// reload rewrites pipeline.toml and reloads.
func (e *env) reload(tb testing.TB, toml string) error {
	tb.Helper()
	e.writeConfig(tb, toml)
	return e.m.Reload(context.Background())
}

// checkHeld checks that the plugins loaded and not closed are exactly those
// the pipelines named hold (retired pipelines release theirs asynchronously),
// and that none of those is closed.
func (e *env) checkHeld(tb testing.TB, ps ...*Pipeline) {
	tb.Helper()
	held := map[*sharedPlugin]bool{} // a load is a module: one plugin or a bundle's entries
	for _, p := range ps {
		for _, s := range p.held {
			held[s] = true
		}
	}
	eventually(tb, "only the plugins of the running pipelines are open", func() bool {
		_, loads, closes := e.m.plugins.counts()
		return loads-closes == len(held)
	})
	for s := range held {
		for _, pl := range s.plugins {
			if pl.Closed() {
				tb.Errorf("plugin %s of a running pipeline is closed", pl.Name())
			}
		}
	}
}

func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pluginOf is the plugin of p's layer or provider named name, or nil.
func pluginOf(p *Pipeline, name string) *sandbox.Plugin {
	for _, l := range p.Layers {
		if l.Spec.Name == name {
			return l.Plugin
		}
	}
	for _, pr := range p.Providers {
		if pr.Spec.Name == name {
			return pr.Plugin
		}
	}
	return nil
}

func exchange(text string) *Exchange {
	return &Exchange{
		Meta: wire.Meta{RequestID: "r1"},
		Req: &wire.Request{Model: "m", Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: text}}},
		}},
	}
}

// ask runs a request phase on the Manager's current pipeline.
func ask(tb testing.TB, m *Manager, text string) *Exchange {
	tb.Helper()
	p, release := m.Acquire()
	defer release()
	x := exchange(text)
	if _, werr := p.RequestPhase(context.Background(), x); werr != nil {
		tb.Fatalf("request phase: %v", werr)
	}
	return x
}

func header(x *Exchange, key string) string {
	for _, h := range x.Headers {
		if strings.EqualFold(h.Key, key) {
			return h.Value
		}
	}
	return ""
}

// withCustomSection returns the module with a custom section appended: the
// same code in a different file, as a rebuild that changed nothing the
// plugin does would produce.
func withCustomSection(module []byte, payload string) []byte {
	name := "bardo-test"
	var sec []byte
	sec = binary.AppendUvarint(sec, uint64(len(name))) // LEB128 unsigned, as wasm wants
	sec = append(sec, name...)
	sec = append(sec, payload...)
	out := append([]byte(nil), module...)
	out = append(out, 0) // custom section id
	out = binary.AppendUvarint(out, uint64(len(sec)))
	return append(out, sec...)
}

// withKey adds a key to the entry's table (before its [layer.config]).
func withKey(entry, kv string) string {
	i := strings.Index(entry, "[layer.config]")
	return entry[:i] + kv + "\n" + entry[i:]
}

var basePlugins = map[string]string{
	"noop.wasm":      "testplugins/noop",
	"hostcalls.wasm": "testplugins/hostcalls",
	"touch.wasm":     "testplugins/touch",
	"slow.wasm":      "testplugins/slow",
	"sim.wasm":       "plugins/providers/sim",
}

const (
	layerA = `
[[layer]]
name = "a"
plugin = "noop.wasm"
trusted = true
`
	layerHC = `
[[layer]]
name = "hc"
plugin = "hostcalls.wasm"
trusted = true
timeout = "5s"
pool = 2
[layer.config]
suffix = " [one]"
`
	layerB = `
[[layer]]
name = "b"
plugin = "touch.wasm"
trusted = true
`
	layerSlow = `
[[layer]]
name = "slow"
plugin = "slow.wasm"
trusted = true
timeout = "10s"
`
	providerSim = `
[[provider]]
name = "sim"
plugin = "sim.wasm"
models = ["*"]
trusted = true
`
)

// Adding a layer loads only its plugin; reordering loads nothing; the
// pipelines share the very same plugins, and the retired one's release
// closes none of them.
func TestReloadReusesUnchangedPlugins(t *testing.T) {
	e := newEnv(t, basePlugins, layerA+layerHC+providerSim)
	p1 := e.m.Peek()
	if p1.loaded != 3 || p1.reused != 0 {
		t.Fatalf("first pipeline: loaded %d reused %d, want 3 and 0", p1.loaded, p1.reused)
	}

	if err := e.reload(t, layerA+layerB+layerHC+providerSim); err != nil {
		t.Fatal(err)
	}
	p2 := e.m.Peek()
	if p2.loaded != 1 || p2.reused != 3 {
		t.Fatalf("one layer added: loaded %d reused %d, want 1 and 3", p2.loaded, p2.reused)
	}
	for _, name := range []string{"a", "hc", "sim"} {
		if pluginOf(p2, name) != pluginOf(p1, name) {
			t.Errorf("%s: loaded again, want the running plugin reused", name)
		}
	}
	if !strings.Contains(e.logs.String(), "plugins_loaded=1 plugins_reused=3") {
		t.Errorf("the reload line does not count the plugins:\n%s", e.logs.String())
	}
	if n := strings.Count(e.logs.String(), `msg="plugin reused"`); n != 3 {
		t.Errorf("%d \"plugin reused\" lines, want 3", n)
	}

	// Reordered: nothing loads, and the new order is what runs.
	if err := e.reload(t, layerHC+layerB+layerA+providerSim); err != nil {
		t.Fatal(err)
	}
	p3 := e.m.Peek()
	if p3.loaded != 0 || p3.reused != 4 {
		t.Fatalf("reordered: loaded %d reused %d, want 0 and 4", p3.loaded, p3.reused)
	}
	if got := []string{p3.request[0].Spec.Name, p3.request[1].Spec.Name, p3.request[2].Spec.Name}; strings.Join(got, ",") != "hc,b,a" {
		t.Fatalf("request order %v", got)
	}
	// The shared plugins serve the new pipeline after the old ones retired.
	e.checkHeld(t, p3)
	if x := ask(t, e.m, "hello"); header(x, "X-Bardo-Hostcalls") == "" {
		t.Fatalf("hostcalls layer did not run: %v", x.Headers)
	}
	if _, loads, _ := e.m.plugins.counts(); loads != 4 {
		t.Fatalf("%d loads over three pipelines, want 4", loads)
	}
}

// Any change to what a plugin's behaviour depends on loads it fresh, and the
// replaced plugin closes with the pipeline that held it; a file rewritten
// with the same bytes is still reused.
func TestReloadLoadsChangedEntries(t *testing.T) {
	rebuilt := func(e *env, t *testing.T) {
		e.writePlugin(t, "hostcalls.wasm", withCustomSection(e.readPlugin(t, "hostcalls.wasm"), "rebuilt"))
	}
	rewritten := func(e *env, t *testing.T) {
		time.Sleep(10 * time.Millisecond) // a new mtime, the same content
		e.writePlugin(t, "hostcalls.wasm", e.readPlugin(t, "hostcalls.wasm"))
	}
	for _, c := range []struct {
		name   string
		toml   string
		before func(*env, *testing.T) // changes a file before the reload
		fresh  bool                   // hc must be loaded again
	}{
		{name: "config", toml: strings.Replace(layerHC, "[one]", "[two]", 1), fresh: true},
		{name: "timeout", toml: strings.Replace(layerHC, `"5s"`, `"6s"`, 1), fresh: true},
		{name: "pool", toml: strings.Replace(layerHC, "pool = 2", "pool = 3", 1), fresh: true},
		{name: "memory", toml: withKey(layerHC, `memory = "128MiB"`), fresh: true},
		{name: "default-memory-spelled-out", toml: withKey(layerHC, `memory = "64MiB"`), fresh: false},
		{name: "untrusted", toml: strings.Replace(layerHC, "trusted = true", "trusted = false", 1), fresh: true},
		{name: "renamed", toml: strings.Replace(layerHC, `name = "hc"`, `name = "hc2"`, 1), fresh: true},
		{name: "file-rebuilt", toml: layerHC, before: rebuilt, fresh: true},
		{name: "file-rewritten-same-bytes", toml: layerHC, before: rewritten, fresh: false},
		{name: "unchanged", toml: layerHC, fresh: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, basePlugins, layerA+layerHC+providerSim)
			p1 := e.m.Peek()
			old := pluginOf(p1, "hc")
			if c.before != nil {
				c.before(e, t)
			}
			if err := e.reload(t, layerA+c.toml+providerSim); err != nil {
				t.Fatal(err)
			}
			p2 := e.m.Peek()
			hcName := "hc"
			if c.name == "renamed" {
				hcName = "hc2"
			}
			now := pluginOf(p2, hcName)
			if (now != old) != c.fresh {
				t.Fatalf("hc loaded fresh: %v, want %v", now != old, c.fresh)
			}
			wantLoaded := 0
			if c.fresh {
				wantLoaded = 1
			}
			if p2.loaded != wantLoaded || p2.reused != 3-wantLoaded {
				t.Fatalf("loaded %d reused %d, want %d and %d", p2.loaded, p2.reused, wantLoaded, 3-wantLoaded)
			}
			for _, name := range []string{"a", "sim"} {
				if pluginOf(p2, name) != pluginOf(p1, name) {
					t.Errorf("%s loaded again", name)
				}
			}
			// The replaced plugin closes once the old pipeline retired; the
			// new pipeline's serve on.
			if c.fresh {
				eventually(t, "the replaced plugin closes", old.Closed)
			}
			e.checkHeld(t, p2)
			if x := ask(t, e.m, "hello"); header(x, "X-Bardo-Hostcalls") == "" {
				t.Fatalf("hostcalls layer did not run: %v", x.Headers)
			}
		})
	}
}

// A request in flight on the old pipeline across a reload that drops its
// plugin completes, and the plugin is closed only once the request released
// the old pipeline.
func TestReloadDropsPluginAfterInFlightRequest(t *testing.T) {
	e := newEnv(t, basePlugins, layerA+layerSlow+providerSim)
	p1, release := e.m.Acquire()
	slow := pluginOf(p1, "slow")

	type result struct {
		x    *Exchange
		werr *wire.Error
	}
	done := make(chan result, 1)
	go func() {
		x := exchange("slow 600ms")
		_, werr := p1.RequestPhase(context.Background(), x)
		done <- result{x, werr}
	}()
	time.Sleep(100 * time.Millisecond) // the call is under way

	if err := e.reload(t, layerA+providerSim); err != nil {
		t.Fatal(err)
	}
	p2 := e.m.Peek()
	if p2 == p1 || pluginOf(p2, "slow") != nil {
		t.Fatal("the reload did not drop the slow layer")
	}
	if slow.Closed() {
		t.Fatal("the dropped plugin closed under a request in flight")
	}
	r := <-done
	if r.werr != nil || len(r.x.Meta.Annotations) == 0 || r.x.Meta.Annotations[0].Value != "slow 600ms" {
		t.Fatalf("in-flight request: err %v, annotations %v", r.werr, r.x.Meta.Annotations)
	}
	// The request finished but still holds the old pipeline.
	time.Sleep(50 * time.Millisecond)
	if slow.Closed() {
		t.Fatal("the dropped plugin closed before its pipeline was released")
	}
	release()
	eventually(t, "the dropped plugin closes after the last request released it", slow.Closed)
	if pluginOf(p2, "a").Closed() || pluginOf(p2, "sim").Closed() {
		t.Fatal("a plugin the new pipeline shares was closed with the old one")
	}
	e.checkHeld(t, p2)
	ask(t, e.m, "after")
}

// A reload that fails — a broken pipeline.toml, a plugin that does not load,
// a plugin of the wrong kind (link fails), a rebuilt plugin file that is
// broken — leaves the running pipeline serving on its own plugins and
// closes whatever the attempt loaded.
func TestFailedReloadKeepsServingAndLeaksNothing(t *testing.T) {
	e := newEnv(t, basePlugins, layerA+layerHC+providerSim)
	p1 := e.m.Peek()
	e.writePlugin(t, "broken.wasm", []byte("\x00asm but not really"))
	good := e.readPlugin(t, "hostcalls.wasm")

	for _, c := range []struct {
		name   string
		toml   string
		before func()
	}{
		{name: "toml", toml: layerA + layerHC + providerSim + "\n[[layer]\n"},
		{name: "plugin-does-not-load", toml: layerA + layerB + layerHC + providerSim + "\n[[layer]]\nname = \"bad\"\nplugin = \"broken.wasm\"\n"},
		{name: "wrong-kind", toml: layerA + layerB + layerHC + providerSim + "\n[[layer]]\nname = \"provider-as-layer\"\nplugin = \"sim.wasm\"\n"},
		{name: "rebuilt-broken", toml: layerA + layerHC + providerSim, before: func() { e.writePlugin(t, "hostcalls.wasm", []byte("garbage")) }},
	} {
		if c.before != nil {
			c.before()
		}
		err := e.reload(t, c.toml)
		if err == nil {
			t.Fatalf("%s: reload succeeded", c.name)
		}
		if !strings.Contains(err.Error(), "pipeline.toml:") {
			t.Errorf("%s: error does not name the file and line: %v", c.name, err)
		}
		if e.m.Peek() != p1 {
			t.Fatalf("%s: the failed pipeline was swapped in", c.name)
		}
		e.checkHeld(t, p1)
		if x := ask(t, e.m, "still here"); header(x, "X-Bardo-Hostcalls") == "" {
			t.Fatalf("%s: the running pipeline does not serve: %v", c.name, x.Headers)
		}
	}

	// The plugin file back as it was: the running plugin is reused (the
	// content decides, not the file's history).
	e.writePlugin(t, "hostcalls.wasm", good)
	if err := e.reload(t, layerA+layerHC+providerSim); err != nil {
		t.Fatal(err)
	}
	if p2 := e.m.Peek(); p2.loaded != 0 || pluginOf(p2, "hc") != pluginOf(p1, "hc") {
		t.Fatalf("restored file: loaded %d, hc reused %v", p2.loaded, pluginOf(p2, "hc") == pluginOf(p1, "hc"))
	}
	e.checkHeld(t, e.m.Peek())
}

// Build outside a Manager shares nothing, and Close closes its plugins.
func TestBuildAloneOwnsItsPlugins(t *testing.T) {
	e := newEnv(t, basePlugins, layerA+providerSim)
	cfg := e.m.Peek().Config
	p, err := Build(context.Background(), cfg, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Cache: testCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	if p.loaded != 2 || pluginOf(p, "a") == pluginOf(e.m.Peek(), "a") {
		t.Fatalf("Build shared a Manager's plugin (loaded %d)", p.loaded)
	}
	p.Close()
	p.Close() // twice is harmless
	if !pluginOf(p, "a").Closed() || !pluginOf(p, "sim").Closed() {
		t.Fatal("Close left plugins open")
	}
	if pluginOf(e.m.Peek(), "a").Closed() {
		t.Fatal("Close of another pipeline closed the Manager's plugin")
	}
}

// defaultLike is the shipped pipeline.toml's layers (without its local
// models, which layers reach only at request time) and the simulator: the
// pipeline a machine without provider keys runs.
const defaultLike = `
[[layer]]
name = "pii"
plugin = "pii.wasm"
on_error = "fail-closed"
timeout = "100ms"
trusted = true

[[layer]]
name = "injection"
plugin = "injection.wasm"
phases = ["request"]
on_error = "fail-closed"
timeout = "100ms"
trusted = true
[layer.config]
action = "flag"

[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
timeout = "50ms"
trusted = true
[layer.config]
ttl = "300s"
replay_pace_ms = 30

[[layer]]
name = "semcache"
plugin = "semcache.wasm"
timeout = "100ms"
trusted = true
[layer.config]
replay_pace_ms = 30
[layer.config.thresholds]
default = 0.98

[[layer]]
name = "toolprune"
plugin = "toolprune.wasm"
phases = ["request"]
timeout = "50ms"
trusted = true

[[layer]]
name = "compress"
plugin = "compress.wasm"
phases = ["request"]
timeout = "30s"
trusted = true

[[layer]]
name = "promptcache"
plugin = "promptcache.wasm"
phases = ["request"]
timeout = "50ms"
trusted = true

[[layer]]
name = "affinity"
plugin = "affinity.wasm"
timeout = "50ms"
trusted = true
`

const extraLayer = `
[[layer]]
name = "extra"
plugin = "noop.wasm"
trusted = true
`

// BenchmarkReload times a reload of the default-like pipeline (8 layers and
// sim) that adds one layer: every plugin loaded, as every reload did before
// plugins were shared, against the one new plugin loaded and the rest
// reused; and a reload that only reorders layers.
func BenchmarkReload(b *testing.B) {
	files := map[string]string{"sim.wasm": "plugins/providers/sim", "noop.wasm": "testplugins/noop"}
	for _, l := range []string{"pii", "injection", "hashcache", "semcache", "toolprune", "compress", "promptcache", "affinity"} {
		files[l+".wasm"] = "plugins/layers/" + l
	}
	base := defaultLike + providerSim
	added := defaultLike + extraLayer + providerSim
	reordered := extraLayer + defaultLike + providerSim
	e := newEnv(b, files, base)

	// timed times one reload to toml; fresh starts it on a registry of its
	// own, so nothing is reused (what every reload cost before).
	timed := func(b *testing.B, toml string, fresh bool) {
		b.Helper()
		e.writeConfig(b, toml)
		if fresh {
			e.m.plugins = newRegistry()
		}
		b.StartTimer()
		err := e.m.Reload(context.Background())
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
	}
	untimed := func(b *testing.B, toml string) {
		b.Helper()
		if err := e.reload(b, toml); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("all-loaded", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			untimed(b, base)
			timed(b, added, true)
		}
	})
	b.Run("one-added", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			untimed(b, base)
			timed(b, added, false)
		}
	})
	b.Run("reordered", func(b *testing.B) {
		b.StopTimer()
		untimed(b, added)
		for i := range b.N {
			toml := reordered
			if i%2 == 1 {
				toml = added
			}
			timed(b, toml, false)
		}
	})
}

// Every sandbox.Option is either in the key or one of the Deps a registry's
// plugins all share: a new Option must be placed before plugins may be
// reused across it.
func TestPluginKeyCoversOptions(t *testing.T) {
	keyed := map[string]func(*sandbox.Options){
		"Name":        func(o *sandbox.Options) { o.Name = "other" },
		"Path":        func(o *sandbox.Options) { o.Path = "/other.wasm" },
		"Trusted":     func(o *sandbox.Options) { o.Trusted = !o.Trusted },
		"MemoryLimit": func(o *sandbox.Options) { o.MemoryLimit *= 2 },
		"PoolSize":    func(o *sandbox.Options) { o.PoolSize++ },
		"Timeout":     func(o *sandbox.Options) { o.Timeout++ },
		"Config":      func(o *sandbox.Options) { o.Config = []byte(`{"x":2}`) },
		"Entry":       func(o *sandbox.Options) { o.Entry = "other" },
		"Code":        nil, // the file's bytes: hashed into the key
	}
	shared := map[string]bool{"Cache": true, "Log": true, "KV": true, "Metrics": true, "Services": true}
	typ := reflect.TypeFor[sandbox.Options]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if _, ok := keyed[name]; !ok && !shared[name] {
			t.Errorf("sandbox.Options.%s is neither in the plugin key nor a shared dependency", name)
		}
	}
	base := sandbox.Options{Name: "n", Path: "/p.wasm", MemoryLimit: 64 << 20, PoolSize: 2, Timeout: time.Second, Config: []byte(`{"x":1}`)}
	code := []byte("module")
	if keyOf(base, code) != keyOf(base, bytes.Clone(code)) {
		t.Fatal("the same options and bytes give different keys")
	}
	if keyOf(base, code) == keyOf(base, []byte("module2")) {
		t.Error("different bytes give the same key")
	}
	for name, change := range keyed {
		if change == nil {
			continue
		}
		o := base
		change(&o)
		if keyOf(o, code) == keyOf(base, code) {
			t.Errorf("changing %s leaves the key as it was", name)
		}
	}
}
