// Package sandbox runs WASM plugins (ABI v1) under wazero: it compiles a
// plugin once, keeps a bounded pool of instances (one call in flight per
// instance), caps each instance's memory, bounds each call's time, routes the
// guest's stderr to the log, and throws an instance away after any trap so a
// misbehaving plugin costs one call, never the process.
//
// # Trusted and untrusted plugins
//
// wazero can only interrupt guest code if the runtime is built with
// WithCloseOnContextDone(true), which makes guest code 5–9× slower (wazero
// issue #2466). Without it a looping guest cannot be stopped and, because
// compiled guest code has no preemption points, blocks the Go garbage
// collector and so freezes the whole process. Each plugin therefore chooses:
//
//   - Trusted (first-party, reviewed): full speed, never interrupted. Its
//     timeout is a latency budget, not a deadline: a call that completes is
//     kept however long it took (its result is sound, and on a busy machine
//     wall-clock time says more about the neighbours than about the plugin);
//     a call over budget is counted (Late, the late_calls_total metric). The
//     request's deadline bounds the call's host services and whether a call
//     starts at all; the complete host function, a network call, is also
//     bounded by the budget. A call that never returns is never stopped.
//   - Untrusted (third-party; the default): interruptible; a call that
//     exceeds its timeout (or the request's deadline) is aborted and its
//     instance discarded.
//
// Either way a call's wait for a free instance is bounded by the request's
// deadline, not by the plugin's timeout.
package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Options configure one plugin.
type Options struct {
	Name        string        // the name in pipeline.toml (logs, metrics, kv namespace)
	Path        string        // the .wasm file
	Trusted     bool          // see the package doc
	MemoryLimit int64         // bytes of linear memory per instance; rounded down to 64 KiB pages
	PoolSize    int           // instances at most (≥ 1)
	Timeout     time.Duration // per call; 0 means no limit beyond the caller's context
	Config      []byte        // the plugin's config table as JSON, served by the config host function
	// Entry names the plugin within a bundle module (ABI v1.5): "" takes
	// the module's only plugin, or else the one named Name.
	Entry string

	// Code, when set, is the module's bytes as already read from Path (Path
	// then only names it in messages): a caller that keys plugins by a hash
	// of the file loads exactly the bytes it hashed, even if the file is
	// replaced in between.
	Code []byte

	Cache    wazero.CompilationCache // shared compilation cache; nil compiles every time
	Log      *slog.Logger
	KV       KV       // nil: kv host functions fail
	Metrics  Metrics  // nil: metrics are dropped
	Services Services // models, vectors, completions; each nil one fails its host functions
}

// KV is the key/value store behind the kv_* host functions. Keys arrive
// already namespaced by plugin and tenant. Get and Delete must not keep
// their key past the call: the sandbox builds it in a buffer it reuses.
type KV interface {
	Get(key string) ([]byte, bool)
	Put(key string, val []byte, ttl time.Duration) error
	Delete(key string) error
}

// Metrics receives the metric host function's samples.
type Metrics interface {
	PluginMetric(plugin string, kind int, name string, value float64)
}

// HostMetrics is implemented by a Metrics that also takes the sandbox's own
// declared metrics (bardo_sandbox_*: call latency, failures, pool waits,
// instances); telemetry.Registry does, a test sink need not.
type HostMetrics interface {
	Add(name string, v float64, labels ...string)
	Set(name string, v float64, labels ...string)
	Observe(name string, v float64, labels ...string)
}

// CallInfo identifies the request a call serves; host functions use it to
// namespace kv keys by tenant and to tag logs.
type CallInfo struct {
	RequestID string
	Tenant    string
}

// Errors a Call can return, for callers that apply on_error policies.
var (
	ErrTimeout  = errors.New("plugin call timed out")
	ErrTrap     = errors.New("plugin trapped")
	ErrPoolWait = errors.New("no plugin instance became free")
)

// CallError is a failure reported by the plugin itself (StatusError output),
// as opposed to a trap or a timeout.
type CallError struct {
	Plugin string
	Msg    string
}

func (e *CallError) Error() string { return fmt.Sprintf("plugin %s: %s", e.Plugin, e.Msg) }

// Plugin is a loaded plugin: one entry of a module (a plain plugin is a
// module of one), with the entry's own name, config and timeout. The
// module's compiled code and instance pool are shared by every Plugin
// loaded from it together (LoadModule).
type Plugin struct {
	*module
	opts  Options
	desc  wire.Descriptor
	index uint32 // the entry's index in the module (bardo_select)
	log   *slog.Logger

	closed    atomic.Bool
	closeOnce sync.Once

	host      HostMetrics // nil: the sandbox's own metrics are dropped
	observers [len(exportNames)]atomic.Pointer[func(float64)]

	late atomic.Int64
}

// module is a compiled module and its instances. Every instance is
// initialised for every entry loaded from it (each entry's Init with that
// entry's config), so any instance serves any of them: in the guest each
// plugin keeps its state in its own package, and one instance runs one
// call at a time.
type module struct {
	name     string // for the pool's metrics and logs
	code     *compiled
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	entries  []*Plugin
	bundle   bool // exports bardo_select: calls select their entry

	idle  chan *instance
	slots chan struct{}

	regex regexSets // compiled by the regex_compile host function

	open         atomic.Int32 // entries not yet closed
	runtimeFreed atomic.Bool

	// fresh is the linear memory of a newly initialised instance: Shrink
	// replaces an idle instance that grew past it.
	fresh uint32

	// Counters for tests and metrics.
	instantiated atomic.Int64
	discarded    atomic.Int64
	shrunk       atomic.Int64

	// The runs' series: bardo_on_request_run's and bardo_on_response_run's.
	runObs [2]atomic.Pointer[func(float64)]
}

type instance struct {
	mod api.Module
	mem api.Memory
	buf api.Function
	sel api.Function // bardo_select, nil before v1.5
	cur uint32       // the entry selected last
	// pooled: the instance holds one of the pool's slots (tests make
	// instances outside it). surplus: it gave its slot up while it waited
	// on an upstream (lend) and found none free again (reclaim): it is
	// closed when its call ends.
	pooled, lent, surplus bool
	ops                   [len(exportNames)]api.Function
	stack                 [2]uint64
	cs                    callState // the call in progress's (callInstanceAt)
	run                   []*Plugin // the entries of the run about to start (RunRequest, RunResponse)
}

var exportNames = [...]string{
	plugin.OpDescribe:     "bardo_describe",
	plugin.OpInit:         "bardo_init",
	plugin.OpOnRequest:    "bardo_on_request",
	plugin.OpOnResponse:   "bardo_on_response",
	plugin.OpOnStream:     "bardo_on_stream",
	plugin.OpEncode:       "bardo_encode",
	plugin.OpDecode:       "bardo_decode",
	plugin.OpDecodeStream: "bardo_decode_stream",
	// v1.3
	plugin.OpProviderDescribe: "bardo_provider_describe",
	plugin.OpResolve:          "bardo_resolve",
	plugin.OpOnFallback:       "bardo_on_fallback",
	// v1.7
	plugin.OpOnRequestRun: "bardo_on_request_run",
	// v1.8
	plugin.OpOnResponseRun: "bardo_on_response_run",
}

const pageSize = 64 << 10

// initTimeout bounds a plugin's Init on a new instance (untrusted plugins are
// interrupted at it; a trusted one's host services are).
const initTimeout = 10 * time.Second

// Load compiles the plugin, starts one instance to read its descriptor and
// check its ABI, and keeps that instance in the pool.
func Load(ctx context.Context, opts Options) (*Plugin, error) {
	ps, err := LoadModule(ctx, []Options{opts})
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// LoadModule loads several entries of one module (ABI v1.5 bundles) that
// share its compiled code and one pool of instances. Every entry must name
// the same module (Path, or Code), with the same Trusted and MemoryLimit
// (they are the runtime's), and a different plugin of it; the pool holds
// the largest PoolSize of them. The Plugins are closed one by one; the
// module goes with the last.
func LoadModule(ctx context.Context, entries []Options) ([]*Plugin, error) {
	if len(entries) == 0 {
		return nil, errors.New("sandbox: no entries to load")
	}
	opts := entries[0]
	for i := range entries {
		e := &entries[i]
		if e.PoolSize < 1 {
			e.PoolSize = 1
		}
		if e.Log == nil {
			e.Log = slog.Default()
		}
		if e.Path != opts.Path || e.Trusted != opts.Trusted || e.MemoryLimit != opts.MemoryLimit {
			return nil, fmt.Errorf("plugin %s: entries of one module must share its file, trusted and memory", e.Name)
		}
		opts.PoolSize = max(opts.PoolSize, e.PoolSize)
	}
	code := opts.Code
	if code == nil {
		var err error
		if code, err = os.ReadFile(opts.Path); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", opts.Name, err)
		}
	}
	rc := wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(!opts.Trusted)
	if opts.MemoryLimit > 0 {
		pages := opts.MemoryLimit / pageSize
		if pages < 1 {
			pages = 1
		}
		if pages > 65536 {
			pages = 65536
		}
		rc = rc.WithMemoryLimitPages(uint32(pages))
	}
	if opts.Cache != nil {
		rc = rc.WithCompilationCache(opts.Cache)
	}
	m := &module{
		name:  opts.Name,
		idle:  make(chan *instance, opts.PoolSize),
		slots: make(chan struct{}, opts.PoolSize),
	}
	if len(entries) > 1 {
		m.name = filepath.Base(opts.Path)
	}
	for _, e := range entries {
		e.Code = nil // the compiled module is kept; the bytes need not be
		p := &Plugin{module: m, opts: e, log: e.Log.With("plugin", e.Name)}
		p.host, _ = e.Metrics.(HostMetrics)
		m.entries = append(m.entries, p)
	}
	m.open.Store(int32(len(entries)))
	first := m.entries[0]
	if first.host != nil {
		first.host.Set("bardo_sandbox_pool_size", float64(opts.PoolSize), "plugin", m.name)
	}
	key := codeKey{sum: sha256.Sum256(code), trusted: opts.Trusted, memory: opts.MemoryLimit, cache: opts.Cache}
	c, err := compile(ctx, key, rc, code)
	if err != nil {
		return nil, fmt.Errorf("plugin %s (%s): %w", opts.Name, opts.Path, err)
	}
	m.code, m.runtime, m.compiled = c, c.runtime, c.compiled
	fail := func(err error) ([]*Plugin, error) {
		c.release()
		return nil, fmt.Errorf("plugin %s (%s): %w", opts.Name, opts.Path, err)
	}
	m.slots <- struct{}{}
	in, err := first.newInstance(ctx)
	if err == nil {
		in.pooled = true
	}
	if err != nil {
		<-m.slots
		return fail(err)
	}
	if err := m.resolveEntries(ctx, in); err != nil {
		in.mod.Close(context.Background())
		<-m.slots
		return fail(err)
	}
	if err := m.initInstance(ctx, in); err != nil {
		<-m.slots
		return fail(err)
	}
	m.fresh = in.mem.Size()
	m.idle <- in
	return m.entries, nil
}

// resolveEntries reads the module's descriptors on its first instance and
// matches each entry to the plugin it names.
func (m *module) resolveEntries(ctx context.Context, in *instance) error {
	first := m.entries[0]
	count := uint32(1)
	if f := in.mod.ExportedFunction("bardo_entries"); f != nil && in.sel != nil {
		m.bundle = true
		if err := f.CallWithStack(ctx, in.stack[:]); err != nil {
			return fmt.Errorf("bardo_entries: %w", err)
		}
		count = uint32(in.stack[0])
		if count == 0 {
			return errors.New("the module registers no plugin")
		}
	}
	descs := make([]wire.Descriptor, count)
	names := make([]string, count)
	for i := range count {
		if err := first.selectEntry(ctx, in, i); err != nil {
			return err
		}
		out, err := first.callInstance(ctx, in, plugin.OpDescribe, nil, CallInfo{})
		if err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if err := descs[i].Decode(out); err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if descs[i].ABI != plugin.ABIVersion {
			return fmt.Errorf("built for ABI v%d, this host speaks v%d", descs[i].ABI, plugin.ABIVersion)
		}
		if descs[i].Kind != "layer" && descs[i].Kind != "provider" {
			return fmt.Errorf("describe: unknown kind %q", descs[i].Kind)
		}
		names[i] = descs[i].Name
	}
	taken := map[uint32]string{}
	for _, p := range m.entries {
		i, ok := uint32(0), count == 1 && p.opts.Entry == ""
		want := p.opts.Entry
		if want == "" {
			want = p.opts.Name
		}
		for j := range count {
			if ok {
				break
			}
			if names[j] == want {
				i, ok = j, true
			}
		}
		if !ok {
			return fmt.Errorf("the module has no plugin %q (it has %s)", want, strings.Join(names, ", "))
		}
		if other, dup := taken[i]; dup {
			return fmt.Errorf("entries %s and %s both use plugin %s of one module: load them apart", other, p.opts.Name, names[i])
		}
		taken[i] = p.opts.Name
		p.index, p.desc = i, descs[i]
	}
	return nil
}

// compiled is a module compiled in its own runtime, shared by every load of
// the same bytes with the same runtime settings (the modules of a
// reloaded bundle whose entries' configs changed, two groups of entries of
// one bundle, one adapter serving two providers): wazero decodes and
// validates a module on every CompileModule, cache hit or not (~35 ms for a
// 3.7 MB module; 6.4 MB for bardo.wasm), and each runtime keeps its own
// copy of the compiled code. Each load keeps its own pool of instances.
type compiled struct {
	key      codeKey
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	refs     int // guarded by compiledMu
}

// codeKey is what a runtime and its compiled module depend on.
type codeKey struct {
	sum     [sha256.Size]byte
	trusted bool  // WithCloseOnContextDone
	memory  int64 // WithMemoryLimitPages
	cache   wazero.CompilationCache
}

var (
	compiledMu sync.Mutex
	compiledBy = map[codeKey]*compiled{}
)

// compile returns the shared compiled module for key, compiling code in a
// new runtime (rc) when there is none; the caller holds a reference.
func compile(ctx context.Context, key codeKey, rc wazero.RuntimeConfig, code []byte) (*compiled, error) {
	compiledMu.Lock()
	if c := compiledBy[key]; c != nil {
		c.refs++
		compiledMu.Unlock()
		return c, nil
	}
	compiledMu.Unlock()
	// Compiled without the lock: modules of different keys load in parallel.
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (*compiled, error) {
		r.Close(context.Background())
		return nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return fail(err)
	}
	if err := instantiateHostModule(ctx, r); err != nil {
		return fail(err)
	}
	cm, err := r.CompileModule(ctx, code)
	if err != nil {
		return fail(fmt.Errorf("compile: %w", err))
	}
	if err := checkImports(cm); err != nil {
		return fail(err)
	}
	compiledMu.Lock()
	defer compiledMu.Unlock()
	if c := compiledBy[key]; c != nil { // compiled meanwhile by another load
		r.Close(context.Background())
		c.refs++
		return c, nil
	}
	c := &compiled{key: key, runtime: r, compiled: cm, refs: 1}
	compiledBy[key] = c
	return c, nil
}

// release drops a reference; the last closes the runtime (every module
// loaded on it has been closed by then).
func (c *compiled) release() {
	compiledMu.Lock()
	c.refs--
	last := c.refs == 0
	if last {
		delete(compiledBy, c.key)
	}
	compiledMu.Unlock()
	if last {
		c.runtime.Close(context.Background())
	}
}

// checkImports refuses a plugin that imports host functions this host does not
// provide, with a message naming them (wazero's own error is less direct).
func checkImports(cm wazero.CompiledModule) error {
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case "wasi_snapshot_preview1":
		case hostModule:
			if _, ok := hostFunctions[name]; !ok {
				return fmt.Errorf("imports %s.%s, which this host (ABI v%d) does not provide", mod, name, plugin.ABIVersion)
			}
		default:
			return fmt.Errorf("imports unknown module %q (function %s)", mod, name)
		}
	}
	return nil
}

// Descriptor is what the plugin said about itself.
func (p *Plugin) Descriptor() wire.Descriptor { return p.desc }

// Exports reports whether the plugin exports op's function (the optional
// exports of later ABI minor versions).
func (p *Plugin) Exports(op plugin.Op) bool {
	if int(op) >= len(exportNames) {
		return false
	}
	_, ok := p.compiled.ExportedFunctions()[exportNames[op]]
	return ok
}

// SharesPool reports whether p and q draw on one pool of instances: entries
// of one module loaded together (LoadModule).
func (p *Plugin) SharesPool(q *Plugin) bool { return p.module == q.module }

// Name is the plugin's name from the configuration.
func (p *Plugin) Name() string { return p.opts.Name }

// Closed reports whether Close was called (calls in flight may still be
// finishing on their instances).
func (p *Plugin) Closed() bool { return p.closed.Load() }

// Trusted reports the plugin's timeout policy.
func (p *Plugin) Trusted() bool { return p.opts.Trusted }

// Stats reports how many instances were created and discarded (after traps or
// timeouts) over the plugin's life — its module's, which a bundle's entries
// share.
func (p *Plugin) Stats() (instantiated, discarded int64) {
	return p.instantiated.Load(), p.discarded.Load()
}

// Late reports how many calls of a trusted plugin completed over its
// timeout (and were kept) over the plugin's life.
func (p *Plugin) Late() int64 { return p.late.Load() }

// guestGOGC is the GOGC a guest's runtime starts with.
const guestGOGC = "25"

// newInstance instantiates the module (the guest's _initialize runs) but
// initialises no entry.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	stderr := &lineLogger{log: p.log, level: slog.LevelWarn}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithStderr(stderr).
		WithStdout(&lineLogger{log: p.log, level: slog.LevelInfo}).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(sliceSleep).
		WithRandSource(rand.Reader).
		// A Go guest's heap grows in 4 MiB steps and is never given back;
		// collecting at 25 % growth kept loaded instances at 5–6 MiB
		// instead of 8–9 with no measurable CPU cost (docs/performance.md,
		// "Where a loaded request's time and memory go"). Other guests
		// ignore it.
		WithEnv("GOGC", guestGOGC)
	// Instantiation and _initialize run on a context free of the request's
	// deadline: a half-initialized instance is useless, and a plugin's own
	// initializer is bounded by the load-time checks.
	mod, err := p.runtime.InstantiateModule(context.WithoutCancel(ctx), p.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	in := &instance{mod: mod, mem: mod.Memory(), buf: mod.ExportedFunction("bardo_buffer"), sel: mod.ExportedFunction("bardo_select")}
	if in.buf == nil || in.mem == nil {
		mod.Close(context.Background())
		return nil, errors.New("not an ABI v1 plugin: missing export bardo_buffer or memory (was it built with -buildmode=c-shared and the sdk?)")
	}
	for op, name := range exportNames {
		in.ops[op] = mod.ExportedFunction(name)
	}
	p.instantiated.Add(1)
	p.count("bardo_sandbox_instances_created_total")
	return in, nil
}

// initInstance runs every entry's Init on in, each with its own config;
// on failure in is closed.
func (m *module) initInstance(ctx context.Context, in *instance) error {
	// Init is part of making the instance, not of the request that happened
	// to need it: it gets its own deadline, so a request with little time
	// left cannot leave a half-initialized instance behind.
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), initTimeout)
	defer cancel()
	for _, p := range m.entries {
		err := p.selectEntry(ictx, in, p.index)
		if err == nil {
			_, err = p.callInstance(ictx, in, plugin.OpInit, nil, CallInfo{})
		}
		if err != nil {
			in.mod.Close(context.Background())
			m.discarded.Add(1)
			p.count("bardo_sandbox_instances_discarded_total")
			if len(m.entries) > 1 {
				return fmt.Errorf("init %s: %w", p.opts.Name, err)
			}
			return fmt.Errorf("init: %w", err)
		}
	}
	return nil
}

// instantiate makes an instance ready to serve every entry.
func (p *Plugin) instantiate(ctx context.Context) (*instance, error) {
	in, err := p.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.initInstance(ctx, in); err != nil {
		return nil, err
	}
	return in, nil
}

// selectEntry makes in serve entry i (bardo_select), unless it already does.
// A module without the export has one entry.
func (p *Plugin) selectEntry(ctx context.Context, in *instance, i uint32) error {
	if in.sel == nil || in.cur == i {
		return nil
	}
	in.stack[0] = uint64(i)
	if err := in.sel.CallWithStack(ctx, in.stack[:]); err != nil {
		return p.callFailed(ctx, err)
	}
	if uint32(in.stack[0]) != 0 {
		return fmt.Errorf("plugin %s: the module has no entry %d", p.opts.Name, i)
	}
	in.cur = i
	return nil
}

// sliceSleep serves a guest's sleep (WASI poll_oneoff) in short slices. A
// host-side sleep cannot be interrupted, so one long sleep would hold an
// untrusted call past its timeout; woken early, the guest's runtime sees its
// timer is not due and sleeps again, and wazero stops it between slices.
func sliceSleep(ns int64) {
	time.Sleep(time.Duration(min(ns, int64(5*time.Millisecond))))
}

// acquire takes an idle instance, or creates one while the pool has room, or
// waits for one until ctx is done.
func (p *Plugin) acquire(ctx context.Context) (*instance, error) {
	select {
	case in := <-p.idle:
		return in, nil
	default:
	}
	if p.host != nil && len(p.slots) == cap(p.slots) {
		// Every instance is busy: this call queues.
		p.host.Add("bardo_sandbox_pool_waits_total", 1, "plugin", p.opts.Name)
	}
	select {
	case in := <-p.idle:
		return in, nil
	case p.slots <- struct{}{}:
		in, err := p.instantiate(ctx)
		if err == nil {
			in.pooled = true
		}
		if err != nil {
			<-p.slots
			return nil, err
		}
		return in, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("plugin %s: %w: %w", p.opts.Name, ErrPoolWait, ctx.Err())
	}
}

func (p *Plugin) release(in *instance) {
	if p.open.Load() == 0 || in.surplus {
		p.discard(in)
		return
	}
	p.idle <- in
}

func (p *Plugin) discard(in *instance) {
	in.mod.Close(context.Background())
	p.discarded.Add(1)
	p.count("bardo_sandbox_instances_discarded_total")
	if !in.surplus {
		<-p.slots
	}
	p.maybeFreeRuntime()
}

// Shrink trims the module's pool while the gateway is idle: of the idle
// instances it keeps the keep smallest and closes the rest, and replaces a
// kept one whose linear memory grew past a fresh instance's with a fresh
// one. Wasm memory never shrinks and a Go guest's heap grows in 4 MiB
// steps, so after a burst every instance would otherwise keep what it grew
// to (docs/performance.md, "Idle release, shrinking pools and the memory
// limit"). What a guest keeps in its own memory (memos, caches) goes with
// its instance; the shipped plugins keep what must last in kv. Instances
// busy in a call are left alone; a call arriving meanwhile waits for one or
// makes one, as it would at a full pool. It returns how many instances it
// closed or replaced. A bundle's entries share one pool: shrinking any of
// them shrinks it.
func (p *Plugin) Shrink(ctx context.Context, keep int) (shrunk int) {
	if p.open.Load() == 0 {
		return 0
	}
	var idle []*instance
drain:
	for {
		select {
		case in := <-p.idle:
			idle = append(idle, in)
		default:
			break drain
		}
	}
	slices.SortFunc(idle, func(a, b *instance) int { return cmp.Compare(a.mem.Size(), b.mem.Size()) })
	for i, in := range idle {
		if i >= max(keep, 0) {
			p.retire(in)
			<-p.slots
			shrunk++
			continue
		}
		if in.mem.Size() > p.fresh {
			// The fresh instance takes over the grown one's slot; if it
			// cannot be made, the grown one stays.
			if f, err := p.instantiate(ctx); err == nil {
				f.pooled = true
				p.retire(in)
				in = f
				shrunk++
			}
		}
		p.release(in) // closed meanwhile: discarded
	}
	return shrunk
}

// retire closes an instance Shrink no longer wants (not a failure: it is
// counted apart from discards).
func (p *Plugin) retire(in *instance) {
	in.mod.Close(context.Background())
	p.shrunk.Add(1)
	p.count("bardo_sandbox_instances_shrunk_total")
}

// Shrunk reports how many instances Shrink closed or replaced over the
// module's life.
func (p *Plugin) Shrunk() int64 { return p.shrunk.Load() }

// lend gives up in's pool slot while its call waits on an upstream (the
// complete host function: a summary can take seconds): the pool may make
// another instance meanwhile, so one layer's waits do not hold the
// instances every other layer of a bundle needs.
func (m *module) lend(in *instance) {
	if in.pooled && !in.lent {
		<-m.slots
		in.lent = true
	}
}

// reclaim takes a slot back after lend; when the pool is full meanwhile,
// the instance finishes its call and is closed (surplus) instead.
func (m *module) reclaim(in *instance) {
	if !in.lent {
		return
	}
	in.lent = false
	select {
	case m.slots <- struct{}{}:
	default:
		in.surplus = true
	}
}

// Call runs one op: it waits for a free instance (bounded by ctx), writes in
// into the guest, calls the export and returns a copy of the output (a
// successful result message, starting with the wire format version). An
// untrusted call runs under the plugin's timeout; a trusted one is measured
// against it (see the package doc). A trap or an interrupted call discards
// the instance. ctx already done: the call is not started.
func (p *Plugin) Call(ctx context.Context, op plugin.Op, in []byte, info CallInfo) (out []byte, err error) {
	return p.call(ctx, op, in, nil, info)
}

// Input is a call's input that writes itself into the guest's buffer: an
// input assembled from parts (wire.RequestEncoder) is copied once, into
// the guest, instead of into a buffer of its own first.
type Input interface {
	Len() int
	Put(dst []byte) // dst holds Len bytes
}

// CallInput is Call with an input written in place.
func (p *Plugin) CallInput(ctx context.Context, op plugin.Op, in Input, info CallInfo) ([]byte, error) {
	return p.call(ctx, op, nil, in, info)
}

// call is Call with the input in in, or, when src is set, written by src.
func (p *Plugin) call(ctx context.Context, op plugin.Op, in []byte, src Input, info CallInfo) (out []byte, err error) {
	if p.closed.Load() {
		return nil, fmt.Errorf("plugin %s: closed", p.opts.Name)
	}
	if err := ctx.Err(); err != nil {
		// The request's time is up (or it was abandoned): a trusted call
		// could not be stopped once started, and its answer is not wanted.
		return nil, fmt.Errorf("plugin %s: %w: not called, the request is over: %w", p.opts.Name, ErrTimeout, err)
	}
	// Waiting for a free instance is bounded by the request's own deadline;
	// the plugin's timeout bounds only the call itself, so a burst that
	// queues (or a re-instantiation after a trap) is not charged to it.
	inst, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if p.opts.Timeout > 0 && !p.opts.Trusted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
	}
	// The instance goes back to the pool, or is discarded, whatever happens:
	// a panic on the way (recovered further up) must not keep its slot.
	returned := false
	defer func() {
		if !returned {
			p.discard(inst)
		}
	}()
	began := time.Now()
	if err = p.selectEntry(ctx, inst, p.index); err == nil {
		out, err = p.callInstanceAt(ctx, inst, op, in, src, info, began)
	}
	if p.host != nil {
		p.observeCall(op, time.Since(began), err)
	}
	if p.opts.Trusted && p.opts.Timeout > 0 {
		if took := time.Since(began); took > p.opts.Timeout {
			p.overBudget(op, took, info)
		}
	}
	// An instance survives a plugin-reported error (its state is sound);
	// anything else — a trap, an interrupted call — may have left it broken.
	// wazero may also close a module whose deadline fired just as the call
	// returned.
	returned = true
	if (err != nil && !isPluginError(err)) || inst.mod.IsClosed() {
		p.discard(inst)
		if err == nil {
			err = fmt.Errorf("plugin %s: %w", p.opts.Name, ErrTimeout)
		}
		return nil, err
	}
	p.release(inst)
	return out, err
}

// count adds one to a bardo_sandbox_instances_* counter labelled by the
// module (the plugin's name, or a bundle's file): instances are the
// module's, whichever entry needed one.
func (p *Plugin) count(name string) {
	if p.host != nil {
		p.host.Add(name, 1, "plugin", p.module.name)
	}
}

// observeCall records a call's latency and, when it failed, why.
func (p *Plugin) observeCall(op plugin.Op, took time.Duration, err error) {
	name := exportNames[op]
	if o := p.observer(op); o != nil {
		o(took.Seconds())
	} else {
		p.host.Observe("bardo_sandbox_call_seconds", took.Seconds(), "plugin", p.opts.Name, "op", name)
	}
	if err == nil {
		return
	}
	p.host.Add("bardo_sandbox_call_failures_total", 1, "plugin", p.opts.Name, "op", name, "kind", callKind(err))
}

// callKind names why a call failed, for bardo_sandbox_call_failures_total.
func callKind(err error) string {
	switch {
	case errors.Is(err, ErrTrap):
		return "trap"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error" // the plugin reported an error (its instance is kept)
}

// BoundMetrics is implemented by a HostMetrics that binds a histogram's
// series once (telemetry.Registry does): a plugin records every call's
// latency, and looking its series up by label values each time cost more
// than the observation.
type BoundMetrics interface {
	Observer(name string, labels ...string) func(float64)
}

// observer returns op's bound bardo_sandbox_call_seconds series, binding
// it at the op's first call (so only ops called have a series, as
// before); nil when the metrics cannot bind it (Observe then counts the
// drop, every call).
func (p *Plugin) observer(op plugin.Op) func(float64) {
	if f := p.observers[op].Load(); f != nil {
		return *f
	}
	b, ok := p.host.(BoundMetrics)
	if !ok {
		return nil
	}
	f := b.Observer("bardo_sandbox_call_seconds", "plugin", p.opts.Name, "op", exportNames[op])
	p.observers[op].Store(&f)
	return f
}

// metricCounter is the counter kind of the metric host function.
const metricCounter = 0

// overBudget records a trusted call that completed after its timeout: a
// metric and a debug line, not a failure (see the package doc).
func (p *Plugin) overBudget(op plugin.Op, took time.Duration, info CallInfo) {
	p.late.Add(1)
	if p.opts.Metrics != nil {
		p.opts.Metrics.PluginMetric(p.opts.Name, metricCounter, "late_calls_total", 1)
	}
	p.log.Debug("trusted plugin call over its time budget; result kept", "op", exportNames[op],
		"took", took, "budget", p.opts.Timeout, "request_id", info.RequestID)
}

func isPluginError(err error) bool {
	var ce *CallError
	return errors.As(err, &ce)
}

type callKey struct{}

type callState struct {
	p     *Plugin
	in    *instance // the instance the call runs on
	info  CallInfo
	began time.Time // the call's start: the complete host function's budget

	// A service reply that did not fit the guest's buffer, kept for the retry
	// (see Services).
	pending   []byte
	pendingIn string

	// scratch is the host functions' buffer for what they build and hand
	// on within one host call (a kv key, a service's reply); it, enc and
	// dec are the instance's, kept from call to call (resetCallState).
	scratch []byte
	enc     wire.Encoder
	dec     wire.Decoder

	// run, during a run (RunRequest, RunResponse), are the entries it runs;
	// the guest writes the position of the one running into the u32 at
	// runAt in its memory, and state serves that entry's host calls.
	run   []*Plugin
	runAt uint32
}

// scratchKeep is the largest scratch buffer an instance keeps between
// calls: one large service reply must not stay pinned.
const scratchKeep = 64 << 10

// resetCallState readies in's call state for a new call, keeping its
// buffers.
func (in *instance) resetCallState(p *Plugin, info CallInfo, began time.Time) *callState {
	cs := &in.cs
	scratch, enc := cs.scratch[:0], cs.enc
	if cap(scratch) > scratchKeep {
		scratch = nil
	}
	if cap(enc.Bytes()) > scratchKeep {
		enc = wire.Encoder{}
	}
	*cs = callState{p: p, in: in, info: info, began: began, scratch: scratch, enc: enc, run: in.run}
	return cs
}

func (p *Plugin) callInstance(ctx context.Context, in *instance, op plugin.Op, input []byte, info CallInfo) ([]byte, error) {
	return p.callInstanceAt(ctx, in, op, input, nil, info, time.Now())
}

// callInstanceAt runs op on in with input, or, when src is set, with what
// src writes in place; began is the call's start.
func (p *Plugin) callInstanceAt(ctx context.Context, in *instance, op plugin.Op, input []byte, src Input, info CallInfo, began time.Time) ([]byte, error) {
	fn := in.ops[op]
	if fn == nil {
		return nil, &CallError{Plugin: p.opts.Name, Msg: fmt.Sprintf("does not export %s", exportNames[op])}
	}
	// The instance's call state is reused from call to call (one call at a
	// time runs on an instance); its scratch buffers are kept.
	ctx = context.WithValue(ctx, callKey{}, in.resetCallState(p, info, began))

	n := len(input)
	if src != nil {
		n = src.Len()
	}
	in.stack[0] = uint64(n)
	if err := in.buf.CallWithStack(ctx, in.stack[:]); err != nil {
		return nil, p.callFailed(ctx, err)
	}
	ptr := uint32(in.stack[0])
	if in.run != nil {
		in.cs.runAt = ptr
	}
	if n > 0 {
		ok := false
		if src != nil {
			var dst []byte
			if dst, ok = in.mem.Read(ptr, uint32(n)); ok {
				src.Put(dst)
			}
		} else {
			ok = in.mem.Write(ptr, input)
		}
		if !ok {
			return nil, fmt.Errorf("plugin %s: %w: input buffer out of bounds", p.opts.Name, ErrTrap)
		}
	}
	in.stack[0] = uint64(n)
	if err := fn.CallWithStack(ctx, in.stack[:]); err != nil {
		return nil, p.callFailed(ctx, err)
	}
	packed := in.stack[0]
	optr, olen := uint32(packed>>32), uint32(packed)
	view, ok := in.mem.Read(optr, olen)
	if !ok || olen == 0 {
		return nil, fmt.Errorf("plugin %s: %w: output [%d,+%d) out of bounds", p.opts.Name, ErrTrap, optr, olen)
	}
	if view[0] == plugin.StatusError {
		return nil, &CallError{Plugin: p.opts.Name, Msg: string(view[1:])}
	}
	return append([]byte(nil), view...), nil
}

func (p *Plugin) callFailed(ctx context.Context, err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("plugin %s: %w", p.opts.Name, ErrTimeout)
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("plugin %s: call canceled: %w", p.opts.Name, context.Canceled)
		}
		p.log.Warn("plugin exited", "code", exit.ExitCode())
		return fmt.Errorf("plugin %s: %w: exited with code %d", p.opts.Name, ErrTrap, exit.ExitCode())
	}
	if ctx.Err() != nil && !p.opts.Trusted {
		return fmt.Errorf("plugin %s: %w", p.opts.Name, ErrTimeout)
	}
	p.log.Warn("plugin trapped", "err", err)
	return fmt.Errorf("plugin %s: %w: %w", p.opts.Name, ErrTrap, err)
}

// Close stops the plugin: idle instances are closed now, busy ones when their
// call returns (calls in flight finish on them); the runtime is freed with the
// last instance.
func (p *Plugin) Close() {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		if p.open.Add(-1) > 0 {
			return // the module's other entries still use it
		}
		for {
			select {
			case in := <-p.idle:
				p.discard(in)
				continue
			default:
			}
			break
		}
		p.maybeFreeRuntime()
	})
}

func (m *module) maybeFreeRuntime() {
	if m.open.Load() == 0 && len(m.slots) == 0 && m.runtimeFreed.CompareAndSwap(false, true) {
		m.code.release()
	}
}

// lineLogger turns a guest's stdout/stderr into log records, one per line, so
// a panic's message reaches the log under the plugin's name.
type lineLogger struct {
	log   *slog.Logger
	level slog.Level
	mu    sync.Mutex
	buf   []byte
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := indexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.log.Log(context.Background(), l.level, "plugin output", "line", string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 4096 { // a guest that never writes a newline
		l.log.Log(context.Background(), l.level, "plugin output", "line", string(l.buf))
		l.buf = l.buf[:0]
	}
	return len(b), nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

var _ io.Writer = (*lineLogger)(nil)

// MemoryBytes reports the linear memory of the idle instances (for metrics and
// benchmarks); instances busy in a call are not counted. A bundle's entries
// share their module's instances: each reports the same.
func (p *Plugin) MemoryBytes() (instances int, bytes uint64) {
	for {
		select {
		case in := <-p.idle:
			defer func() { p.idle <- in }()
			instances++
			bytes += uint64(in.mem.Size())
			continue
		default:
		}
		return instances, bytes
	}
}
