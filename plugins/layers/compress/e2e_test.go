//go:build !wasip1

package main

// End to end: callers post the session over HTTP, turn after turn, to a
// gateway (host/testkit/testgateway) running the layer (compiled to WASM,
// fail-open) in front of the fake upstream; the summaries are written by the
// fake's "gpt-4o-mini" through the gateway's own routing. A second gateway
// without the layer, in front of its own fake, is the baseline the savings
// are measured against.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/sdk/wire"
)

const layerTOML = `
[[layer]]
name = "compress"
plugin = "compress.wasm"
phases = ["request"]
on_error = "fail-open"
timeout = "30s"
trusted = true
[layer.config]
`

// sessionTOML is the layer with sessionConfig's settings.
const sessionTOML = layerTOML + `budget_tokens = 5000
target_tokens = 4000
chunk_tokens = 1200
summary_max_tokens = 300
model = "gpt-4o-mini"
cache_read_price = 1
cache_write_price = 1
summary_input_price = 0.05
summary_output_price = 0.2
`

// layerLog returns the gateway's log lines about the layer, for failure
// messages.
func layerLog(g *testgateway.Gateway) string {
	var out []string
	for _, l := range strings.Split(g.LogLines.String(), "\n") {
		if strings.Contains(l, "compress") {
			out = append(out, l)
		}
	}
	return "\ngateway log:\n" + strings.Join(out, "\n")
}

type reply struct {
	header http.Header
	body   []byte
}

func post(t *testing.T, url, path, body string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", url+path, strings.NewReader(body))
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
	return reply{resp.Header, b}
}

// anthropicBody is an Anthropic Messages request for the session's turns.
func anthropicBody(s session, msgs []wire.Message) string {
	var ms []any
	for _, m := range msgs {
		var blocks []any
		for _, b := range m.Content {
			switch b.Type {
			case wire.BlockText:
				blocks = append(blocks, map[string]any{"type": "text", "text": b.Text})
			case wire.BlockToolUse:
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(b.Data)})
			case wire.BlockToolResult:
				r := map[string]any{"type": "tool_result", "tool_use_id": b.ID, "content": b.Text}
				if b.IsError {
					r["is_error"] = true
				}
				blocks = append(blocks, r)
			}
		}
		ms = append(ms, map[string]any{"role": m.Role, "content": blocks})
	}
	var tools []any
	for _, tl := range s.Tools {
		tools = append(tools, map[string]any{"name": tl.Name, "description": tl.Description, "input_schema": json.RawMessage(tl.Schema)})
	}
	return mustJSON(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 256, "system": s.System[0].Text, "messages": ms, "tools": tools})
}

// openAIBody is the same as an OpenAI Chat Completions request.
func openAIBody(s session, msgs []wire.Message) string {
	ms := []any{map[string]any{"role": "system", "content": s.System[0].Text}}
	for _, m := range msgs {
		var textParts []string
		var calls []any
		for _, b := range m.Content {
			switch b.Type {
			case wire.BlockText:
				textParts = append(textParts, b.Text)
			case wire.BlockToolUse:
				calls = append(calls, map[string]any{"id": b.ID, "type": "function",
					"function": map[string]any{"name": b.Name, "arguments": string(b.Data)}})
			case wire.BlockToolResult:
				ms = append(ms, map[string]any{"role": "tool", "tool_call_id": b.ID, "content": b.Text})
			}
		}
		if len(textParts) == 0 && len(calls) == 0 {
			continue
		}
		om := map[string]any{"role": m.Role, "content": strings.Join(textParts, "\n")}
		if len(calls) > 0 {
			om["tool_calls"] = calls
			if len(textParts) == 0 {
				om["content"] = nil
			}
		}
		ms = append(ms, om)
	}
	var tools []any
	for _, tl := range s.Tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": tl.Name, "description": tl.Description, "parameters": json.RawMessage(tl.Schema)}})
	}
	return mustJSON(map[string]any{"model": "gpt-4o", "max_tokens": 256, "messages": ms, "tools": tools})
}

// anMessage is one message of an Anthropic request body (a string content
// is read as one text block).
type anMessage struct {
	Role    string
	Content []anBlock
}

type anBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
}

func anMessages(t *testing.T, body []byte) []anMessage {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	var out []anMessage
	for _, m := range req.Messages {
		am := anMessage{Role: m.Role}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			am.Content = []anBlock{{Type: "text", Text: s}}
		} else if err := json.Unmarshal(m.Content, &am.Content); err != nil {
			t.Fatalf("upstream message content: %v", err)
		}
		out = append(out, am)
	}
	return out
}

// checkAnthropicConversation checks what the upstream received is a valid
// Anthropic conversation: user first, roles alternating, and every
// tool_result answering a tool_use of the turn just before it.
func checkAnthropicConversation(t *testing.T, msgs []anMessage) {
	t.Helper()
	for i, m := range msgs {
		if want := []string{"user", "assistant"}[i%2]; m.Role != want {
			t.Fatalf("upstream turn %d is %s, want %s", i, m.Role, want)
		}
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			found := false
			if i > 0 {
				for _, u := range msgs[i-1].Content {
					found = found || (u.Type == "tool_use" && u.ID == b.ToolUseID)
				}
			}
			if !found {
				t.Fatalf("upstream turn %d: tool_result %s without its tool_use in the turn before", i, b.ToolUseID)
			}
		}
	}
}

func inputTokens(t *testing.T, body []byte) int {
	t.Helper()
	var r struct {
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response: %v: %s", err, body)
	}
	return r.Usage.InputTokens + r.Usage.PromptTokens
}

// TestE2ESessionReplay replays the session as an agent client does — one
// request per user turn (a question or tool results), the history growing
// each time — through the baseline gateway and the compressing one, and
// measures what the upstream was sent.
func TestE2ESessionReplay(t *testing.T) {
	baseFake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(baseFake.Close)
	base := startGateway(t, providersTOML(baseFake.URL(), baseFake.URL()))
	r := newFakes(t)
	g := startGateway(t, sessionTOML+providersTOML(r.main.URL(), r.cheap.URL()))

	s := agentSession()
	var (
		baseIn, compIn       int // input tokens the upstream reported
		baseBytes, compBytes int // request bodies the upstream received
		seenSplits           = map[int]bool{}
		summaries            = map[int]string{} // by split: the summary block the upstream got
		statuses             = map[string]int{}
		lastCalls            int
	)
	for _, u := range userTurns(s.Msgs) {
		body := anthropicBody(s, s.Msgs[:u+1])
		b := post(t, base.URL, "/v1/messages", body)
		c := post(t, g.URL, "/v1/messages", body)
		bi, ci := inputTokens(t, b.body), inputTokens(t, c.body)
		baseIn += bi
		compIn += ci
		baseBytes += len(baseFake.Last().Body)
		sent := r.main.Last().Body
		compBytes += len(sent)

		status := c.header.Get(HeaderCompress)
		statuses[status]++
		calls := len(summariserCalls(r.cheap))
		newCalls := calls - lastCalls
		lastCalls = calls
		turns := c.header.Get(HeaderTurns)
		switch status {
		case StatusSkipped:
			if string(sent) != body || newCalls != 0 {
				t.Fatalf("turn %d: skipped, but the upstream did not get the caller's bytes (%d calls)", u, newCalls)
			}
		case StatusCompressed, StatusCached:
			// A new split needs exactly one summariser call; a split seen
			// before needs none.
			split, _ := strconv.Atoi(strings.Split(turns, "/")[0])
			wantCalls := 0
			if !seenSplits[split] {
				wantCalls = 1
			}
			seenSplits[split] = true
			if newCalls != wantCalls || (status == StatusCompressed) != (wantCalls == 1) {
				t.Fatalf("turn %d: %s with split %s, %d summariser calls", u, status, turns, newCalls)
			}
			msgs := anMessages(t, sent)
			checkAnthropicConversation(t, msgs)
			// The summary leads, then the turns from the split on: the
			// kept turns are all there (the summary is a turn of its own
			// when the split falls before an assistant turn).
			kept := u + 1 - split
			if s.Msgs[split].Role == "assistant" {
				kept++
			}
			if !strings.HasPrefix(msgs[0].Content[0].Text, "Summary of the earlier conversation (") || len(msgs) != kept {
				t.Fatalf("turn %d: upstream got %d turns, want the summary and the %d turns from %d", u, len(msgs), u+1-split, split)
			}
			// A later turn with the same split reuses the very summary.
			if sum, ok := summaries[split]; ok && sum != msgs[0].Content[0].Text {
				t.Fatalf("turn %d: the summary of the first %d turns changed", u, split)
			}
			summaries[split] = msgs[0].Content[0].Text
			if len(sent) >= len(body) {
				t.Fatalf("turn %d: upstream body %d bytes, caller's %d", u, len(sent), len(body))
			}
		default:
			t.Fatalf("turn %d: %s = %q%s", u, HeaderCompress, status, layerLog(g))
		}
		t.Logf("turn %2d: upstream input tokens %5d → %5d  %-10s %-6s %d summariser call(s)", u+1, bi, ci, status, turns, newCalls)
	}
	sumIn := int(g.Metrics.Value("bardo_plugin_"+metricSummaryIn, "plugin", "compress"))
	sumOut := int(g.Metrics.Value("bardo_plugin_"+metricSummaryOut, "plugin", "compress"))
	saved := int(g.Metrics.Value("bardo_plugin_"+metricSaved, "plugin", "compress"))
	net := baseIn - compIn - sumIn - sumOut
	t.Logf("%d requests (%v): upstream input tokens %d → %d (−%.1f%%), bodies %d → %d bytes; "+
		"%d summariser calls used %d input + %d output tokens; net %d tokens saved (−%.1f%%); layer's estimate of tokens removed: %d",
		len(userTurns(s.Msgs)), statuses, baseIn, compIn, 100*float64(baseIn-compIn)/float64(baseIn), baseBytes, compBytes,
		lastCalls, sumIn, sumOut, net, 100*float64(net)/float64(baseIn), saved)
	if statuses[StatusCompressed] == 0 || statuses[StatusCached] == 0 || lastCalls != len(seenSplits) {
		t.Fatalf("statuses %v, %d calls for %d splits", statuses, lastCalls, len(seenSplits))
	}
	if net <= 0 {
		t.Fatalf("no net saving: baseline %d, compressed %d + summariser %d", baseIn, compIn, sumIn+sumOut)
	}
}

// An OpenAI caller, routed to an OpenAI-compatible upstream: the session's
// tool calls become tool messages, and after compression every kept tool
// message still follows the assistant message that called it.
func TestE2EOpenAICaller(t *testing.T) {
	r := newFakes(t)
	g := startGateway(t, sessionTOML+providersTOML(r.main.URL(), r.cheap.URL()))
	s := agentSession()
	body := openAIBody(s, s.Msgs)
	c := post(t, g.URL, "/v1/chat/completions", body)
	if st := c.header.Get(HeaderCompress); st != StatusCompressed {
		t.Fatalf("%s = %q%s", HeaderCompress, st, layerLog(g))
	}
	var sent struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.main.Last().Body, &sent); err != nil {
		t.Fatal(err)
	}
	ms := sent.Messages
	if len(ms) < 3 || ms[0].Role != "system" || ms[1].Role != "user" ||
		!strings.Contains(fmt.Sprint(ms[1].Content), "Summary of the earlier conversation (") {
		t.Fatalf("upstream messages start %+v", ms[:min(len(ms), 2)])
	}
	pending := map[string]bool{}
	for i, m := range ms {
		switch m.Role {
		case "assistant":
			if len(pending) > 0 {
				t.Fatalf("message %d: assistant before the results of %v", i, pending)
			}
			for _, tc := range m.ToolCalls {
				pending[tc.ID] = true
			}
		case "tool":
			if !pending[m.ToolCallID] {
				t.Fatalf("message %d: tool result %s without its call", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		}
	}
	saved, _ := strconv.Atoi(c.header.Get(HeaderSavedTokens))
	t.Logf("OpenAI caller: %d messages → %d upstream, body %d → %d bytes, %s = %d",
		strings.Count(body, `"role"`), len(ms), len(body), len(r.main.Last().Body), HeaderSavedTokens, saved)
	if saved <= 0 || len(r.main.Last().Body) >= len(body) {
		t.Fatal("nothing saved")
	}
}

// The summariser's upstream fails: the caller is answered, the upstream
// gets the caller's own bytes, and the response says what happened.
func TestE2ESummariserFailure(t *testing.T) {
	r := newFakes(t, fakeupstream.WithDefaultBehaviour(fakeupstream.Fail(500)))
	g := startGateway(t, sessionTOML+providersTOML(r.main.URL(), r.cheap.URL()))
	s := agentSession()
	body := anthropicBody(s, s.Msgs)
	c := post(t, g.URL, "/v1/messages", body)
	if st := c.header.Get(HeaderCompress); st != StatusFailed {
		t.Fatalf("%s = %q%s", HeaderCompress, st, layerLog(g))
	}
	if got := string(r.main.Last().Body); got != body {
		t.Fatal("the upstream did not receive the caller's bytes")
	}
	if len(summariserCalls(r.cheap)) == 0 || !strings.Contains(string(c.body), "echo: Before I sign") {
		t.Fatalf("%d summariser calls; answer %s", len(summariserCalls(r.cheap)), c.body)
	}
}

// Without a model in the config, the summariser uses the request's own
// model, through the same routing (here the Anthropic adapter).
func TestE2EDefaultModelIsTheRequestsModel(t *testing.T) {
	r := newFakes(t)
	// Priced as this fake bills (no prompt cache), so the fold pays.
	g := startGateway(t, layerTOML+"budget_tokens = 5000\nchunk_tokens = 1200\nsummary_max_tokens = 300\n"+
		"cache_read_price = 1\ncache_write_price = 1\n"+providersTOML(r.main.URL(), r.cheap.URL()))
	s := agentSession()
	c := post(t, g.URL, "/v1/messages", anthropicBody(s, s.Msgs))
	if st := c.header.Get(HeaderCompress); st != StatusCompressed {
		t.Fatalf("%s = %q%s", HeaderCompress, st, layerLog(g))
	}
	reqs := r.main.Requests()
	if len(reqs) != 2 || len(summariserCalls(r.cheap)) != 0 {
		t.Fatalf("main upstream got %d requests, cheap %d", len(reqs), len(summariserCalls(r.cheap)))
	}
	var first struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    any    `json:"system"`
	}
	if err := json.Unmarshal(reqs[0].Body, &first); err != nil {
		t.Fatal(err)
	}
	if first.Model != "claude-sonnet-4-5" || first.MaxTokens != 300 || !strings.Contains(fmt.Sprint(first.System), "You condense the earlier part") {
		t.Fatalf("summariser request: %s", reqs[0].Body[:min(300, len(reqs[0].Body))])
	}
}
