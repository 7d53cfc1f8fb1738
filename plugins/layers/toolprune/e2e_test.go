//go:build !wasip1

package main_test

// End to end: the gateway in-process with the toolprune layer compiled to
// WASM, in front of the fake upstream (an OpenAI-compatible provider "up"
// for gpt-*, an Anthropic provider "claude" for claude-*), called over HTTP
// by OpenAI and Anthropic callers.

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["toolprune.wasm"] = "plugins/layers/toolprune" }

const upKey = testgateway.FakeUpstreamKey

func start(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	cfg := `
[[layer]]
name = "toolprune"
plugin = "toolprune.wasm"
on_error = "fail-open"
trusted = true
` + testgateway.FakeProviders(fake.URL())
	return testgateway.Start(t, cfg, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}}), fake
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func post(t *testing.T, g *testgateway.Gateway, path, body string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if path == "/v1/messages" {
		req.Header.Set("anthropic-version", "2023-06-01")
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
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, b)
	}
	if d := resp.Header.Get("X-Bardo-Degraded"); d != "" {
		t.Fatalf("POST %s: degraded %q", path, d)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// forty returns 40 catalog tools: the first 38 (get_position among them)
// and, further down the catalog, send_email and calculate.
func forty(t *testing.T) []catalogTool {
	all := catalog(t)
	out := slices.Clone(all[:38])
	for _, tl := range all[38:] {
		if tl.Name == "send_email" || tl.Name == "calculate" {
			out = append(out, tl)
		}
	}
	if len(out) != 40 {
		t.Fatalf("%d tools", len(out))
	}
	return out
}

func toolNames(tools []catalogTool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// question opens the session: the tools are chosen on it, and the turns
// after it (a get_position call, "Go on.") keep them.
const question = "What would I get if I swap 2 ETH for USDC right now? Check the price impact and slippage first."

func openAIBody(tools []catalogTool) string {
	var ts []any
	for _, tl := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{
			"name": tl.Name, "description": tl.Description, "parameters": tl.InputSchema}})
	}
	return mustJSON(map[string]any{
		"model": "gpt-4o",
		"messages": []any{
			map[string]any{"role": "system", "content": "You are a careful DeFi operations agent."},
			map[string]any{"role": "user", "content": question},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "get_position", "arguments": `{"protocol":"aave-v3","asset":"USDC"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"supplied":"125000","borrowed":"41000","health_factor":"1.84"}`},
			map[string]any{"role": "user", "content": "Go on."},
		},
		"tools":       ts,
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "send_email"}},
	})
}

func anthropicBody(tools []catalogTool) string {
	var ts []any
	for i, tl := range tools {
		m := map[string]any{"name": tl.Name, "description": tl.Description, "input_schema": tl.InputSchema}
		if i == len(tools)-1 {
			m["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		ts = append(ts, m)
	}
	return mustJSON(map[string]any{
		"model":      "claude-sonnet-4-5",
		"max_tokens": 200,
		"system":     "You are a careful DeFi operations agent.",
		"messages": []any{
			map[string]any{"role": "user", "content": question},
			map[string]any{"role": "assistant", "content": []any{map[string]any{
				"type": "tool_use", "id": "toolu_1", "name": "get_position", "input": map[string]any{"protocol": "aave-v3", "asset": "USDC"}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": `{"supplied":"125000","borrowed":"41000","health_factor":"1.84"}`},
				map[string]any{"type": "text", "text": "Go on."}}},
		},
		"tools":       ts,
		"tool_choice": map[string]any{"type": "tool", "name": "send_email"},
	})
}

// upstreamTools reads the tool names (and which carry cache_control) the
// upstream received, in either dialect.
func upstreamTools(t *testing.T, body []byte) (names []string, cached []string) {
	t.Helper()
	var m struct {
		Tools []struct {
			Name         string          `json:"name"`
			CacheControl json.RawMessage `json:"cache_control"`
			Function     struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("upstream body: %v\n%s", err, body)
	}
	for _, tl := range m.Tools {
		n := tl.Name
		if n == "" {
			n = tl.Function.Name
		}
		names = append(names, n)
		if tl.CacheControl != nil {
			cached = append(cached, n)
		}
	}
	return names, cached
}

func isSubsequence(kept, all []string) bool {
	j := 0
	for _, n := range all {
		if j < len(kept) && kept[j] == n {
			j++
		}
	}
	return j == len(kept)
}

func TestPrunesFortyTools(t *testing.T) {
	g, fake := start(t)
	tools := forty(t)
	for _, tc := range []struct {
		name, path, body string
	}{
		{"openai", "/v1/chat/completions", openAIBody(tools)},
		{"anthropic", "/v1/messages", anthropicBody(tools)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, g, tc.path, tc.body)
			got, cached := upstreamTools(t, fake.Last().Body)
			// 12 chosen on the first prompt, plus the called and the
			// tool_choice tools when the choice did not hold them.
			if len(got) > 14 || len(got) < 12 {
				t.Fatalf("upstream got %d tools: %v", len(got), got)
			}
			for _, want := range []string{"send_email", "get_position", "swap_tokens", "get_swap_quote"} {
				if !slices.Contains(got, want) {
					t.Errorf("%s missing upstream: %v", want, got)
				}
			}
			if !isSubsequence(got, toolNames(tools)) {
				t.Errorf("not in the caller's order: %v", got)
			}
			if h := r.header.Get("X-Bardo-Tools"); h != strconv.Itoa(len(got))+"/40" {
				t.Errorf("X-Bardo-Tools = %q", h)
			}
			saved, _ := strconv.Atoi(r.header.Get("X-Bardo-Tools-Saved-Tokens"))
			if saved < len(tc.body)/4/2 {
				t.Errorf("X-Bardo-Tools-Saved-Tokens = %d for a %d-byte body", saved, len(tc.body))
			}
			if !strings.Contains(string(fake.Last().Body), "send_email") {
				t.Errorf("tool_choice lost: %s", fake.Last().Body)
			}
			if tc.name == "anthropic" {
				// The breakpoint on the last tool (calculate, removed)
				// moved to the last kept tool.
				if slices.Contains(got, "calculate") || !slices.Equal(cached, got[len(got)-1:]) {
					t.Errorf("cache_control on %v, tools %v", cached, got)
				}
			}
			t.Logf("%s: upstream tools %v; body %d → %d bytes; saved ≈ %d tokens",
				tc.name, got, len(tc.body), len(fake.Last().Body), saved)
		})
	}
}

// At or under the threshold nothing changes: the upstream gets the caller's
// exact bytes.
func TestFewToolsPassThroughByteIdentical(t *testing.T) {
	g, fake := start(t)
	tools := catalog(t)[:5]
	for _, tc := range []struct {
		name, path, body string
	}{
		{"openai", "/v1/chat/completions", openAIBody(tools)},
		{"anthropic", "/v1/messages", anthropicBody(tools)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, g, tc.path, tc.body)
			if got := string(fake.Last().Body); got != tc.body {
				t.Fatalf("upstream received\n%s\nwant the caller's bytes\n%s", got, tc.body)
			}
			if h := r.header.Get("X-Bardo-Tools"); h != "5/5" {
				t.Fatalf("X-Bardo-Tools = %q", h)
			}
		})
	}
}
