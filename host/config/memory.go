package config

import "time"

// Defaults of the [server] memory keys. Measured on the shipped pipeline
// (docs/performance.md, "Idle release, shrinking pools and the memory
// limit"): what the Go runtime holds is what these bound; compiled guest
// code, the binary, ONNX Runtime and the models' C heap (~90 MiB together)
// come on top.
const (
	DefaultMemoryLimit = 112 * MiB
	DefaultKVMaxBytes  = 16 * MiB
	DefaultIdleRelease = 5 * time.Second

	// minMemoryLimit refuses a limit the gateway cannot even start under:
	// the shipped pipeline's Go heap is ~30 MiB live at rest.
	minMemoryLimit = 32 * MiB
	minKVMaxBytes  = 64 * KiB
)

// memory fills the [server] keys that bound the process's memory.
func (c *checker) memory(t map[string]any, s *Server) {
	const p = "server"
	s.MemoryLimit, s.KVMaxBytes, s.IdleRelease = DefaultMemoryLimit, DefaultKVMaxBytes, DefaultIdleRelease
	if v, ok := t["memory_limit"]; ok && v == "off" {
		s.MemoryLimit = 0
	} else if n, ok := c.size(t, p, "memory_limit"); ok {
		if n != 0 && n < minMemoryLimit {
			c.errf(joinKey(p, "memory_limit"), "must be at least %s (or \"off\"), got %s", FormatSize(minMemoryLimit), FormatSize(n))
		} else {
			s.MemoryLimit = n
		}
	}
	if n, ok := c.size(t, p, "kv_max_bytes"); ok {
		if n < minKVMaxBytes {
			c.errf(joinKey(p, "kv_max_bytes"), "must be at least %s, got %s", FormatSize(minKVMaxBytes), FormatSize(n))
		} else {
			s.KVMaxBytes = n
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
