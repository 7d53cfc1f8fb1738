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
				if len(p.ends) == 0 {
					continue
				}
				split := p.split(p.target(s.Msgs, -1, c))
				splits[split] = true
				if !slices.Contains(cuts, split) || split > n-keep || split > n-1 {
					t.Fatalf("budget %d chunk %d keep %d: split %d of %d turns", budget, chunk, keep, split, n)
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
	if len(p.ends) == 0 || p.split(p.target(msgs, -1, c)) > 2 {
		t.Fatalf("plan %+v", p)
	}
	// A conversation that is one question and its agent loop has nothing
	// that may be summarised.
	if p := makePlan(nil, msgs[2:], c); len(p.ends) != 0 {
		t.Fatalf("summarised the question being answered: %+v", p)
	}
	// No user turn at all: nothing.
	if got := protectFrom([]wire.Message{assistantSays("x")}, 0); got != 0 {
		t.Fatalf("protectFrom without user turns = %d", got)
	}
}

// A fold takes the fewest whole chunks that bring the estimate (counting
// the summary at its maximum size) down to target_tokens — or every chunk it
// may when that is not enough — and folds on from a stored summary.
func TestPlanTarget(t *testing.T) {
	s := agentSession()
	total := estimate(s.System, s.Msgs)
	c := mustConfig(t, `{"budget_tokens":`+strconv.Itoa(total)+`}`)
	if p := makePlan(s.System, s.Msgs, c); len(p.ends) != 0 || p.total != total {
		t.Fatalf("at budget: %+v", p)
	}
	for _, target := range []int{total - 1, total * 3 / 4, total / 2, total / 4, 1200} {
		c := mustConfig(t, `{"budget_tokens":`+strconv.Itoa(total-1)+`,"target_tokens":`+strconv.Itoa(target)+`,"chunk_tokens":700,"summary_max_tokens":300}`)
		p := makePlan(s.System, s.Msgs, c)
		k := p.target(s.Msgs, -1, c)
		if k == 0 {
			t.Fatalf("target %d: nothing summarised", target)
		}
		after := func(j int) int { return p.size(s.Msgs, j, 4*c.summaryMax) }
		if after(k) > target && k < len(p.ends) {
			t.Fatalf("target %d: %d chunks leave %d tokens, more chunks were possible", target, k, after(k))
		}
		if k > 1 && after(k-1) <= target {
			t.Fatalf("target %d: %d chunks, but %d were enough", target, k, k-1)
		}
		// The size estimate is the estimate of the conversation the fold
		// sends (the summary at its maximum).
		if got := estimate(s.System, apply(s.Msgs, p.split(k), strings.Repeat("s", 4*c.summaryMax))); got != after(k) {
			t.Fatalf("target %d: size %d, estimate of the folded request %d", target, after(k), got)
		}
		// From a stored summary of the first chunks, at least one more.
		if k2 := p.target(s.Msgs, k-1, c); k2 != min(k+1, len(p.ends)) {
			t.Fatalf("target %d: from %d stored chunks, fold to %d", target, k, k2)
		}
		t.Logf("target %5d: summarise %d of %d chunks (%d of %d turns): %d → ≤ %d tokens",
			target, k, len(p.ends), p.split(k), len(s.Msgs), total, after(k))
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
		c.subsystem != "session_compact" || c.model != "" || c.ttl.Hours() != 24 || c.failClosed || c.instructions != DefaultInstructions ||
		c.target != 12000 || c.limit != 100000 || c.horizon != 20 ||
		c.price != (prices{cacheRead: 0.1, cacheWrite: 1.25, summaryInput: 1, summaryOutput: 5}) {
		t.Fatalf("defaults: %+v", c)
	}
	// Prices by the caller's model: the first matching entry, laid over
	// the top-level prices.
	c = mustConfig(t, `{"summary_output_price":4.5,"prices":[
		{"models":["gpt-4o-mini*","gpt-4o"],"cache_read_price":0.5,"cache_write_price":1,"summary_output_price":4},
		{"models":["gpt-*"],"cache_read_price":0.25}]}`)
	for model, want := range map[string]prices{
		"gpt-4o":            {cacheRead: 0.5, cacheWrite: 1, summaryInput: 1, summaryOutput: 4},
		"gpt-4o-mini":       {cacheRead: 0.5, cacheWrite: 1, summaryInput: 1, summaryOutput: 4},
		"gpt-4.1":           {cacheRead: 0.25, cacheWrite: 1.25, summaryInput: 1, summaryOutput: 4.5},
		"claude-sonnet-4-5": {cacheRead: 0.1, cacheWrite: 1.25, summaryInput: 1, summaryOutput: 4.5},
		"":                  {cacheRead: 0.1, cacheWrite: 1.25, summaryInput: 1, summaryOutput: 4.5},
	} {
		if got := c.pricesFor(model); got != want {
			t.Errorf("prices for %q: %+v, want %+v", model, got, want)
		}
	}
	// The target and the limit follow the budget unless set.
	if c := mustConfig(t, `{"budget_tokens":150000}`); c.target != 75000 || c.limit != 150000 {
		t.Fatalf("target %d, limit %d", c.target, c.limit)
	}
	c = mustConfig(t, `{"target_tokens":20000,"limit_tokens":60000,"horizon_requests":5,"cache_read_price":0.5,
		"cache_write_price":1,"summary_input_price":0.06,"summary_output_price":0.24}`)
	if c.target != 20000 || c.limit != 60000 || c.horizon != 5 ||
		c.price != (prices{cacheRead: 0.5, cacheWrite: 1, summaryInput: 0.06, summaryOutput: 0.24}) {
		t.Fatalf("prices: %+v", c)
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
		`{"target_tokens":0}`,
		`{"target_tokens":30000}`, // above budget_tokens
		`{"limit_tokens":20000}`,  // below budget_tokens
		`{"horizon_requests":-1}`,
		`{"cache_read_price":0}`,
		`{"cache_read_price":1.5}`,
		`{"cache_write_price":0.5}`,
		`{"summary_input_price":-1}`,
		`{"summary_output_price":-1}`,
		`{"prices":[{"models":[],"cache_read_price":0.5}]}`,
		`{"prices":[{"models":["gpt-["],"cache_read_price":0.5}]}`,
		`{"prices":[{"models":["gpt-4o*"],"cache_read_price":2}]}`,
		`{"prices":[{"models":["gpt-4o*"],"cache_reads":0.5}]}`,
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

// smallBudget scales the layer to the session (a fifth of the default
// budget) and prices it as the test's upstreams bill: no prompt cache (the
// plain fake upstream has none, so a cached prompt token costs what any
// does), a gpt-4o-mini summariser for a claude-sonnet-4-5 caller (0.15 and
// 0.60 USD per million tokens against 3 input: 0.05 and 0.2).
const smallBudget = `{"budget_tokens":5000,"target_tokens":4000,"chunk_tokens":1200,"summary_max_tokens":300,"model":"gpt-4o-mini",` + noCachePrices + `}`

const noCachePrices = `"cache_read_price":1,"cache_write_price":1,"summary_input_price":0.05,"summary_output_price":0.2`

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
	plugintest.New(t, `{"budget_tokens":5000,"chunk_tokens":1200,"summary_max_tokens":300,"on_summary_error":"fail",`+noCachePrices+`}`)
	req := sessionRequest(agentSession())
	var enc wire.Encoder
	wire.EncodeLayerRequest(&enc, &req.Meta, &req.Request, wire.PartAll)
	out := plugin.Call(plugin.OpOnRequest, enc.Bytes())
	if len(out) == 0 || out[0] != plugin.StatusError || !strings.Contains(string(out[1:]), "summarising") {
		t.Fatalf("output %q", out)
	}
}

// A summary already in the store is used without calling the summariser —
// the newest one, so a conversation's prefix stays what the provider cached;
// one that still leaves the request over budget needs a further fold (a
// call, which fails here).
func TestStoredSummaryIsUsed(t *testing.T) {
	h := plugintest.New(t, smallBudget)
	s := agentSession()
	c := mustConfig(t, smallBudget)
	p := makePlan(s.System, s.Msgs, c)
	k := p.target(s.Msgs, -1, c)
	if k < 2 || k == len(p.ends) {
		t.Fatalf("plan %+v: fold %d chunks", p, k)
	}
	split := p.split(k)
	sm := summariser{cfg: c, model: "gpt-4o-mini"}
	keys := chunkKeys(sm.seed(), s.Msgs, p.ends, len(p.ends))

	// Only the first chunk's summary: still over budget, the next chunks
	// must be folded in. The summariser fails, so the request goes on with
	// the summary it had (the prefix the provider cached), not the full
	// history.
	h.KVPut(storeKey(keys[0]), encodeEntry("EARLIER"), 0)
	res := h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusCached || header(res.Headers, HeaderTurns) != strconv.Itoa(p.ends[0])+"/"+strconv.Itoa(len(s.Msgs)) ||
		h.Metrics[metricCalls] != 1 || h.Metrics[metricFailed] != 1 {
		t.Fatalf("headers %v, metrics %v", res.Headers, h.Metrics)
	}
	if !strings.HasSuffix(res.Request.Messages[0].Content[0].Text, "EARLIER") {
		t.Fatalf("first block %q", res.Request.Messages[0].Content[0].Text)
	}
	h.Metrics = map[string]float64{}

	h.KVPut(storeKey(keys[k-1]), encodeEntry("The owner holds 48.2 WETH on Aave."), 0)
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusCached || res.Patched != wire.PartMessages ||
		header(res.Headers, HeaderReason) != ReasonStored {
		t.Fatalf("patched %b, headers %v", res.Patched, res.Headers)
	}
	out := res.Request.Messages
	if want := summaryIntro(split) + "The owner holds 48.2 WETH on Aave."; out[0].Content[0].Text != want {
		t.Fatalf("first block %q", out[0].Content[0].Text)
	}
	// The kept turns are the caller's, verbatim (the first one after the
	// summary block, when the summary leads it).
	kept := s.Msgs[split:]
	if s.Msgs[split].Role == "user" {
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
	if got, want := header(res.Headers, HeaderTurns), strconv.Itoa(split)+"/"+strconv.Itoa(len(s.Msgs)); got != want {
		t.Fatalf("%s = %q, want %q", HeaderTurns, got, want)
	}
	if h.Metrics[metricCached] != 1 || h.Metrics[metricSaved] != float64(saved) || h.Metrics[metricCalls] != 0 {
		t.Fatalf("metrics %v", h.Metrics)
	}

	// A summary of more chunks than a fold would take now (written when
	// the conversation was folded deeper) is the newest, and is used.
	last := len(p.ends) - 1
	h.KVPut(storeKey(keys[last]), encodeEntry("NEWEST"), 0)
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusCached ||
		header(res.Headers, HeaderTurns) != strconv.Itoa(p.ends[last])+"/"+strconv.Itoa(len(s.Msgs)) {
		t.Fatalf("headers %v", res.Headers)
	}

	// A summary that would not shorten anything (a summariser that ignored
	// max_tokens) is not used.
	h.KVPut(storeKey(keys[last]), encodeEntry(strings.Repeat("long ", 40000)), 0)
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusSkipped || res.Patched != 0 || header(res.Headers, HeaderReason) != ReasonNoGain {
		t.Fatalf("oversized summary: patched %b, headers %v", res.Patched, res.Headers)
	}

	// An entry this version cannot read is dropped and counted; the older
	// ones are found.
	h.KVPut(storeKey(keys[last]), []byte{9, 'x'}, 0)
	res = h.OnRequest(sessionRequest(s))
	if header(res.Headers, HeaderCompress) != StatusCached || h.Metrics[metricEntryInvalid] != 1 ||
		header(res.Headers, HeaderTurns) != strconv.Itoa(split)+"/"+strconv.Itoa(len(s.Msgs)) {
		t.Fatalf("headers %v, metrics %v", res.Headers, h.Metrics)
	}
	if _, ok := h.KVGet(storeKey(keys[last])); ok {
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
