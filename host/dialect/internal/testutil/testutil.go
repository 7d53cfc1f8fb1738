// Package testutil helps the dialect codecs' tests: a readable JSON dump of
// canonical values, semantic JSON comparison and SSE parsing.
package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// raw renders a []byte JSON piece: as itself when valid JSON, else as a
// string prefixed with "!invalid:".
func raw(b []byte) any {
	if b == nil {
		return nil
	}
	if json.Valid(b) {
		var v any
		_ = json.Unmarshal(b, &v)
		return v
	}
	return "!invalid:" + string(b)
}

func block(b wire.Block) map[string]any {
	m := map[string]any{"type": blockType(b.Type)}
	if b.Text != "" {
		m["text"] = b.Text
	}
	if b.ID != "" {
		m["id"] = b.ID
	}
	if b.Name != "" {
		m["name"] = b.Name
	}
	if b.Data != nil {
		m["data"] = raw(b.Data)
	}
	if b.Signature != "" {
		m["signature"] = b.Signature
	}
	if b.IsError {
		m["is_error"] = true
	}
	if b.CacheControl != nil {
		m["cache_control"] = raw(b.CacheControl)
	}
	if b.Extra != nil {
		m["extra"] = raw(b.Extra)
	}
	return m
}

func blockType(t wire.BlockType) string {
	switch t {
	case wire.BlockText:
		return "text"
	case wire.BlockImage:
		return "image"
	case wire.BlockToolUse:
		return "tool_use"
	case wire.BlockToolResult:
		return "tool_result"
	case wire.BlockThinking:
		return "thinking"
	case wire.BlockRedactedThinking:
		return "redacted_thinking"
	case wire.BlockDocument:
		return "document"
	case wire.BlockOther:
		return "other"
	}
	return fmt.Sprintf("unknown(%d)", t)
}

func blocks(bs []wire.Block) []any {
	out := []any{}
	for _, b := range bs {
		out = append(out, block(b))
	}
	return out
}

// Request renders a canonical request as indented JSON, for golden files.
func Request(r *wire.Request) []byte {
	m := map[string]any{"model": r.Model, "system": blocks(r.System), "stream": r.Stream}
	msgs := []any{}
	for _, msg := range r.Messages {
		mm := map[string]any{"role": msg.Role, "content": blocks(msg.Content)}
		if msg.Name != "" {
			mm["name"] = msg.Name
		}
		if msg.Extra != nil {
			mm["extra"] = raw(msg.Extra)
		}
		msgs = append(msgs, mm)
	}
	m["messages"] = msgs
	tools := []any{}
	for _, t := range r.Tools {
		tm := map[string]any{"name": t.Name}
		if t.Description != "" {
			tm["description"] = t.Description
		}
		if t.Schema != nil {
			tm["schema"] = raw(t.Schema)
		}
		if t.CacheControl != nil {
			tm["cache_control"] = raw(t.CacheControl)
		}
		if t.Extra != nil {
			tm["extra"] = raw(t.Extra)
		}
		tools = append(tools, tm)
	}
	m["tools"] = tools
	if r.ToolChoice != nil {
		m["tool_choice"] = raw(r.ToolChoice)
	}
	p := map[string]any{"set": r.Params.Set}
	if r.Params.Set&wire.HasMaxTokens != 0 {
		p["max_tokens"] = r.Params.MaxTokens
	}
	if r.Params.Set&wire.HasTemperature != 0 {
		p["temperature"] = r.Params.Temperature
	}
	if r.Params.Set&wire.HasTopP != 0 {
		p["top_p"] = r.Params.TopP
	}
	if r.Params.Set&wire.HasTopK != 0 {
		p["top_k"] = r.Params.TopK
	}
	if r.Params.Set&wire.HasSeed != 0 {
		p["seed"] = r.Params.Seed
	}
	if r.Params.Stop != nil {
		p["stop"] = r.Params.Stop
	}
	m["params"] = p
	if r.Extra != nil {
		m["extra"] = raw(r.Extra)
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	return append(out, '\n')
}

// Response renders a canonical response as indented JSON.
func Response(r *wire.Response) []byte {
	m := map[string]any{
		"id": r.ID, "model": r.Model, "content": blocks(r.Content),
		"stop_reason": r.StopReason, "stop_sequence": r.StopSeq, "usage": r.Usage,
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	return append(out, '\n')
}

// Events renders canonical stream events, one compact JSON object a line.
func Events(evs []wire.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		m := map[string]any{}
		switch e.Type {
		case wire.EventMessageStart:
			m["t"] = "message_start"
			m["id"], m["model"] = e.ID, e.Model
			m["usage"] = e.Usage
		case wire.EventBlockStart:
			m["t"] = "block_start"
			m["i"] = e.Index
			m["block"] = block(e.Block)
		case wire.EventDelta:
			m["t"] = "delta"
			m["i"] = e.Index
			m["kind"] = []string{"?", "text", "input_json", "thinking", "signature"}[min(int(e.Delta), 4)]
			m["text"] = e.Text
		case wire.EventBlockStop:
			m["t"] = "block_stop"
			m["i"] = e.Index
		case wire.EventMessageDelta:
			m["t"] = "message_delta"
			m["stop"], m["stop_seq"] = e.StopReason, e.StopSeq
			m["usage"] = e.Usage
		case wire.EventMessageStop:
			m["t"] = "message_stop"
		case wire.EventError:
			m["t"] = "error"
			m["error"] = e.Error
		case wire.EventPing:
			m["t"] = "ping"
		}
		b, _ := json.Marshal(m)
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// JSONEqual reports whether a and b hold the same JSON value (member order
// and whitespace aside; numbers compared as written).
func JSONEqual(a, b []byte) bool {
	va, ea := decodeNumbers(a)
	vb, eb := decodeNumbers(b)
	if ea != nil || eb != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// Indent pretty-prints JSON for failure messages.
func Indent(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// Golden compares got with the file testdata/name, rewriting the file when
// update is set.
func Golden(t *testing.T, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// SSE is one parsed server-sent event.
type SSE struct {
	Event string
	Data  string
}

// ParseSSE splits an SSE byte stream into events, checking the framing:
// every event ends with a blank line, every line is "event: …", "data: …" or
// a ": comment". Comments are dropped.
func ParseSSE(t *testing.T, b []byte) []SSE {
	t.Helper()
	s := string(b)
	if s != "" && !strings.HasSuffix(s, "\n\n") {
		t.Fatalf("SSE stream does not end with a blank line: %q", s)
	}
	var out []SSE
	for _, chunk := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		if chunk == "" {
			continue
		}
		var ev SSE
		data := 0
		for _, line := range strings.Split(chunk, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.Data = line[len("data: "):]
				data++
			default:
				t.Fatalf("bad SSE line %q", line)
			}
		}
		if data > 1 {
			t.Fatalf("event with %d data lines: %q", data, chunk)
		}
		if data == 1 {
			out = append(out, ev)
		}
	}
	return out
}
