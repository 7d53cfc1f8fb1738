//go:build !wasip1

package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

const eph = `{"type":"ephemeral"}`

func text(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

func user(bs ...wire.Block) wire.Message      { return wire.Message{Role: "user", Content: bs} }
func assistant(bs ...wire.Block) wire.Message { return wire.Message{Role: "assistant", Content: bs} }

// longSystem is about 1,500 estimated tokens.
var longSystem = strings.Repeat("You are a careful DeFi operations agent. Never trade without confirmation. ", 80)

func anthropicRequest() wire.Request {
	return wire.Request{
		Model:  "claude-sonnet-4-5",
		System: []wire.Block{text("Identity: treasury agent."), text(longSystem)},
		Tools: []wire.Tool{
			{Name: "get_price", Description: "Spot price.", Schema: []byte(`{"type":"object"}`)},
			{Name: "get_balance", Description: "A balance.", Schema: []byte(`{"type":"object"}`)},
		},
		Messages: []wire.Message{user(text("What is my balance?"))},
	}
}

var anthropicMeta = wire.Meta{RequestID: "r", Tenant: "t", Dialect: wire.DialectAnthropic, Model: "claude-sonnet-4-5"}

func header(kvs []wire.KV, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

func marks(r *wire.Request) (n int) {
	return countMarks(r.System, r.Tools, r.Messages)
}

func TestBreakpointsAtTheBoundary(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: anthropicRequest()})
	if res.Patched != wire.PartSystem|wire.PartTools {
		t.Fatalf("patched %b", res.Patched)
	}
	r := res.Request
	if r.Tools[0].Name != "get_balance" || r.Tools[1].Name != "get_price" {
		t.Fatalf("tools not in name order: %s, %s", r.Tools[0].Name, r.Tools[1].Name)
	}
	if r.Tools[0].CacheControl != nil || string(r.Tools[1].CacheControl) != eph {
		t.Fatalf("tool breakpoints: %q %q", r.Tools[0].CacheControl, r.Tools[1].CacheControl)
	}
	if r.System[0].CacheControl != nil || string(r.System[1].CacheControl) != eph || r.System[1].Text != longSystem {
		t.Fatalf("system breakpoints: %+v", r.System)
	}
	if header(res.Headers, HeaderBreakpoints) != "2" || h.Metrics[metricBreakpoints] != 2 || h.Metrics[metricToolsReordered] != 1 {
		t.Fatalf("headers %+v metrics %v", res.Headers, h.Metrics)
	}
	bytesN, _ := strconv.Atoi(header(res.Headers, HeaderPrefixBytes))
	tokens, _ := strconv.Atoi(header(res.Headers, HeaderPrefixTokens))
	if bytesN < len(longSystem) || tokens != bytesN/4 {
		t.Fatalf("prefix %d bytes, %d tokens", bytesN, tokens)
	}
	if len(header(res.Annotations, AnnotationPrefixHash)) != 32 || header(res.Annotations, AnnotationPrefixTokens) != strconv.Itoa(tokens) {
		t.Fatalf("annotations %+v", res.Annotations)
	}
}

func TestCallerBreakpointsKept(t *testing.T) {
	h := plugintest.New(t, `{}`)
	// Four of the caller's own: none added, nothing moved, nothing patched
	// (the caller's bytes pass through).
	req := anthropicRequest()
	req.System[0].CacheControl = []byte(eph)
	req.System[1].CacheControl = []byte(`{"type":"ephemeral","ttl":"1h"}`)
	req.Tools[0].CacheControl = []byte(eph) // tools out of name order, but marked: kept as they are
	req.Messages = []wire.Message{user(text("a")), assistant(text("b")), user(wire.Block{Type: wire.BlockText, Text: "c", CacheControl: []byte(eph)})}
	res := h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	if res.Patched != 0 || header(res.Headers, HeaderBreakpoints) != "0" {
		t.Fatalf("patched %b, headers %+v", res.Patched, res.Headers)
	}

	// Three of the caller's: one added, on the system boundary first.
	req = anthropicRequest()
	req.Tools[1].CacheControl = []byte(eph)
	req.System[0].CacheControl = []byte(eph)
	req.Messages = []wire.Message{user(wire.Block{Type: wire.BlockText, Text: "c", CacheControl: []byte(eph)})}
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	r := res.Request
	if res.Patched != wire.PartSystem || string(r.System[1].CacheControl) != eph || string(r.System[0].CacheControl) != eph {
		t.Fatalf("patched %b, system %+v", res.Patched, r.System)
	}

	// The caller marked the last system block: not marked twice; the tool
	// breakpoint is still added.
	req = anthropicRequest()
	req.System[1].CacheControl = []byte(`{"type":"ephemeral","ttl":"1h"}`)
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	r = res.Request
	if res.Patched != wire.PartTools || string(r.Tools[1].CacheControl) != eph || r.Tools[0].CacheControl != nil {
		t.Fatalf("patched %b, tools %+v", res.Patched, r.Tools)
	}
}

func TestTurnBreakpoint(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := anthropicRequest()
	req.Messages = []wire.Message{
		user(text("What is my balance?")),
		assistant(wire.Block{Type: wire.BlockThinking, Text: "hmm", Signature: "s"}, text("Let me look."),
			wire.Block{Type: wire.BlockToolUse, ID: "t1", Name: "get_balance", Data: []byte(`{}`)}),
		user(wire.Block{Type: wire.BlockToolResult, ID: "t1", Text: "100 USDC"}),
		assistant(wire.Block{Type: wire.BlockThinking, Text: "so"}, text("You hold 100 USDC.")),
		user(text("And in ETH?")),
	}
	res := h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	if res.Patched != wire.PartSystem|wire.PartTools|wire.PartMessages || header(res.Headers, HeaderBreakpoints) != "3" {
		t.Fatalf("patched %b, headers %+v", res.Patched, res.Headers)
	}
	m := res.Request.Messages
	if string(m[3].Content[1].CacheControl) != eph || m[3].Content[0].CacheControl != nil || m[4].Content[0].CacheControl != nil {
		t.Fatalf("turn breakpoint: %+v", m)
	}
	if got := marks(&res.Request); got != 3 {
		t.Fatalf("%d marks", got)
	}

	// A turn whose last block is thinking: the text before it is marked.
	req.Messages[3] = assistant(text("You hold 100 USDC."), wire.Block{Type: wire.BlockThinking, Text: "done"})
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	if string(res.Request.Messages[3].Content[0].CacheControl) != eph {
		t.Fatalf("turn breakpoint: %+v", res.Request.Messages[3])
	}

	// cache_turns = false: static breakpoints only.
	h = plugintest.New(t, `{"cache_turns":false}`)
	req.Messages[3] = assistant(text("You hold 100 USDC."))
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	if res.Patched&wire.PartMessages != 0 {
		t.Fatal("messages patched with cache_turns = false")
	}
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		config  string
		dialect wire.Dialect
		model   string
		marks   bool
	}{
		{`{}`, wire.DialectAnthropic, "claude-sonnet-4-5", true},
		{`{}`, wire.DialectAnthropic, "gpt-4o", true}, // the caller speaks Anthropic
		{`{}`, wire.DialectOpenAI, "claude-haiku-4-5", true},
		{`{}`, wire.DialectOpenAI, "anthropic/claude-3.5-sonnet", true},
		{`{}`, wire.DialectOpenAI, "gpt-4o", false},
		{`{"target":"anthropic"}`, wire.DialectOpenAI, "gpt-4o", true},
		{`{"target":"openai"}`, wire.DialectAnthropic, "claude-sonnet-4-5", false},
	} {
		h := plugintest.New(t, tc.config)
		req := anthropicRequest()
		req.Model = tc.model
		res := h.OnRequest(wire.LayerRequest{Meta: wire.Meta{Dialect: tc.dialect, Model: tc.model}, Request: req})
		got := res.Patched&wire.PartSystem != 0
		if got != tc.marks {
			t.Errorf("%s %s %s: breakpoints %v, want %v", tc.config, tc.dialect, tc.model, got, tc.marks)
		}
		// The tools are put in order either way.
		if res.Patched&wire.PartTools == 0 || res.Request.Tools[0].Name != "get_balance" {
			t.Errorf("%s %s %s: tools not sorted", tc.config, tc.dialect, tc.model)
		}
	}
}

func TestNothingNeeded(t *testing.T) {
	h := plugintest.New(t, `{}`)
	// OpenAI, tools in order: nothing to do.
	req := anthropicRequest()
	req.Model = "gpt-4o"
	req.Tools[0], req.Tools[1] = req.Tools[1], req.Tools[0]
	res := h.OnRequest(wire.LayerRequest{Meta: wire.Meta{Dialect: wire.DialectOpenAI, Model: "gpt-4o"}, Request: req})
	if res.Patched != 0 || header(res.Headers, HeaderPrefixMatch) != "miss" {
		t.Fatalf("patched %b, headers %+v", res.Patched, res.Headers)
	}
	// Anthropic, a prefix under min_prefix_tokens: no breakpoints.
	req = anthropicRequest()
	req.System = []wire.Block{text("Be brief.")}
	req.Tools = req.Tools[1:]
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	if res.Patched != 0 || header(res.Headers, HeaderBreakpoints) != "0" {
		t.Fatalf("short prefix: patched %b", res.Patched)
	}
	// With min_prefix_tokens = 0 the same request gets them.
	h = plugintest.New(t, `{"min_prefix_tokens":0}`)
	if res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req}); res.Patched != wire.PartSystem|wire.PartTools {
		t.Fatalf("min_prefix_tokens = 0: patched %b", res.Patched)
	}
	// No system, no tools, one message: nothing.
	req = wire.Request{Model: "claude-x", Messages: []wire.Message{user(text("hi"))}}
	if res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req}); res.Patched != 0 || header(res.Headers, HeaderPrefixTokens) != "0" {
		t.Fatalf("empty prefix: patched %b, headers %+v", res.Patched, res.Headers)
	}
}

func TestVolatileSystemBlocks(t *testing.T) {
	req := anthropicRequest()
	req.System = []wire.Block{text(longSystem), text("Current time: 2025-06-01T12:00:00Z. Run 123e4567-e89b-12d3-a456-426614174000."), text("Rules: be brief.")}

	// Default: nothing moves; the breakpoint goes before the volatile block.
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	s := res.Request.System
	if string(s[0].CacheControl) != eph || s[1].CacheControl != nil || s[2].CacheControl != nil || s[1].Text != req.System[1].Text {
		t.Fatalf("system %+v", s)
	}
	hash := header(res.Annotations, AnnotationPrefixHash)
	// Another time stamp: the same stable prefix.
	req2 := anthropicRequest()
	req2.System = []wire.Block{req.System[0], text("Current time: 2025-06-02T09:30:00Z."), req.System[2]}
	if header(h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req2}).Annotations, AnnotationPrefixHash) != hash {
		t.Fatal("a new time stamp changed the stable prefix")
	}

	// move_volatile_system: the volatile block goes last, the breakpoint on
	// the last stable block.
	h = plugintest.New(t, `{"move_volatile_system":true}`)
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	s = res.Request.System
	if len(s) != 3 || s[0].Text != longSystem || s[1].Text != "Rules: be brief." || !strings.HasPrefix(s[2].Text, "Current time") ||
		string(s[1].CacheControl) != eph || s[0].CacheControl != nil || s[2].CacheControl != nil || h.Metrics[metricSystemMoved] != 1 {
		t.Fatalf("moved system %+v", s)
	}
	// ... unless the caller placed breakpoints in the system prompt.
	req.System[0].CacheControl = []byte(eph)
	res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: req})
	if s = res.Request.System; res.Patched&wire.PartSystem != 0 {
		t.Fatalf("moved a marked system prompt: %+v", s)
	}
}

func TestPromptCacheKey(t *testing.T) {
	h := plugintest.New(t, `{"prompt_cache_key":true}`)
	req := anthropicRequest()
	req.Model = "gpt-4o"
	req.Extra = []byte(`{"user":"u1", "n":1}`)
	meta := wire.Meta{Dialect: wire.DialectOpenAI, Model: "gpt-4o"}
	res := h.OnRequest(wire.LayerRequest{Meta: meta, Request: req})
	if res.Patched&wire.PartExtra == 0 {
		t.Fatalf("patched %b", res.Patched)
	}
	var extra map[string]any
	if err := json.Unmarshal(res.Request.Extra, &extra); err != nil {
		t.Fatalf("extra %s: %v", res.Request.Extra, err)
	}
	key, _ := extra["prompt_cache_key"].(string)
	if !strings.HasPrefix(key, "bardo-"+header(res.Annotations, AnnotationPrefixHash)[:24]) || extra["user"] != "u1" || extra["n"] != 1.0 {
		t.Fatalf("extra %s", res.Request.Extra)
	}
	// The caller's own key wins.
	req.Extra = []byte(`{"prompt_cache_key":"mine"}`)
	if res = h.OnRequest(wire.LayerRequest{Meta: meta, Request: req}); res.Patched&wire.PartExtra != 0 {
		t.Fatalf("overrode the caller's key: %s", res.Request.Extra)
	}
	// Never for Anthropic.
	if res = h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: anthropicRequest()}); res.Patched&wire.PartExtra != 0 {
		t.Fatal("prompt_cache_key sent to Anthropic")
	}
}

func TestWithMember(t *testing.T) {
	for in, want := range map[string]string{
		``:                `{"k":"v"}`,
		`{}`:              `{"k":"v"}`,
		` { } `:           ` {"k":"v" } `,
		`{"a":1}`:         `{"k":"v","a":1}`,
		"{\n \"a\": [1]}": "{\"k\":\"v\",\n \"a\": [1]}",
	} {
		got := string(withMember([]byte(in), "k", "v"))
		if got != want {
			t.Errorf("withMember(%q) = %q, want %q", in, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("withMember(%q) = %q: invalid JSON", in, got)
		}
	}
	obj := []byte(`{"a":{"prompt_cache_key":1},"b":"prompt_cache_key","c\"":[{"x":"}"}],"prompt_cache_key":null}`)
	if !jsonscan.HasMember(obj, "prompt_cache_key") {
		t.Fatal("hasMember missed the last member")
	}
	if jsonscan.HasMember([]byte(`{"a":{"prompt_cache_key":1},"b":"prompt_cache_key"}`), "prompt_cache_key") {
		t.Fatal("hasMember matched a nested key or a value")
	}
}

func TestPrefixMatch(t *testing.T) {
	h := plugintest.New(t, `{}`)
	now := time.Unix(1_700_000_000, 0)
	h.Clock = func() time.Time { return now }
	ask := func(session, system string) string {
		req := anthropicRequest()
		req.System[1].Text = system
		meta := anthropicMeta
		meta.Session = session
		return header(h.OnRequest(wire.LayerRequest{Meta: meta, Request: req}).Headers, HeaderPrefixMatch)
	}
	steps := []struct{ session, system, want string }{
		{"s1", longSystem, "miss"},
		{"s1", longSystem, "hit"},
		{"s2", longSystem, "miss"}, // another session
		{"s1", "changed " + longSystem, "miss"},
		{"s1", "changed " + longSystem, "hit"},
		{"s1", longSystem, "miss"}, // only the previous request counts
		{"", "sessionless " + longSystem, "miss"},
		{"", "sessionless " + longSystem, "hit"}, // without a session, the prefix itself
		{strings.Repeat("long-session-", 30), longSystem, "miss"},
		{strings.Repeat("long-session-", 30), longSystem, "hit"},
	}
	for i, s := range steps {
		if got := ask(s.session, s.system); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
	}
	if h.Metrics[metricPrefixHits] != 4 || h.Metrics[metricPrefixMisses] != 6 {
		t.Fatalf("metrics %v", h.Metrics)
	}
	// The remembered prefix expires after affinity_ttl without requests.
	now = now.Add(299 * time.Second)
	if got := ask("s1", longSystem); got != "hit" {
		t.Fatalf("within the TTL: %s", got)
	}
	now = now.Add(300 * time.Second)
	if got := ask("s1", longSystem); got != "miss" {
		t.Fatalf("after the TTL: %s", got)
	}
}

func TestCacheTTL(t *testing.T) {
	h := plugintest.New(t, `{"cache_ttl":"1h"}`)
	res := h.OnRequest(wire.LayerRequest{Meta: anthropicMeta, Request: anthropicRequest()})
	if string(res.Request.System[1].CacheControl) != `{"type":"ephemeral","ttl":"1h"}` {
		t.Fatalf("cache_control %s", res.Request.System[1].CacheControl)
	}
}

type cfgHost struct {
	*plugintest.Host
	cfg string
}

func (c cfgHost) Config() []byte { return []byte(c.cfg) }

func TestConfigErrors(t *testing.T) {
	h := plugintest.New(t, `{}`)
	for _, bad := range []string{
		`{"target":"gemini"}`,
		`{"cache_ttl":"10m"}`,
		`{"min_prefix_tokens":-1}`,
		`{"affinity_ttl":"5"}`,
		`{"affinity_ttl":"10ms"}`,
		`{"prompt_cache_key":"yes"}`,
		`{"sort_tool":false}`,
	} {
		plugin.SetHost(cfgHost{h, bad})
		if out := plugin.Call(plugin.OpInit, nil); len(out) == 0 || out[0] != plugin.StatusError {
			t.Errorf("config %s accepted", bad)
		}
	}
	plugin.SetHost(cfgHost{h, `{"target":"auto","sort_tools":false,"cache_turns":false,"move_volatile_system":true,` +
		`"min_prefix_tokens":0,"cache_ttl":"5m","prompt_cache_key":true,"affinity_ttl":"10m"}`})
	if out := plugin.Call(plugin.OpInit, nil); len(out) == 0 || out[0] == plugin.StatusError {
		t.Fatalf("full config refused: %s", out)
	}
	if cfg.sortTools || cfg.cacheTurns || !cfg.moveVolatile || cfg.minPrefixTokens != 0 || !cfg.promptCacheKey || cfg.affinityTTL != 10*time.Minute {
		t.Fatalf("cfg %+v", cfg)
	}
}

// A request whose prefix the memo knows allocates only the previous sum's
// copy that KVGet returns: the headers, annotations and the session's key
// live in kept buffers (inside wasm each allocation costs about a
// microsecond). Called natively, without the SDK's decoding; the test
// host's kv store and metrics allocate of their own.
func TestRequestAllocates(t *testing.T) {
	h := plugintest.New(t, `{}`)
	in := wire.LayerRequest{Meta: anthropicMeta, Request: anthropicRequest()}
	in.Meta.Dialect, in.Meta.Session = wire.DialectOpenAI, "agent-7"
	in.Meta.Model, in.Request.Model = "gpt-4o", "gpt-4o"
	slices.Reverse(in.Request.Tools) // in name order: nothing to change
	h.OnRequest(in)
	var res wire.LayerResult
	allocs := testing.AllocsPerRun(50, func() {
		res = wire.LayerResult{}
		if err := onRequest(&in, &res); err != nil {
			t.Fatal(err)
		}
	})
	if header(res.Headers, HeaderPrefixMatch) != "hit" || res.Patched != 0 {
		t.Fatalf("%+v", res)
	}
	sum := []byte("0123456789abcdef")
	host := testing.AllocsPerRun(50, func() {
		plugin.KVGet("s:agent-7")
		if err := plugin.KVPut("s:agent-7", sum, time.Minute); err != nil {
			t.Fatal(err)
		}
		plugin.CounterAdd(metricPrefixHits, 1)
	})
	if allocs > host {
		t.Fatalf("%v allocations, the host's %v", allocs, host)
	}
}
