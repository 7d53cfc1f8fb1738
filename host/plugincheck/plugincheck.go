// Package plugincheck is the conformance kit for plugin authors: it loads a
// plugin the way the gateway does (host/sandbox: the same runtime, memory
// cap, timeout, host functions and wire encoding) and checks its contract —
// exports and ABI version, descriptor, every declared phase on fixture
// requests in both caller dialects, tolerance of unknown fields, no trap on
// empty or huge inputs, linear memory bounded across many calls, for
// providers describe() and resolve(), and the time per call. `bardo plugins
// test` prints its Report; Scaffold writes a new plugin that passes it.
package plugincheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Options configure one run of the checks.
type Options struct {
	Path   string // the .wasm file
	Config []byte // the plugin's [layer.config] / [provider.config] as JSON; nil: Configs, else {}
	// Configs are configs by plugin name (a bundle's entries each have
	// theirs), for the plugins Config does not set: pipeline.toml's.
	Configs map[string][]byte
	Entry   string // check only this plugin of a bundle module (ABI v1.5); "": every one

	// Calls is how many calls the memory and time checks make (default
	// 10,000). Each carries a different prompt, so a plugin that keeps
	// something per request in its own memory shows it.
	Calls int
	// Timeout bounds each call (default 1 s). The plugin runs untrusted,
	// as a third-party plugin does, so a call past it is interrupted.
	Timeout time.Duration
	// MemoryLimit is the instance's linear memory cap (default 64 MiB, the
	// host's default `memory`).
	MemoryLimit int64
	// MaxGrowth is how much an instance's linear memory may still grow
	// over the second half of the calls (default 4 MiB): by then a plugin
	// whose memory is bounded has reached its plateau.
	MaxGrowth int64
	// Probes are extra user texts: each is sent as the last user message
	// of the fixture request, to reach a plugin's special paths (a PII
	// sample, a cache command).
	Probes []string
	// Services are the models, vectors and completions the host offers;
	// each nil one fails its host functions, as on a host without it.
	Services sandbox.Services
	// Cache is a compilation cache; nil uses a fresh in-memory one.
	Cache wazero.CompilationCache
}

// Check is one verdict.
type Check struct {
	Name   string // stable: "exports", "load", "descriptor", "request/openai", "memory", …
	OK     bool
	Detail string // why it failed, or what was measured
}

// Report is the outcome of a run.
type Report struct {
	Path       string
	Entry      string // the plugin's name in a bundle module; "" for a module of one
	Descriptor wire.Descriptor
	Checks     []Check
	P50, P99   time.Duration // per call of the memory check's op
	Took       time.Duration // the whole run
}

// OK reports whether every check passed.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Failed returns the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Find returns the check named name.
func (r *Report) Find(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// Write prints the report, one line a check.
func (r *Report) Write(w io.Writer) {
	d := r.Descriptor
	path := r.Path
	if r.Entry != "" {
		path += "#" + r.Entry
	}
	if d.Kind != "" {
		fmt.Fprintf(w, "plugin %s: %s %q %s (ABI v%d)", path, d.Kind, d.Name, d.Version, d.ABI)
		if d.Kind == "layer" {
			fmt.Fprintf(w, ", phases %s, reads %s, writes %s", phaseNames(d.Phases), partNames(d.Reads), partNames(d.Writes))
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "plugin %s\n", path)
	}
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	failed := 0
	for _, c := range r.Checks {
		verdict := "PASS"
		if !c.OK {
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "%s  %-*s  %s\n", verdict, width, c.Name, c.Detail)
	}
	if failed == 0 && len(r.Checks) > 0 {
		fmt.Fprintf(w, "ok: %d checks passed in %s\n", len(r.Checks), r.Took.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "FAIL: %d of %d checks failed in %s\n", failed, len(r.Checks), r.Took.Round(time.Millisecond))
	}
}

// Run loads the plugin and checks it: one report for each plugin the
// module exports (a bundle, ABI v1.5, exports several; opts.Entry picks
// one). A module that cannot be loaded gets one report whose "exports",
// "abi" or "load" check failed.
func Run(ctx context.Context, opts Options) []*Report {
	began := time.Now()
	if opts.Calls <= 0 {
		opts.Calls = 10_000
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = 64 << 20
	}
	if opts.MaxGrowth <= 0 {
		opts.MaxGrowth = 4 << 20
	}
	if opts.Cache == nil {
		opts.Cache = wazero.NewCompilationCache()
		defer opts.Cache.Close(context.Background())
	}
	single := func(name, format string, args ...any) []*Report {
		r := &Report{Path: opts.Path, Took: time.Since(began)}
		r.Checks = append(r.Checks, Check{Name: name, Detail: fmt.Sprintf(format, args...)})
		return []*Report{r}
	}
	code, err := os.ReadFile(opts.Path)
	if err != nil {
		return single("exports", "%v", err)
	}
	info, err := inspect(ctx, opts.Cache, code)
	if err != nil {
		return single("exports", "%v", err)
	}
	if info.abi != plugin.ABIVersion {
		return single("abi", "bardo_abi_version() = %d, this host speaks v%d: the host refuses the module", info.abi, plugin.ABIVersion)
	}
	var ops []string
	for name := range info.exports {
		if strings.HasPrefix(name, "bardo_") && !slices.Contains(requiredExports, name) {
			ops = append(ops, name)
		}
	}
	slices.Sort(ops)
	exports := Check{Name: "exports", OK: true, Detail: fmt.Sprintf("%s; %s", strings.Join(requiredExports, ", "), strings.Join(ops, " "))}
	abi := Check{Name: "abi", OK: true, Detail: fmt.Sprintf("bardo_abi_version() = %d", info.abi)}
	var reports []*Report
	for i, d := range info.entries {
		if opts.Entry != "" && d.Name != opts.Entry {
			continue
		}
		t0 := time.Now()
		r := &Report{Path: opts.Path, Descriptor: d, Checks: []Check{exports, abi}}
		if len(info.entries) > 1 {
			r.Entry = d.Name
			r.Checks = append(r.Checks, Check{Name: "entry", OK: true,
				Detail: fmt.Sprintf("%d of %d in the module", i+1, len(info.entries))})
		}
		eo := opts
		if eo.Config == nil {
			eo.Config = opts.Configs[d.Name]
		}
		if eo.Config == nil {
			eo.Config = []byte(`{}`)
		}
		k := &kit{opts: eo, report: r, out: &guestOutput{}, exports: info.exports}
		k.run(ctx, code, r.Entry)
		r.Took = time.Since(t0)
		reports = append(reports, r)
	}
	if len(reports) == 0 {
		var names []string
		for _, d := range info.entries {
			names = append(names, d.Name)
		}
		return single("entry", "the module has no plugin %q (it has %s)", opts.Entry, strings.Join(names, ", "))
	}
	return reports
}

// AllOK reports whether every report passed.
func AllOK(reports []*Report) bool {
	for _, r := range reports {
		if !r.OK() {
			return false
		}
	}
	return len(reports) > 0
}

// kit is one entry's run.
type kit struct {
	opts    Options
	report  *Report
	p       *sandbox.Plugin
	out     *guestOutput
	enc     wire.Encoder
	exports map[string]bool
}

// run loads the entry as the host does and checks it.
func (k *kit) run(ctx context.Context, code []byte, entry string) {
	r := k.report
	name := r.Descriptor.Name
	if name == "" {
		name = "plugin"
	}
	p, err := sandbox.Load(ctx, sandbox.Options{
		Name:        name,
		Entry:       entry,
		Path:        k.opts.Path,
		Code:        code,
		MemoryLimit: k.opts.MemoryLimit,
		PoolSize:    1, // one instance: its memory is the plugin's memory
		Timeout:     k.opts.Timeout,
		Config:      k.opts.Config,
		Cache:       k.opts.Cache,
		Log:         slog.New(k.out),
		KV:          kvstore.NewMemory(64 << 20),
		Services:    k.opts.Services,
	})
	if err != nil {
		k.fail("load", "%s", k.explain(err))
		return
	}
	defer p.Close()
	k.p = p
	r.Descriptor = p.Descriptor()
	k.pass("load", "instantiated, init with %s", compact(k.opts.Config))
	if !k.checkDescriptor(k.exports) {
		return
	}
	switch r.Descriptor.Kind {
	case "layer":
		k.checkLayer(ctx)
	case "provider":
		k.checkProvider(ctx)
	}
}

func (k *kit) pass(name, format string, args ...any) {
	k.report.Checks = append(k.report.Checks, Check{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)})
}

func (k *kit) fail(name, format string, args ...any) {
	k.report.Checks = append(k.report.Checks, Check{Name: name, Detail: fmt.Sprintf(format, args...)})
}

// phaseExports name the export each layer phase needs.
var phaseExports = []struct {
	phase  wire.Phase
	export string
}{
	{wire.PhaseRequest, "bardo_on_request"},
	{wire.PhaseResponse, "bardo_on_response"},
	{wire.PhaseStream, "bardo_on_stream"},
	{wire.PhaseFallback, "bardo_on_fallback"},
}

const allPhases = wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream | wire.PhaseFallback

func (k *kit) checkDescriptor(exports map[string]bool) bool {
	d := k.report.Descriptor
	var bad []string
	if d.ABI != plugin.ABIVersion {
		bad = append(bad, fmt.Sprintf("ABI v%d, this host speaks v%d", d.ABI, plugin.ABIVersion))
	}
	if strings.TrimSpace(d.Name) == "" {
		bad = append(bad, "no name")
	}
	if strings.TrimSpace(d.Version) == "" {
		bad = append(bad, "no version")
	}
	switch d.Kind {
	case "layer":
		if d.Phases == 0 {
			bad = append(bad, "takes part in no phase")
		}
		if d.Phases&^allPhases != 0 {
			bad = append(bad, fmt.Sprintf("unknown phases %b", d.Phases&^allPhases))
		}
		if d.Reads&^wire.PartAll != 0 || d.Writes&^wire.PartAll != 0 {
			bad = append(bad, "unknown request parts in reads or writes")
		}
		for _, pe := range phaseExports {
			if d.Phases&pe.phase != 0 && !exports[pe.export] {
				bad = append(bad, fmt.Sprintf("declares phase %s but does not export %s", phaseNames(pe.phase), pe.export))
			}
		}
		// A v1.6 host hands a watcher's streamed answers to its
		// on_response: without that phase the flag is a promise the host
		// cannot keep, and it calls on_stream per batch after all.
		if d.Flags&wire.FlagWatchStream != 0 && d.Phases&wire.PhaseResponse == 0 {
			bad = append(bad, "flag watch-stream without the response phase its streamed answers go to")
		}
	case "provider":
		for _, e := range []string{"bardo_encode", "bardo_decode"} {
			if !exports[e] {
				bad = append(bad, "a provider must export "+e)
			}
		}
	default:
		bad = append(bad, fmt.Sprintf("unknown kind %q", d.Kind))
	}
	if len(bad) > 0 {
		k.fail("descriptor", "%s", strings.Join(bad, "; "))
		return false
	}
	k.pass("descriptor", "%s %q version %s%s", d.Kind, d.Name, d.Version, flagNote(d.Flags))
	return true
}

// call runs one op on the plugin with the kit's timeout (the sandbox's own)
// and clears the guest output captured before it.
func (k *kit) call(ctx context.Context, op plugin.Op, in []byte) ([]byte, error) {
	k.out.reset()
	return k.p.Call(ctx, op, in, sandbox.CallInfo{RequestID: "kit", Tenant: "kit"})
}

// explain turns a call's error into a reason: which kind of failure, and
// what the guest printed (a panic's message) when it trapped.
func (k *kit) explain(err error) string {
	var ce *sandbox.CallError
	// wazero's trap error carries the wasm stack trace after its first
	// line: numbered functions of a stripped module, no help to anyone.
	msg, _, _ := strings.Cut(err.Error(), "\n")
	switch {
	case errors.As(err, &ce):
		msg = "plugin error: " + ce.Msg
	case errors.Is(err, sandbox.ErrTimeout):
		msg = fmt.Sprintf("timed out after %s (an untrusted call is interrupted at its timeout)", k.opts.Timeout)
	case errors.Is(err, sandbox.ErrTrap):
		msg = "trapped (the instance is discarded): " + msg
	}
	if lines := k.out.lines(); len(lines) > 0 {
		msg += " — guest output: " + strings.Join(lines, " | ")
	}
	return msg
}

// guestOutput is a slog.Handler that keeps what the guest wrote to stderr
// and stdout (a panic's message, "out of memory"), so a trap's reason can
// name it; the host's other records are dropped.
type guestOutput struct {
	mu   sync.Mutex
	buf  []string
	dump bool // a goroutine dump started: the rest is stack
}

func (g *guestOutput) Enabled(context.Context, slog.Level) bool { return true }

func (g *guestOutput) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "plugin output" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			g.mu.Lock()
			// The first lines say why; the goroutine dump that follows a
			// Go panic does not.
			line := strings.TrimSpace(a.Value.String())
			if strings.HasPrefix(line, "goroutine ") {
				g.dump = true
			}
			if len(g.buf) < 3 && !g.dump {
				g.buf = append(g.buf, line)
			}
			g.mu.Unlock()
		}
		return true
	})
	return nil
}

func (g *guestOutput) WithAttrs([]slog.Attr) slog.Handler { return g }
func (g *guestOutput) WithGroup(string) slog.Handler      { return g }

func (g *guestOutput) reset() {
	g.mu.Lock()
	g.buf, g.dump = g.buf[:0], false
	g.mu.Unlock()
}

func (g *guestOutput) lines() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, l := range g.buf {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// knownFlags are the layer flags this host acts on.
const knownFlags = wire.FlagWatchStream

// flagNote names a descriptor's flags for the report. A flag this host
// does not know is not a failure (the ABI's rule: a host ignores it, so a
// layer may only ask, with one, for what it copes without), but the
// author should know it does nothing here.
func flagNote(f wire.Flag) string {
	var s []string
	if f&wire.FlagWatchStream != 0 {
		s = append(s, "watch-stream")
	}
	if u := f &^ knownFlags; u != 0 {
		s = append(s, fmt.Sprintf("unknown %#x, ignored by this host", uint32(u)))
	}
	if len(s) == 0 {
		return ""
	}
	return ", flags " + strings.Join(s, ", ")
}

func phaseNames(p wire.Phase) string {
	var s []string
	for _, n := range []struct {
		p    wire.Phase
		name string
	}{{wire.PhaseRequest, "request"}, {wire.PhaseResponse, "response"}, {wire.PhaseStream, "stream"}, {wire.PhaseFallback, "fallback"}} {
		if p&n.p != 0 {
			s = append(s, n.name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

func partNames(p wire.Part) string {
	var s []string
	for _, n := range []struct {
		p    wire.Part
		name string
	}{{wire.PartModel, "model"}, {wire.PartSystem, "system"}, {wire.PartMessages, "messages"},
		{wire.PartTools, "tools"}, {wire.PartParams, "params"}, {wire.PartExtra, "extra"}} {
		if p&n.p != 0 {
			s = append(s, n.name)
		}
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ",")
}

func compact(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
