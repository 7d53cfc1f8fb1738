//go:build !wasip1

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The golden file pins the request phase's whole result — the parts it
// rewrites, byte for byte, its headers and annotations, and the prefix
// match against the session's previous request — for every request shape
// and configuration below, as the code wrote it before its speed work. go
// test -run Golden -update rewrites it (only when an edit is meant to
// change).

var update = flag.Bool("update", false, "rewrite the golden file")

var goldenConfigs = []string{
	`{}`,
	`{"min_prefix_tokens":0}`,
	`{"move_volatile_system":true,"min_prefix_tokens":0}`,
	`{"prompt_cache_key":true}`,
	`{"target":"anthropic","cache_ttl":"1h","min_prefix_tokens":10}`,
	`{"target":"openai","prompt_cache_key":true,"min_prefix_tokens":0}`,
	`{"sort_tools":false,"cache_turns":false,"min_prefix_tokens":0}`,
}

func goldenRequests(t *testing.T) []struct {
	name string
	req  *wire.Request
} {
	var out []struct {
		name string
		req  *wire.Request
	}
	add := func(name string, r *wire.Request) {
		out = append(out, struct {
			name string
			req  *wire.Request
		}{name, r})
	}
	add("agent", fixtures.AgentRequest())
	oa, err := openai.DecodeRequest(fixtures.AgentRequestOpenAI(true))
	if err != nil {
		t.Fatal(err)
	}
	add("agent-openai", oa)
	cc, err := anthropic.DecodeRequest(loadtest.ClaudeCode("Rename the field and update callers", true))
	if err != nil {
		t.Fatal(err)
	}
	add("claude-code", cc)
	ar := anthropicRequest()
	add("anthropic", &ar)
	variants := map[string]func(r *wire.Request){
		"timestamp system": func(r *wire.Request) {
			r.System = append([]wire.Block{text("Now: 2026-11-27T04:00:00Z.")}, r.System...)
		},
		"uuid system": func(r *wire.Request) {
			r.System = append(r.System, text("session 123e4567-e89b-12d3-a456-426614174000"), text(longSystem))
		},
		"caller marks": func(r *wire.Request) {
			r.System[0].CacheControl = []byte(eph)
			r.Tools[0].CacheControl = []byte(eph)
		},
		"four marks": func(r *wire.Request) {
			for i := range r.System {
				r.System[i].CacheControl = []byte(eph)
			}
			r.Tools[0].CacheControl = []byte(eph)
			r.Tools[1].CacheControl = []byte(eph)
		},
		"turns": func(r *wire.Request) {
			r.Messages = []wire.Message{user(text("first")), assistant(text(strings.Repeat("an answer ", 500))),
				user(text("second")), assistant(wire.Block{Type: wire.BlockThinking, Text: "hm", Signature: "s"}), user(text("third"))}
		},
		"turn tool result": func(r *wire.Request) {
			r.Messages = []wire.Message{user(text("q")),
				assistant(wire.Block{Type: wire.BlockToolUse, ID: "t1", Name: "get_price", Data: []byte(`{"a":1}`)}),
				user(wire.Block{Type: wire.BlockToolResult, ID: "t1", Text: "3100"}),
				assistant(text("")), user(text("and now?"))}
		},
		"extra":         func(r *wire.Request) { r.Extra = []byte(`{"metadata":{"user_id":"u"},"temperature_x":1}`) },
		"extra key":     func(r *wire.Request) { r.Extra = []byte(` { "prompt_cache_key" : "mine" } `) },
		"extra array":   func(r *wire.Request) { r.Extra = []byte(`[1]`) },
		"extra empty":   func(r *wire.Request) { r.Extra = []byte(`{}`) },
		"gpt model":     func(r *wire.Request) { r.Model = "gpt-4o" },
		"router claude": func(r *wire.Request) { r.Model = "anthropic/claude-3.5-sonnet" },
		"no tools":      func(r *wire.Request) { r.Tools = nil },
		"one tool":      func(r *wire.Request) { r.Tools = r.Tools[:1] },
		"sorted tools":  func(r *wire.Request) { r.Tools[0], r.Tools[1] = r.Tools[1], r.Tools[0] },
		"empty":         func(r *wire.Request) { *r = wire.Request{} },
		"image system": func(r *wire.Request) {
			r.System = append(r.System, wire.Block{Type: wire.BlockImage, Data: []byte(`{"u":1}`)})
		},
		"empty text sys": func(r *wire.Request) { r.System = append(r.System, text("")) },
		"tool choice":    func(r *wire.Request) { r.ToolChoice = []byte(`{"type":"auto"}`) },
	}
	// In a fixed order: whether a prefix matches depends on the requests
	// before it.
	for _, name := range slices.Sorted(maps.Keys(variants)) {
		r := anthropicRequest()
		variants[name](&r)
		add(name, &r)
	}
	return out
}

var goldenMetas = []wire.Meta{
	{RequestID: "r", Tenant: "t", Dialect: wire.DialectAnthropic, Model: "claude-sonnet-4-5"},
	{RequestID: "r", Tenant: "t", Dialect: wire.DialectOpenAI, Model: "gpt-4o-mini", Session: "sess-1"},
	{RequestID: "r", Tenant: "t", Dialect: wire.DialectOpenAI, Model: "claude-x", Session: strings.Repeat("s", 300)},
}

func goldenLines(t *testing.T) []string {
	var lines []string
	for _, c := range goldenConfigs {
		h := plugintest.New(t, c)
		h.Clock = func() time.Time { return time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC) }
		reads := h.Describe().Reads
		for mi, meta := range goldenMetas {
			for _, r := range goldenRequests(t) {
				for round := range 2 { // the second finds the first's prefix
					var enc wire.Encoder
					wire.EncodeLayerRequest(&enc, &meta, r.req, reads)
					out := plugin.Call(plugin.OpOnRequest, enc.Bytes())
					if len(out) == 0 || out[0] == plugin.StatusError {
						t.Fatalf("%s %s: %q", c, r.name, out)
					}
					var res wire.LayerResult
					if err := res.Decode(out); err != nil {
						t.Fatal(err)
					}
					sum := sha256.Sum256(out)
					lines = append(lines, fmt.Sprintf("%s meta=%d %q round=%d patched=%b headers=%v annotations=%v result=%s",
						c, mi, r.name, round, res.Patched, res.Headers, res.Annotations, hex.EncodeToString(sum[:10])))
				}
			}
		}
	}
	return lines
}

// TestGolden: every rewrite, header and annotation is byte for byte what
// the golden file pins.
func TestGolden(t *testing.T) {
	const path = "testdata/golden.txt"
	got := goldenLines(t)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for _, l := range lines {
		want[l]++
	}
	bad := 0
	for _, l := range got {
		if want[l] == 0 {
			if bad++; bad <= 20 {
				t.Errorf("not in the golden file: %s", l)
			}
			continue
		}
		want[l]--
	}
	if len(got) != len(lines) || bad > 0 {
		t.Fatalf("%d lines differ (%d computed, %d in the golden file)", bad, len(got), len(lines))
	}
}
