package testutil

import (
	"encoding/json"
	"testing"
)

// OpenAIMessage is what an SDK's chunk accumulator builds.
type OpenAIMessage struct {
	ID, Role, Content, Reasoning, Finish string
	Tools                                []struct{ ID, Type, Name, Args string }
	Usage                                map[string]any
}

// AccumulateOpenAI replays an encoded stream the way openai-go's
// ChatCompletionAccumulator and openai-node's ChatCompletionStream do, and
// fails on anything they would reject: chunks with different ids, content
// before the role, tool call deltas for a call never opened with id, type and
// name, chunks after the finish reason (other than the usage chunk), a
// missing [DONE].
func AccumulateOpenAI(t *testing.T, stream []byte) OpenAIMessage {
	t.Helper()
	var acc OpenAIMessage
	done := false
	for _, ev := range ParseSSE(t, stream) {
		if done {
			t.Fatalf("data after [DONE]: %s", ev.Data)
		}
		if ev.Data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Role      *string `json:"role"`
					Content   *string `json:"content"`
					Reasoning *string `json:"reasoning_content"`
					ToolCalls []struct {
						Index    int     `json:"index"`
						ID       *string `json:"id"`
						Type     *string `json:"type"`
						Function *struct {
							Name      *string `json:"name"`
							Arguments *string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			t.Fatalf("chunk is not JSON: %v: %s", err, ev.Data)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("object %q", c.Object)
		}
		if acc.ID == "" {
			acc.ID = c.ID
		} else if c.ID != acc.ID {
			t.Fatalf("chunk id %q differs from %q", c.ID, acc.ID)
		}
		if c.Usage != nil {
			acc.Usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				t.Fatalf("choice index %d", ch.Index)
			}
			if acc.Finish != "" {
				t.Fatalf("choice delta after finish_reason: %s", ev.Data)
			}
			d := ch.Delta
			if d.Role != nil {
				acc.Role = *d.Role
			}
			if acc.Role != "assistant" {
				t.Fatalf("delta before the assistant role: %s", ev.Data)
			}
			if d.Content != nil {
				acc.Content += *d.Content
			}
			if d.Reasoning != nil {
				acc.Reasoning += *d.Reasoning
			}
			for _, tc := range d.ToolCalls {
				if tc.Index == len(acc.Tools) {
					acc.Tools = append(acc.Tools, struct{ ID, Type, Name, Args string }{})
				} else if tc.Index > len(acc.Tools) {
					t.Fatalf("tool call index %d skips ahead", tc.Index)
				}
				dst := &acc.Tools[tc.Index]
				if tc.ID != nil {
					dst.ID = *tc.ID
				}
				if tc.Type != nil {
					dst.Type = *tc.Type
				}
				if tc.Function != nil && tc.Function.Name != nil {
					dst.Name += *tc.Function.Name
				}
				if tc.Function != nil && tc.Function.Arguments != nil {
					dst.Args += *tc.Function.Arguments
				}
				if dst.ID == "" || dst.Type != "function" || dst.Name == "" {
					t.Fatalf("tool call %d lacks id/type/name: %+v", tc.Index, dst)
				}
			}
			if ch.FinishReason != nil {
				acc.Finish = *ch.FinishReason
			}
		}
	}
	if !done {
		t.Fatal("no [DONE]")
	}
	if acc.Finish == "" {
		t.Fatal("no finish_reason")
	}
	return acc
}

// AnthropicBlock is one accumulated content block.
type AnthropicBlock struct {
	Type, Text, ID, Name, Input, Thinking, Signature, Data string
}

// AnthropicMessage is what an SDK's MessageStream accumulator builds.
type AnthropicMessage struct {
	ID, Model, StopReason string
	StopSequence          *string
	Content               []AnthropicBlock
	Usage                 map[string]any
	Pings                 int
}

// AccumulateAnthropic replays an encoded Messages stream the way the
// Anthropic SDKs' message accumulators do, and fails on anything they would
// reject or mis-assemble: an SSE event name that differs from the data's
// type, events before message_start or after message_stop, a block started at
// an index other than the next one, deltas for a block that is not open or of
// the wrong kind, tool input that is not valid JSON once complete, blocks
// still open at message_delta, a missing message_delta or message_stop.
func AccumulateAnthropic(t *testing.T, stream []byte) AnthropicMessage {
	return accumulateAnthropic(t, stream, true)
}

// AccumulateAnthropicShape is AccumulateAnthropic without the check that
// tool input is valid JSON (for streams whose content is arbitrary).
func AccumulateAnthropicShape(t *testing.T, stream []byte) AnthropicMessage {
	return accumulateAnthropic(t, stream, false)
}

func accumulateAnthropic(t *testing.T, stream []byte, checkJSON bool) AnthropicMessage {
	t.Helper()
	var m AnthropicMessage
	m.Usage = map[string]any{}
	started, deltaSeen, stopped := false, false, false
	open := map[int]bool{}
	for _, ev := range ParseSSE(t, stream) {
		var e struct {
			Type    string `json:"type"`
			Index   *int   `json:"index"`
			Message *struct {
				ID      string         `json:"id"`
				Type    string         `json:"type"`
				Role    string         `json:"role"`
				Model   string         `json:"model"`
				Content []any          `json:"content"`
				Usage   map[string]any `json:"usage"`
			} `json:"message"`
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any `json:"delta"`
			Usage        map[string]any
		}
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			t.Fatalf("event data is not JSON: %v: %s", err, ev.Data)
		}
		if ev.Event != e.Type {
			t.Fatalf("SSE event %q carries data of type %q", ev.Event, e.Type)
		}
		if stopped {
			t.Fatalf("event after message_stop: %s", ev.Data)
		}
		if !started && e.Type != "message_start" && e.Type != "ping" && e.Type != "error" {
			t.Fatalf("%s before message_start", e.Type)
		}
		switch e.Type {
		case "message_start":
			if started {
				t.Fatal("second message_start")
			}
			started = true
			if e.Message == nil || e.Message.Type != "message" || e.Message.Role != "assistant" || e.Message.Content == nil || len(e.Message.Content) != 0 {
				t.Fatalf("bad message_start: %s", ev.Data)
			}
			m.ID, m.Model = e.Message.ID, e.Message.Model
			for k, v := range e.Message.Usage {
				m.Usage[k] = v
			}
		case "content_block_start":
			if deltaSeen {
				t.Fatal("content_block_start after message_delta")
			}
			if e.Index == nil || *e.Index != len(m.Content) {
				t.Fatalf("content_block_start index %v, want %d", e.Index, len(m.Content))
			}
			b := AnthropicBlock{}
			b.Type, _ = e.ContentBlock["type"].(string)
			b.Text, _ = e.ContentBlock["text"].(string)
			b.ID, _ = e.ContentBlock["id"].(string)
			b.Name, _ = e.ContentBlock["name"].(string)
			b.Thinking, _ = e.ContentBlock["thinking"].(string)
			b.Signature, _ = e.ContentBlock["signature"].(string)
			b.Data, _ = e.ContentBlock["data"].(string)
			switch b.Type {
			case "tool_use":
				if in, ok := e.ContentBlock["input"].(map[string]any); !ok || len(in) != 0 || b.ID == "" || b.Name == "" {
					t.Fatalf("bad tool_use start: %s", ev.Data)
				}
			case "text":
				if _, ok := e.ContentBlock["text"].(string); !ok {
					t.Fatalf("text block without text: %s", ev.Data)
				}
			case "thinking":
				if _, ok := e.ContentBlock["thinking"].(string); !ok {
					t.Fatalf("thinking block without thinking: %s", ev.Data)
				}
			}
			m.Content = append(m.Content, b)
			open[*e.Index] = true
		case "content_block_delta":
			if e.Index == nil || !open[*e.Index] {
				t.Fatalf("delta for a block that is not open: %s", ev.Data)
			}
			b := &m.Content[*e.Index]
			dt, _ := e.Delta["type"].(string)
			want := map[string]string{"text_delta": "text", "citations_delta": "text", "input_json_delta": "tool_use", "thinking_delta": "thinking", "signature_delta": "thinking"}[dt]
			if want == "" || want != b.Type {
				t.Fatalf("%s on a %s block", dt, b.Type)
			}
			switch dt {
			case "text_delta":
				s, ok := e.Delta["text"].(string)
				if !ok {
					t.Fatalf("bad delta %s", ev.Data)
				}
				b.Text += s
			case "input_json_delta":
				s, ok := e.Delta["partial_json"].(string)
				if !ok {
					t.Fatalf("bad delta %s", ev.Data)
				}
				b.Input += s
			case "thinking_delta":
				s, ok := e.Delta["thinking"].(string)
				if !ok {
					t.Fatalf("bad delta %s", ev.Data)
				}
				b.Thinking += s
			case "signature_delta":
				s, ok := e.Delta["signature"].(string)
				if !ok {
					t.Fatalf("bad delta %s", ev.Data)
				}
				b.Signature = s
			}
		case "content_block_stop":
			if e.Index == nil || !open[*e.Index] {
				t.Fatalf("stop for a block that is not open: %s", ev.Data)
			}
			open[*e.Index] = false
			if b := m.Content[*e.Index]; b.Type == "tool_use" && checkJSON {
				in := b.Input
				if in == "" {
					in = "{}"
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(in), &v); err != nil {
					t.Fatalf("tool input %q is not a JSON object: %v", b.Input, err)
				}
			}
		case "message_delta":
			if deltaSeen {
				t.Fatal("second message_delta")
			}
			deltaSeen = true
			for i, o := range open {
				if o {
					t.Fatalf("block %d still open at message_delta", i)
				}
			}
			m.StopReason, _ = e.Delta["stop_reason"].(string)
			if ss, ok := e.Delta["stop_sequence"].(string); ok {
				m.StopSequence = &ss
			} else if e.Delta["stop_sequence"] != nil {
				t.Fatalf("bad stop_sequence %s", ev.Data)
			}
			if _, ok := e.Usage["output_tokens"]; !ok {
				t.Fatalf("message_delta without usage.output_tokens: %s", ev.Data)
			}
			for k, v := range e.Usage {
				m.Usage[k] = v
			}
		case "message_stop":
			if !deltaSeen {
				t.Fatal("message_stop without message_delta")
			}
			stopped = true
		case "ping":
			m.Pings++
		case "error":
			t.Fatalf("error event: %s", ev.Data)
		default:
			t.Fatalf("unknown event %q", e.Type)
		}
	}
	if !stopped {
		t.Fatal("no message_stop")
	}
	return m
}
