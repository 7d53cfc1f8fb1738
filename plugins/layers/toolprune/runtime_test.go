//go:build !wasip1

package main_test

// The layer compiled to WASM and run by the real sandbox (wazero, the wire
// round trip): its per-request cost on the shared 4 KB agent request (two
// tools: nothing to prune, the common case) and on requests that are pruned
// (40 and 100 tools), and the token reduction on the 100-tool catalog.

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/sdk/wire"
)

type catalogTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// catalog returns the 100 tools of testdata/catalog.json.
func catalog(tb testing.TB) []catalogTool {
	tb.Helper()
	b, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		tb.Fatal(err)
	}
	var tools []catalogTool
	if err := json.Unmarshal(b, &tools); err != nil {
		tb.Fatal(err)
	}
	return tools
}

func wireTools(tools []catalogTool) []wire.Tool {
	out := make([]wire.Tool, len(tools))
	for i, t := range tools {
		out[i] = wire.Tool{Name: t.Name, Description: t.Description, Schema: t.InputSchema}
	}
	return out
}

// agentWith is the shared 4 KB agent request offering n catalog tools (the
// fixture's own get_position and get_price stay, as the first two).
func agentWith(tb testing.TB, n int) *wire.Request {
	req := fixtures.AgentRequest()
	if n <= len(req.Tools) {
		return req
	}
	for _, t := range wireTools(catalog(tb)) {
		if len(req.Tools) == n {
			break
		}
		if t.Name != "get_position" {
			req.Tools = append(req.Tools, t)
		}
	}
	return req
}

func load(tb testing.TB, config string, trusted bool) *sandbox.Plugin {
	tb.Helper()
	return layertest.Load(tb, "plugins/layers/toolprune", sandbox.Options{Trusted: trusted, Config: []byte(config)})
}

func onRequest(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta *wire.Meta, req *wire.Request) wire.LayerResult {
	tb.Helper()
	return layertest.OnRequest(tb, p, enc, meta, req)
}

func header(kvs []wire.KV, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// The 100-tool catalog under the real runtime: what pruning saves, in
// estimated prompt tokens (tool definition bytes / 4).
func TestRuntimeTokenReduction(t *testing.T) {
	p := load(t, `{}`, true)
	req := agentWith(t, 100)
	var enc wire.Encoder
	meta := wire.Meta{RequestID: "r", Tenant: "t", Dialect: wire.DialectOpenAI, Model: req.Model}
	res := onRequest(t, p, &enc, &meta, req)
	if res.Patched != wire.PartTools || len(res.Request.Tools) != 12 {
		t.Fatalf("patched %b, %d tools", res.Patched, len(res.Request.Tools))
	}
	// Measured the way the upstream sees it: the tools as OpenAI JSON.
	size := func(tools []wire.Tool) int {
		type fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		var out []map[string]any
		for _, t := range tools {
			out = append(out, map[string]any{"type": "function", "function": fn{t.Name, t.Description, t.Schema}})
		}
		b, _ := json.Marshal(out)
		return len(b)
	}
	before, after := size(req.Tools), size(res.Request.Tools)
	saved, _ := strconv.Atoi(header(res.Headers, "X-Bardo-Tools-Saved-Tokens"))
	red := 100 * float64(before-after) / float64(before)
	var kept []string
	for _, tl := range res.Request.Tools {
		kept = append(kept, tl.Name)
	}
	t.Logf("tools JSON %d → %d bytes (≈ %d → %d tokens, −%.1f%%); header estimate %d tokens saved; kept %v",
		before, after, before/4, after/4, red, saved, kept)
	if red < 80 {
		t.Fatalf("only %.1f%% fewer tool tokens", red)
	}
	if d := saved - (before-after)/4; d < -before/40 || d > before/40 {
		t.Fatalf("header estimate %d tokens, measured %d", saved, (before-after)/4)
	}
	if !slices.Contains(kept, "get_position") { // called in the conversation
		t.Fatalf("get_position removed: %v", kept)
	}
}

// BenchmarkLayerCall measures one request-phase call under the real runtime,
// as host/sandbox's BenchmarkLayerCall does: on the 4 KB agent request (two
// tools, passed through) and on the same conversation offering 40 and 100
// tools (pruned to 12; the instance's term cache is warm after the first
// call, as it is for an agent sending the same tools every turn), plus the
// 100-tool case with a cold cache on every call (a new tool set each time).
func BenchmarkLayerCall(b *testing.B) {
	for _, trusted := range []bool{true, false} {
		suffix := map[bool]string{true: "/trusted", false: "/untrusted"}[trusted]
		for _, n := range []int{2, 40, 100} {
			name := "agent4KB-" + strconv.Itoa(n) + "tools" + suffix
			b.Run(name, func(b *testing.B) {
				p := load(b, `{}`, trusted)
				req := agentWith(b, n)
				meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
				var enc wire.Encoder
				measure(b, func() {
					res := onRequest(b, p, &enc, &meta, req)
					if (res.Patched != 0) != (n > 16) {
						b.Fatalf("patched %b with %d tools", res.Patched, n)
					}
				})
			})
		}
	}
	b.Run("agent4KB-100tools-cold/trusted", func(b *testing.B) {
		p := load(b, `{}`, true)
		req := agentWith(b, 100)
		meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
		var enc wire.Encoder
		gen := 0
		measure(b, func() {
			// A fresh description per call defeats the cache: every tool
			// is tokenized again.
			gen++
			for i := range req.Tools {
				req.Tools[i].Description = req.Tools[i].Description[:len(req.Tools[i].Description)-1] + string(rune('a'+gen%26))
			}
			onRequest(b, p, &enc, &meta, req)
		})
	})
}

// BenchmarkClaudeCode measures the last request of the replayed Claude Code
// session (testdata/claude_code_session.json: 24 tools, 9 KB system prompt,
// 43 earlier turns with their reminders, ≈ 86 KB in all), warm: an agent
// sends the same tools and an append-only conversation every turn.
func BenchmarkClaudeCode(b *testing.B) {
	p := load(b, `{}`, true)
	req := claudeCodeLast(b)
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectAnthropic, Model: req.Model}
	var enc wire.Encoder
	measure(b, func() {
		if res := onRequest(b, p, &enc, &meta, req); res.Patched == 0 {
			b.Fatal("not pruned")
		}
	})
}

func claudeCodeLast(tb testing.TB) *wire.Request {
	var raw []catalogTool
	var script struct {
		System string `json:"system"`
		Steps  []struct {
			User            string          `json:"user"`
			RemindersBefore []string        `json:"reminders_before"`
			RemindersAfter  []string        `json:"reminders_after"`
			Call            string          `json:"call"`
			Input           json.RawMessage `json:"input"`
			Result          string          `json:"result"`
			Say             string          `json:"say"`
		} `json:"steps"`
	}
	for file, v := range map[string]any{"testdata/claude_code_tools.json": &raw, "testdata/claude_code_session.json": &script} {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			tb.Fatal(err)
		}
	}
	req := &wire.Request{Model: "claude-sonnet-4-5", System: []wire.Block{{Type: wire.BlockText, Text: script.System}}, Tools: wireTools(raw)}
	texts := func(l []string) (out []wire.Block) {
		for _, s := range l {
			out = append(out, wire.Block{Type: wire.BlockText, Text: s})
		}
		return out
	}
	for i, st := range script.Steps {
		id := "toolu_" + strconv.Itoa(i)
		switch {
		case st.User != "":
			c := append(texts(st.RemindersBefore), wire.Block{Type: wire.BlockText, Text: st.User})
			req.Messages = append(req.Messages, wire.Message{Role: "user", Content: append(c, texts(st.RemindersAfter)...)})
		case st.Call != "":
			req.Messages = append(req.Messages,
				wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: id, Name: st.Call, Data: st.Input}}},
				wire.Message{Role: "user", Content: append([]wire.Block{{Type: wire.BlockToolResult, ID: id, Text: st.Result}}, texts(st.RemindersAfter)...)})
		default:
			req.Messages = append(req.Messages, wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockText, Text: st.Say}}})
		}
	}
	return req
}

func measure(b *testing.B, f func()) { layertest.Measure(b, f) }
