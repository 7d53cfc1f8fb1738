//go:build !wasip1

package main

// Meta-tool mode natively: the loop's logic against scripted internal
// completions (completeRequest replaced). The same loop through the real
// runtime and gateway is in e2e_test.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// script replaces the internal completion with replies consumed in order,
// and records (a copy of) every request it gets.
type script struct {
	subsystems []string
	reqs       []wire.Request
	replies    []any // *wire.Response or error
}

func scripted(t *testing.T, replies ...any) *script {
	t.Helper()
	s := &script{replies: replies}
	prev := completeRequest
	completeRequest = func(subsystem string, req *wire.Request) (*wire.Response, error) {
		// A deep copy, as plugin.CompleteRequest encodes it for the host:
		// the request aliases the call's input, overwritten after the call.
		var e wire.Encoder
		wire.EncodeLayerRequest(&e, &wire.Meta{}, req, wire.PartAll)
		var c wire.LayerRequest
		if err := c.Decode(bytes.Clone(e.Bytes())); err != nil {
			return nil, err
		}
		s.reqs = append(s.reqs, c.Request)
		s.subsystems = append(s.subsystems, strings.Clone(subsystem))
		if len(s.replies) == 0 {
			return nil, errors.New("script exhausted")
		}
		next := s.replies[0]
		s.replies = s.replies[1:]
		if err, ok := next.(error); ok {
			return nil, err
		}
		resp := *next.(*wire.Response)
		resp.Content = slices.Clone(resp.Content)
		return &resp, nil
	}
	t.Cleanup(func() { completeRequest = prev })
	return s
}

func call(id, name, input string) wire.Block {
	return wire.Block{Type: wire.BlockToolUse, ID: id, Name: name, Data: []byte(input)}
}

func reply(blocks ...wire.Block) *wire.Response {
	stop := wire.StopEndTurn
	for _, b := range blocks {
		if b.Type == wire.BlockToolUse {
			stop = wire.StopToolUse
		}
	}
	return &wire.Response{ID: "msg_up", Model: "gpt-4o-2024", Content: blocks, StopReason: stop,
		Usage: wire.Usage{InputTokens: 1000, OutputTokens: 20, CacheReadTokens: 100}}
}

func textBlock(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

// toolNamesOf returns the tools' names.
func toolNamesOf(r *wire.Request) []string { return names(r.Tools) }

var metaNames = []string{"search_tools", "get_tool_schema", "execute_tool"}

// lastResults returns the tool results of a request's last message.
func lastResults(t *testing.T, r *wire.Request) []wire.Block {
	t.Helper()
	m := r.Messages[len(r.Messages)-1]
	if m.Role != "user" {
		t.Fatalf("last message is %s's", m.Role)
	}
	for _, b := range m.Content {
		if b.Type != wire.BlockToolResult {
			t.Fatalf("last message holds a %d block", b.Type)
		}
	}
	return m.Content
}

const swapAsk = "What would I get if I swap 2 ETH for USDC right now?"

// The loop as designed: search, schema, execute; the caller gets a call of
// its own tool, the model saw only the meta-tools, and the history's call
// of a catalog tool was shown as the execute_tool call it was.
func TestMetaSearchSchemaExecute(t *testing.T) {
	h := plugintest.New(t, `{"meta_tools_above": 50}`)
	s := scripted(t,
		reply(call("u1", "search_tools", `{"query":"swap quote"}`)),
		reply(call("u2", "get_tool_schema", `{"name":"get_swap_quote"}`)),
		reply(textBlock("Getting a quote."), call("u3", "execute_tool", `{"name":"get_swap_quote","arguments":{"from_asset":"ETH","to_asset":"USDC","amount":"2"}}`)),
	)
	req := agentRequest(catalog(t), swapAsk)
	req.Request.Params = wire.Params{Set: wire.HasMaxTokens, MaxTokens: 300}
	req.Meta.Annotations = []wire.KV{{Key: "bardo.hdr.x-bardo-subsystem", Value: "executor"}}
	res := h.OnRequest(req)

	if res.Action != wire.ActionAnswer || res.Answer == nil || res.Patched != 0 {
		t.Fatalf("action %d, patched %b, answer %+v", res.Action, res.Patched, res.Answer)
	}
	a := res.Answer
	if len(a.Content) != 2 || a.Content[0].Text != "Getting a quote." {
		t.Fatalf("answer content %+v", a.Content)
	}
	tu := a.Content[1]
	if tu.Type != wire.BlockToolUse || tu.Name != "get_swap_quote" || string(tu.Data) != `{"from_asset":"ETH","to_asset":"USDC","amount":"2"}` ||
		!strings.HasPrefix(tu.ID, "call_") || len(tu.ID) != len("call_")+24 {
		t.Fatalf("tool call %+v (%s)", tu, tu.Data)
	}
	if a.StopReason != wire.StopToolUse || a.Usage != (wire.Usage{InputTokens: 3000, OutputTokens: 60, CacheReadTokens: 300}) {
		t.Fatalf("stop %q, usage %+v", a.StopReason, a.Usage)
	}
	if header(res.Headers, HeaderTools) != "meta" || header(res.Headers, HeaderRounds) != "3" || header(res.Headers, HeaderSavedTokens) != "" {
		t.Fatalf("headers %v", res.Headers)
	}
	if h.Metrics[metricMeta] != 1 || h.Metrics[metricMetaRounds] != 3 || h.Metrics[metricPruned] != 0 {
		t.Fatalf("metrics %v", h.Metrics)
	}

	if len(s.reqs) != 3 {
		t.Fatalf("%d internal completions", len(s.reqs))
	}
	for i, r := range s.reqs {
		if !slices.Equal(toolNamesOf(&r), metaNames) || r.Model != "gpt-4o" || r.Params.MaxTokens != 300 ||
			len(r.System) != 1 || s.subsystems[i] != "executor" || len(r.ToolChoice) != 0 {
			t.Fatalf("round %d: tools %v, model %q, params %+v, subsystem %q", i+1, toolNamesOf(&r), r.Model, r.Params, s.subsystems[i])
		}
		if !strings.Contains(r.Tools[0].Description, "100 tools") {
			t.Errorf("search_tools description: %q", r.Tools[0].Description)
		}
		for _, tl := range r.Tools {
			if !json.Valid(tl.Schema) {
				t.Errorf("%s: invalid schema %s", tl.Name, tl.Schema)
			}
		}
	}
	// The history's get_position call, as the model sees it.
	first := s.reqs[0]
	if len(first.Messages) != 5 {
		t.Fatalf("%d messages", len(first.Messages))
	}
	if b := first.Messages[1].Content[0]; b.Name != "execute_tool" || b.ID != "c1" ||
		string(b.Data) != `{"name":"get_position","arguments":{"protocol":"aave-v3","asset":"USDC"}}` {
		t.Fatalf("history call %+v (%s)", b, b.Data)
	}
	if b := first.Messages[2].Content[0]; b.Type != wire.BlockToolResult || b.ID != "c1" {
		t.Fatalf("history result %+v", b)
	}
	// Round 2 carries the search's answer, round 3 the schema.
	res2 := lastResults(t, &s.reqs[1])
	if len(res2) != 1 || res2[0].ID != "u1" || res2[0].IsError || !strings.HasPrefix(strings.SplitN(res2[0].Text, "\n", 2)[0], "get_swap_quote: ") {
		t.Fatalf("search result %+v", res2)
	}
	if n := strings.Count(res2[0].Text, "\n"); n != 8 {
		t.Errorf("%d search results, want meta_search_results = 8:\n%s", n, res2[0].Text)
	}
	if am := s.reqs[1].Messages[len(s.reqs[1].Messages)-2]; am.Role != "assistant" || am.Content[0].ID != "u1" {
		t.Fatalf("round 2: the model's call is not in the history: %+v", am)
	}
	res3 := lastResults(t, &s.reqs[2])
	var schema struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if len(res3) != 1 || res3[0].ID != "u2" || json.Unmarshal([]byte(res3[0].Text), &schema) != nil ||
		schema.Name != "get_swap_quote" || !strings.Contains(string(schema.InputSchema), `"from_asset"`) {
		t.Fatalf("schema result %+v", res3)
	}
	t.Logf("search_tools{swap quote}:\n%s", res2[0].Text)
}

// A model that answers in text: the caller gets the text.
func TestMetaTextAnswer(t *testing.T) {
	h := plugintest.New(t, `{"meta_tools_above": 50}`)
	scripted(t, reply(textBlock("Which chain?")))
	res := h.OnRequest(agentRequest(catalog(t), swapAsk))
	a := res.Answer
	if res.Action != wire.ActionAnswer || len(a.Content) != 1 || a.Content[0].Text != "Which chain?" || a.StopReason != wire.StopEndTurn ||
		header(res.Headers, HeaderRounds) != "1" || a.Usage.InputTokens != 1000 {
		t.Fatalf("%+v %v", a, res.Headers)
	}
}

// Unknown names, bad inputs and direct calls: each failure is answered to
// the model as an error result, and the loop goes on.
func TestMetaErrorsGoBackToTheModel(t *testing.T) {
	h := plugintest.New(t, `{"meta_tools_above": 50, "meta_max_rounds": 6}`)
	s := scripted(t,
		reply(call("u1", "execute_tool", `{"name":"get_swap_qoute","arguments":{}}`)),
		reply(call("u2", "get_tool_schema", `{"name":"nope"}`), call("u3", "search_tools", `{}`)),
		reply(call("u4", "get_weather", `{"city":"Paris"}`)), // neither a meta-tool nor in the catalog
		reply(call("u5", "execute_tool", `{"name":"calculate","arguments":[1,2]}`)),
		// A direct call of a catalog tool, and arguments as a JSON string.
		reply(call("u6", "calculate", `{"expression":"2*3"}`), call("u7", "execute_tool", `{"name":"get_token_price","arguments":"{\"asset\":\"ETH\"}"}`)),
	)
	res := h.OnRequest(agentRequest(catalog(t), swapAsk))
	if res.Action != wire.ActionAnswer || header(res.Headers, HeaderRounds) != "5" {
		t.Fatalf("action %d, headers %v", res.Action, res.Headers)
	}
	got := res.Answer.Content
	if len(got) != 2 || got[0].Name != "calculate" || string(got[0].Data) != `{"expression":"2*3"}` ||
		got[1].Name != "get_token_price" || string(got[1].Data) != `{"asset":"ETH"}` || got[0].ID == got[1].ID {
		t.Fatalf("answer %+v", got)
	}
	// The made-up direct call stays in the history as the execute_tool
	// call it stands for.
	if b := s.reqs[3].Messages[len(s.reqs[3].Messages)-2].Content[0]; b.Name != "execute_tool" || b.ID != "u4" ||
		string(b.Data) != `{"name":"get_weather","arguments":{"city":"Paris"}}` {
		t.Fatalf("round 4 history: %+v (%s)", b, b.Data)
	}
	for _, tc := range []struct {
		round int
		want  []string
	}{
		{1, []string{`no tool named "get_swap_qoute"; did you mean get_swap_quote`}},
		{2, []string{`no tool named "nope"`, `search_tools needs {"query"`}},
		{3, []string{`no tool named "get_weather"`}},
		{4, []string{`"calculate" must be a JSON object`}},
	} {
		rs := lastResults(t, &s.reqs[tc.round])
		if len(rs) != len(tc.want) {
			t.Fatalf("round %d: %d results", tc.round+1, len(rs))
		}
		for i, w := range tc.want {
			if !rs[i].IsError || !strings.Contains(rs[i].Text, w) {
				t.Errorf("round %d result %d: %+v, want an error with %q", tc.round+1, i, rs[i], w)
			}
		}
	}
}

// Several calls in one turn: a valid execute_tool next to a meta call
// answers the caller; next to a failed execute_tool it is not run, and the
// model is told so.
func TestMetaParallelCalls(t *testing.T) {
	h := plugintest.New(t, `{"meta_tools_above": 50}`)
	s := scripted(t,
		reply(call("u1", "execute_tool", `{"name":"calculate","arguments":{"expression":"1"}}`), call("u2", "execute_tool", `{"name":"nope"}`)),
		reply(call("u3", "search_tools", `{"query":"news"}`), call("u4", "execute_tool", `{"name":"calculate","arguments":{"expression":"1"}}`)),
	)
	res := h.OnRequest(agentRequest(catalog(t), swapAsk))
	rs := lastResults(t, &s.reqs[1])
	if len(rs) != 2 || rs[0].ID != "u1" || !rs[0].IsError || !strings.Contains(rs[0].Text, "Not run") ||
		rs[1].ID != "u2" || !strings.Contains(rs[1].Text, `no tool named "nope"`) {
		t.Fatalf("round 2 results %+v", rs)
	}
	if a := res.Answer; a == nil || len(a.Content) != 1 || a.Content[0].Name != "calculate" {
		t.Fatalf("answer %+v", a)
	}
}

// A failed completion or a loop out of rounds: the request goes upstream
// as usual, pruned, and the headers say so.
func TestMetaFallsBackToPruning(t *testing.T) {
	h := plugintest.New(t, `{"meta_tools_above": 50, "meta_max_rounds": 2}`)
	scripted(t, errors.New("every provider failed"))
	res := h.OnRequest(agentRequest(catalog(t), swapAsk))
	if res.Action != wire.ActionContinue || res.Patched != wire.PartTools || len(res.Request.Tools) != 12 ||
		header(res.Headers, HeaderTools) != "meta-fallback" || header(res.Headers, HeaderRounds) != "1" ||
		header(res.Headers, HeaderSavedTokens) == "" || !slices.Contains(names(res.Request.Tools), "get_position") {
		t.Fatalf("action %d, patched %b, %d tools, headers %v", res.Action, res.Patched, len(res.Request.Tools), res.Headers)
	}
	if len(res.Headers) != 5 || header(res.Headers, HeaderReason) != reasonSession || header(res.Headers, HeaderPruned) == "" {
		t.Fatalf("headers %v", res.Headers)
	}

	s := scripted(t,
		reply(call("u1", "search_tools", `{"query":"swap"}`)),
		reply(call("u2", "search_tools", `{"query":"quote"}`)),
		reply(call("u3", "search_tools", `{"query":"never asked"}`)),
	)
	res = h.OnRequest(agentRequest(catalog(t), swapAsk))
	if len(s.reqs) != 2 || res.Action != wire.ActionContinue || len(res.Request.Tools) != 12 ||
		header(res.Headers, HeaderTools) != "meta-fallback" || header(res.Headers, HeaderRounds) != "2" {
		t.Fatalf("%d rounds, action %d, %d tools, headers %v", len(s.reqs), res.Action, len(res.Request.Tools), res.Headers)
	}
	if h.Metrics[metricMetaFalls] != 2 || h.Metrics[metricMeta] != 0 || h.Metrics[metricMetaRounds] != 3 {
		t.Fatalf("metrics %v", h.Metrics)
	}
}

// When meta-tool mode does not apply, no internal completion runs.
func TestMetaEligibility(t *testing.T) {
	all := catalog(t)
	for _, tc := range []struct {
		name   string
		config string
		edit   func(*wire.LayerRequest)
		meta   bool
	}{
		{"default off", `{}`, nil, false},
		{"at the threshold", `{"meta_tools_above": 100}`, nil, false},
		{"above", `{"meta_tools_above": 99}`, nil, true},
		{"tool_choice auto", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) { r.Request.ToolChoice = []byte(`{"type":"auto"}`) }, true},
		{"tool_choice names a tool", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) { r.Request.ToolChoice = []byte(`{"type":"tool","name":"calculate"}`) }, false},
		{"tool_choice none", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) { r.Request.ToolChoice = []byte(`{"type":"none"}`) }, false},
		{"allowed_tools", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) {
			r.Request.ToolChoice = []byte(`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"recall"}}]}}`)
		}, false},
		{"assistant prefill", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) {
			r.Request.Messages = append(r.Request.Messages, wire.Message{Role: "assistant", Content: text("{")})
		}, false},
		{"a catalog tool named like a meta-tool", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) {
			r.Request.Tools = append(slices.Clone(r.Request.Tools), wire.Tool{Name: "search_tools", Schema: []byte(`{"type":"object"}`)})
		}, false},
		{"a meta-tool call in the history", `{"meta_tools_above": 50}`, func(r *wire.LayerRequest) {
			r.Request.Messages[1].Content[0].Name = "execute_tool"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := plugintest.New(t, tc.config)
			s := scripted(t, reply(textBlock("ok")))
			req := agentRequest(all, swapAsk)
			req.Request.Messages = slices.Clone(req.Request.Messages)
			req.Request.Messages[1].Content = slices.Clone(req.Request.Messages[1].Content)
			if tc.edit != nil {
				tc.edit(&req)
			}
			res := h.OnRequest(req)
			if got := len(s.reqs) > 0; got != tc.meta || (res.Action == wire.ActionAnswer) != tc.meta {
				t.Fatalf("meta = %v (action %d), want %v", got, res.Action, tc.meta)
			}
			if !tc.meta && res.Patched != wire.PartTools {
				t.Fatalf("not pruned: patched %b", res.Patched)
			}
		})
	}
	// tool_choice "any" is kept: the model must call a (meta-)tool.
	h := plugintest.New(t, `{"meta_tools_above": 50}`)
	s := scripted(t, reply(call("u1", "execute_tool", `{"name":"calculate","arguments":{"expression":"1"}}`)))
	req := agentRequest(all, swapAsk)
	req.Request.ToolChoice = []byte(`{"type":"any"}`)
	if res := h.OnRequest(req); res.Action != wire.ActionAnswer || string(s.reqs[0].ToolChoice) != `{"type":"any"}` {
		t.Fatalf("tool_choice any: action %d, sent %s", res.Action, s.reqs[0].ToolChoice)
	}
}

// The caller's tool ids follow its dialect.
func TestMetaToolIDs(t *testing.T) {
	h := plugintest.New(t, `{"meta_tools_above": 50}`)
	scripted(t, reply(call("", "execute_tool", `{"name":"calculate","arguments":{"expression":"1"}}`)))
	req := agentRequest(catalog(t), swapAsk)
	req.Meta.Dialect = wire.DialectAnthropic
	res := h.OnRequest(req)
	if id := res.Answer.Content[0].ID; !strings.HasPrefix(id, "toolu_") {
		t.Fatalf("id %q", id)
	}
}

func TestSearchAndSummary(t *testing.T) {
	plugintest.New(t, `{}`)
	all := catalog(t)
	top := search(all, "swap quote", 8, 6)
	if len(top) == 0 || all[top[0]].Name != "get_swap_quote" {
		t.Fatalf("swap quote: %v", top)
	}
	if top := search(all, "send an email", 3, 6); len(top) == 0 || all[top[0]].Name != "send_email" {
		t.Fatalf("send an email: %v", top)
	}
	if top := search(all, "weather forecast", 8, 6); len(top) != 0 {
		t.Fatalf("weather forecast matched %v", top)
	}
	for _, tc := range []struct{ in, want string }{
		{"Quote a swap. Uses the aggregator.", "Quote a swap."},
		{"First line\nsecond line", "First line"},
		{"  Padded.  ", "Padded."},
		{strings.Repeat("é", 100), strings.Repeat("é", 80) + "…"},
	} {
		if got := summary(tc.in); got != tc.want {
			t.Errorf("summary(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMetaConfig(t *testing.T) {
	neg, zero, big := -1, 0, 1000
	for _, raw := range []rawConfig{
		{MetaAbove: &neg},
		{MetaRounds: &zero},
		{MetaRounds: &big},
		{MetaResults: &zero},
		{MetaResults: &big},
	} {
		if _, _, err := parseConfig(&raw); err == nil {
			t.Errorf("%+v accepted", raw)
		}
	}
	c, _, err := parseConfig(&rawConfig{})
	if err != nil || c.metaAbove != 0 || c.metaRounds != 4 || c.metaResults != 8 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}
