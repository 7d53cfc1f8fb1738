package loadtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// AgentBodySize is the size ClaudeCode's bodies aim at: a Claude Code
// request of a session some turns in (85 KB, as captured from real clients).
const AgentBodySize = 85 << 10

// agentTools are the tools a coding agent declares (Claude Code 2.x sends
// 12–24; 18 here).
var agentTools = []string{"Task", "Bash", "Glob", "Grep", "LS", "ExitPlanMode", "Read", "Edit", "MultiEdit", "Write",
	"NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell", "SlashCommand", "AskUserQuestion"}

// agentPrefix is the part of ClaudeCode's body that stays the same from one
// request to the next (system, tools, earlier turns), built once.
var agentPrefix = buildAgentPrefix()

type agentParts struct {
	system   json.RawMessage
	tools    json.RawMessage
	messages []json.RawMessage
}

// prose makes n bytes of deterministic instruction-like text.
func prose(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(verbs[r.IntN(len(verbs))])
		for range 10 + r.IntN(8) {
			b.WriteByte(' ')
			b.WriteString(vocabulary[r.IntN(len(vocabulary))])
		}
		b.WriteString(". ")
		if r.IntN(6) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// code makes n bytes of Go-like source, as a tool result carries.
func code(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		w := vocabulary[r.IntN(len(vocabulary))]
		fmt.Fprintf(&b, "%5d\tfunc (s *%sStore) Get%s(ctx context.Context, id int) (*%s, error) { return s.db.Lookup(ctx, %q, id) }\n",
			i, w, strings.ToUpper(w[:1])+w[1:], w, w)
	}
	return b.String()
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func buildAgentPrefix() agentParts {
	r := rand.New(rand.NewPCG(7, 7))
	var p agentParts
	p.system = mustJSON([]map[string]any{
		{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": map[string]string{"type": "ephemeral"}},
		{"type": "text", "text": prose(r, 22<<10), "cache_control": map[string]string{"type": "ephemeral"}},
	})
	var tools []map[string]any
	for _, name := range agentTools {
		tools = append(tools, map[string]any{
			"name":        name,
			"description": prose(r, 1200),
			"input_schema": map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"required":             []string{"path"},
				"properties": map[string]any{
					"path":        map[string]string{"type": "string", "description": prose(r, 120)},
					"pattern":     map[string]string{"type": "string", "description": prose(r, 100)},
					"limit":       map[string]string{"type": "number", "description": prose(r, 80)},
					"description": map[string]string{"type": "string", "description": prose(r, 90)},
				},
			},
		})
	}
	p.tools = mustJSON(tools)
	size := len(p.system) + len(p.tools)
	for turn := 0; size < AgentBodySize-3<<10; turn++ {
		id := fmt.Sprintf("toolu_%024d", turn)
		msgs := []json.RawMessage{
			mustJSON(map[string]any{"role": "user", "content": prose(r, 200)}),
			mustJSON(map[string]any{"role": "assistant", "content": []map[string]any{
				{"type": "text", "text": prose(r, 150)},
				{"type": "tool_use", "id": id, "name": "Read", "input": map[string]string{"path": fmt.Sprintf("internal/store/file%d.go", turn)}},
			}}),
			mustJSON(map[string]any{"role": "user", "content": []map[string]any{
				{"type": "tool_result", "tool_use_id": id, "content": code(r, min(4500, AgentBodySize-3<<10-size))},
			}}),
			mustJSON(map[string]any{"role": "assistant", "content": prose(r, 160)}),
		}
		for _, m := range msgs {
			size += len(m)
		}
		p.messages = append(p.messages, msgs...)
	}
	return p
}

// ClaudeCode is a Claude Code-sized Anthropic request (about AgentBodySize,
// 18 tools, a 22 KB system prompt, earlier turns with tool calls and
// results) whose last user turn carries a system reminder and prompt.
func ClaudeCode(prompt string, stream bool) []byte {
	last := mustJSON(map[string]any{"role": "user", "content": []map[string]any{
		{"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context: the working directory is a Go module; run its tests before you say a change is done.\n</system-reminder>"},
		{"type": "text", "text": prompt},
	}})
	msgs := append(append([]json.RawMessage(nil), agentPrefix.messages...), last)
	return mustJSON(map[string]any{
		"model":      "claude-sonnet-4-5",
		"max_tokens": 32000,
		"stream":     stream,
		"system":     agentPrefix.system,
		"tools":      agentPrefix.tools,
		"messages":   msgs,
		"metadata":   map[string]string{"user_id": "user_loadtest_session_1"},
	})
}
