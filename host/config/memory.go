package config

import "time"

// Defaults of the [server] memory keys, from the shipped pipeline measured
// with the real binary (docs/performance.md, "Idle release, shrinking pools
// and the memory limit"). Outside the Go runtime's reach and so outside any
// memory limit: compiled guest code (~25 MiB), the binary's text (~25 MiB),
// ONNX Runtime (~18 MiB) and the models' C heap (~20 MiB), ~90 MiB in all.
// Inside it, at 100 clients: ~45 MiB live at rest (models' vocabularies,
// wazero's decoded module, plugin instances), requests in flight, the kv
// store, and the collector's headroom. DefaultMemoryLimit leaves that
// headroom, so the process stays near 200 MiB under load.
const (
	// DefaultMemoryBase is the Go memory the default limit allows beyond
	// the kv store's budget: memory_limit defaults to it plus kv_max_bytes,
	// so raising the kv bound raises the limit with it.
	DefaultMemoryBase  = 88 * MiB
	DefaultKVMaxBytes  = 16 * MiB
	DefaultMemoryLimit = DefaultMemoryBase + DefaultKVMaxBytes
	DefaultIdleRelease = 5 * time.Second

	// minMemoryLimit refuses a limit the gateway cannot even start under:
	// the shipped pipeline's Go heap is ~30 MiB live at rest.
	minMemoryLimit = 32 * MiB
	minKVMaxBytes  = 64 * KiB
)

// memory fills the [server] keys that bound the process's memory.
func (c *checker) memory(t map[string]any, s *Server) {
	const p = "server"
	s.KVMaxBytes, s.IdleRelease = DefaultKVMaxBytes, DefaultIdleRelease
	if n, ok := c.size(t, p, "kv_max_bytes"); ok {
		if n < minKVMaxBytes {
			c.errf(joinKey(p, "kv_max_bytes"), "must be at least %s, got %s", FormatSize(minKVMaxBytes), FormatSize(n))
		} else {
			s.KVMaxBytes = n
		}
	}
	s.MemoryLimit = DefaultMemoryBase + s.KVMaxBytes
	if v, ok := t["memory_limit"]; ok && v == "off" {
		s.MemoryLimit = 0
	} else if n, ok := c.size(t, p, "memory_limit"); ok {
		if n != 0 && n < minMemoryLimit {
			c.errf(joinKey(p, "memory_limit"), "must be at least %s (or \"off\"), got %s", FormatSize(minMemoryLimit), FormatSize(n))
		} else {
			s.MemoryLimit = n
		}
	}
	if v, ok := c.duration(t, p, "idle_release"); ok {
		if v < 0 {
			c.errf(joinKey(p, "idle_release"), "must not be negative (use \"0s\" to never release)")
		} else {
			s.IdleRelease = v
		}
	}
}
