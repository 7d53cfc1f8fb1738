package testgateway

import (
	"bytes"
	"sync"

	"github.com/tetratelabs/wazero"
)

// syncBuffer is a log sink tests can read while the gateway writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything logged so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	cacheMu sync.Mutex
	caches  = map[string]wazero.CompilationCache{}
)

func newCache(dir string) (wazero.CompilationCache, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if c, ok := caches[dir]; ok {
		return c, nil
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, err
	}
	caches[dir] = c
	return c, nil
}

// FailoverPipeline is the pipeline the observability end-to-end tests drive
// (metrics, traces, the dashboard): the hash cache (so a repeat is a hit)
// in front of two OpenAI-compatible providers for gpt-* — "up" at first,
// then "backup" — and "claude" (Anthropic) at first, all with the
// credential env:UP_KEY. With priced, each provider lists the models the
// tests ask for with their prices, so requests are billed.
func FailoverPipeline(first, backup string, priced bool) string {
	gpt, claude := "", ""
	if priced {
		gpt = `
[[provider.model]]
id = "gpt-4o"
input_price = "2.5"
output_price = "10"
`
		claude = `
[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`
	}
	return `
[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
trusted = true
timeout = "2s"
[layer.config]
replay_pace_ms = 1

[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "` + first + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
` + gpt + `
[[provider]]
name = "backup"
plugin = "openai-compatible.wasm"
base_url = "` + backup + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
` + gpt + `
[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + first + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true
` + claude
}
