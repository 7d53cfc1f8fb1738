package pipeline

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bardoinference/bardo/host/config"
)

// Manager owns the current pipeline and replaces it on reload. A broken new
// configuration or plugin leaves the old pipeline serving and is logged.
type Manager struct {
	path string
	deps Deps
	cur  atomic.Pointer[Pipeline]

	reloadMu sync.Mutex // one reload at a time
	// Reloaded is called after each reload attempt with the error (nil on
	// success); tests and the event stream use it.
	Reloaded func(error)
}

// NewManager loads path and builds the first pipeline.
func NewManager(ctx context.Context, path string, deps Deps) (*Manager, error) {
	m := &Manager{path: path, deps: deps}
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
	return Build(ctx, cfg, m.deps)
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

// Reload rebuilds the pipeline from the configuration file and swaps it in.
// An unchanged file is skipped. On failure the current pipeline keeps serving.
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
	m.deps.Log.Info("pipeline reloaded", "took", time.Since(start).Round(time.Millisecond))
	m.logProviders(p)
	return nil
}

// Watch reloads on SIGHUP and whenever pipeline.toml or a plugin file it names
// changes, until ctx is done.
func (m *Manager) Watch(ctx context.Context, interval time.Duration) {
	config.NotifySIGHUP(ctx, func() {
		m.deps.Log.Info("SIGHUP: reloading pipeline")
		m.Reload(ctx)
	})
	files := []string{m.path}
	p := m.Peek()
	for _, l := range p.Config.Layers {
		files = append(files, l.Plugin)
	}
	for _, pr := range p.Config.Providers {
		files = append(files, pr.Plugin)
	}
	config.WatchFiles(ctx, files, interval, func() {
		m.deps.Log.Info("configuration or plugin file changed: reloading pipeline")
		m.Reload(ctx)
	})
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
