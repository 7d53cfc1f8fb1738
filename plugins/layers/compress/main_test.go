//go:build !wasip1

package main

// Native unit tests: the token estimate, the split rule, the summary's
// placement, the cache keys, the configuration, and the request hook's
// paths that need no summariser (under budget, a stored summary, a failing
// summariser: sdk/plugintest's host offers no completion service, so every
// completion fails here; summaries written by a model are tested under the
// real gateway in runtime_test.go and e2e_test.go).

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

func header(kvs []wire.KV, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

func mustConfig(t *testing.T, js string) config {
	t.Helper()
	c, err := decodeConfig([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		bytes, want int
	}{{0, 0}, {1, 1}, {4, 1}, {5, 2}, {8, 2}, {401, 101}} {
		if got := est(tc.bytes); got != tc.want {
			t.Errorf("est(%d) = %d, want %d", tc.bytes, got, tc.want)
		}
	}
	sys := text(strings.Repeat("s", 40)) // 10
	msgs := []wire.Message{
		userSays("abcdefgh"), // 4 + 2
		assistantCalls("", call{"c1", "get_price", `{"asset":"ETH"}`}), // 4 + name 3 + input 4
		toolResults(result{id: "c1", content: `{"usd":3171.2}`}),       // 4 + 4
		{Role: "assistant", Content: []wire.Block{{Type: wire.BlockThinking, Text: "hmm."}, // 4 + 1
			{Type: wire.BlockText, Text: "ETH is 3171 USD."}}}, // + 4
	}
	if got, want := estimate(sys, msgs), 10+6+11+8+9; got != want {
		t.Fatalf("estimate = %d, want %d", got, want)
	}
	// Bigger content, bigger estimate; the system prompt counts.
	if estimate(nil, msgs) != estimate(sys, msgs)-10 {
		t.Fatal("system prompt not counted once")
	}
	msgs[0].Content[0].Text += strings.Repeat("x", 400)
	if got, want := estimate(sys, msgs), 10+106+11+8+9; got != want {
		t.Fatalf("estimate after growth = %d, want %d", got, want)
	}
}

// allCuts returns every allowed split of msgs (chunk size 0: every allowed
// split closes a chunk).
func allCuts(msgs []wire.Message) []int {
	toks := make([]int, len(msgs))
	for i := range msgs {
		toks[i] = messageTokens(&msgs[i])
	}
	return chunkEnds(nil, msgs, toks, 0, len(msgs))
}

func TestCutsNeverSeparateToolCallsFromResults(t *testing.T) {
	msgs := []wire.Message{
		userSays("q1"), // 0
		assistantCalls("Reading both.", call{"A", "get_positions", `{}`}, call{"B", "get_gas", `{}`}), // 1
		toolResults(result{id: "A", content: "a"}, result{id: "B", content: "b"}),                     // 2
		assistantCalls("", call{"C", "get_price", `{}`}),                                              // 3
		toolResults(result{id: "C", content: "c"}),                                                    // 4
		assistantSays("done"), // 5
		userSays("q2"),        // 6
		assistantSays("a2"),   // 7
		userSays("q3"),        // 8
	}
	if got, want := allCuts(msgs), []int{1, 3, 5, 6, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("cuts %v, want %v", got, want)
	}

	// Results of parallel calls arriving in separate turns (OpenAI tool
	// messages interleaved with a user remark): no split until both are in.
	split := []wire.Message{
		userSays("q1"),
		assistantCalls("", call{"A", "t", `{}`}, call{"B", "t", `{}`}),
		toolResults(result{id: "A", content: "a"}),
		toolResults(result{id: "B", content: "b"}),
		assistantSays("ok"),
		userSays("q2"),
	}
	if got, want := allCuts(split), []int{1, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("cuts %v, want %v", got, want)
	}

	// A call that never got its result closes the conversation to splits.
	open := []wire.Message{
		userSays("q1"),
		assistantCalls("", call{"A", "t", `{}`}),
		userSays("never mind"),
		assistantSays("ok"),
		userSays("q2"),
	}
	if got, want := allCuts(open), []int{1}; !slices.Equal(got, want) {
		t.Fatalf("cuts %v, want %v", got, want)
	}
}

// On the shared session: every allowed split keeps each tool call with its
// result and, with the summary in place, leaves a conversation that
// alternates and starts with the user; and for every budget, chunk size and
// number of kept turns, the plan's split is an allowed one that keeps the
// last question and at least keep_recent_turns turns.
func TestSplitRuleOnSession(t *testing.T) {
	s := agentSession()
	n := len(s.Msgs)
	cuts := allCuts(s.Msgs)
	if len(cuts) < 30 {
		t.Fatalf("only %d allowed splits in %d turns", len(cuts), n)
	}
	for _, split := range cuts {
		calls := map[string]int{}
		for i, m := range s.Msgs {
			for _, b := range m.Content {
				switch b.Type {
				case wire.BlockToolUse:
					calls[b.ID] = i
				case wire.BlockToolResult:
					if at := calls[b.ID]; (at < split) != (i < split) {
						t.Fatalf("split %d separates call %s (turn %d) from its result (turn %d)", split, b.ID, at, i)
					}
				}
			}
		}
		out := apply(s.Msgs, split, "S")
		checkAlternates(t, out)
		if out[0].Content[0].Text != summaryIntro(split)+"S" {
			t.Fatalf("first block %q", out[0].Content[0].Text)
		}
	}
	splits := map[int]bool{}
	for _, budget := range []int{1000, 3000, 5000, 7000} {
		for _, chunk := range []int{200, 400, 800, 1500, 3000} {
			for keep := 0; keep <= 12; keep++ {
				c := mustConfig(t, `{"summary_max_tokens":100,"budget_tokens":`+strconv.Itoa(budget)+
					`,"chunk_tokens":`+strconv.Itoa(chunk)+`,"keep_recent_turns":`+strconv.Itoa(keep)+`}`)
				p := makePlan(s.System, s.Msgs, c)
				if p.chunks == 0 {
					continue
				}
				splits[p.split] = true
				if !slices.Contains(cuts, p.split) || p.split > n-keep || p.split > n-1 {
					t.Fatalf("budget %d chunk %d keep %d: split %d of %d turns", budget, chunk, keep, p.split, n)
				}
			}
		}
	}
	t.Logf("%d allowed splits checked; plans chose %d distinct ones", len(cuts), len(splits))
}

func checkAlternates(t *testing.T, msgs []wire.Message) {
	t.Helper()
	for i, m := range msgs {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			t.Fatalf("turn %d is %s, want %s", i, m.Role, want)
		}
	}
}

func TestApplyPlacesSummary(t *testing.T) {
	msgs := []wire.Message{
		userSays("q1"),
		assistantCalls("", call{"A", "t", `{}`}),
		toolResults(result{id: "A", content: "a"}),
		assistantSays("a1"),
		userSays("q2"),
		assistantCalls("", call{"B", "t", `{}`}),
		toolResults(result{id: "B", content: "b"}),
		assistantSays("a2"),
	}
	// Before a user turn: the summary leads that turn, nothing is added.
	out := apply(msgs, 4, "SUM")
	if len(out) != 4 || out[0].Role != "user" || len(out[0].Content) != 2 ||
		out[0].Content[0].Text != summaryIntro(4)+"SUM" || out[0].Content[1].Text != "q2" {
		t.Fatalf("before a user turn: %+v", out[0])
	}
	if !slices.EqualFunc(out[1:], msgs[5:], sameMessage) {
		t.Fatal("kept turns changed")
	}
	// Before an assistant turn: the summary is a user turn of its own.
	out = apply(msgs, 3, "SUM")
	if len(out) != 6 || out[0].Role != "user" || len(out[0].Content) != 1 || out[1].Role != "assistant" {
		t.Fatalf("before an assistant turn: %+v", out[:2])
	}
	checkAlternates(t, out)
	// The caller's turns are not modified in place.
	if len(msgs[4].Content) != 1 || msgs[4].Content[0].Text != "q2" {
		t.Fatal("apply modified its input")
	}
}

func sameMessage(a, b wire.Message) bool {
	var x, y []byte
	return bytes.Equal(appendMessage(x, &a), appendMessage(y, &b))
}

func TestLastQuestionAlwaysKept(t *testing.T) {
	msgs := []wire.Message{
		userSays(strings.Repeat("old question ", 400)),
		assistantSays(strings.Repeat("old answer ", 400)),
		userSays(strings.Repeat("the question ", 400)),                      // 2: the last question
		assistantCalls("", call{"A", "search", strings.Repeat(`"x"`, 300)}), // 3
		toolResults(result{id: "A", content: strings.Repeat("r", 4000)}),    // 4
	}
	if got := protectFrom(msgs, 0); got != 2 {
		t.Fatalf("protectFrom = %d, want 2 (a trailing tool result does not displace the question)", got)
	}
	c := mustConfig(t, `{"budget_tokens":500,"summary_max_tokens":64,"chunk_tokens":100,"keep_recent_turns":0}`)
	p := makePlan(nil, msgs, c)
	if p.chunks == 0 || p.split > 2 {
		t.Fatalf("plan %+v", p)
	}
	// A conversation that is one question and its agent loop has nothing
	// that may be summarised.
	if p := makePlan(nil, msgs[2:], c); p.chunks != 0 {
		t.Fatalf("summarised the question being answered: %+v", p)
	}
	// No user turn at all: nothing.
	if got := protectFrom([]wire.Message{assistantSays("x")}, 0); got != 0 {
		t.Fatalf("protectFrom without user turns = %d", got)
	}
}

// The plan summarises the fewest whole chunks that bring the estimate under
// budget (counting the summary at its maximum size).
func TestPlanFewestChunks(t *testing.T) {
	s := agentSession()
	total := estimate(s.System, s.Msgs)
	c := mustConfig(t, `{"budget_tokens":`+strconv.Itoa(total)+`}`)
	if p := makePlan(s.System, s.Msgs, c); p.chunks != 0 || p.total != total {
		t.Fatalf("at budget: %+v", p)
	}
	for _, budget := range []int{total - 1, total * 3 / 4, total / 2, total / 4, 1200} {
		c := mustConfig(t, `{"budget_tokens":`+strconv.Itoa(budget)+`,"chunk_tokens":700,"summary_max_tokens":300}`)
		p := makePlan(s.System, s.Msgs, c)
		if p.chunks == 0 {
			t.Fatalf("budget %d: nothing summarised", budget)
		}
		cost := c.summaryMax + est(len(summaryIntro(len(s.Msgs)))) + messageOverhead
		after := func(j int) int { return estimate(s.System, s.Msgs[p.ends[j-1]:]) + cost }
		if after(p.chunks) > budget && p.chunks < len(p.ends) {
			t.Fatalf("budget %d: %d chunks leave %d tokens, more chunks were possible", budget, p.chunks, after(p.chunks))
		}
		if p.chunks > 1 && after(p.chunks-1) <= budget {
			t.Fatalf("budget %d: %d chunks, but %d were enough", budget, p.chunks, p.chunks-1)
		}
		t.Logf("budget %5d: summarise %d of %d chunks (%d of %d turns): %d → ≤ %d tokens",
			budget, p.chunks, len(p.ends), p.split, len(s.Msgs), total, after(p.chunks))
	}
}

// Chunks depend only on the turns before them: a conversation that grows
// keeps its earlier chunk boundaries and their cache keys.
func TestChunksAndKeysStableAsConversationGrows(t *testing.T) {
	s := agentSession()
	full := s.Msgs
	toks := make([]int, len(full))
	for i := range full {
		toks[i] = messageTokens(&full[i])
	}
	endsFull := chunkEnds(nil, full, toks, 900, len(full))
	if len(endsFull) < 5 {
		t.Fatalf("only %d chunks", len(endsFull))
	}
	plugintest.New(t, `{}`) // plugin.SHA256, natively
	sm := summariser{cfg: mustConfig(t, `{}`), model: "gpt-4o-mini"}
	keysFull := chunkKeys(sm.seed(), full, endsFull, len(endsFull))
	for l := 2; l <= len(full); l++ {
		prefix := clone(full[:l])
		ends := chunkEnds(nil, prefix, toks[:l], 900, l)
		var want []int
		for _, e := range endsFull {
			if e < l {
				want = append(want, e)
			}
		}
		if !slices.Equal(ends, want) {
			t.Fatalf("prefix of %d turns: ends %v, want %v", l, ends, want)
		}
		keys := chunkKeys(sm.seed(), prefix, ends, len(ends))
		if !slices.Equal(keys, keysFull[:len(keys)]) {
			t.Fatalf("prefix of %d turns: keys differ from the full conversation's", l)
		}
	}
}

func clone(msgs []wire.Message) []wire.Message {
	out := make([]wire.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Content = make([]wire.Block, len(m.Content))
		for j, b := range m.Content {
			b.Data = append([]byte(nil), b.Data...)
			b.Text = string(append([]byte(nil), b.Text...))
			out[i].Content[j] = b
		}
	}
	return out
}

func TestKeys(t *testing.T) {
	plugintest.New(t, `{}`)
	s := agentSession()
	toks := make([]int, len(s.Msgs))
	for i := range s.Msgs {
		toks[i] = messageTokens(&s.Msgs[i])
	}
	ends := chunkEnds(nil, s.Msgs, toks, 1500, len(s.Msgs))
	n := len(ends)
	sm := summariser{cfg: mustConfig(t, `{}`), model: "gpt-4o-mini"}
	base := chunkKeys(sm.seed(), s.Msgs, ends, n)
	if again := chunkKeys(sm.seed(), clone(s.Msgs), ends, n); !slices.Equal(again, base) {
		t.Fatal("same turns, different keys")
	}
	distinct := map[[32]byte]bool{}
	for _, k := range base {
		distinct[k] = true
	}
	if len(distinct) != n {
		t.Fatal("two chunks share a key")
	}

	// Which keys change when something changes: from the chunk it is in on.
	inChunk1 := ends[0] // the first turn of the second chunk
	for _, tc := range []struct {
		name    string
		edit    func(m []wire.Message, sm *summariser)
		firstAt int // first key that must change; n = none
	}{
		{"text", func(m []wire.Message, _ *summariser) { m[inChunk1].Content[0].Text += "!" }, 1},
		{"role", func(m []wire.Message, _ *summariser) { m[0].Role = "assistant" }, 0},
		{"tool call id", func(m []wire.Message, _ *summariser) { m[1].Content[1].ID = "toolu_other" }, 0},
		{"error flag", func(m []wire.Message, _ *summariser) {
			for i := range m {
				for j := range m[i].Content {
					m[i].Content[j].IsError = m[i].Content[j].Type == wire.BlockToolResult
				}
			}
		}, 0},
		{"model", func(_ []wire.Message, sm *summariser) { sm.model = "claude-haiku-4-5" }, 0},
		{"instructions", func(_ []wire.Message, sm *summariser) { sm.cfg.instructions += " Be brief." }, 0},
		{"summary size", func(_ []wire.Message, sm *summariser) { sm.cfg.summaryMax = 512 }, 0},
		{"cache_control", func(m []wire.Message, _ *summariser) {
			m[inChunk1].Content[0].CacheControl = []byte(`{"type":"ephemeral"}`)
		}, n},
		{"thinking signature", func(m []wire.Message, _ *summariser) { m[inChunk1].Content[0].Signature = "sig" }, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := clone(s.Msgs)
			sm2 := sm
			tc.edit(m, &sm2)
			got := chunkKeys(sm2.seed(), m, ends, n)
			for k := range n {
				if changed := got[k] != base[k]; changed != (k >= tc.firstAt) {
					t.Fatalf("key %d changed = %v (first change expected at %d)", k, changed, tc.firstAt)
				}
			}
		})
	}
}

func TestConfig(t *testing.T) {
	c := mustConfig(t, `{}`)
	if c.budget != 24000 || c.chunk != 4000 || c.keepRecent != 6 || c.summaryMax != 1024 || c.maxInput != 32000 ||
		c.subsystem != "session_compact" || c.model != "" || c.ttl.Hours() != 24 || c.failClosed || c.instructions != DefaultInstructions {
		t.Fatalf("defaults: %+v", c)
	}
	c = mustConfig(t, `{"budget_tokens":8000,"chunk_tokens":2000,"keep_recent_turns":4,"summary_max_tokens":512,
		"max_summary_input_tokens":9000,"max_block_bytes":2048,"model":"gpt-4o-mini","subsystem":"","instructions":"Sum up.",
		"ttl":"2h","on_summary_error":"fail"}`)
	if c.budget != 8000 || c.chunk != 2000 || c.keepRecent != 4 || c.summaryMax != 512 || c.maxInput != 9000 ||
		c.maxBlockBytes != 2048 || c.model != "gpt-4o-mini" || c.subsystem != "" || c.instructions != "Sum up." ||
		c.ttl.Hours() != 2 || !c.failClosed {
		t.Fatalf("set: %+v", c)
	}
	for _, bad := range []string{
		`{"budget":1}`, // unknown key
		`{"summary_max_tokens":10}`,
		`{"chunk_tokens":1000}`, // not above summary_max_tokens (1024)
		`{"budget_tokens":900}`,
		`{"keep_recent_turns":-1}`,
		`{"max_summary_input_tokens":100}`,
		`{"max_block_bytes":10}`,
		`{"ttl":"soon"}`,
		`{"ttl":"10ms"}`,
		`{"on_summary_error":"retry"}`,
		`{"budget_tokens":"big"}`,
	} {
		if _, err := decodeConfig([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestClip(t *testing.T) {
	if clip("short", 10) != "short" {
		t.Fatal("short text clipped")
	}
	s := strings.Repeat("é", 3000) + "END" // 6003 bytes
	got := clip(s, 1000)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "éé") || !strings.HasSuffix(got, "éEND") || len(got) > 1100 {
		t.Fatalf("clip: %d bytes, valid %v: %q…%q", len(got), utf8.ValidString(got), got[:10], got[len(got)-10:])
	}
	if !strings.Contains(got, "bytes omitted") {
		t.Fatal("no omission marker")
	}
}

func TestRenderTurns(t *testing.T) {
	var b strings.Builder
	renderTurns(&b, []wire.Message{
		userSays("What is ETH worth?"),
		{Role: "assistant", Content: []wire.Block{
			{Type: wire.BlockThinking, Text: "secret scratch work", Signature: "s"},
			{Type: wire.BlockToolUse, ID: "c1", Name: "get_price", Data: []byte(`{"asset":"ETH"}`)},
			{Type: wire.BlockToolUse, ID: "c2", Name: "get_gas", Data: []byte(`{}`)}}},
		{Role: "user", Content: []wire.Block{
			{Type: wire.BlockToolResult, ID: "c2", Text: "timeout", IsError: true},
			{Type: wire.BlockToolResult, ID: "c1", Text: `{"usd":3171.2}`},
			{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"x"}`)}}},
		assistantSays("ETH is 3,171.20 USD."),
	}, 8192)
	want := "User: What is ETH worth?\n" +
		"Assistant called tool get_price: {\"asset\":\"ETH\"}\n" +
		"Assistant called tool get_gas: {}\n" +
		"Error from get_gas: timeout\n" +
		"Result of get_price: {\"usd\":3171.2}\n" +
		"User: [an image]\n" +
		"Assistant: ETH is 3,171.20 USD.\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func sessionRequest(s session) wire.LayerRequest {
	return wire.LayerRequest{
		Meta:    wire.Meta{RequestID: "r1", Tenant: "t", Dialect: wire.DialectAnthropic, Model: "claude-sonnet-4-5"},
		Request: wire.Request{Model: "claude-sonnet-4-5", System: s.System, Messages: s.Msgs, Tools: s.Tools},
	}
}

const smallBudget = `{"budget_tokens":5000,"chunk_tokens":1200,"summary_max_tokens":300,"model":"gpt-4o-mini"}`

func TestUnderBudgetLeavesRequestAlone(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(sessionRequest(agentSession()))
	if res.Patched != 0 || res.Request.Messages != nil || header(res.Headers, HeaderCompress) != StatusSkipped {
		t.Fatalf("patched %b, headers %v", res.Patched, res.Headers)
	}
	if header(res.Headers, HeaderSavedTokens) != "" || h.Metrics[metricSkipped] != 1 || h.Metrics[metricCalls] != 0 {
		t.Fatalf("headers %v, metrics %v", res.Headers, h.Metrics)
	}
}

// The summariser fails (the native host offers no completion service): the
// request goes on unchanged, says so, and counts it.
func TestSummariserFailurePassesRequestUnchanged(t *testing.T) {
	h := plugintest.New(t, smallBudget)
	res := h.OnRequest(sessionRequest(agentSession()))
	if res.Patched != 0 || res.Request.Messages != nil || header(res.Headers, HeaderCompress) != StatusFailed {
		t.Fatalf("patched %b, headers %v", res.Patched, res.Headers)
	}
	if h.Metrics[metricFailed] != 1 || h.Metrics[metricCalls] != 1 || h.Metrics[metricSaved] != 0 {
		t.Fatalf("metrics %v", h.Metrics)
	}
	if len(h.Logs) == 0 || !strings.Contains(h.Logs[0], "passed unchanged") {
		t.Fatalf("logs %q", h.Logs)
	}
}

// With on_summary_error = "fail" the call itself fails, so the pipeline
// entry's on_error decides.
func TestSummariserFailureFailsWhenConfigured(t *testing.T) {
	plugintest.New(t, `{"budget_tokens":5000,"chunk_tokens":1200,"summary_max_tokens":300,"on_summary_error":"fail"}`)
	req := sessionRequest(agentSession())
	var enc wire.Encoder
	wire.EncodeLayerRequest(&enc, &req.Meta, &req.Request, wire.PartAll)
	out := plugin.Call(plugin.OpOnRequest, enc.Bytes())
	if len(out) == 0 || out[0] != plugin.StatusError || !strings.Contains(string(out[1:]), "summarising") {
		t.Fatalf("output %q", out)
	}
}

// A summary already in the store is used without calling the summariser;
// one stored only for an earlier chunk needs a call (which fails here).
func TestStoredSummaryIsUsed(t *testing.T) {
	h := plugintest.New(t, smallBudget)
	s := agentSession()
	c := mustConfig(t, smallBudget)
	p := makePlan(s.System, s.Msgs, c)
	if p.chunks < 2 {
		t.Fatalf("plan %+v", p)
	}
	sm := summariser{cfg: c, model: "gpt-4o-mini"}
	keys := chunkKeys(sm.seed(), s.Msgs, p.ends, p.chunks)

	// Only an earlier chunk's summary: the rest must be folded in.
	h.KVPut(storeKey(keys[p.chunks-2]), encodeEntry("EARLIER"), 0)
	res := h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusFailed || res.Patched != 0 {
		t.Fatalf("headers %v", res.Headers)
	}

	h.KVPut(storeKey(keys[p.chunks-1]), encodeEntry("The owner holds 48.2 WETH on Aave."), 0)
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusCached || res.Patched != wire.PartMessages {
		t.Fatalf("patched %b, headers %v", res.Patched, res.Headers)
	}
	out := res.Request.Messages
	if want := summaryIntro(p.split) + "The owner holds 48.2 WETH on Aave."; out[0].Content[0].Text != want {
		t.Fatalf("first block %q", out[0].Content[0].Text)
	}
	// The kept turns are the caller's, verbatim (the first one after the
	// summary block, when the summary leads it).
	kept := s.Msgs[p.split:]
	if s.Msgs[p.split].Role == "user" {
		first := out[0]
		first.Content = first.Content[1:]
		out = append([]wire.Message{first}, out[1:]...)
	} else {
		out = out[1:]
	}
	if !slices.EqualFunc(out, kept, sameMessage) || len(kept) < 6 {
		t.Fatalf("kept turns differ (%d kept)", len(kept))
	}
	out = res.Request.Messages
	checkAlternates(t, out)
	saved, _ := strconv.Atoi(header(res.Headers, HeaderSavedTokens))
	if want := estimate(s.System, s.Msgs) - estimate(s.System, out); saved != want || saved <= 0 {
		t.Fatalf("saved %d, want %d", saved, want)
	}
	if got, want := header(res.Headers, HeaderTurns), strconv.Itoa(p.split)+"/"+strconv.Itoa(len(s.Msgs)); got != want {
		t.Fatalf("%s = %q, want %q", HeaderTurns, got, want)
	}
	if h.Metrics[metricCached] != 1 || h.Metrics[metricSaved] != float64(saved) || h.Metrics[metricCalls] != 1 {
		t.Fatalf("metrics %v", h.Metrics)
	}

	// A summary that would not shorten anything (a summariser that ignored
	// max_tokens) is not used.
	h.KVPut(storeKey(keys[p.chunks-1]), encodeEntry(strings.Repeat("long ", 40000)), 0)
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusSkipped || res.Patched != 0 {
		t.Fatalf("oversized summary: patched %b, headers %v", res.Patched, res.Headers)
	}

	// An entry this version cannot read is dropped and counted.
	h.KVPut(storeKey(keys[p.chunks-1]), []byte{9, 'x'}, 0)
	h.KVDelete(storeKey(keys[p.chunks-2]))
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusFailed || h.Metrics[metricEntryInvalid] != 1 {
		t.Fatalf("headers %v, metrics %v", res.Headers, h.Metrics)
	}
	if _, ok := h.KVGet(storeKey(keys[p.chunks-1])); ok {
		t.Fatal("unreadable entry kept")
	}
}

func TestDescriptor(t *testing.T) {
	d := plugintest.New(t, `{}`).Describe()
	if d.Phases != wire.PhaseRequest || d.Writes != wire.PartMessages ||
		d.Reads != wire.PartModel|wire.PartSystem|wire.PartMessages {
		t.Fatalf("%+v", d)
	}
}
