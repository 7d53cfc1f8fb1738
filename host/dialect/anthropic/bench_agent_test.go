package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
)

// requestClaudeCode is a Claude Code-sized request: about 85 KB, a long
// cached system prompt, 24 tools (some deferred), a few turns with
// reminders, a tool round trip and a trailing mid-conversation system
// message (the last one needs ABI v1.4 codecs; without it the body is
// what older codecs can decode).
func requestClaudeCode(withSystemMessage bool) []byte {
	sys, _ := json.Marshal(strings.Repeat("You are Claude Code, an interactive CLI tool that helps users with software engineering tasks. Follow the repository's conventions; prefer editing files to creating them. ", 300))
	var b strings.Builder
	b.WriteString(`{"model":"claude-opus-4-8","max_tokens":32000,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332"},{"type":"text","text":`)
	b.Write(sys)
	b.WriteString(`,"cache_control":{"type":"ephemeral"}}],"messages":[`)
	reminder, _ := json.Marshal("<system-reminder>\n" + strings.Repeat("As you answer the user's questions, you can use the following context: the todo list is empty. ", 60) + "\n</system-reminder>")
	b.WriteString(`{"role":"user","content":[{"type":"text","text":`)
	b.Write(reminder)
	b.WriteString(`},{"type":"text","text":"Edit the file config.toml and write the changes"}]}`)
	b.WriteString(`,{"role":"assistant","content":[{"type":"thinking","thinking":"Read it first.","signature":"EqQBCkgIBxABGAIqQGq0"},{"type":"tool_use","id":"toolu_01A","name":"Read","input":{"file_path":"/repo/config.toml"}}]}`)
	b.WriteString(`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":[{"type":"text","text":"     1\t[server]\n     2\taddr = \":8080\""}]},{"type":"text","text":`)
	b.Write(reminder)
	b.WriteString(`,"cache_control":{"type":"ephemeral"}}]}`)
	if withSystemMessage {
		b.WriteString(`,{"role":"system","content":"Available agent types: general-purpose, Explore, Plan"}`)
	}
	b.WriteString(`],"tools":[`)
	for i := 0; i < 24; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		desc, _ := json.Marshal(strings.Repeat(fmt.Sprintf("Tool %d does one thing well and reports what it did. ", i), 12))
		fmt.Fprintf(&b, `{"name":"Tool%d","description":%s,"input_schema":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path"},"limit":{"type":"number"}},"required":["file_path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`, i, desc)
		if i >= 18 {
			b.WriteString(`,"defer_loading":true`)
		}
		b.WriteString("}")
	}
	b.WriteString(`],"metadata":{"user_id":"user_2f1c"},"thinking":{"type":"enabled","budget_tokens":31999},"stream":true}`)
	return []byte(b.String())
}

func TestRequestClaudeCodeSize(t *testing.T) {
	for _, sm := range []bool{false, true} {
		body := requestClaudeCode(sm)
		if n := len(body); n < 80<<10 || n > 90<<10 {
			t.Errorf("benchmark body is %d bytes, want about 85 KB", n)
		}
		if _, err := DecodeRequest(body); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkDecodeRequestClaudeCode85KB: the decode every request pays,
// strict validation (UTF-8, duplicate keys) and unknown members included.
func BenchmarkDecodeRequestClaudeCode85KB(b *testing.B) {
	body := requestClaudeCode(false)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripClaudeCode85KB: decode and re-encode, as once a layer
// changed the request.
func BenchmarkRoundTripClaudeCode85KB(b *testing.B) {
	body := requestClaudeCode(false)
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

// BenchmarkValidateClaudeCode85KB: what strictness costs, side by side (the
// lenient validator is what DecodeRequest ran before issue 11).
func BenchmarkValidateClaudeCode85KB(b *testing.B) {
	body := requestClaudeCode(true)
	for _, c := range []struct {
		name string
		fn   func([]byte) error
	}{{"lenient", jsonx.Validate}, {"strict", jsonx.ValidateStrict}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.fn(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
