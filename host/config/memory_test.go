package config

import (
	"errors"
	"strings"
	"testing"
)

func TestMemoryKeys(t *testing.T) {
	cfg, err := Parse([]byte("[server]\n"), "/x/pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	if s.MemoryLimit != DefaultMemoryLimit || s.KVMaxBytes != DefaultKVMaxBytes || s.IdleRelease != DefaultIdleRelease {
		t.Fatalf("defaults: limit %d, kv %d, idle %v", s.MemoryLimit, s.KVMaxBytes, s.IdleRelease)
	}
	if cfg.Models.IndexMaxSpaces != DefaultIndexMaxSpaces {
		t.Fatalf("index_max_spaces default %d", cfg.Models.IndexMaxSpaces)
	}

	cfg, err = Parse([]byte(`[server]
memory_limit = "256MiB"
kv_max_bytes = "4MiB"
idle_release = "0s"
[models]
index_max_spaces = 50
`), "/x/pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	s = cfg.Server
	if s.MemoryLimit != 256*MiB || s.KVMaxBytes != 4*MiB || s.IdleRelease != 0 || cfg.Models.IndexMaxSpaces != 50 {
		t.Fatalf("set: limit %d, kv %d, idle %v, spaces %d", s.MemoryLimit, s.KVMaxBytes, s.IdleRelease, cfg.Models.IndexMaxSpaces)
	}

	// Unset, the limit follows the kv budget.
	cfg, err = Parse([]byte("[server]\nkv_max_bytes = \"64MiB\"\n"), "/x/pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.MemoryLimit != DefaultMemoryBase+64*MiB {
		t.Fatalf("memory_limit with kv_max_bytes = 64MiB: %d, want %d", cfg.Server.MemoryLimit, DefaultMemoryBase+64*MiB)
	}

	for _, off := range []string{`"off"`, `"0"`, `0`} {
		cfg, err = Parse([]byte("[server]\nmemory_limit = "+off+"\n"), "/x/pipeline.toml")
		if err != nil {
			t.Fatalf("memory_limit = %s: %v", off, err)
		}
		if cfg.Server.MemoryLimit != 0 {
			t.Fatalf("memory_limit = %s: %d, want 0 (none)", off, cfg.Server.MemoryLimit)
		}
	}
}

func TestMemoryKeyProblems(t *testing.T) {
	_, err := Parse([]byte(`[server]
memory_limit = "16MiB"
kv_max_bytes = "1KiB"
idle_release = "-1s"
[models]
index_max_spaces = 0
`), "/x/pipeline.toml")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a ValidationError", err)
	}
	msg := ve.Error()
	for _, want := range []string{
		`server.memory_limit: must be at least 32MiB (or "off"), got 16MiB`,
		"server.kv_max_bytes: must be at least 64KiB, got 1KiB",
		"server.idle_release: must not be negative",
		"models.index_max_spaces: must be between 1 and 1000000, got 0",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
	_, err = Parse([]byte("[server]\nmemory_limit = \"lots\"\n"), "/x/pipeline.toml")
	if err == nil || !strings.Contains(err.Error(), "server.memory_limit: invalid size") {
		t.Fatalf("memory_limit = lots: %v", err)
	}
}
