package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// request4KB is a typical agent turn of about 4 KB: system prompt, a few
// turns, a tool definition, a tool call and its result, extras.
func request4KB() []byte {
	sys := strings.Repeat("You are a careful coding assistant. Answer precisely and cite files. ", 10)
	turn := strings.Repeat("Please look at the handler and explain why the request \"fails\" with a 502.\n", 3)
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","messages":[{"role":"system","content":`)
	q, _ := json.Marshal(sys)
	b.Write(q)
	b.WriteString(`}`)
	for i := 0; i < 4; i++ {
		q, _ := json.Marshal(turn)
		b.WriteString(`,{"role":"user","content":`)
		b.Write(q)
		b.WriteString(`},{"role":"assistant","content":`)
		b.Write(q)
		b.WriteString(`}`)
	}
	b.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"host/server.go\",\"line\":120}"}}]}`)
	b.WriteString(`,{"role":"tool","tool_call_id":"call_1","content":"func (s *Server) handle(ctx *Ctx) error {\n\treturn s.route(ctx)\n}"}`)
	b.WriteString(`],"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file of the repository","parameters":{"type":"object","properties":{"path":{"type":"string","description":"path"},"line":{"type":"integer"}},"required":["path"]}}}]`)
	b.WriteString(`,"tool_choice":"auto","temperature":0.2,"max_completion_tokens":1024,"stream":true,"stream_options":{"include_usage":true},"user":"u-42"}`)
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

// BenchmarkStdlibUnmarshal4KB is a reference point: encoding/json decoding
// the same body into map[string]any.
func BenchmarkStdlibUnmarshal4KB(b *testing.B) {
	body := request4KB()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamEncodeTextDelta(b *testing.B) {
	s := NewStreamEncoder(true)
	dst := s.Encode(nil, &wire.Event{Type: wire.EventMessageStart, ID: "chatcmpl-123", Model: "gpt-4o"})
	ev := wire.Event{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "Hello, this is a typical \"token\" chunk.\n"}
	b.ReportAllocs()
	for b.Loop() {
		dst = s.Encode(dst[:0], &ev)
	}
}

func BenchmarkStreamDecodeChunk(b *testing.B) {
	chunk := []byte(`{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hello, this is a typical token chunk."},"logprobs":null,"finish_reason":null}]}`)
	d := NewStreamDecoder()
	_, _ = d.Decode("", chunk)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode("", chunk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	body := readFixture(b, "resp_text.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeResponse(body); err != nil {
			b.Fatal(err)
		}
	}
}
