//go:build !wasip1

package main_test

// Meta-tool mode end to end: the gateway in-process with toolprune compiled
// to WASM and meta_tools_above set, the fake upstream scripted to play the
// model's side of the loop. OpenAI callers reach the OpenAI-compatible
// provider, Anthropic callers the Anthropic one, so the internal
// completions run through both upstream dialects.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// startWith starts the gateway of start with toolprune's [layer.config]
// (and timeout: meta-tool mode runs upstream round trips in the layer).
func startWith(t *testing.T, fake *fakeupstream.Server, layerConfig string) *testgateway.Gateway {
	t.Helper()
	cfg := `
[[layer]]
name = "toolprune"
plugin = "toolprune.wasm"
on_error = "fail-open"
trusted = true
timeout = "60s"
[layer.config]
` + layerConfig + testgateway.FakeProviders(fake.URL())
	return testgateway.Start(t, cfg, testgateway.Options{Env: testgateway.FakeProviderEnv()})
}

func startMeta(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	return startWith(t, fake, "meta_tools_above = 50"), fake
}

var metaToolNames = []string{"search_tools", "get_tool_schema", "execute_tool"}

// weatherCatalog is a 100-tool request's catalog: the first 99 catalog
// tools and get_weather.
func weatherCatalog(t *testing.T) []catalogTool {
	return append(slices.Clone(catalog(t)[:99]), catalogTool{
		Name:        "get_weather",
		Description: "Get the current weather for a city: temperature, sky and wind.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Paris"}},"required":["city"]}`),
	})
}

// chat is a caller's request in its dialect: a system prompt, the given
// turns (OpenAI-shaped maps, translated for Anthropic) and the tools.
type chat struct {
	anthropic bool
	stream    bool
	system    string
	turns     []turn
	tools     []catalogTool
}

type turn struct {
	role   string // user, assistant (a tool call), tool (its result)
	text   string
	callID string
	name   string
	args   string
}

func (c chat) path() string {
	if c.anthropic {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

func (c chat) body() string {
	var tools, msgs []any
	for _, tl := range c.tools {
		if c.anthropic {
			tools = append(tools, map[string]any{"name": tl.Name, "description": tl.Description, "input_schema": tl.InputSchema})
		} else {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": tl.Name, "description": tl.Description, "parameters": tl.InputSchema}})
		}
	}
	if !c.anthropic && c.system != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": c.system})
	}
	for _, tn := range c.turns {
		switch {
		case tn.role == "user":
			msgs = append(msgs, map[string]any{"role": "user", "content": tn.text})
		case tn.role == "assistant" && c.anthropic:
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{
				"type": "tool_use", "id": tn.callID, "name": tn.name, "input": json.RawMessage(tn.args)}}})
		case tn.role == "assistant":
			msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": tn.callID, "type": "function", "function": map[string]any{"name": tn.name, "arguments": tn.args}}}})
		case tn.role == "tool" && c.anthropic:
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": tn.callID, "content": tn.text}}})
		case tn.role == "tool":
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": tn.callID, "content": tn.text})
		}
	}
	m := map[string]any{"messages": msgs, "tools": tools, "stream": c.stream}
	if c.anthropic {
		m["model"], m["max_tokens"], m["system"] = "claude-sonnet-4-5", 400, c.system
	} else {
		m["model"] = "gpt-4o"
	}
	return mustJSON(m)
}

// answer is what the caller received, in either dialect, streamed or not.
type answer struct {
	text  string
	calls []toolCall
	stop  string // finish_reason / stop_reason
}

type toolCall struct {
	id, name, args string
}

func decodeAnswer(t *testing.T, c chat, body []byte) answer {
	t.Helper()
	var a answer
	switch {
	case !c.stream && !c.anthropic:
		var r struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("openai answer: %v\n%s", err, body)
		}
		ch := r.Choices[0]
		if ch.Message.Content != nil {
			a.text = *ch.Message.Content
		}
		for _, tc := range ch.Message.ToolCalls {
			if tc.Type != "function" {
				t.Errorf("tool call type %q", tc.Type)
			}
			a.calls = append(a.calls, toolCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		a.stop = ch.FinishReason
	case !c.stream:
		var r struct {
			Content []struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("anthropic answer: %v\n%s", err, body)
		}
		for _, b := range r.Content {
			switch b.Type {
			case "text":
				a.text += b.Text
			case "tool_use":
				a.calls = append(a.calls, toolCall{b.ID, b.Name, string(b.Input)})
			}
		}
		a.stop = r.StopReason
	case !c.anthropic:
		done := false
		byIndex := map[int]*toolCall{}
		var order []int
		for _, data := range sseData(t, body) {
			if data == "[DONE]" {
				done = true
				continue
			}
			var ch struct {
				Choices []struct {
					Delta struct {
						Content   string `json:"content"`
						ToolCalls []struct {
							Index    int    `json:"index"`
							ID       string `json:"id"`
							Function struct {
								Name      string `json:"name"`
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				t.Fatalf("chunk %s: %v", data, err)
			}
			for _, c := range ch.Choices {
				a.text += c.Delta.Content
				for _, tc := range c.Delta.ToolCalls {
					cur := byIndex[tc.Index]
					if cur == nil {
						cur = &toolCall{}
						byIndex[tc.Index] = cur
						order = append(order, tc.Index)
					}
					cur.id += tc.ID
					cur.name += tc.Function.Name
					cur.args += tc.Function.Arguments
				}
				if c.FinishReason != nil {
					a.stop = *c.FinishReason
				}
			}
		}
		for _, i := range order {
			a.calls = append(a.calls, *byIndex[i])
		}
		if !done {
			t.Fatalf("no [DONE]:\n%s", body)
		}
	default:
		stopped := false
		blocks := map[int]*toolCall{}
		var order []int
		for _, data := range sseData(t, body) {
			var ev struct {
				Type         string `json:"type"`
				Index        int    `json:"index"`
				ContentBlock struct {
					Type string `json:"type"`
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"content_block"`
				Delta struct {
					Type        string `json:"type"`
					Text        string `json:"text"`
					PartialJSON string `json:"partial_json"`
					StopReason  string `json:"stop_reason"`
				} `json:"delta"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %s: %v", data, err)
			}
			switch ev.Type {
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" {
					blocks[ev.Index] = &toolCall{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
					order = append(order, ev.Index)
				}
			case "content_block_delta":
				switch ev.Delta.Type {
				case "text_delta":
					a.text += ev.Delta.Text
				case "input_json_delta":
					blocks[ev.Index].args += ev.Delta.PartialJSON
				}
			case "message_delta":
				a.stop = ev.Delta.StopReason
			case "message_stop":
				stopped = true
			}
		}
		for _, i := range order {
			a.calls = append(a.calls, *blocks[i])
		}
		if !stopped {
			t.Fatalf("no message_stop:\n%s", body)
		}
	}
	return a
}

// sseData returns the data lines of a server-sent-event stream.
func sseData(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatalf("not a stream:\n%s", body)
	}
	return out
}

// generations returns the bodies of the generation requests the fake got.
func generations(fake *fakeupstream.Server) [][]byte {
	var out [][]byte
	for _, r := range fake.Requests() {
		if r.Path == "/v1/chat/completions" || r.Path == "/v1/messages" {
			out = append(out, r.Body)
		}
	}
	return out
}

func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	return fmt.Sprint(g) == fmt.Sprint(w)
}

var dialects = []struct {
	name              string
	anthropic, stream bool
}{
	{"openai", false, false},
	{"openai-stream", false, true},
	{"anthropic", true, false},
	{"anthropic-stream", true, true},
}

const weatherAsk = "What's the weather in Paris right now?"

// The loop of the design: search, schema, execute. The upstream sees only
// the three meta-tools, every round; the caller receives a call of its own
// tool get_weather with the model's arguments, as a valid tool call in its
// dialect, streamed or not.
func TestMetaToolLoop(t *testing.T) {
	g, fake := startMeta(t)
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			fake.Reset()
			fake.Script(
				fakeupstream.ToolCall("search_tools", `{"query":"weather"}`),
				fakeupstream.ToolCall("get_tool_schema", `{"name":"get_weather"}`),
				fakeupstream.ToolCall("execute_tool", `{"name":"get_weather","arguments":{"city":"Paris"}}`),
			)
			c := chat{anthropic: d.anthropic, stream: d.stream, system: "You are a helpful agent.",
				turns: []turn{{role: "user", text: weatherAsk}}, tools: weatherCatalog(t)}
			r := post(t, g, c.path(), c.body())

			bodies := generations(fake)
			if len(bodies) != 3 || fake.Pending() != 0 {
				t.Fatalf("%d upstream requests, %d scripted replies left", len(bodies), fake.Pending())
			}
			for i, b := range bodies {
				if got, _ := upstreamTools(t, b); !slices.Equal(got, metaToolNames) {
					t.Fatalf("round %d: the upstream saw tools %v", i+1, got)
				}
				if strings.Contains(string(b), `"stream":true`) {
					t.Errorf("round %d was streamed", i+1)
				}
			}
			if !strings.Contains(string(bodies[1]), "get_weather: Get the current weather for a city") {
				t.Errorf("round 2 lacks the search result: %s", bodies[1])
			}
			if !strings.Contains(string(bodies[2]), `input_schema`) || !strings.Contains(string(bodies[2]), `City name, e.g. Paris`) {
				t.Errorf("round 3 lacks the schema: %s", bodies[2])
			}

			t.Logf("the caller received:\n%s", r.body)
			a := decodeAnswer(t, c, r.body)
			wantStop := map[bool]string{false: "tool_calls", true: "tool_use"}[d.anthropic]
			if len(a.calls) != 1 || a.calls[0].name != "get_weather" || !sameJSON(t, a.calls[0].args, `{"city":"Paris"}`) || a.stop != wantStop {
				t.Fatalf("the caller got %+v\n%s", a, r.body)
			}
			wantID := map[bool]string{false: "call_", true: "toolu_"}[d.anthropic]
			if !strings.HasPrefix(a.calls[0].id, wantID) || strings.Contains(string(bodies[2]), a.calls[0].id) {
				t.Errorf("tool call id %q: not fresh in the caller's style", a.calls[0].id)
			}
			if r.header.Get("X-Bardo-Tools") != "meta" || r.header.Get("X-Bardo-Tools-Rounds") != "3" {
				t.Errorf("headers: X-Bardo-Tools %q, rounds %q", r.header.Get("X-Bardo-Tools"), r.header.Get("X-Bardo-Tools-Rounds"))
			}
		})
	}
}

// The caller's next turn, with its tool's result, starts a fresh loop: the
// model sees its call as the execute_tool call it made (same id, so the
// result matches), and answers.
func TestMetaNextTurn(t *testing.T) {
	g, fake := startMeta(t)
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			fake.Reset()
			fake.Script(fakeupstream.Reply("It is 18°C and sunny in Paris."))
			id := map[bool]string{false: "call_prev1", true: "toolu_prev1"}[d.anthropic]
			c := chat{anthropic: d.anthropic, stream: d.stream, system: "You are a helpful agent.", tools: weatherCatalog(t),
				turns: []turn{
					{role: "user", text: weatherAsk},
					{role: "assistant", callID: id, name: "get_weather", args: `{"city":"Paris"}`},
					{role: "tool", callID: id, text: "18°C, sunny"},
				}}
			r := post(t, g, c.path(), c.body())
			bodies := generations(fake)
			if len(bodies) != 1 {
				t.Fatalf("%d upstream requests", len(bodies))
			}
			up := string(bodies[0])
			if got, _ := upstreamTools(t, bodies[0]); !slices.Equal(got, metaToolNames) ||
				!strings.Contains(up, "execute_tool") || !strings.Contains(up, id) || !strings.Contains(up, "18°C, sunny") ||
				strings.Contains(up, `"name":"get_weather","input"`) || strings.Contains(up, `"function":{"name":"get_weather"`) {
				t.Fatalf("upstream request: %s", up)
			}
			if a := decodeAnswer(t, c, r.body); a.text != "It is 18°C and sunny in Paris." || len(a.calls) != 0 {
				t.Fatalf("the caller got %+v", a)
			}
		})
	}
}

// A tool name the catalog does not have goes back to the model as an
// error result; its corrected call reaches the caller.
func TestMetaUnknownTool(t *testing.T) {
	g, fake := startMeta(t)
	for _, d := range dialects[:3:3] {
		t.Run(d.name, func(t *testing.T) {
			fake.Reset()
			fake.Script(
				fakeupstream.ToolCall("execute_tool", `{"name":"get_wether","arguments":{"city":"Paris"}}`),
				fakeupstream.ToolCall("get_tool_schema", `{"name":"weather"}`),
				fakeupstream.ToolCall("execute_tool", `{"name":"get_weather","arguments":{"city":"Paris"}}`),
			)
			c := chat{anthropic: d.anthropic, stream: d.stream, turns: []turn{{role: "user", text: weatherAsk}}, tools: weatherCatalog(t)}
			r := post(t, g, c.path(), c.body())
			bodies := generations(fake)
			if len(bodies) != 3 {
				t.Fatalf("%d upstream requests", len(bodies))
			}
			if b := string(bodies[1]); !strings.Contains(b, `no tool named \"get_wether\"; did you mean get_weather`) ||
				(d.anthropic && !strings.Contains(b, `"is_error":true`)) {
				t.Fatalf("round 2: %s", b)
			}
			if b := string(bodies[2]); !strings.Contains(b, `no tool named \"weather\"`) {
				t.Fatalf("round 3: %s", b)
			}
			if a := decodeAnswer(t, c, r.body); len(a.calls) != 1 || a.calls[0].name != "get_weather" {
				t.Fatalf("the caller got %+v", a)
			}
		})
	}
}

// When the internal completions fail, the request goes upstream as usual,
// pruned, and says so.
func TestMetaFallbackOnFailingUpstream(t *testing.T) {
	g, fake := startMeta(t)
	// The internal completion tries the provider twice (a 5xx is retried
	// once); the caller's own request then gets the default echo.
	fake.Script(fakeupstream.Fail(503), fakeupstream.Fail(503))
	c := chat{turns: []turn{{role: "user", text: weatherAsk}}, tools: weatherCatalog(t)}
	r := post(t, g, c.path(), c.body())
	bodies := generations(fake)
	if len(bodies) != 3 {
		t.Fatalf("%d upstream requests", len(bodies))
	}
	for _, b := range bodies[:2] {
		if got, _ := upstreamTools(t, b); !slices.Equal(got, metaToolNames) {
			t.Fatalf("internal request with tools %v", got)
		}
	}
	got, _ := upstreamTools(t, bodies[2])
	if len(got) != 12 || !slices.Contains(got, "get_weather") || slices.Contains(got, "search_tools") {
		t.Fatalf("the forwarded request had tools %v", got)
	}
	if r.header.Get("X-Bardo-Tools") != "meta-fallback" || r.header.Get("X-Bardo-Tools-Rounds") != "1" || r.header.Get("X-Bardo-Tools-Saved-Tokens") == "" {
		t.Fatalf("headers %v", r.header)
	}
	if a := decodeAnswer(t, c, r.body); !strings.HasPrefix(a.text, "echo: ") {
		t.Fatalf("answer %+v", a)
	}
}

// The token reduction on a 100-tool request (reported in README.md): the
// 100-tool catalog and the agent conversation of the other tests, sent as
// it is (threshold = 1000), pruned (the defaults), and in meta-tool mode
// with a three-round loop (search, schema, execute). Measured on what the
// upstream received: the "tools" JSON and whole bodies, tokens ≈ bytes / 4.
func TestMetaTokenReduction(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	c := chat{system: "You are a careful DeFi operations agent.", tools: catalog(t), turns: []turn{
		{role: "user", text: "Check my Aave position first."},
		{role: "assistant", callID: "call_1", name: "get_position", args: `{"protocol":"aave-v3","asset":"USDC"}`},
		{role: "tool", callID: "call_1", text: `{"supplied":"125000","borrowed":"41000","health_factor":"1.84"}`},
		{role: "user", text: question},
	}}
	toolsBytes := func(body []byte) int {
		var m struct {
			Tools json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		return len(m.Tools)
	}
	type measure struct{ tools, body, requests int }
	run := func(layerConfig string, script ...fakeupstream.Behaviour) (measure, reply) {
		g := startWith(t, fake, layerConfig)
		fake.Reset()
		fake.Script(script...)
		r := post(t, g, c.path(), c.body())
		var m measure
		for _, b := range generations(fake) {
			m.tools += toolsBytes(b)
			m.body += len(b)
			m.requests++
		}
		return m, r
	}
	full, _ := run("threshold = 1000")
	pruned, _ := run("")
	meta, r := run("meta_tools_above = 50",
		fakeupstream.ToolCall("search_tools", `{"query":"swap quote price impact"}`),
		fakeupstream.ToolCall("get_tool_schema", `{"name":"get_swap_quote"}`),
		fakeupstream.ToolCall("execute_tool", `{"name":"get_swap_quote","arguments":{"from_asset":"ETH","to_asset":"USDC","amount":"2"}}`),
	)
	if a := decodeAnswer(t, c, r.body); len(a.calls) != 1 || a.calls[0].name != "get_swap_quote" || full.requests != 1 || pruned.requests != 1 || meta.requests != 3 {
		t.Fatalf("requests %d/%d/%d, answer %+v", full.requests, pruned.requests, meta.requests, a)
	}
	pct := func(m measure, of int) float64 { return 100 * float64(of-m.tools) / float64(of) }
	bodyPct := func(m measure) float64 { return 100 * float64(full.body-m.body) / float64(full.body) }
	t.Logf("tools JSON sent upstream: full %d B (≈ %d tokens); pruned %d B (≈ %d, −%.1f%%); meta %d B over %d rounds (≈ %d, −%.1f%%)",
		full.tools, full.tools/4, pruned.tools, pruned.tools/4, pct(pruned, full.tools), meta.tools, meta.requests, meta.tools/4, pct(meta, full.tools))
	t.Logf("meta-tools per round: %d B (≈ %d tokens, −%.1f%% of the catalog)", meta.tools/meta.requests, meta.tools/meta.requests/4,
		100*float64(full.tools-meta.tools/meta.requests)/float64(full.tools))
	t.Logf("whole prompts sent upstream: full %d B (≈ %d tokens); pruned %d B (≈ %d, −%.1f%%); meta %d B over %d rounds (≈ %d, −%.1f%%)",
		full.body, full.body/4, pruned.body, pruned.body/4, bodyPct(pruned), meta.body, meta.requests, meta.body/4, bodyPct(meta))
	if pct(meta, full.tools) < 90 || bodyPct(meta) < 50 {
		t.Fatalf("meta-tool mode saved only %.1f%% of the tool tokens, %.1f%% of the prompt", pct(meta, full.tools), bodyPct(meta))
	}
}
