// Package pipeline turns a validated pipeline.toml into running plugins and
// runs a request's phases through them: the request phase through the layers
// in file order, the choice of provider, the provider's encode/decode, and the
// response or stream phase through the layers in reverse order.
//
// A Pipeline is immutable once built. Reloading builds a new one and the
// Manager swaps it in atomically; requests in flight finish on the pipeline
// they started on, which is retired when its last request releases it. A
// new pipeline reuses the old one's plugins whose entries did not change
// (shared.go); a plugin is closed when the last pipeline holding it retires.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Deps are the host services plugins reach through host functions.
type Deps struct {
	Log     *slog.Logger
	Cache   wazero.CompilationCache
	KV      sandbox.KV
	Metrics sandbox.Metrics
	// Services are the local models, vector index and internal completions
	// (ABI v1.2); each unset one answers its host functions with an error.
	Services sandbox.Services
	// Models loads the [[model]] entries before the plugins that use them
	// (host/models/registry); nil when the host runs no local models, and
	// then a file declaring some is refused.
	Models ModelLoader
	// Catalogs refreshes the providers' model catalogs from their backends
	// (catalog_refresh); nil: the static [[provider.model]] entries only.
	Catalogs CatalogSource
	// Watchers learn the enabled providers of every pipeline built (the
	// health tracker's active probes).
	Watchers []ProviderWatcher
	Getenv   func(string) string // credential lookup; nil means os.Getenv
}

// ProviderWatcher is told the providers of each new pipeline.
type ProviderWatcher interface {
	Sync(providers []*Provider)
}

// CatalogSource keeps refreshed model catalogs (host/daemon owns one, so
// refreshers survive reloads).
type CatalogSource interface {
	// Sync makes the source refresh exactly the enabled providers that set
	// catalog_refresh.
	Sync(providers []*Provider)
	// Models returns the provider's refreshed catalog (its static entries
	// merged in), or false when it is not refreshed.
	Models(provider string) ([]catalog.Model, bool)
	// Version changes whenever a refreshed catalog does.
	Version() uint64
}

// ModelLoader makes the host's local models match a pipeline's [[model]]
// entries.
type ModelLoader interface {
	Sync(opts config.Models, specs []config.Model) error
}

// Layer is a loaded [[layer]].
type Layer struct {
	Spec   config.Layer
	Plugin *sandbox.Plugin
	Desc   wire.Descriptor
	Phases wire.Phase // the phases both pipeline.toml and the plugin agree on

	idx   int  // position in Pipeline.Layers: its bit in Exchange.skip
	watch bool // a stream-phase layer that only watches (wire.FlagWatchStream)
	// run is the number of request-phase layers from this one on that
	// are entries of one module exporting bardo_on_request_run (ABI
	// v1.7): more than one, and RequestPhase runs them in one call.
	// runPlugins are their plugins, in order.
	run        int
	runPlugins []*sandbox.Plugin
	// answerRun: the layer's module runs several entries' on_response in
	// one call (ABI v1.8, bardo_on_response_run) and answer runs are on;
	// consecutive such layers of one module that are called for an
	// answer are called once (answerRunOf).
	answerRun bool
}

// Provider is a loaded [[provider]].
type Provider struct {
	Spec    config.Provider
	Plugin  *sandbox.Plugin
	Enabled bool   // false when its credential could not be resolved
	Why     string // why it is disabled
	// Described is the plugin's own describe() (nil: the plugin does not
	// describe itself); pipeline.toml is laid over it (config.Overlay).
	Described *routing.ProviderDescription
	// customResolve: the plugin answers resolve() itself.
	customResolve bool
	secret        string
	log           *slog.Logger
}

// Pipeline is one generation of loaded plugins.
type Pipeline struct {
	Config    *config.Config
	Layers    []*Layer
	Providers []*Provider

	request  []*Layer // layers in the request phase, in order
	response []*Layer // layers in the response phase, in reverse order
	stream   []*Layer // layers in the stream phase, in reverse order
	fallback []*Layer // layers that may answer when every provider failed, in order

	catalogs CatalogSource
	watchers []ProviderWatcher
	descMu   sync.Mutex
	descVer  atomic.Uint64
	desc     atomic.Pointer[[]routing.ProviderDescription] // enabled providers, for intent routing
	prices   atomic.Pointer[priceIndex]                    // their priced models (prices.go)

	// Every plugin of the pipeline, held in registry; released once, when
	// the pipeline retires (or its build fails).
	registry    *registry
	held        []*sharedPlugin
	releaseOnce sync.Once
	// How many plugins the build loaded and how many it took over from
	// pipelines already running (the "pipeline reloaded" line).
	loaded, reused int

	log     *slog.Logger
	active  atomic.Int64
	retired atomic.Bool
	done    chan struct{}
	once    sync.Once
}

// Build loads every enabled plugin of cfg. Plugins compile in parallel (one per
// CPU); any failure closes what was loaded and names the entry's line. The
// pipeline shares its plugins with no other (the Manager's builds do).
func Build(ctx context.Context, cfg *config.Config, deps Deps) (*Pipeline, error) {
	return build(ctx, cfg, deps, newRegistry())
}

// build is Build taking the plugins it can from reg, which must only ever be
// used with the same deps (the plugins keep the deps they were loaded with).
func build(ctx context.Context, cfg *config.Config, deps Deps, reg *registry) (*Pipeline, error) {
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p := &Pipeline{Config: cfg, log: deps.Log, done: make(chan struct{}), catalogs: deps.Catalogs, watchers: deps.Watchers, registry: reg}
	switch {
	case deps.Models != nil:
		if err := deps.Models.Sync(cfg.Models, cfg.ModelSpecs); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Path, err)
		}
	case len(cfg.ModelSpecs) > 0:
		return nil, fmt.Errorf("%s:%d: [[model]] entries need a host with local models", cfg.Path, cfg.ModelSpecs[0].Line)
	}

	type job struct {
		spec *config.PluginSpec
		out  **sandbox.Plugin
	}
	var jobs []job
	for i := range cfg.Layers {
		if !cfg.Layers[i].Enabled {
			continue
		}
		l := &Layer{Spec: cfg.Layers[i]}
		p.Layers = append(p.Layers, l)
		jobs = append(jobs, job{&l.Spec.PluginSpec, &l.Plugin})
	}
	for i := range cfg.Providers {
		if !cfg.Providers[i].Enabled {
			continue
		}
		pr := &Provider{Spec: cfg.Providers[i], Enabled: true}
		if ref := pr.Spec.Credential; ref != "" {
			secret, ok, err := config.ResolveCredential(ref, getenv)
			switch {
			case err != nil:
				return nil, fmt.Errorf("%s:%d: provider %s: credential: %w", cfg.Path, pr.Spec.Line, pr.Spec.Name, err)
			case !ok:
				pr.Enabled, pr.Why = false, "credential "+ref+" is not set"
			default:
				pr.secret = secret
			}
		}
		p.Providers = append(p.Providers, pr)
		if pr.Enabled {
			jobs = append(jobs, job{&pr.Spec.PluginSpec, &pr.Plugin})
		}
	}

	groups := groupJobs(jobs, func(j job) *config.PluginSpec { return j.spec })
	sem := make(chan struct{}, max(runtime.NumCPU(), 1))
	errs := make([]error, len(groups))
	held := make([]*sharedPlugin, len(groups))
	reused := make([]bool, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			began := time.Now()
			entries := make([]sandbox.Options, len(g))
			for k, j := range g {
				entries[k] = sandbox.Options{
					Name:        j.spec.Name,
					Entry:       j.spec.Entry,
					Path:        j.spec.Plugin,
					Trusted:     j.spec.Trusted,
					MemoryLimit: j.spec.Memory,
					PoolSize:    j.spec.Pool,
					Timeout:     j.spec.Timeout,
					Config:      j.spec.Config,
					Cache:       deps.Cache,
					Log:         deps.Log,
					KV:          deps.KV,
					Metrics:     deps.Metrics,
					Services:    deps.Services,
				}
			}
			s, ok, err := reg.acquire(ctx, entries)
			if err != nil {
				errs[i] = fmt.Errorf("%s:%d: %w", cfg.Path, g[0].spec.Line, err)
				return
			}
			for k, j := range g {
				*j.out = s.plugins[k]
			}
			held[i], reused[i] = s, ok
			msg := "plugin loaded"
			if ok {
				msg = "plugin reused"
			}
			deps.Log.Debug(msg, "plugin", g[0].spec.Name, "entries", len(g), "file", g[0].spec.Plugin, "took", time.Since(began).Round(time.Millisecond))
		}()
	}
	wg.Wait()
	for i, s := range held {
		if s == nil {
			continue
		}
		p.held = append(p.held, s)
		if reused[i] {
			p.reused++
		} else {
			p.loaded++
		}
	}
	// On failure the pipeline never served: releasing what it took closes
	// the plugins it loaded and leaves those it shares with the running
	// pipeline as they were.
	if err := errors.Join(errs...); err != nil {
		p.releasePlugins()
		return nil, err
	}
	if err := p.link(); err != nil {
		p.releasePlugins()
		return nil, err
	}
	return p, nil
}

// groupJobs gathers the entries that share one module: those that set
// entry and name the same file with the same trusted and memory (the
// runtime's settings) load together, onto one compiled module and one
// pool. An entry naming a plugin of the module a group already has starts
// another group: in one instance each plugin has one set of variables.
// Other entries load alone, as before bundles.
func groupJobs[J any](jobs []J, spec func(J) *config.PluginSpec) [][]J {
	type moduleOf struct {
		path    string
		trusted bool
		memory  int64
	}
	var groups [][]J
	open := map[moduleOf][]int{} // indexes in groups, oldest first
	for _, j := range jobs {
		s := spec(j)
		if s.Entry == "" {
			groups = append(groups, []J{j})
			continue
		}
		k := moduleOf{s.Plugin, s.Trusted, s.Memory}
		placed := false
		for _, gi := range open[k] {
			taken := false
			for _, o := range groups[gi] {
				if spec(o).Entry == s.Entry {
					taken = true
					break
				}
			}
			if !taken {
				groups[gi] = append(groups[gi], j)
				placed = true
				break
			}
		}
		if !placed {
			open[k] = append(open[k], len(groups))
			groups = append(groups, []J{j})
		}
	}
	return groups
}

// link checks each plugin's descriptor against its entry and precomputes the
// per-phase layer lists. It only reads the plugins (their descriptors and
// exports; a provider's describe() is an ordinary call): everything it works
// out lives in this pipeline's Layer and Provider values, so a plugin shared
// with the running pipeline serves that one unchanged.
func (p *Pipeline) link() error {
	var errs []error
	for i, l := range p.Layers {
		l.idx = i
		l.Desc = l.Plugin.Descriptor()
		if l.Desc.Kind != "layer" {
			errs = append(errs, fmt.Errorf("%s:%d: layer %s: %s is a %s plugin", p.Config.Path, l.Spec.Line, l.Spec.Name, l.Spec.Plugin, l.Desc.Kind))
			continue
		}
		l.Phases = wire.Phase(l.Spec.Phases) & l.Desc.Phases
		if missing := wire.Phase(l.Spec.Phases) &^ l.Desc.Phases; missing != 0 {
			p.log.Warn("layer asked for phases its plugin does not implement; skipping them",
				"layer", l.Spec.Name, "phases", config.Phase(missing).String())
		}
		// A watcher's streamed answers go to its on_response (exec.go).
		l.watch = l.Desc.Flags&wire.FlagWatchStream != 0 && l.Phases&wire.PhaseStream != 0 && l.Desc.Phases&wire.PhaseResponse != 0
		if l.Phases&wire.PhaseRequest != 0 {
			p.request = append(p.request, l)
			// The fallback phase follows the request phase: a layer finds
			// its answer by what it noted about the request there.
			if l.Desc.Phases&wire.PhaseFallback != 0 {
				p.fallback = append(p.fallback, l)
			}
		}
	}
	p.linkRuns()
	for i := len(p.Layers) - 1; i >= 0; i-- {
		l := p.Layers[i]
		if l.Phases&wire.PhaseResponse != 0 {
			p.response = append(p.response, l)
		}
		if l.Phases&wire.PhaseStream != 0 {
			p.stream = append(p.stream, l)
		}
	}
	for _, pr := range p.Providers {
		if pr.Plugin == nil {
			continue
		}
		if d := pr.Plugin.Descriptor(); d.Kind != "provider" {
			errs = append(errs, fmt.Errorf("%s:%d: provider %s: %s is a %s plugin", p.Config.Path, pr.Spec.Line, pr.Spec.Name, pr.Spec.Plugin, d.Kind))
			continue
		}
		if err := pr.describe(p.log); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: provider %s: %w", p.Config.Path, pr.Spec.Line, pr.Spec.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err // the old pipeline keeps serving: leave its catalogs and probes be
	}
	if p.catalogs != nil {
		p.catalogs.Sync(p.Providers)
	}
	for _, w := range p.watchers {
		w.Sync(p.Providers)
	}
	p.buildDescriptions()
	return nil
}

// Acquire marks a request as running on p. It returns false when p was retired
// in the meantime; the caller then takes the Manager's current pipeline.
func (p *Pipeline) acquire() bool {
	p.active.Add(1)
	if p.retired.Load() {
		p.release()
		return false
	}
	return true
}

func (p *Pipeline) release() {
	if p.active.Add(-1) == 0 && p.retired.Load() {
		p.once.Do(func() { close(p.done) })
	}
}

// retire stops new requests from starting on p and releases its plugins once
// the requests in flight have finished; those no newer pipeline shares close.
func (p *Pipeline) retire() {
	p.retired.Store(true)
	if p.active.Load() == 0 {
		p.once.Do(func() { close(p.done) })
	}
	go func() {
		<-p.done
		p.releasePlugins()
	}()
}

// releasePlugins drops p's hold on its plugins, once however often it is
// called: a second release would close a plugin another pipeline still uses.
func (p *Pipeline) releasePlugins() {
	p.releaseOnce.Do(func() {
		for _, s := range p.held {
			p.registry.release(s)
		}
	})
}

// Close releases p's plugins now (for shutdown and tests): those no other
// pipeline holds are closed.
func (p *Pipeline) Close() { p.releasePlugins() }
