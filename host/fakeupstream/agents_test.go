package fakeupstream

import (
	"net/http"
	"testing"
)

// Real agents' tools need real arguments: fake:args gives the tool call
// exactly the JSON written after it, in both dialects.
func TestPhraseArgs(t *testing.T) {
	s := newServer(t)
	const args = `{"file_path":"/tmp/agent/note.txt"}`
	prompt := "read the note fake:tool=Read fake:args=" + args

	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith(prompt, false)), http.StatusOK)
	call := obj(t, m, "choices", 0, "message", "tool_calls", 0, "function")
	if str(t, call, "name") != "Read" || str(t, call, "arguments") != args {
		t.Fatalf("OpenAI tool call %v", call)
	}

	m = jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith(prompt, false)), http.StatusOK)
	use := obj(t, m, "content", 0)
	if str(t, use, "type") != "tool_use" || str(t, use, "name") != "Read" || str(t, use, "input", "file_path") != "/tmp/agent/note.txt" {
		t.Fatalf("Anthropic tool_use %v", use)
	}
}

// opencode sends the user's text JSON-quoted: the arguments arrive escaped.
func TestPhraseArgsEscaped(t *testing.T) {
	b, ok := parsePhrases(`"read fake:tool=read fake:args={\"filePath\":\"/tmp/n.txt\"} now"`)
	if !ok || b.ToolArguments != `{"filePath":"/tmp/n.txt"}` {
		t.Fatalf("got %+v", b)
	}
}

// Claude Code 2.1.332 sends role "system" messages, with no beta, to its
// default claude-opus-5-5 and to every model from generation 4.8 on.
func TestTakesMidConversationSystem(t *testing.T) {
	for model, want := range map[string]bool{
		"claude-opus-4-8": true, "claude-opus-5-5": true, "claude-sonnet-5": true, "claude-opus-4-8-20260101": true,
		"claude-sonnet-4-5": false, "claude-opus-4-1": false, "claude-3-7-sonnet-20250219": false, "gpt-4o": false,
		"claude-haiku-4-5-20251001": false,
	} {
		if got := takesMidConversationSystem(model); got != want {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
}
