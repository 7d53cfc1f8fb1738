//go:build !wasip1

package main

// A replayed Claude Code session (testdata/claude_code_session.json: 44
// requests of a coding agent fixing a Go project, with Claude Code's system
// prompt, its 24 tools and its <system-reminder> blocks) run through the
// layer, turn by turn, and priced with Anthropic's prompt-caching rules.

import (
	"encoding/json"
	"hash/fnv"
	"os"
	"slices"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// claudeCodeTools returns testdata/claude_code_tools.json: Claude Code's 24
// tools (18 of its own, 6 from MCP servers), written in the shape and at
// the size of the real definitions (≈ 52 KB, ≈ 13,000 tokens).
func claudeCodeTools(t testing.TB) []wire.Tool {
	return loadTools(t, "testdata/claude_code_tools.json")
}

type sessionStep struct {
	User            string          `json:"user"`
	RemindersBefore []string        `json:"reminders_before"`
	RemindersAfter  []string        `json:"reminders_after"`
	Call            string          `json:"call"`
	Input           json.RawMessage `json:"input"`
	Result          string          `json:"result"`
	Say             string          `json:"say"`
}

type sessionScript struct {
	System string        `json:"system"`
	Steps  []sessionStep `json:"steps"`
}

func loadSession(t testing.TB) sessionScript {
	t.Helper()
	b, err := os.ReadFile("testdata/claude_code_session.json")
	if err != nil {
		t.Fatal(err)
	}
	var s sessionScript
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// sessionRequests builds the requests Claude Code sends for the script: one
// after each prompt and after each tool result, each repeating the whole
// conversation so far, as the client does.
func sessionRequests(t testing.TB, s sessionScript, tools []wire.Tool) []wire.Request {
	var reqs []wire.Request
	var msgs []wire.Message
	send := func() {
		reqs = append(reqs, wire.Request{
			Model:    "claude-sonnet-4-5",
			System:   []wire.Block{{Type: wire.BlockText, Text: s.System}},
			Tools:    tools,
			Messages: slices.Clone(msgs),
		})
	}
	reminders := func(l []string) []wire.Block {
		var out []wire.Block
		for _, r := range l {
			out = append(out, wire.Block{Type: wire.BlockText, Text: r})
		}
		return out
	}
	for i, st := range s.Steps {
		id := "toolu_" + string(rune('A'+i/26)) + string(rune('a'+i%26))
		switch {
		case st.User != "":
			content := reminders(st.RemindersBefore)
			content = append(content, wire.Block{Type: wire.BlockText, Text: st.User})
			content = append(content, reminders(st.RemindersAfter)...)
			msgs = append(msgs, wire.Message{Role: "user", Content: content})
			send()
		case st.Call != "":
			msgs = append(msgs,
				wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: id, Name: st.Call, Data: st.Input}}},
				wire.Message{Role: "user", Content: append([]wire.Block{{Type: wire.BlockToolResult, ID: id, Text: st.Result}}, reminders(st.RemindersAfter)...)})
			send()
		case st.Say != "":
			msgs = append(msgs, wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockText, Text: st.Say}}})
		default:
			t.Fatalf("step %d: empty", i)
		}
	}
	return reqs
}

// promptCache prices prompts with Anthropic's prompt-caching rules, in
// units of one uncached input token: a prompt is its segments in order
// (each tool, the system prompt, each message block; tokens ≈ bytes / 4),
// Claude Code puts breakpoints after the system prompt and after the last
// block; a breakpoint writes the prefix up to it (1.25×), and the longest
// prefix written before is read (0.1×) — prefix-exact, so a change in the
// tools, which come first, misses everything.
type promptCache struct {
	written map[uint64]bool
}

func (c *promptCache) price(r *wire.Request) (cost float64, read, total int) {
	if c.written == nil {
		c.written = map[uint64]bool{}
	}
	var sizes []int
	var hashes []uint64 // hashes[i]: the prefix of i+1 segments
	h := fnv.New64a()
	add := func(parts ...string) {
		n := 0
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
			n += len(p)
		}
		sizes = append(sizes, n)
		hashes = append(hashes, h.Sum64())
	}
	for _, tl := range r.Tools {
		add(tl.Name, tl.Description, string(tl.Schema), `{"name":"","description":"","input_schema":}`)
	}
	for _, b := range r.System {
		add(b.Text)
	}
	system := len(sizes) // the first breakpoint: after tools and system
	for _, m := range r.Messages {
		for _, b := range m.Content {
			add(m.Role, b.Text, b.ID, b.Name, string(b.Data))
		}
	}
	hit := 0
	for i := len(hashes) - 1; i >= 0; i-- {
		if c.written[hashes[i]] {
			hit = i + 1
			break
		}
	}
	c.written[hashes[system-1]] = true
	c.written[hashes[len(hashes)-1]] = true
	for i, n := range sizes {
		tok := n / 4
		total += tok
		if i < hit {
			read += tok
			cost += 0.1 * float64(tok)
		} else {
			cost += 1.25 * float64(tok)
		}
	}
	return cost, read, total
}

type replayStats struct {
	turns         int
	changes       int // turns whose tool list differs from the previous turn's
	savedTokens   int // sum of X-Bardo-Tools-Saved-Tokens
	direct, layer float64
	lists         [][]string
	reasons       []string
}

// replay sends reqs through the layer configured with config, and prices
// what the upstream would receive against the requests sent directly.
func replay(t *testing.T, config string, reqs []wire.Request) replayStats {
	t.Helper()
	h := plugintest.New(t, config)
	var st replayStats
	var direct, layer promptCache
	for i := range reqs {
		req := wire.LayerRequest{
			Meta:    wire.Meta{RequestID: "r", Tenant: "t", Dialect: wire.DialectAnthropic, Model: reqs[i].Model},
			Request: reqs[i],
		}
		res := h.OnRequest(req)
		out := reqs[i]
		if res.Patched&wire.PartTools != 0 {
			out.Tools = res.Request.Tools
		}
		kept := names(out.Tools)
		if i > 0 && !slices.Equal(kept, st.lists[i-1]) {
			st.changes++
		}
		st.lists = append(st.lists, kept)
		st.reasons = append(st.reasons, header(res.Headers, "X-Bardo-Tools-Reason"))
		if s := header(res.Headers, "X-Bardo-Tools-Saved-Tokens"); s != "" {
			n := 0
			for _, c := range s {
				n = 10*n + int(c-'0')
			}
			st.savedTokens += n
		}
		d, _, _ := direct.price(&reqs[i])
		l, _, _ := layer.price(&out)
		st.direct += d
		st.layer += l
		st.turns++
	}
	return st
}

func (s replayStats) log(t *testing.T, label string) {
	t.Helper()
	t.Logf("%s: %d turns, %d tool-set changes, %.0f tokens saved per turn (header), cost %.0f vs %.0f direct (×%.3f)",
		label, s.turns, s.changes, float64(s.savedTokens)/float64(s.turns), s.layer, s.direct, s.layer/s.direct)
}

// The replayed session gets one tool list on every turn (its prefix —
// system, tools, first prompt — never changes), keeps Claude Code's core
// tools, and costs less than the requests sent directly.
func TestReplaySessionStable(t *testing.T) {
	tools := claudeCodeTools(t)
	reqs := sessionRequests(t, loadSession(t), tools)
	if len(reqs) < 30 {
		t.Fatalf("%d requests", len(reqs))
	}
	st := replay(t, `{}`, reqs)
	st.log(t, "session")
	if st.changes != 0 {
		for i := 1; i < len(st.lists); i++ {
			if !slices.Equal(st.lists[i], st.lists[i-1]) {
				t.Errorf("turn %d: %v → %v", i, st.lists[i-1], st.lists[i])
			}
		}
	}
	kept := st.lists[0]
	for _, core := range []string{"Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite", "WebFetch", "AskUserQuestion"} {
		if !slices.Contains(kept, core) {
			t.Errorf("%s removed: %v", core, kept)
		}
	}
	if len(kept) == len(tools) || st.reasons[0] != reasonSession {
		t.Fatalf("not pruned (%s): %v", st.reasons[0], kept)
	}
	if st.layer >= st.direct {
		t.Fatalf("the layer costs %.0f, direct %.0f", st.layer, st.direct)
	}
	t.Logf("kept %d/%d: %v", len(kept), len(tools), kept)

	// For comparison: this turn's words pick the tools (stability "turn").
	turn := replay(t, `{"stability": "turn"}`, reqs)
	turn.log(t, "turn")
}
