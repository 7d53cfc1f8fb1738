package pipeline

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/bardoinference/bardo/host/sandbox"
)

// Loading a plugin costs 50–250 ms (wazero decodes and validates the
// module even when its compilation cache hits, then the guest's Go runtime
// starts and Init runs), so a reload reuses every plugin whose entry did not
// change instead of loading the whole pipeline again. Pipelines of
// successive generations then share one *sandbox.Plugin: the old one keeps
// serving its requests in flight on it while the new one takes new requests,
// and it is closed when the last pipeline holding it retires.
//
// A bundle's entries that load together (groupJobs) are one unit here: a
// change to any of them (its config, timeout, pool, name) loads the module
// again for all of them, since every instance is initialised for each.

// pluginKey is everything a loaded plugin's behaviour depends on that an
// entry of pipeline.toml sets: the module's content and the per-entry
// sandbox.Options, among them the name (it namespaces kv keys, metrics and
// logs). The other Options (cache, log, kv, metrics, services) come from the
// Manager's Deps, the same for every pipeline of one registry.
//
// The content is hashed, not judged by size and mtime: a rebuild may keep
// both (coarse timestamps, a copy that preserves them), and must load fresh.
// Reading and hashing a 3.7 MB module takes ~4.5 ms; loading it 50–250.
type pluginKey struct {
	path    string
	sum     [sha256.Size]byte
	trusted bool
	memory  int64
	entries string // each entry's name, entry, pool, timeout and config
}

// keyOf keys the plugin sandbox.Load would make of opts and code. It reads
// the Options themselves, not the entry they came from, so the key cannot
// miss a setting that reaches Load (TestPluginKeyCoversOptions lists them).
func keyOf(opts sandbox.Options, code []byte) pluginKey {
	return moduleKey([]sandbox.Options{opts}, code)
}

// moduleKey keys the plugins sandbox.LoadModule would make of entries (one
// module: the same path, trusted and memory) and code.
func moduleKey(entries []sandbox.Options, code []byte) pluginKey {
	k := pluginKey{path: entries[0].Path, sum: sha256.Sum256(code), trusted: entries[0].Trusted, memory: entries[0].MemoryLimit}
	var b strings.Builder
	for _, o := range entries {
		// Length-prefixed, so no value can pass for another's.
		for _, f := range []string{o.Name, o.Entry, strconv.Itoa(o.PoolSize), o.Timeout.String(), string(o.Config)} {
			fmt.Fprintf(&b, "%d:%s", len(f), f)
		}
	}
	k.entries = b.String()
	return k
}

// sharedPlugin is a loaded module's plugins (one, or a bundle's entries
// loaded together) and the number of pipelines holding them.
type sharedPlugin struct {
	key     pluginKey
	plugins []*sandbox.Plugin
	refs    int // guarded by registry.mu
}

// registry holds the live plugins of a Manager's pipelines: each is in it
// from its load until the last pipeline holding it releases it, and is then
// closed. It only ever hands out plugins some pipeline still holds, so a
// plugin it returns is never closed.
type registry struct {
	mu   sync.Mutex
	live map[pluginKey]*sharedPlugin
	// Plugins loaded and closed over the registry's life: what is loaded and
	// not closed is held by some pipeline (tests check nothing leaks).
	loads, closes int
}

func newRegistry() *registry { return &registry{live: map[pluginKey]*sharedPlugin{}} }

// acquire returns the live plugins loaded from entries, entries of one
// module (reused == true), or loads them. Either way the caller holds one
// reference and must release it.
func (r *registry) acquire(ctx context.Context, entries []sandbox.Options) (s *sharedPlugin, reused bool, err error) {
	code, err := os.ReadFile(entries[0].Path)
	if err != nil {
		return nil, false, fmt.Errorf("plugin %s: %w", entries[0].Name, err)
	}
	key := moduleKey(entries, code)
	r.mu.Lock()
	if s := r.live[key]; s != nil {
		s.refs++
		r.mu.Unlock()
		return s, true, nil
	}
	r.mu.Unlock()

	// Loaded without the lock: the pipeline's plugins load in parallel.
	for i := range entries {
		entries[i].Code = code // exactly the bytes the key was computed from
	}
	pl, err := sandbox.LoadModule(ctx, entries)
	if err != nil {
		return nil, false, err
	}
	s = &sharedPlugin{key: key, plugins: pl, refs: 1}
	r.mu.Lock()
	r.loads++
	// Names are unique in a pipeline and the Manager builds one pipeline at
	// a time, so no other load of key can have finished meanwhile; were one
	// to, it stays findable and this plugin private to its pipeline.
	if r.live[key] == nil {
		r.live[key] = s
	}
	r.mu.Unlock()
	return s, false, nil
}

// release drops one reference to s; the last one closes the plugin (its
// calls in flight, if any, finish first: sandbox.Plugin.Close). Each
// pipeline releases what it holds once (Pipeline.releasePlugins).
func (r *registry) release(s *sharedPlugin) {
	r.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		r.closes++
		if r.live[s.key] == s {
			delete(r.live, s.key)
		}
	}
	r.mu.Unlock()
	if last {
		for _, p := range s.plugins {
			p.Close()
		}
	}
}

// counts reports the findable live plugins and the loads and closes so far
// (tests).
func (r *registry) counts() (live, loads, closes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live), r.loads, r.closes
}
