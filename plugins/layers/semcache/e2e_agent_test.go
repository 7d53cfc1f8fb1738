//go:build !wasip1

package main_test

// Agents' requests end to end: a 20 KB system prompt and a tool list that
// every request of one agent shares, a short question at the end. Before the
// context was hashed apart from the question, any two such requests scored
// 0.9997–1.0000 and one question got another's answer (issue 11).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// agentSystem is a 20 KB system prompt in the manner of opencode's and
// Claude Code's: rules, tone, tool policy, environment.
func agentSystem() string {
	var b strings.Builder
	b.WriteString("You are an interactive CLI agent that helps users with software engineering tasks.\n")
	for i := 0; b.Len() < 20<<10; i++ {
		fmt.Fprintf(&b, "Rule %d: keep answers short and direct; prefer editing existing files over creating new ones; "+
			"never commit unless asked; run the project's linter and tests after a change; cite file paths as path:line.\n", i)
	}
	b.WriteString("Environment: working directory /home/dev/project, platform linux, is a git repository: yes.\n")
	return b.String()
}

var agentTools = []string{"bash", "read", "edit", "write", "glob", "grep", "task", "todowrite", "webfetch"}

// opencodeBody is an OpenAI Chat Completions request as opencode sends it.
func opencodeBody(t *testing.T, system, prompt string) string {
	t.Helper()
	var tools []map[string]any
	for _, name := range agentTools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "The " + name + " tool.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"input": map[string]any{"type": "string"}}},
		}})
	}
	b, err := json.Marshal(map[string]any{
		"model": "gpt-4o", "temperature": 0, "max_tokens": 32000, "tools": tools, "tool_choice": "auto",
		"messages": []any{
			map[string]any{"role": "system", "content": system},
			map[string]any{"role": "user", "content": prompt},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// claudeCodeBody is an Anthropic Messages request as Claude Code sends
// it: system blocks, tools, the session in metadata, and reminders in the
// last user turn beside the prompt.
func claudeCodeBody(t *testing.T, system, session, prompt string, history ...any) string {
	t.Helper()
	var tools []map[string]any
	for _, name := range agentTools {
		tools = append(tools, map[string]any{"name": name, "description": "The " + name + " tool.",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"input": map[string]any{"type": "string"}}}})
	}
	last := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context: the project's CLAUDE.md says to run make test.\n</system-reminder>"},
		map[string]any{"type": "text", "text": prompt, "cache_control": map[string]any{"type": "ephemeral"}},
	}}
	b, err := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 32000, "tools": tools,
		"system":   []any{map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}},
		"metadata": map[string]any{"user_id": "user_abc_account_def_session_" + session},
		"messages": append(history, last),
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// answerText is the text of an OpenAI or Anthropic non-streamed answer.
func answerText(t *testing.T, r apitest.Reply) string {
	t.Helper()
	m := apitest.JSON(t, r.Body)
	var b strings.Builder
	if cs, ok := m["choices"].([]any); ok {
		for _, c := range cs {
			if s, ok := c.(map[string]any)["message"].(map[string]any)["content"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	if bs, ok := m["content"].([]any); ok {
		for _, bl := range bs {
			if s, ok := bl.(map[string]any)["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

func post(t *testing.T, g *testgateway.Gateway, path, body string) apitest.Reply {
	t.Helper()
	r := apitest.Post(t, g.URL, path, body)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	return r
}

// TestAgentPromptsNeverShareAnAnswer: opencode-shaped requests with one
// 20 KB system prompt and one tool list. Different prompts each go
// upstream and get their own answer; the same prompt asked again (also in
// other case and punctuation) is answered from the cache.
func TestAgentPromptsNeverShareAnAnswer(t *testing.T) {
	g, fake := start(t, "min_tokens = 1")
	calls := func() int { return fake.Count("/v1/chat/completions") }
	system := agentSystem()
	prompts := []string{
		"write a haiku about the mountains 7",
		"write a poem about the sea 7",
		"write a haiku about the mountains 8",
		"What does docker run -p 8080:80 do?",
		"What does docker run -p 80:8080 do?",
		"How do I run one test with pytest?",
		"How do I run one test with unittest?",
		"What does $? mean in bash?",
		"What does $! mean in bash?",
		"What does photosynthesis mean?",
		"What does latency mean?",
	}
	for i, p := range prompts {
		r := post(t, g, "/v1/chat/completions", opencodeBody(t, system, p))
		if got := r.Header.Get("X-Bardo-Cache"); got != "miss" || calls() != i+1 {
			t.Fatalf("%q: cache %q (similarity %s), upstream calls %d, want a miss and %d", p,
				got, r.Header.Get("X-Bardo-Cache-Similarity"), calls(), i+1)
		}
		if a := answerText(t, r); a != "echo: "+p {
			t.Fatalf("%q answered with %q", p, a)
		}
	}
	// A true repeat in the same context hits, with its own answer.
	for _, p := range []string{"write a haiku about the mountains 7", "Write a haiku about the mountains 7.", "what does $? mean in bash"} {
		r := post(t, g, "/v1/chat/completions", opencodeBody(t, system, p))
		if r.Header.Get("X-Bardo-Cache") != "semantic-hit" || calls() != len(prompts) {
			t.Fatalf("repeat %q: cache %q, upstream calls %d", p, r.Header.Get("X-Bardo-Cache"), calls())
		}
		want := "echo: write a haiku about the mountains 7"
		if strings.Contains(p, "$?") {
			want = "echo: What does $? mean in bash?"
		}
		if a := answerText(t, r); a != want {
			t.Fatalf("repeat %q answered with %q", p, a)
		}
	}
	// The same question in another context (one rule of the system prompt
	// changed) is not the same request.
	r := post(t, g, "/v1/chat/completions", opencodeBody(t, strings.Replace(system, "Rule 3:", "Rule three:", 1), prompts[0]))
	if r.Header.Get("X-Bardo-Cache") != "miss" {
		t.Fatalf("another system prompt shared an answer: %q", r.Header.Get("X-Bardo-Cache"))
	}
}

// TestClaudeCodeShapedRequests: Anthropic-dialect requests with one 20 KB
// system prompt, tools, a session id in metadata and a reminder beside the
// prompt. Ten different prompts get ten upstream answers; a repeat from
// another session hits; a tool round is never looked up.
func TestClaudeCodeShapedRequests(t *testing.T) {
	g, fake := start(t, "min_tokens = 1")
	calls := func() int { return fake.Count("/v1/messages") }
	system := agentSystem()
	prompts := []string{
		"Edit the file config.toml and write the changes",
		"Explain what main.go does",
		"Why does the build fail?",
		"Why doesn't the build fail?",
		"Add a test for parseConfig",
		"Add a test for parseFlags",
		"Rename Foo to Bar",
		"Rename Bar to Foo",
		"When should this take *int?",
		"When should this take int?",
	}
	for i, p := range prompts {
		r := post(t, g, "/v1/messages", claudeCodeBody(t, system, "s1", p))
		if got := r.Header.Get("X-Bardo-Cache"); got != "miss" || calls() != i+1 {
			t.Fatalf("%q: cache %q (similarity %s), upstream calls %d, want a miss and %d", p,
				got, r.Header.Get("X-Bardo-Cache-Similarity"), calls(), i+1)
		}
		if a := answerText(t, r); !strings.HasSuffix(a, p) {
			t.Fatalf("%q answered with %q", p, a)
		}
	}
	r := post(t, g, "/v1/messages", claudeCodeBody(t, system, "s2", "why does the build fail"))
	if r.Header.Get("X-Bardo-Cache") != "semantic-hit" || calls() != len(prompts) || !strings.HasSuffix(answerText(t, r), "Why does the build fail?") {
		t.Fatalf("repeat: cache %q, upstream calls %d: %s", r.Header.Get("X-Bardo-Cache"), calls(), r.Body)
	}
	// The agent loop: the model called a tool and the last turn is its
	// result. Even with the same prompt earlier in the history, the cache
	// stays out of it.
	history := []any{
		map[string]any{"role": "user", "content": "Why does the build fail?"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": map[string]any{"input": "make"}}}},
	}
	body := claudeCodeBody(t, system, "s1", "ignored", history...)
	body = strings.Replace(body, `[{"text":"\u003csystem-reminder\u003e`, `[{"type":"tool_result","tool_use_id":"toolu_1","content":"exit 2"},{"text":"\u003csystem-reminder\u003e`, 1)
	if !strings.Contains(body, "tool_result") {
		t.Fatalf("test body has no tool_result: %s", body[len(body)-600:])
	}
	before := calls()
	r = post(t, g, "/v1/messages", body)
	if r.Header.Get("X-Bardo-Cache") == "semantic-hit" || calls() != before+1 {
		t.Fatalf("tool round answered from the cache: %q", r.Header.Get("X-Bardo-Cache"))
	}
}

// TestRewordingMode: with allow_rewording a reworded question that agrees
// on its salient words may hit when it is similar enough — but never a
// tool-carrying request, and never across a salient difference. (Words
// that are not salient, "telephone" vs "telegraph", are left to the
// similarity: why the mode is off with the offline model.)
func TestRewordingMode(t *testing.T) {
	g, fake := start(t, "min_tokens = 1\nallow_rewording = true\n[layer.config.thresholds]\ndefault = 0.85")
	calls := func() int { return fake.Count("/v1/chat/completions") }
	ask(t, g, "Who invented the telephone?", false)
	r := ask(t, g, "Who is the inventor of the telephone?", false)
	if r.Header.Get("X-Bardo-Cache") != "semantic-hit" || calls() != 1 || answerText(t, r) != "echo: Who invented the telephone?" {
		t.Fatalf("reworded question: cache %q, similarity %q, upstream calls %d", r.Header.Get("X-Bardo-Cache"),
			r.Header.Get("X-Bardo-Cache-Similarity"), calls())
	}
	if r := ask(t, g, "Who invented the telephone in 1876?", false); r.Header.Get("X-Bardo-Cache") != "miss" {
		t.Fatalf("a question with a number more shared the answer: %q", r.Header.Get("X-Bardo-Cache"))
	}
	// The same pair with tools: only the same question may be reused.
	system := agentSystem()
	post(t, g, "/v1/chat/completions", opencodeBody(t, system, "Who invented the telephone?"))
	before := calls()
	r = post(t, g, "/v1/chat/completions", opencodeBody(t, system, "Who is the inventor of the telephone?"))
	if r.Header.Get("X-Bardo-Cache") != "miss" || calls() != before+1 {
		t.Fatalf("a reworded tool-carrying request hit: %q", r.Header.Get("X-Bardo-Cache"))
	}
	if r = post(t, g, "/v1/chat/completions", opencodeBody(t, system, "who invented the telephone")); r.Header.Get("X-Bardo-Cache") != "semantic-hit" {
		t.Fatalf("the same tool-carrying question missed: %q", r.Header.Get("X-Bardo-Cache"))
	}
}

// TestHistoryIsContext: the same last question after other earlier turns
// is another request ("Quote me selling 1 ETH" after a different quote, in
// the DeFi agent's replay, got the earlier answer).
func TestHistoryIsContext(t *testing.T) {
	g, fake := start(t, "min_tokens = 1")
	calls := func() int { return fake.Count("/v1/chat/completions") }
	body := func(earlier, answer, question string) string {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []any{
			map[string]any{"role": "user", "content": earlier},
			map[string]any{"role": "assistant", "content": answer},
			map[string]any{"role": "user", "content": question},
		}})
		return string(b)
	}
	post(t, g, "/v1/chat/completions", body("Quote me buying 2 ETH", "2 ETH costs 6,200 USDC.", "And in euros?"))
	r := post(t, g, "/v1/chat/completions", body("Quote me selling 1 ETH", "1 ETH sells for 3,090 USDC.", "And in euros?"))
	if r.Header.Get("X-Bardo-Cache") != "miss" || calls() != 2 {
		t.Fatalf("another history shared an answer: %q", r.Header.Get("X-Bardo-Cache"))
	}
	r = post(t, g, "/v1/chat/completions", body("Quote me selling 1 ETH", "1 ETH sells for 3,090 USDC.", "and in Euros"))
	if r.Header.Get("X-Bardo-Cache") != "semantic-hit" || calls() != 2 {
		t.Fatalf("the same conversation asked again: %q", r.Header.Get("X-Bardo-Cache"))
	}
}
