//go:build !wasip1

package main_test

// End to end: the gateway in-process with the promptcache layer compiled to
// WASM, in front of the fake upstream (an OpenAI-compatible provider "up"
// for gpt-*, an Anthropic provider "claude" for claude-*), called over HTTP;
// the assertions are on what reaches the upstream.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() {
	testgateway.Plugins["promptcache.wasm"] = "plugins/layers/promptcache"
	testgateway.Plugins["hashcache.wasm"] = "plugins/layers/hashcache"
}

const upKey = testgateway.FakeUpstreamKey

// The timeouts are generous: these tests are about behaviour (also under
// -race on a busy machine); the layers' cost is measured by the benchmarks.
const promptcacheLayer = `
[[layer]]
name = "promptcache"
plugin = "promptcache.wasm"
on_error = "fail-open"
trusted = true
timeout = "2s"
`

func pipeline(fake *fakeupstream.Server, layers string) string {
	return layers + testgateway.FakeProviders(fake.URL())
}

func start(t *testing.T, layers string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, pipeline(fake, layers), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, fake
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func post(t *testing.T, g *testgateway.Gateway, path, body string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if path == "/v1/messages" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("X-Bardo-Degraded") != "" {
		t.Fatalf("POST %s: %d %q %s", path, resp.StatusCode, resp.Header.Get("X-Bardo-Degraded"), b)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// longSystem is about 1,700 estimated tokens: over the 1,024 of
// min_prefix_tokens, the smallest prefix Anthropic caches.
var longSystem = strings.Repeat("You are a careful DeFi operations agent. Never execute a trade without confirmation. ", 80)

const msgs = "/v1/messages"

const tools = `"tools":[` +
	`{"name":"get_price","description":"Spot price of an asset.","input_schema":{"type":"object","properties":{"asset":{"type":"string"}}}},` +
	`{"name":"get_balance","description":"Balance of a wallet.","input_schema":{"type":"object","properties":{"wallet":{"type":"string"}}}}]`

func TestAnthropicBreakpointsReachUpstream(t *testing.T) {
	g, fake := start(t, promptcacheLayer)
	body := `{"model":"claude-sonnet-4-5","max_tokens":200,"system":` + quote(longSystem) + `,` + tools +
		`,"messages":[{"role":"user","content":"What is my balance?"}],"metadata":{"user_id":"u1"}}`
	r := post(t, g, msgs, body)
	if r.header.Get("X-Bardo-Cache-Breakpoints") != "2" {
		t.Fatalf("breakpoints header %q", r.header.Get("X-Bardo-Cache-Breakpoints"))
	}
	up := decode(t, fake.Last().Body)
	system := up["system"].([]any)
	last := system[len(system)-1].(map[string]any)
	if last["text"] != longSystem || last["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Fatalf("upstream system %v", up["system"])
	}
	ts := up["tools"].([]any)
	if ts[0].(map[string]any)["name"] != "get_balance" || ts[1].(map[string]any)["name"] != "get_price" {
		t.Fatalf("tools not in name order upstream: %v", ts)
	}
	if ts[0].(map[string]any)["cache_control"] != nil || ts[1].(map[string]any)["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Fatalf("tool breakpoints upstream: %v", ts)
	}
	if n := strings.Count(string(fake.Last().Body), `"cache_control"`); n != 2 {
		t.Fatalf("%d breakpoints upstream, want 2", n)
	}
	if up["metadata"].(map[string]any)["user_id"] != "u1" {
		t.Fatalf("re-encoding lost a field: %s", fake.Last().Body)
	}
	if r.header.Get("X-Bardo-Prefix-Tokens") == "" || r.header.Get("X-Bardo-Prefix-Match") != "miss" {
		t.Fatalf("prefix headers %v", r.header)
	}
	if !strings.Contains(string(r.body), "echo: What is my balance?") {
		t.Fatalf("caller got %s", r.body)
	}

	// An OpenAI-dialect caller asking for a Claude model gets them too
	// (translated to Anthropic by the host).
	r = post(t, g, "/v1/chat/completions", `{"model":"claude-haiku-4-5","messages":[{"role":"system","content":`+quote(longSystem)+`},{"role":"user","content":"hi there"}]}`)
	up = decode(t, fake.Last().Body)
	if fake.Last().Path != msgs || r.header.Get("X-Bardo-Cache-Breakpoints") != "1" {
		t.Fatalf("path %s, breakpoints %q", fake.Last().Path, r.header.Get("X-Bardo-Cache-Breakpoints"))
	}
	if cc := up["system"].([]any)[0].(map[string]any)["cache_control"]; cc == nil {
		t.Fatalf("translated system without a breakpoint: %v", up["system"])
	}
}

// The caller's own four breakpoints: none added, none moved, and the
// request reaches the upstream as the caller sent it.
func TestCallerBreakpointsPreserved(t *testing.T) {
	g, fake := start(t, promptcacheLayer)
	body := `{"model":"claude-sonnet-4-5","max_tokens":200,` +
		`"system":[{"type":"text","text":"Identity.","cache_control":{"type":"ephemeral"}},{"type":"text","text":` + quote(longSystem) + `,"cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		strings.Replace(tools, `"input_schema":{"type":"object","properties":{"asset":{"type":"string"}}}}`,
			`"input_schema":{"type":"object","properties":{"asset":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}`, 1) +
		`,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},` +
		`{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}]}`
	r := post(t, g, msgs, body)
	if got := string(fake.Last().Body); got != body {
		t.Fatalf("upstream got\n%s\nwant the caller's bytes\n%s", got, body)
	}
	if strings.Count(body, `"cache_control"`) != 4 || r.header.Get("X-Bardo-Cache-Breakpoints") != "0" {
		t.Fatalf("breakpoints header %q", r.header.Get("X-Bardo-Cache-Breakpoints"))
	}
}

// A request that needs nothing reaches the upstream byte for byte.
func TestUnchangedRequestsPassThrough(t *testing.T) {
	g, fake := start(t, promptcacheLayer)
	for _, tc := range []struct{ path, body string }{
		// Anthropic: the caller marked the boundary itself, tools in order,
		// one message.
		{msgs, `{"model":"claude-sonnet-4-5","max_tokens":200,"system":[{"type":"text","text":` + quote(longSystem) + `,"cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"a_tool","input_schema":{"type":"object"}},{"name":"b_tool","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],` +
			`"messages":[{"role":"user","content":"hello"}]}`},
		// Anthropic: a short prompt, below what Anthropic caches.
		{msgs, `{"model":"claude-sonnet-4-5","max_tokens":200,"system":"Be brief.","messages":[{"role":"user","content":"hello"}],"temperature":0.1}`},
		// OpenAI: nothing to mark; tools already in order.
		{"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":` + quote(longSystem) + `},{"role":"user","content":"hello"}],` +
			`"tools":[{"type":"function","function":{"name":"a_tool","parameters":{"type":"object"}}},{"type":"function","function":{"name":"b_tool","parameters":{"type":"object"}}}],"user":"u-1"}`},
	} {
		r := post(t, g, tc.path, tc.body)
		if got := string(fake.Last().Body); got != tc.body {
			t.Fatalf("%s: upstream got\n%s\nwant the caller's bytes\n%s", tc.path, got, tc.body)
		}
		if r.header.Get("X-Bardo-Prefix-Tokens") == "" {
			t.Fatalf("%s: no prefix headers", tc.path)
		}
	}
}

func TestPrefixMatchPerSession(t *testing.T) {
	g, _ := start(t, promptcacheLayer)
	body := func(system, question string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":100,"system":` + quote(system) + `,"messages":[{"role":"user","content":` + quote(question) + `}]}`
	}
	for i, step := range []struct{ session, system, question, want string }{
		{"agent-7", longSystem, "first question", "miss"},
		{"agent-7", longSystem, "a different question", "hit"}, // the conversation changes, the prefix does not
		{"agent-8", longSystem, "first question", "miss"},
		{"agent-7", "Updated playbook. " + longSystem, "third question", "miss"},
		{"agent-7", "Updated playbook. " + longSystem, "fourth question", "hit"},
	} {
		r := post(t, g, msgs, body(step.system, step.question), "X-Bardo-Session", step.session)
		if got := r.header.Get("X-Bardo-Prefix-Match"); got != step.want {
			t.Fatalf("step %d: X-Bardo-Prefix-Match %q, want %q", i, got, step.want)
		}
	}
	if v := g.Metrics.Value("bardo_plugin_promptcache_prefix_hits_total", "plugin", "promptcache"); v != 2 {
		t.Fatalf("prefix hits metric %v", v)
	}
}

func TestPromptCacheKeyForOpenAI(t *testing.T) {
	g, fake := start(t, promptcacheLayer+"[layer.config]\nprompt_cache_key = true\n")
	post(t, g, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":`+quote(longSystem)+`},{"role":"user","content":"hello"}],"user":"u-1"}`)
	up := decode(t, fake.Last().Body)
	key, _ := up["prompt_cache_key"].(string)
	if !strings.HasPrefix(key, "bardo-") || up["user"] != "u-1" {
		t.Fatalf("upstream body %s", fake.Last().Body)
	}
	// Not for Anthropic, which refuses unknown fields.
	post(t, g, msgs, `{"model":"claude-sonnet-4-5","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"hello"}]}`)
	if strings.Contains(string(fake.Last().Body), "prompt_cache_key") {
		t.Fatalf("prompt_cache_key sent to Anthropic: %s", fake.Last().Body)
	}
}

// L3 in front of L1: a repeated request is answered by the hash cache and
// never reaches L1 or the upstream; the first one reaches the upstream with
// L1's breakpoints.
func TestWithHashCache(t *testing.T) {
	g, fake := start(t, `
[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
trusted = true
timeout = "2s"
`+promptcacheLayer)
	body := `{"model":"claude-sonnet-4-5","max_tokens":200,"system":` + quote(longSystem) + `,` + tools +
		`,"messages":[{"role":"user","content":"Explain how the health factor of a lending position is computed."}]}`
	first := post(t, g, msgs, body)
	if first.header.Get("X-Bardo-Cache") != "miss" || first.header.Get("X-Bardo-Cache-Breakpoints") != "2" ||
		strings.Count(string(fake.Last().Body), `"cache_control"`) != 2 {
		t.Fatalf("first: %v\n%s", first.header, fake.Last().Body)
	}
	second := post(t, g, msgs, body)
	if second.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(msgs) != 1 {
		t.Fatalf("second: cache %q, upstream calls %d", second.header.Get("X-Bardo-Cache"), fake.Count(msgs))
	}
	if decode(t, second.body)["content"].([]any)[0].(map[string]any)["text"] != decode(t, first.body)["content"].([]any)[0].(map[string]any)["text"] {
		t.Fatalf("hit content differs: %s vs %s", second.body, first.body)
	}
}
