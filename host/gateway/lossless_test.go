package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// TestClientBodiesReachUpstreamWhole: real clients' bodies
// (host/dialect/testdata/clients: Claude Code with mid-conversation system
// messages, deferred and server tools; opencode's eager_input_streaming;
// Codex over Chat Completions with strict functions and a developer
// message) through the shipped layers — which always rewrite the request
// (promptcache) — reach an upstream of their own dialect with every member
// they sent, at every level. Layers may add or move cache_control
// breakpoints and drop whole tools (toolprune), and nothing else. The
// testplugins/touch layer after them makes sure each request is rewritten:
// it appends "." to the last text of the last message.
func TestClientBodiesReachUpstreamWhole(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	pipe := testgateway.ShippedLayers(t) + `
[[layer]]
name = "touch"
plugin = "touch.wasm"
phases = ["request"]
on_error = "fail-closed"
trusted = true
` + testgateway.FakeProviders(fake.URL(), "gpt-*", "anthropic/*")
	g := testgateway.Start(t, pipe, testgateway.Options{Env: testgateway.FakeProviderEnv()})

	files, _ := filepath.Glob("../dialect/testdata/clients/*.json")
	if len(files) == 0 {
		t.Fatal("no client bodies")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			path, headers := "/v1/messages", []string{"anthropic-version", "2023-06-01", "anthropic-beta", "mid-conversation-system-2026-04-07"}
			if strings.Contains(f, ".openai.") {
				path, headers = "/v1/chat/completions", nil
			}
			fake.Reset()
			fake.Script(fakeupstream.Reply("ok"))
			r := apitest.Post(t, g.URL, path, body, headers...)
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if n := fake.Count(path); n != 1 {
				t.Fatalf("%d upstream calls", n)
			}
			up := fake.Last().Body
			if string(up) == string(body) {
				t.Fatal("the body went through untouched: no layer rewrote it, so this proves nothing")
			}
			sent, got := layerNeutral(t, touched(t, body)), layerNeutral(t, up)
			sentTools, _ := sent["tools"].([]any)
			gotTools, _ := got["tools"].([]any)
			delete(sent, "tools")
			delete(got, "tools")
			if !reflect.DeepEqual(sent, got) {
				a, _ := json.MarshalIndent(sent, "", " ")
				b, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("the upstream got another request (X-Bardo-Degraded %q):\n--- sent\n%s\n--- upstream\n%s", r.Header.Get("X-Bardo-Degraded"), a, b)
			}
			// Each tool that reached the upstream is the one sent, whole.
			byName := map[string]any{}
			for _, tl := range sentTools {
				byName[toolName(tl)] = tl
			}
			for _, tl := range gotTools {
				if want, ok := byName[toolName(tl)]; !ok || !reflect.DeepEqual(want, tl) {
					t.Errorf("tool %s reached the upstream as %v, sent as %v", toolName(tl), tl, want)
				}
			}
			if len(gotTools) == 0 && len(sentTools) > 0 {
				t.Error("every tool was dropped")
			}
		})
	}
}

// layerNeutral parses a request body without what the shipped layers may
// change by design: cache_control members (promptcache's breakpoints) and
// the spellings the codecs normalise (a lone plain text block is its text;
// is_error false is no is_error).
func layerNeutral(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "cache_control")
			if x["is_error"] == false {
				delete(x, "is_error")
			}
			for k, e := range x {
				x[k] = walk(e)
			}
			if c, ok := x["content"].([]any); ok && len(c) == 1 {
				if blk, ok := c[0].(map[string]any); ok && len(blk) == 2 && blk["type"] == "text" {
					if s, ok := blk["text"].(string); ok {
						x["content"] = s
					}
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	walk(v)
	return v
}

// touched is body as testplugins/touch leaves it: "." appended to the last
// text of the last message (a text block, a string content, a tool result).
func touched(t *testing.T, body []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	msgs := v["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	switch c := last["content"].(type) {
	case string:
		last["content"] = c + "."
	case []any:
		blk := c[len(c)-1].(map[string]any)
		if s, ok := blk["text"].(string); ok {
			blk["text"] = s + "."
		} else if s, ok := blk["content"].(string); ok {
			blk["content"] = s + "."
		}
	}
	out, _ := json.Marshal(v)
	return out
}

func toolName(v any) string {
	m, _ := v.(map[string]any)
	if fn, ok := m["function"].(map[string]any); ok {
		m = fn
	}
	s, _ := m["name"].(string)
	return s
}

// TestAmbiguousBodiesRefused: invalid UTF-8 and a key given twice are a 400
// in the caller's dialect whether or not the request would be translated
// (before, a translated body had U+FFFD in place of the bad bytes, and two
// messages arrays were concatenated); nothing reaches the upstream.
func TestAmbiguousBodiesRefused(t *testing.T) {
	g, fake := startWithUpstream(t, "")
	for _, c := range []struct {
		name, path, body, want string
	}{
		{"anthropic caller, openai upstream, bad UTF-8", "/v1/messages",
			"{\"model\":\"gpt-4o\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "invalid UTF-8"},
		{"openai caller, anthropic upstream, bad UTF-8", "/v1/chat/completions",
			"{\"model\":\"claude-sonnet-4-5\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "invalid UTF-8"},
		{"openai caller, same dialect, bad UTF-8", "/v1/chat/completions",
			"{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "invalid UTF-8"},
		{"two messages arrays", "/v1/chat/completions",
			`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, `duplicate key \"messages\"`},
		{"a key twice in a message", "/v1/messages",
			`{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"a","content":"b"}]}`, `duplicate key \"content\"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake.Reset()
			r := post(t, g.URL, c.path, c.body)
			if r.Status != 400 || !strings.Contains(string(r.Body), c.want) {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			m := decode(t, r.Body)
			if c.path == "/v1/messages" && m["type"] != "error" || c.path != "/v1/messages" && m["type"] != nil {
				t.Errorf("error not in the caller's dialect: %s", r.Body)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("%d upstream calls", n)
			}
		})
	}
}
