package replay

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from gen_*_test.go")

// Trace is one recorded agent session, replayed request by request: each
// turn appends its messages to the conversation and sends the whole
// request, as the agent's client would.
type Trace struct {
	Name    string `json:"name"`
	Dialect string `json:"dialect"` // "anthropic" or "openai"
	Path    string `json:"path"`
	About   string `json:"about"`
	// Request is every field of the request but messages.
	Request map[string]any `json:"request"`
	// RollingBreakpoint: the client marks the last block of the newest
	// message with cache_control on every request (Claude Code does).
	RollingBreakpoint bool   `json:"rolling_breakpoint"`
	Turns             []Turn `json:"turns"`
}

// Turn is one request of the session: it is sent GapSeconds after the
// previous one (virtual time: the providers' cache clocks) with Messages
// appended to the conversation.
type Turn struct {
	GapSeconds int              `json:"gap_s"`
	Messages   []map[string]any `json:"messages"`
}

// conv writes a trace turn by turn.
type conv struct {
	openai  bool
	pending []map[string]any
	turns   []Turn
	ids     int
}

func (c *conv) send(gap int) {
	c.turns = append(c.turns, Turn{GapSeconds: gap, Messages: c.pending})
	c.pending = nil
}

func (c *conv) system(text string) {
	c.pending = append(c.pending, map[string]any{"role": "system", "content": text})
}

// user sends a user message of text blocks (one string for OpenAI).
func (c *conv) user(gap int, texts ...string) {
	if c.openai {
		c.pending = append(c.pending, map[string]any{"role": "user", "content": texts[len(texts)-1]})
	} else {
		var blocks []any
		for _, t := range texts {
			blocks = append(blocks, map[string]any{"type": "text", "text": t})
		}
		c.pending = append(c.pending, map[string]any{"role": "user", "content": blocks})
	}
	c.send(gap)
}

// assistantText is the model's final answer of a turn; it is sent with the
// next user message.
func (c *conv) assistantText(text string) {
	if c.openai {
		c.pending = append(c.pending, map[string]any{"role": "assistant", "content": text})
	} else {
		c.pending = append(c.pending, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}})
	}
}

// toolUse is one round: the model (with optional text) calls a tool, the
// client sends its result gap seconds later.
func (c *conv) toolUse(gap int, text, name string, input map[string]any, result string) {
	c.ids++
	if c.openai {
		id := fmt.Sprintf("call_%024d", c.ids*7919)
		args, _ := json.Marshal(input)
		var content any
		if text != "" {
			content = text
		}
		c.pending = append(c.pending,
			map[string]any{"role": "assistant", "content": content, "tool_calls": []any{map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": name, "arguments": string(args)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": result})
	} else {
		id := fmt.Sprintf("toolu_01%022d", c.ids*104729)
		var blocks []any
		if text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": text})
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
		if result == "" {
			result = "(" + name + " completed with no output)"
		}
		c.pending = append(c.pending,
			map[string]any{"role": "assistant", "content": blocks},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": result}}})
	}
	c.send(gap)
}

func (c *conv) trace(name, dialect, path string, request map[string]any, rolling bool) Trace {
	// The session's last answer is the reply to its last request: never sent.
	c.pending = nil
	return Trace{Name: name, Dialect: dialect, Path: path, Request: request, RollingBreakpoint: rolling, Turns: c.turns,
		About: "written for this suite (host/replay/gen_*_test.go); regenerate with go test ./host/replay -run TestTraces -update"}
}

var traceFiles = map[string]func() Trace{
	"coding-agent.json": codingSession,
	"defi-agent.json":   defiSession,
}

// The testdata traces are what gen_*_test.go writes: -update rewrites them.
func TestTraces(t *testing.T) {
	for file, gen := range traceFiles {
		want, err := json.MarshalIndent(gen(), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		path := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what gen_*_test.go writes (%v): run go test ./host/replay -run TestTraces -update", path, err)
		}
	}
}

func loadTrace(t testing.TB, file string) Trace {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}
