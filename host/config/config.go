// Package config loads and validates pipeline.toml, the file that declares
// the gateway's server settings and its pipeline of WASM plugins: the
// ordered [[layer]] entries and the [[provider]] entries.
//
// Load and Parse return either a fully typed, validated *Config or a
// *ValidationError listing every problem with file, line and key. Defaults
// are applied during parsing, so every field of a returned Config is final
// apart from environment overrides (ApplyEnv) and credentials, which stay
// references until the caller resolves them (ResolveCredential).
//
// Watch, WatchFiles and NotifySIGHUP only trigger reloads; the caller
// re-Loads and swaps the running pipeline itself. README.md in this
// directory is the operator reference for every key.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/routing"
)

// Phase is a bit set of the pipeline phases a layer takes part in. The bit
// values equal those of the SDK's wire.Phase, so a conversion is a cast.
type Phase uint8

// Phases.
const (
	PhaseRequest  Phase = 1 << iota // before routing, in pipeline order
	PhaseResponse                   // on a complete (non-streamed) response, in reverse order
	PhaseStream                     // on each batch of stream events, in reverse order

	PhaseAll = PhaseRequest | PhaseResponse | PhaseStream
)

var phaseNames = []struct {
	p    Phase
	name string
}{
	{PhaseRequest, "request"},
	{PhaseResponse, "response"},
	{PhaseStream, "stream"},
}

// ParsePhase returns the phase named s ("request", "response" or "stream").
func ParsePhase(s string) (Phase, bool) {
	for _, pn := range phaseNames {
		if pn.name == s {
			return pn.p, true
		}
	}
	return 0, false
}

// Has reports whether every phase in q is in p.
func (p Phase) Has(q Phase) bool { return p&q == q }

// String returns the phase names joined by '|' ("request|stream"), or
// "none".
func (p Phase) String() string {
	var names []string
	for _, pn := range phaseNames {
		if p&pn.p != 0 {
			names = append(names, pn.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// OnError says what happens to a request when a layer fails (traps, times
// out, returns an error or an undecodable result).
type OnError uint8

// On-error policies. The zero value is FailClosed: a failing layer fails the
// request, the safe choice for layers that enforce policy.
const (
	FailClosed OnError = iota // the request fails with a gateway error
	FailOpen                  // the layer is skipped and the request goes on unchanged
)

// String returns "fail-closed" or "fail-open".
func (o OnError) String() string {
	if o == FailOpen {
		return "fail-open"
	}
	return "fail-closed"
}

// Config is a loaded, validated pipeline.toml.
type Config struct {
	Path        string      // absolute path of the file; for Parse, derived from its name argument
	Dir         string      // absolute directory relative paths were resolved against
	Fingerprint Fingerprint // SHA-256 of the file's bytes
	Server      Server
	Storage     Storage    // the [storage] table
	Auth        Auth       // the [auth] table
	Billing     Billing    // the [billing] table
	X402        X402       // the [x402] table
	Telemetry   Telemetry  // the [telemetry] table (traces)
	Layers      []Layer    // in file order: the order requests pass through them
	Providers   []Provider // in file order
	Models      Models     // the [models] table
	ModelSpecs  []Model    // the [[model]] entries, in file order
	// Profiles are the [inference.profiles.<subsystem>] overrides (locked
	// profiles' overrides left out); see Profile.
	Profiles map[string]routing.InferenceProfile
	// Warnings are problems that do not stop the file from loading (an
	// override of a locked profile), as "file:line: key: message"; the
	// loader logs them.
	Warnings []string
}

// Server holds the [server] table.
type Server struct {
	Listen          string        // host:port
	MaxBodyBytes    int64         // largest accepted request body
	ReadTimeout     time.Duration // 0 = no limit
	WriteTimeout    time.Duration // 0 = no limit
	IdleTimeout     time.Duration // 0 = no limit
	UpstreamTimeout time.Duration // 0 = no limit
	// UpstreamIdleTimeout closes pooled upstream connections idle this
	// long; below the upstreams' own keep-alive timeouts.
	UpstreamIdleTimeout time.Duration
	PluginDir           string // absolute
	CacheDir            string // absolute; "" = compilation cache disabled
	LogLevel            slog.Level
	// MemoryLimit is the Go runtime's soft memory limit in bytes
	// (debug.SetMemoryLimit); 0 = none. GOMEMLIMIT in the environment wins.
	MemoryLimit int64
	// KVMaxBytes bounds the plugins' in-memory key/value store (keys and
	// values, as accounted by host/kvstore).
	KVMaxBytes int64
	// IdleRelease is how long the gateway waits, idle after traffic,
	// before it shrinks plugin pools and returns freed memory to the
	// operating system; 0 = never.
	IdleRelease time.Duration
}

// PluginSpec holds the keys common to layers and providers.
type PluginSpec struct {
	Name   string // unique among all layers and providers, [a-z0-9-]+
	Plugin string // absolute path of the .wasm file
	// Entry names the plugin within a module that bundles several (ABI
	// v1.5); "" means the module's only plugin, or the one named Name.
	Entry   string
	Timeout time.Duration // limit on one call into the plugin
	Memory  int64         // linear memory cap per instance, bytes, a multiple of 64KiB
	Pool    int           // maximum number of instances, 1..256
	Trusted bool
	Enabled bool
	Config  []byte // the entry's config table as JSON; "{}" when absent
	Line    int    // line of the entry's [[layer]]/[[provider]] header, for messages
}

// MemoryPages returns Memory in 64KiB WebAssembly pages (at most 65536).
func (p *PluginSpec) MemoryPages() uint32 { return uint32(p.Memory / wasmPage) }

// Layer is one [[layer]] entry.
type Layer struct {
	PluginSpec
	Phases  Phase
	OnError OnError
}

// Provider is one [[provider]] entry.
type Provider struct {
	PluginSpec
	BaseURL    string   // "" when not set
	Credential string   // "" (none), "env:NAME" or "file:/absolute/path"
	Models     []string // exact model ids or path.Match globs; empty = every model
	// Failover: whether the provider may take over a request another
	// provider failed (default true). The simulator sets it false: a real
	// provider's outage must not turn into simulated answers.
	Failover bool
	// Routing (routing.go): traits, the static catalog, and the subsystems
	// a restricted provider serves (empty: all).
	Traits     routing.Traits
	TraitsSet  TraitSet // which of Traits the entry set (they override the plugin's describe())
	Catalog    []catalog.Model
	Subsystems []string
	// CatalogRefresh, when set, fetches the backend's GET <base_url>/models
	// at that interval (0: the static catalog only); CatalogShape names the
	// answer's format ("" = detect).
	CatalogRefresh time.Duration
	CatalogShape   string
	// CatalogRefreshOff: catalog_refresh = "off" — never fetch, not even
	// from a catalog URL the plugin describes.
	CatalogRefreshOff bool
	// Direct: the provider is reached with the caller's own key (its
	// Authorization, x-api-key or x-goog-api-key header), never the
	// gateway's, and receives the caller's request as sent, before any
	// layer changed it; answers say X-Bardo-Cost: direct.
	Direct bool
}

// Serves reports whether the provider accepts requests for model: true when
// Models is empty or any entry equals model or matches it as a path.Match
// glob.
func (p *Provider) Serves(model string) bool {
	if len(p.Models) == 0 {
		return true
	}
	for _, m := range p.Models {
		if m == model {
			return true
		}
		if ok, _ := path.Match(m, model); ok {
			return true
		}
	}
	return false
}

// Layer returns the layer named name, or nil.
func (c *Config) Layer(name string) *Layer {
	for i := range c.Layers {
		if c.Layers[i].Name == name {
			return &c.Layers[i]
		}
	}
	return nil
}

// Provider returns the provider named name, or nil.
func (c *Config) Provider(name string) *Provider {
	for i := range c.Providers {
		if c.Providers[i].Name == name {
			return &c.Providers[i]
		}
	}
	return nil
}

// Defaults.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultMaxBodyBytes    = 10 * MiB
	DefaultReadTimeout     = 30 * time.Second
	DefaultWriteTimeout    = 10 * time.Minute
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultUpstreamTimeout = 10 * time.Minute
	// DefaultUpstreamIdleTimeout stays below the 60 s after which common
	// load balancers drop idle connections (and nginx's 75 s).
	DefaultUpstreamIdleTimeout = 30 * time.Second
	DefaultPluginDir           = "build/plugins"
	DefaultCacheDir            = ".cache/wazero"
	DefaultLogLevel            = slog.LevelInfo

	DefaultLayerTimeout    = 100 * time.Millisecond
	DefaultProviderTimeout = 10 * time.Second
	DefaultMemory          = 64 * MiB
	MaxMemory              = 4 * GiB
	MaxPool                = 256
)

const wasmPage = 64 * KiB

// DefaultPool is the default pool size: the number of CPUs, within 1..MaxPool.
func DefaultPool() int { return min(max(runtime.NumCPU(), 1), MaxPool) }

// Load reads and parses the file at path. A file that cannot be read gives
// the underlying *fs.PathError; a file that can be read but not used gives a
// *ValidationError.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse parses and validates a pipeline.toml whose content is data. name is
// the file's path: it is used in error messages as given, and its directory
// is the base of relative plugin_dir, cache_dir and file: credential paths
// (the current directory when name has none). Plugin files are checked for
// existence on disk for enabled entries.
//
// The error, if any, is a *ValidationError holding every problem found.
func Parse(data []byte, name string) (*Config, error) {
	if name == "" {
		name = "pipeline.toml"
	}
	var tree map[string]any
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return nil, syntaxError(name, data, err)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	c := &checker{file: name, dir: filepath.Dir(abs), pos: locate(string(data))}
	cfg := c.config(tree)
	if len(c.problems) > 0 {
		sort.SliceStable(c.problems, func(i, j int) bool {
			li, lj := c.problems[i].Line, c.problems[j].Line
			if li == 0 || lj == 0 {
				return li != 0 && lj == 0 // unknown lines last
			}
			return li < lj
		})
		return nil, &ValidationError{Problems: c.problems}
	}
	cfg.Path = abs
	cfg.Dir = c.dir
	cfg.Fingerprint = FingerprintBytes(data)
	return cfg, nil
}

func syntaxError(name string, data []byte, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		// Count the line from the byte offset: for an error found at a
		// newline the parser reports the following line.
		line := pe.Position.Line
		if st := pe.Position.Start; st >= 0 && st <= len(data) {
			line = 1 + bytes.Count(data[:st], []byte("\n"))
		}
		return &ValidationError{Problems: []Problem{{
			File: name,
			Line: line,
			Msg:  "TOML syntax error: " + pe.Message,
		}}}
	}
	return &ValidationError{Problems: []Problem{{File: name, Msg: "TOML error: " + err.Error()}}}
}
