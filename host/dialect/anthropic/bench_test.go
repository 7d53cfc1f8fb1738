package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// request4KB is a typical agent turn of about 4 KB: cached system prompt, a
// few turns, a tool definition, a tool call and its result, extras.
func request4KB() []byte {
	sys := strings.Repeat("You are a careful coding assistant. Answer precisely and cite files. ", 10)
	turn := strings.Repeat("Please look at the handler and explain why the request \"fails\" with a 502.\n", 3)
	var b strings.Builder
	q, _ := json.Marshal(sys)
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":`)
	b.Write(q)
	b.WriteString(`,"cache_control":{"type":"ephemeral"}}],"messages":[`)
	for i := 0; i < 4; i++ {
		q, _ := json.Marshal(turn)
		if i > 0 {
			b.WriteString(`,`)
		}
		b.WriteString(`{"role":"user","content":`)
		b.Write(q)
		b.WriteString(`},{"role":"assistant","content":`)
		b.Write(q)
		b.WriteString(`}`)
	}
	b.WriteString(`,{"role":"user","content":"go on"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"host/server.go","line":120}}]}`)
	b.WriteString(`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"func (s *Server) handle(ctx *Ctx) error {\n\treturn s.route(ctx)\n}","cache_control":{"type":"ephemeral"}}]}`)
	b.WriteString(`],"tools":[{"name":"read_file","description":"Read a file of the repository","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"path"},"line":{"type":"integer"}},"required":["path"]}}]`)
	b.WriteString(`,"tool_choice":{"type":"auto"},"temperature":0.2,"stream":true,"metadata":{"user_id":"u-42"}}`)
	return []byte(b.String())
}

func TestRequest4KBSize(t *testing.T) {
	n := len(request4KB())
	if n < 3500 || n > 4800 {
		t.Errorf("benchmark body is %d bytes, want about 4 KB", n)
	}
	if _, err := DecodeRequest(request4KB()); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkDecodeRequest4KB(b *testing.B) {
	body := request4KB()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRequest4KB(b *testing.B) {
	body := request4KB()
	req, err := DecodeRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoundTrip4KB(b *testing.B) {
	body := request4KB()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := EncodeRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamEncodeTextDelta(b *testing.B) {
	s := NewStreamEncoder()
	dst := s.Encode(nil, &wire.Event{Type: wire.EventMessageStart, ID: "msg_123", Model: "claude"})
	dst = s.Encode(dst, &wire.Event{Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockText}})
	ev := wire.Event{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "Hello, this is a typical \"token\" chunk.\n"}
	b.ReportAllocs()
	for b.Loop() {
		dst = s.Encode(dst[:0], &ev)
	}
}

func BenchmarkStreamDecodeDelta(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, this is a typical token chunk."}}`)
	d := NewStreamDecoder()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode("content_block_delta", data); err != nil {
			b.Fatal(err)
		}
	}
}
