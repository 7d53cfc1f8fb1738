//go:build !wasip1

package main_test

// The replayed Claude Code session through the gateway: its requests as
// Claude Code sends them (Anthropic Messages, system and last-block cache
// breakpoints), the layer compiled to WASM. The upstream must receive the
// same tool definitions, byte for byte, on every turn: that is what keeps
// its prompt cache.

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// claudeCodeBodies returns the Anthropic bodies of the session's requests.
func claudeCodeBodies(t *testing.T) [][]byte {
	t.Helper()
	var tools []json.RawMessage
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
	for file, v := range map[string]any{"testdata/claude_code_tools.json": &tools, "testdata/claude_code_session.json": &script} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	type block = map[string]any
	texts := func(l []string) (out []any) {
		for _, s := range l {
			out = append(out, block{"type": "text", "text": s})
		}
		return out
	}
	var msgs []map[string]any
	var bodies [][]byte
	send := func() {
		// Claude Code's breakpoints: the system prompt and the last block.
		last := msgs[len(msgs)-1]["content"].([]any)
		cc := block{}
		for k, v := range last[len(last)-1].(block) {
			cc[k] = v
		}
		cc["cache_control"] = block{"type": "ephemeral"}
		out := append([]map[string]any(nil), msgs[:len(msgs)-1]...)
		out = append(out, map[string]any{"role": msgs[len(msgs)-1]["role"], "content": append(append([]any(nil), last[:len(last)-1]...), cc)})
		bodies = append(bodies, []byte(mustJSON(map[string]any{
			"model":      "claude-sonnet-4-5",
			"max_tokens": 32000,
			"stream":     false,
			"system":     []any{block{"type": "text", "text": script.System, "cache_control": block{"type": "ephemeral"}}},
			"tools":      tools,
			"messages":   out,
		})))
	}
	for i, st := range script.Steps {
		id := "toolu_" + strconv.Itoa(i)
		switch {
		case st.User != "":
			c := append(texts(st.RemindersBefore), block{"type": "text", "text": st.User})
			msgs = append(msgs, map[string]any{"role": "user", "content": append(c, texts(st.RemindersAfter)...)})
			send()
		case st.Call != "":
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{block{"type": "tool_use", "id": id, "name": st.Call, "input": st.Input}}},
				map[string]any{"role": "user", "content": append([]any{block{"type": "tool_result", "tool_use_id": id, "content": st.Result}}, texts(st.RemindersAfter)...)})
			send()
		default:
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{block{"type": "text", "text": st.Say}}})
		}
	}
	return bodies
}

func TestClaudeCodeSessionThroughGateway(t *testing.T) {
	g, fake := start(t)
	bodies := claudeCodeBodies(t)
	var first json.RawMessage
	for i, body := range bodies {
		if i%4 != 0 && i != len(bodies)-1 {
			continue // every fourth turn and the last: enough to see a change, cheap enough to run
		}
		r := post(t, g, "/v1/messages", string(body))
		if r.status != 200 {
			t.Fatalf("turn %d: status %d: %s", i, r.status, r.body)
		}
		var up struct {
			Tools json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(fake.Last().Body, &up); err != nil {
			t.Fatal(err)
		}
		if h := r.header.Get("X-Bardo-Tools"); h != "12/24" || r.header.Get("X-Bardo-Tools-Reason") != "session" {
			t.Fatalf("turn %d: X-Bardo-Tools %q, reason %q", i, h, r.header.Get("X-Bardo-Tools-Reason"))
		}
		if i == 0 {
			first = up.Tools
			names, _ := upstreamTools(t, fake.Last().Body)
			t.Logf("upstream tools: %v; pruned: %s", names, r.header.Get("X-Bardo-Tools-Pruned"))
			continue
		}
		if !bytes.Equal(up.Tools, first) {
			t.Fatalf("turn %d: the upstream's tools differ from turn 0's:\n%s\n%s", i, up.Tools, first)
		}
	}
}
