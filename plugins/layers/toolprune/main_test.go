//go:build !wasip1

package main

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// catalog returns the 100 tools of testdata/catalog.json (Anthropic shape).
func catalog(t testing.TB) []wire.Tool { return loadTools(t, "testdata/catalog.json") }

// loadTools reads a JSON array of tools in Anthropic's shape.
func loadTools(t testing.TB, path string) []wire.Tool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	tools := make([]wire.Tool, len(raw))
	for i, r := range raw {
		tools[i] = wire.Tool{Name: r.Name, Description: r.Description, Schema: r.InputSchema}
	}
	return tools
}

func text(s string) []wire.Block { return []wire.Block{{Type: wire.BlockText, Text: s}} }

func names(tools []wire.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func header(kvs []wire.KV, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// inOriginalOrder reports whether kept is a subsequence of all.
func inOriginalOrder(kept, all []string) bool {
	j := 0
	for _, n := range all {
		if j < len(kept) && kept[j] == n {
			j++
		}
	}
	return j == len(kept)
}

func agentRequest(tools []wire.Tool, last string) wire.LayerRequest {
	return wire.LayerRequest{
		Meta: wire.Meta{RequestID: "r1", Tenant: "t", Dialect: wire.DialectOpenAI, Model: "gpt-4o"},
		Request: wire.Request{
			Model:  "gpt-4o",
			System: text("You are a careful DeFi operations agent."),
			Tools:  tools,
			Messages: []wire.Message{
				{Role: "user", Content: text("Check my Aave position first.")},
				{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "get_position", Data: []byte(`{"protocol":"aave-v3","asset":"USDC"}`)}}},
				{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "c1", Text: `{"supplied":"125000","borrowed":"41000","health_factor":"1.84"}`}}},
				{Role: "assistant", Content: text("Your health factor is 1.84.")},
				{Role: "user", Content: text(last)},
			},
		},
	}
}

// firstAsk is a session whose first prompt is ask, after which the agent
// read a position and the user said to go on.
func firstAsk(tools []wire.Tool, ask string) wire.LayerRequest {
	req := agentRequest(tools, "Go on.")
	req.Request.Messages[0].Content = text(ask)
	return req
}

func TestUnderThresholdPassesThrough(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := agentRequest(catalog(t)[:16], "Swap 1 ETH to USDC.")
	res := h.OnRequest(req)
	if res.Patched != 0 || res.Request.Tools != nil {
		t.Fatalf("patched %b with %d tools", res.Patched, len(res.Request.Tools))
	}
	if got := header(res.Headers, HeaderTools); got != "16/16" {
		t.Fatalf("%s = %q", HeaderTools, got)
	}
	if header(res.Headers, HeaderSavedTokens) != "" {
		t.Fatal("saved-tokens header without pruning")
	}
	// The header's value is kept for the last count, never reused for
	// another.
	for _, n := range []int{2, 16, 2, 3} {
		req := agentRequest(catalog(t)[:n], "Swap 1 ETH to USDC.")
		if got, want := header(h.OnRequest(req).Headers, HeaderTools), strconv.Itoa(n)+"/"+strconv.Itoa(n); got != want {
			t.Fatalf("%d tools: %s = %q", n, HeaderTools, got)
		}
	}
	// No tools: no header at all.
	req.Request.Tools = nil
	if res := h.OnRequest(req); res.Patched != 0 || len(res.Headers) != 0 {
		t.Fatalf("no tools: %+v", res)
	}
}

// Stability "turn" (the rule before sessions): this turn's question picks
// the tools.
func TestPrunesToRelevantPinnedOriginalOrder(t *testing.T) {
	h := plugintest.New(t, `{"stability": "turn"}`)
	all := catalog(t)
	req := agentRequest(all, "What would I get if I swap 2 ETH for USDC right now? Check the price impact and slippage first.")
	req.Request.ToolChoice = []byte(`{"type":"tool","name":"send_email"}`)
	res := h.OnRequest(req)
	if res.Patched != wire.PartTools {
		t.Fatalf("patched = %b", res.Patched)
	}
	kept := names(res.Request.Tools)
	if len(kept) != 12 {
		t.Fatalf("kept %d tools: %v", len(kept), kept)
	}
	for _, want := range []string{
		"send_email",     // tool_choice
		"get_position",   // called earlier
		"swap_tokens",    // the task
		"get_swap_quote", // the task
		"get_token_price",
	} {
		if !slices.Contains(kept, want) {
			t.Errorf("%s removed; kept %v", want, kept)
		}
	}
	for _, unwanted := range []string{"create_calendar_event", "read_file", "translate_text", "stake_eth"} {
		if slices.Contains(kept, unwanted) {
			t.Errorf("%s kept; kept %v", unwanted, kept)
		}
	}
	if !inOriginalOrder(kept, names(all)) {
		t.Fatalf("not in original order: %v", kept)
	}
	if string(res.Request.ToolChoice) != `{"type":"tool","name":"send_email"}` {
		t.Fatalf("tool_choice lost: %q", res.Request.ToolChoice)
	}
	if got := header(res.Headers, HeaderTools); got != "12/100" {
		t.Fatalf("%s = %q", HeaderTools, got)
	}
	removed := 0
	for _, tl := range all {
		if !slices.Contains(kept, tl.Name) {
			removed += toolBytes(&tl)
		}
	}
	if got := header(res.Headers, HeaderSavedTokens); got != strconv.Itoa(removed/4) {
		t.Fatalf("%s = %q, want %d", HeaderSavedTokens, got, removed/4)
	}
	if h.Metrics[metricPruned] != 1 || h.Metrics[metricRemoved] != 88 || h.Metrics[metricSavedTokens] != float64(removed/4) {
		t.Fatalf("metrics = %v", h.Metrics)
	}
	t.Logf("kept: %v", kept)
}

// Each task-type hint finds its tools from words the tool definitions do not
// share with the question.
func TestHints(t *testing.T) {
	h := plugintest.New(t, `{"max_tools": 5}`)
	all := catalog(t)
	for _, tc := range []struct {
		ask  string
		want []string
	}{
		{"How much is ETH worth?", []string{"get_token_price"}},
		{"Am I at risk of being liquidated on Aave?", []string{"get_liquidation_price", "assess_portfolio_risk"}},
		{"Pay alice 20 USDC.", []string{"send_tokens", "create_payment_request"}},
		{"What do I hold across all wallets?", []string{"get_wallet_balance"}},
		{"Which vault has the best yield for USDC?", []string{"list_yield_opportunities", "get_vault_apy"}},
		{"Ping me on Slack when it is done.", []string{"send_slack_message"}},
	} {
		req := wire.LayerRequest{Request: wire.Request{Tools: all, Messages: []wire.Message{{Role: "user", Content: text(tc.ask)}}}}
		kept := names(h.OnRequest(req).Request.Tools)
		for _, w := range tc.want {
			if !slices.Contains(kept, w) {
				t.Errorf("%q: %s not kept: %v", tc.ask, w, kept)
			}
		}
	}
}

// The last user message outweighs older turns: the same conversation asks
// about lending, then about news.
func TestLastUserMessageWeighsMost(t *testing.T) {
	h := plugintest.New(t, `{"max_tools": 3, "stability": "turn"}`)
	req := wire.LayerRequest{Request: wire.Request{Tools: catalog(t), Messages: []wire.Message{
		{Role: "user", Content: text("Show my borrow rates on Compound.")},
		{Role: "assistant", Content: text("Borrow APY is 4.1% on Compound.")},
		{Role: "user", Content: text("Any crypto news headlines today?")},
	}}}
	kept := names(h.OnRequest(req).Request.Tools)
	if kept[0] != "get_crypto_news" && !slices.Contains(kept, "get_crypto_news") {
		t.Fatalf("kept %v", kept)
	}
	// The last user message that has text counts, not a trailing tool result.
	req.Request.Messages = append(req.Request.Messages,
		wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "x", Name: "web_search", Data: []byte(`{}`)}}},
		wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "x", Text: "[]"}}})
	kept = names(h.OnRequest(req).Request.Tools)
	if !slices.Contains(kept, "get_crypto_news") || !slices.Contains(kept, "web_search") {
		t.Fatalf("kept %v", kept)
	}
}

func TestPinnedBeyondMaxTools(t *testing.T) {
	h := plugintest.New(t, `{"threshold": 3, "max_tools": 2, "always_keep": ["calculate"], "stability": "turn", "min_saved_tokens": 0}`)
	all := catalog(t)[:30]            // holds get_position, which the conversation called
	all = append(all, catalog(t)[99]) // calculate
	req := agentRequest(all, "swap it")
	req.Request.ToolChoice = []byte(`{"type": "tool", "name": "get_token_price", "disable_parallel_tool_use": true}`)
	res := h.OnRequest(req)
	kept := names(res.Request.Tools)
	want := []string{"get_token_price", "get_position", "calculate"}
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v (pinned tools only, in order)", kept, want)
	}
	if got := header(res.Headers, HeaderTools); got != "3/31" {
		t.Fatalf("%s = %q", HeaderTools, got)
	}
	// In a session the first prompt's choice stays and the called and
	// chosen tools are added to it, beyond max_tools.
	h = plugintest.New(t, `{"threshold": 3, "max_tools": 2, "always_keep": ["calculate"], "min_saved_tokens": 0, "grow": "add"}`)
	res = h.OnRequest(req)
	want = []string{"get_token_price", "open_perp_position", "get_position", "calculate"}
	if kept := names(res.Request.Tools); !slices.Equal(kept, want) || header(res.Headers, HeaderReason) != reasonGrown {
		t.Fatalf("session: kept %v (%s), want %v", kept, header(res.Headers, HeaderReason), want)
	}
}

func TestToolChoiceNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{``, nil},
		{`{"type":"auto"}`, nil},
		{`{"type":"any"}`, nil},
		{`{"type":"tool","name":"a"}`, []string{"a"}},
		{`{"name":"b\u0041","type":"tool","disable_parallel_tool_use":true}`, []string{"bA"}},
		{`{"type":"custom","custom":{"name":"c"}}`, []string{"c"}},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"d"}},{"type":"custom","custom":{"name":"e"}}]}}`, []string{"d", "e"}},
		{`{"type":"tool","name":`, nil},
	} {
		if got := toolChoiceNames([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestAllowedToolsArePinned(t *testing.T) {
	h := plugintest.New(t, `{"max_tools": 3}`)
	req := agentRequest(catalog(t), "swap ETH")
	req.Request.ToolChoice = []byte(`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"set_reminder"}},{"type":"function","function":{"name":"recall"}}]}}`)
	kept := names(h.OnRequest(req).Request.Tools)
	for _, w := range []string{"set_reminder", "recall", "get_position"} {
		if !slices.Contains(kept, w) {
			t.Fatalf("%s removed: %v", w, kept)
		}
	}
}

// A prompt-cache breakpoint on a removed tool moves to the nearest kept tool
// before it, so the cached prefix still ends at the tools.
func TestCacheControlMoves(t *testing.T) {
	h := plugintest.New(t, `{"max_tools": 3}`)
	all := catalog(t)
	cc := []byte(`{"type":"ephemeral"}`)
	all[len(all)-1].CacheControl = cc // "calculate", last: usually removed
	req := wire.LayerRequest{Request: wire.Request{Tools: all, Messages: []wire.Message{{Role: "user", Content: text("swap ETH for USDC")}}}}
	res := h.OnRequest(req)
	kept := res.Request.Tools
	if slices.Contains(names(kept), "calculate") {
		t.Fatal("calculate kept; the test needs it removed")
	}
	n := 0
	for i, tl := range kept {
		if tl.CacheControl != nil {
			n++
			if i != len(kept)-1 || string(tl.CacheControl) != string(cc) {
				t.Fatalf("breakpoint on %d (%s): %s", i, tl.Name, tl.CacheControl)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d breakpoints", n)
	}
	// The caller's own definitions are not modified.
	if all[len(all)-2].CacheControl != nil {
		t.Fatal("input tool modified")
	}
}

// The per-instance term cache changes no decision: the same requests give
// the same tools with a cold cache, a warm one, and after a description
// changes.
func TestCacheIsTransparent(t *testing.T) {
	for _, mode := range []string{"session", "turn"} {
		h := plugintest.New(t, `{"stability": "`+mode+`"}`)
		ask := agentRequest // the question last
		if mode == "session" {
			ask = firstAsk // the question first
		}
		all := catalog(t)
		asks := []string{"swap ETH", "news about Aave governance", "what is my health factor", "remind me tomorrow", "read config.yaml"}
		var cold [][]string
		for _, a := range asks {
			resetCaches()
			cold = append(cold, names(h.OnRequest(ask(all, a)).Request.Tools))
		}
		for round := 0; round < 2; round++ {
			for i, a := range asks {
				if got := names(h.OnRequest(ask(all, a)).Request.Tools); !slices.Equal(got, cold[i]) {
					t.Fatalf("%s: warm %q: %v, cold %v", mode, a, got, cold[i])
				}
			}
		}
		changed := slices.Clone(all)
		changed[60].Description = "Look up the zorblax index." // nothing else mentions it
		got := names(h.OnRequest(ask(changed, "zorblax?")).Request.Tools)
		resetCaches()
		want := names(h.OnRequest(ask(changed, "zorblax?")).Request.Tools)
		if !slices.Equal(got, want) || !slices.Contains(got, changed[60].Name) {
			t.Fatalf("%s: after a description change: %v, cold %v", mode, got, want)
		}
	}
}

func TestTokenizer(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"getTokenPrice", "token price"},
		{"get_token_price", "token price"},
		{"HTTPServer v3Pool ERC20Token", "http server v3 pool erc20 token"},
		{"The user’s positions—and addresses…", "user position address"},
		{"no\u00a0break «quoted» 12345 a", "break quoted"},
		{"policies matches boxes prices gas status", "policy match box price gas status"},
		{"Café déjà-vu", "café déjà vu"},
	} {
		var got []string
		var tk tokenizer
		tk.reset(tc.in, 0, len(tc.in), true)
		for {
			term, ok := tk.next()
			if !ok {
				break
			}
			got = append(got, string(term))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, strings.Join(got, " "), tc.want)
		}
	}
	// tokenizer.stop relies on this.
	for w := range stopwords {
		if len(w) >= 5 && (strings.HasSuffix(w, "ies") || strings.HasSuffix(w, "yes")) {
			t.Errorf("stopword %q breaks tokenizer.stop", w)
		}
	}
	// A cut in the middle of a word skips to the next one.
	var tk tokenizer
	s := "liquidation price"
	tk.reset(s, 3, len(s), true)
	if term, _ := tk.next(); string(term) != "price" {
		t.Fatalf("cut: %q", term)
	}
}

func TestConfig(t *testing.T) {
	neg, zero := -1, 0
	for _, raw := range []rawConfig{
		{Threshold: &neg},
		{MaxTools: &zero},
		{RecentMessages: &neg},
		{ExtraHints: []hintConfig{{When: []string{"x"}}}},
	} {
		if _, _, err := parseConfig(&raw); err == nil {
			t.Errorf("%+v accepted", raw)
		}
	}
	bad, tag := "sometimes", []string{"a b"}
	for _, raw := range []rawConfig{{Stability: &bad}, {MinSaved: &neg}, {StripTags: &tag}, {Grow: &bad}} {
		if _, _, err := parseConfig(&raw); err == nil {
			t.Errorf("%+v accepted", raw)
		}
	}
	c, hs, err := parseConfig(&rawConfig{})
	if err != nil || c.threshold != 16 || c.maxTools != 12 || c.recent != 6 || len(hs) != len(defaultHints) ||
		!c.session || !c.keepNamed || !c.growAll || c.minSaved != defaultMinSaved || len(c.alwaysKeep) != len(defaultCoreTools) {
		t.Fatalf("defaults: %+v %d %v", c, len(hs), err)
	}
	// hints replaces the table, extra_hints adds to it.
	h := plugintest.New(t, `{"max_tools": 1, "hints": [], "extra_hints": [{"when": ["weather"], "boost": ["calculate"]}]}`)
	req := wire.LayerRequest{Request: wire.Request{Tools: catalog(t), Messages: []wire.Message{{Role: "user", Content: text("weather?")}}}}
	if kept := names(h.OnRequest(req).Request.Tools); !slices.Equal(kept, []string{"calculate"}) {
		t.Fatalf("extra hint: %v", kept)
	}
	// "hold" only matches tools through the built-in balance hint; without
	// it nothing scores and the first tool fills the one place.
	req.Request.Messages[0].Content = text("what do I hold")
	if kept := names(h.OnRequest(req).Request.Tools); !slices.Equal(kept, []string{"get_token_price"}) {
		t.Fatalf("built-in hints still active with hints = []: %v", kept)
	}
	plugintest.New(t, `{"max_tools": 1}`)
	if kept := names(h.OnRequest(req).Request.Tools); slices.Equal(kept, []string{"get_token_price"}) {
		t.Fatalf("built-in hints inactive by default: %v", kept)
	}
}

// The token reduction on the 100-tool catalog (reported in README.md).
func TestTokenReduction100(t *testing.T) {
	h := plugintest.New(t, `{}`)
	all := catalog(t)
	total := 0
	for i := range all {
		total += toolBytes(&all[i])
	}
	res := h.OnRequest(firstAsk(all, "Is my Aave health factor safe if ETH drops 30%?"))
	saved, _ := strconv.Atoi(header(res.Headers, HeaderSavedTokens))
	pct := 100 * float64(saved) / float64(total/4)
	t.Logf("100 tools ≈ %d tokens of definitions; kept %d, saved ≈ %d tokens (%.1f%%): %v",
		total/4, len(res.Request.Tools), saved, pct, names(res.Request.Tools))
	if pct < 80 {
		t.Fatalf("only %.1f%% saved", pct)
	}
}
