// Package testgateway starts a complete gateway in-process for tests and
// benchmarks: real plugins (compiled on demand), the real pipeline, server and
// upstream client, listening on 127.0.0.1. Only the upstream is fake.
package testgateway

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/daemon"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/server"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// Plugins maps the file names pipeline configs use to plugin packages.
var Plugins = map[string]string{
	"sim.wasm":               "plugins/providers/sim",
	"openai-compatible.wasm": "plugins/providers/openai-compatible",
	"anthropic.wasm":         "plugins/providers/anthropic",
	"noop.wasm":              "testplugins/noop",
	"hostcalls.wasm":         "testplugins/hostcalls",
	"touch.wasm":             "testplugins/touch",
	"panic.wasm":             "testplugins/panic",
	"loop.wasm":              "testplugins/loop",
	"slow.wasm":              "testplugins/slow",
	"membomb.wasm":           "testplugins/membomb",
	"garbage.wasm":           "testplugins/garbage",
}

// Gateway is a running gateway.
type Gateway struct {
	URL      string // http://127.0.0.1:port
	Dir      string // holds pipeline.toml and plugins/
	Daemon   *daemon.Daemon
	Manager  *pipeline.Manager
	Metrics  *telemetry.Registry
	Server   *server.Server
	KV       *kvstore.Memory // the plugins' key/value store
	LogLines *syncBuffer

	head string // the [server] section Start wrote
}

// Options tune Start.
type Options struct {
	Env       map[string]string // what credential references resolve against
	Verbose   bool              // log to stderr instead of a buffer
	Heartbeat time.Duration     // stream heartbeat interval (default: the gateway's)
	// AdminToken enables the admin endpoints (POST /admin/cache/flush).
	AdminToken string
	// WalletKey references the gateway's x402 wallet in Env ("env:NAME").
	WalletKey string
	// Upstream is the upstream timeout, which is also each request's
	// deadline (default 30s).
	Upstream time.Duration
}

// Start writes pipelineTOML (without a [server] plugin_dir, which Start sets)
// into a temporary directory, builds the plugins it names, and serves it.
// Everything is stopped by tb.Cleanup.
func Start(tb testing.TB, pipelineTOML string, opts Options) *Gateway {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o755); err != nil {
		tb.Fatal(err)
	}
	g := &Gateway{Dir: dir, LogLines: &syncBuffer{}}
	g.link(tb, pipelineTOML)
	cfgPath := filepath.Join(dir, "pipeline.toml")
	// The wazero compilation cache is shared by every test gateway of the
	// run: compiling each plugin once is the slow part.
	root, _ := wasmbuild.Root()
	cache := filepath.Join(root, "build", "testcache")
	// memory_limit is off: the Go limit is the process's, and a test's
	// process also holds the fake upstream, the clients and the test's
	// own data; the real binary's is measured with the binary.
	g.head = "[server]\nlisten = \"127.0.0.1:0\"\nplugin_dir = \"plugins\"\ncache_dir = \"" + cache + "\"\nmemory_limit = \"off\"\n"
	if err := os.WriteFile(cfgPath, []byte(g.head+pipelineTOML), 0o644); err != nil {
		tb.Fatal(err)
	}
	var w io.Writer = g.LogLines
	if opts.Verbose {
		w = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	getenv := func(k string) string { return opts.Env[k] }
	cc, err := newCache(cache)
	if err != nil {
		tb.Fatal(err)
	}
	upstream := opts.Upstream
	if upstream <= 0 {
		upstream = 30 * time.Second
	}
	d, err := daemon.New(context.Background(), cfgPath, daemon.Options{
		Log: log, Cache: cc, Getenv: getenv, KVBytes: 16 << 20, Upstream: upstream,
		Heartbeat: opts.Heartbeat, AdminToken: opts.AdminToken, WalletKey: opts.WalletKey,
	})
	if err != nil {
		tb.Fatal(err)
	}
	g.Daemon, g.Manager, g.Metrics, g.KV, g.Server = d, d.Manager, d.Metrics, d.KV, d.Server
	if err := d.Listen("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	g.URL = "http://" + g.Server.Addr()
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Server.Serve()
	}()
	tb.Cleanup(func() {
		g.Server.Shutdown(5 * time.Second)
		<-done
		d.Close()
	})
	return g
}

// Rewrite replaces the pipeline (same rules as Start) and reloads.
func (g *Gateway) Rewrite(tb testing.TB, pipelineTOML string) error {
	tb.Helper()
	g.link(tb, pipelineTOML)
	cfgPath := filepath.Join(g.Dir, "pipeline.toml")
	if err := os.WriteFile(cfgPath, []byte(g.head+pipelineTOML), 0o644); err != nil {
		tb.Fatal(err)
	}
	return g.Manager.Reload(context.Background())
}

// link makes every plugin file the pipeline names available in plugins/.
func (g *Gateway) link(tb testing.TB, pipelineTOML string) {
	tb.Helper()
	for file, pkg := range Plugins {
		dst := filepath.Join(g.Dir, "plugins", file)
		if !strings.Contains(pipelineTOML, `"`+file+`"`) {
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Symlink(wasmbuild.MustBuild(tb, pkg), dst); err != nil {
			tb.Fatal(err)
		}
	}
}

// FakeUpstreamKey is the key FakeProviders' entries send (through the env
// variable UP_KEY: start the gateway with Options.Env FakeProviderEnv()).
const FakeUpstreamKey = "sk-test-upstream-secret-0123456789"

// FakeProviderEnv resolves FakeProviders' credential reference.
func FakeProviderEnv() map[string]string { return map[string]string{"UP_KEY": FakeUpstreamKey} }

// FakeProviders declares the two providers most end-to-end tests put in
// front of a host/fakeupstream server: "up" (OpenAI-compatible) for models
// matching openaiModels (default "gpt-*"), and "claude" (Anthropic) for
// claude-*, both with the key FakeUpstreamKey.
func FakeProviders(fakeURL string, openaiModels ...string) string {
	if len(openaiModels) == 0 {
		openaiModels = []string{"gpt-*"}
	}
	return `
[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "` + fakeURL + `/v1"
credential = "env:UP_KEY"
models = ["` + strings.Join(openaiModels, `", "`) + `"]
trusted = true

[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + fakeURL + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true
`
}
