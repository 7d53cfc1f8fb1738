package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bardoinference/bardo/host/config"
)

// Manager owns the current pipeline and replaces it on reload. A broken new
// configuration or plugin leaves the old pipeline serving and is logged.
type Manager struct {
	path    string
	deps    Deps
	plugins *registry // the plugins of the pipelines still running, shared across reloads
	cur     atomic.Pointer[Pipeline]

	reloadMu sync.Mutex // one reload at a time
	// Reloaded is called after each reload attempt with the error (nil on
	// success); tests and the event stream use it.
	Reloaded func(error)
}

// NewManager loads path and builds the first pipeline.
func NewManager(ctx context.Context, path string, deps Deps) (*Manager, error) {
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	m := &Manager{path: path, deps: deps, plugins: newRegistry()}
	p, err := m.build(ctx)
	if err != nil {
		return nil, err
	}
	m.cur.Store(p)
	m.logProviders(p)
	return m, nil
}

func (m *Manager) getenv(k string) string {
	if m.deps.Getenv != nil {
		return m.deps.Getenv(k)
	}
	return os.Getenv(k)
}

func (m *Manager) build(ctx context.Context) (*Pipeline, error) {
	cfg, err := config.Load(m.path)
	if err != nil {
		return nil, err
	}
	if err := config.ApplyEnv(cfg, m.getenv); err != nil {
		return nil, err
	}
	return build(ctx, cfg, m.deps, m.plugins)
}

func (m *Manager) logProviders(p *Pipeline) {
	log := m.deps.Log
	for _, pr := range p.Providers {
		if !pr.Enabled {
			log.Info("provider disabled", "provider", pr.Spec.Name, "why", pr.Why)
		}
	}
	enabled := p.EnabledProviders()
	if len(enabled) == 1 && enabled[0] == "sim" {
		log.Warn("NOTICE: only the simulated provider \"sim\" is active; answers are generated locally, not by a model. Set a provider credential (e.g. OPENAI_API_KEY) to reach a real upstream.")
	}
	for _, w := range p.Config.Warnings {
		log.Warn(w)
	}
	log.Info("pipeline ready", "config", p.Config.Path, "fingerprint", p.Config.Fingerprint.String(),
		"layers", len(p.Layers), "providers", enabled)
}

// Acquire returns the pipeline now serving, marked as in use; call release
// when the request is done with it.
func (m *Manager) Acquire() (p *Pipeline, release func()) {
	for {
		p = m.cur.Load()
		if p.acquire() {
			return p, p.release
		}
	}
}

// Peek returns the current pipeline without marking it in use (for status
// pages; do not call plugins through it).
func (m *Manager) Peek() *Pipeline { return m.cur.Load() }

// Reload rebuilds the pipeline from the configuration file and swaps it in,
// even when the file is unchanged (a SIGHUP also picks up changed
// credentials and rebuilt plugins). Plugins whose file content, name and
// settings are unchanged are reused, not loaded again. On failure the
// current pipeline keeps serving.
func (m *Manager) Reload(ctx context.Context) error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	err := m.reload(ctx)
	if err != nil {
		m.deps.Log.Error("reload failed; the previous pipeline keeps serving", "config", m.path, "err", err)
	}
	if m.Reloaded != nil {
		m.Reloaded(err)
	}
	return err
}

func (m *Manager) reload(ctx context.Context) error {
	start := time.Now()
	p, err := m.build(ctx)
	if err != nil {
		return err
	}
	old := m.cur.Swap(p)
	old.retire()
	m.deps.Log.Info("pipeline reloaded", "took", time.Since(start).Round(time.Millisecond),
		"plugins_loaded", p.loaded, "plugins_reused", p.reused)
	m.logProviders(p)
	return nil
}

// Watch reloads on SIGHUP, when pipeline.toml's content differs from what
// is running, and when a plugin file it names changes, until ctx is done.
func (m *Manager) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = config.DefaultWatchInterval
	}
	config.NotifySIGHUP(ctx, func() {
		m.deps.Log.Info("SIGHUP: reloading pipeline")
		m.Reload(ctx)
	})
	// The running pipeline's plugin files, asked again at every poll: a
	// reload that adds a plugin must also watch it.
	plugins := func() []string {
		p := m.Peek()
		var files []string
		for _, l := range p.Config.Layers {
			files = append(files, l.Plugin)
		}
		for _, pr := range p.Config.Providers {
			files = append(files, pr.Plugin)
		}
		return files
	}
	config.WatchFileSet(ctx, plugins, interval, func() {
		m.deps.Log.Info("a plugin file changed: reloading pipeline")
		m.Reload(ctx)
	})
	go m.watchConfig(ctx, interval)
}

// watchConfig compares pipeline.toml with the running pipeline's fingerprint
// (not with the file's previous content: after a SIGHUP reload, restoring the
// old file must reload too). A new content must be seen by two polls in a
// row, so an editor's half-written file is not loaded; a content that failed
// to load is not retried until it changes again.
func (m *Manager) watchConfig(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var seen, failed config.Fingerprint
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fp, err := config.FingerprintFile(m.path)
		if err != nil || fp == m.Peek().Config.Fingerprint || fp == failed {
			seen = config.Fingerprint{}
			continue
		}
		if fp != seen {
			seen = fp
			continue
		}
		m.deps.Log.Info("pipeline.toml changed: reloading pipeline")
		if err := m.Reload(ctx); err != nil {
			failed = fp
		}
		seen = config.Fingerprint{}
	}
}

// Close retires the current pipeline; its plugins close once requests in
// flight finish.
func (m *Manager) Close() {
	if p := m.cur.Load(); p != nil {
		p.retire()
	}
}

// String is for logs.
func (m *Manager) String() string { return fmt.Sprintf("pipeline(%s)", m.path) }
