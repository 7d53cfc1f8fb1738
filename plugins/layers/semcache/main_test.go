package main

import (
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

func text(role, s string) wire.Message {
	return wire.Message{Role: role, Content: []wire.Block{{Type: wire.BlockText, Text: s}}}
}

func TestCacheText(t *testing.T) {
	r := wire.Request{
		System: []wire.Block{{Type: wire.BlockText, Text: "You are a DeFi analyst."}},
		Messages: []wire.Message{
			text("user", "first question"),
			text("assistant", "an answer"),
			text("user", "second question"),
			text("assistant", "another answer"),
			text("user", "third question"),
		},
	}
	got := cacheText(&r)
	want := "You are a DeFi analyst.\n---\nthird question\nsecond question\n"
	if got != want {
		t.Fatalf("cacheText = %q, want %q", got, want)
	}
	// Assistant turns never count, and the first question is past the window.
	if strings.Contains(got, "answer") || strings.Contains(got, "first") {
		t.Fatalf("cacheText kept text it must not: %q", got)
	}
}

func TestLookupable(t *testing.T) {
	toolTail := wire.Request{Messages: []wire.Message{
		text("user", "what is the price of ETH?"),
		{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "t1", Name: "price"}}},
		{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "t1", Text: "3100"}}},
	}}
	for _, c := range []struct {
		name string
		r    wire.Request
		want bool
	}{
		{"question", wire.Request{Messages: []wire.Message{text("user", "hello there")}}, true},
		{"tool result tail", toolTail, false},
		{"assistant tail", wire.Request{Messages: []wire.Message{text("user", "q"), text("assistant", "prefill")}}, false},
		{"blank", wire.Request{Messages: []wire.Message{text("user", "   ")}}, false},
		{"empty", wire.Request{}, false},
	} {
		if got := lookupable(&c.r); got != c.want {
			t.Errorf("%s: lookupable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSignatureSeparatesNearMisses(t *testing.T) {
	differ := [][2]string{
		{"Supply 500 USDC to Morpho on Base.", "Supply 500 USDC to Aave on Base."},
		{"How do I enable 2FA on my account?", "How do I disable 2FA on my account?"},
		{"Buy 100 ETH at market.", "Buy 1000 ETH at market."},
		{"Open a long position on BTC.", "Open a short position on BTC."},
		{"Bridge 2 ETH from Base to Arbitrum.", "Bridge 2 ETH from Base to Optimism."},
		{"Should I stake my tokens?", "Should I not stake my tokens?"},
		{"Send it to 0x52908400098527886E0F7030069857D2E4169EE7.", "Send it to 0x8617E340B3D01FA5F11F306F4090FD50E238070D."},
	}
	for _, d := range differ {
		if agree(words(d[0]), words(d[1])) {
			t.Errorf("%q and %q agree (salient %q / %q)", d[0], d[1], words(d[0]).salient, words(d[1]).salient)
		}
	}
	same := [][2]string{
		{"What is the capital of France?", "what's the capital city of france?"},
		{"Explain how Uniswap works.", "Can you explain how Uniswap works?"},
		{"Summarize the latest ETH news", "Give me a summary of the latest ETH news"},
		{"What does impermanent loss mean?", "Please explain what impermanent loss means."},
	}
	for _, s := range same {
		if !agree(words(s[0]), words(s[1])) {
			t.Errorf("paraphrases %q / %q disagree (salient %q / %q)", s[0], s[1], words(s[0]).salient, words(s[1]).salient)
		}
	}
}

func TestGuardExactPart(t *testing.T) {
	cfg, _ = parseConfig(&rawConfig{})
	q := wire.Request{Model: "gpt-4o", Tools: []wire.Tool{{Name: "b"}, {Name: "a"}}}
	same := wire.Request{Model: "gpt-4o", Tools: []wire.Tool{{Name: "a"}, {Name: "b"}}}
	if exactGuard(&q) != exactGuard(&same) {
		t.Error("tool order changed the guard")
	}
	other := q
	other.Model = "claude-x"
	if exactGuard(&other) == exactGuard(&q) {
		t.Error("another model has the same guard (match_model is on)")
	}
	if exactGuard(&wire.Request{Model: "gpt-4o"}) == exactGuard(&q) {
		t.Error("an answer given with other tools has the same guard")
	}
}

func TestPrivate(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"what is the TVL of Aave?", false},
		{"balance of 0x52908400098527886E0F7030069857D2E4169EE7", true},
		{"email [EMAIL_1] about it", true},
		{"my strategy is to buy dips", true},
		{"array [0] and [A_] and [_1]", false},
	} {
		if got := private(c.text, defaultStrategy); got != c.want {
			t.Errorf("private(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestMissRoundTrip(t *testing.T) {
	m := miss{id: "abc", vec: []float32{0.5, -0.25, 1}, exact: "gpt-4o|", text: "supply USDC to Morpho", ttl: 90 * time.Second}
	got, ok := decodeMiss(encodeMiss(m))
	if !ok || got.id != m.id || got.exact != m.exact || got.text != m.text || got.ttl != m.ttl ||
		len(got.vec) != 3 || got.vec[1] != -0.25 {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	for _, bad := range []string{"", "!!!", encodeMiss(m)[:10]} {
		if _, ok := decodeMiss(bad); ok {
			t.Errorf("decoded %q", bad)
		}
	}
	g, txt, e, ok := splitPayload(joinPayload("exact", "text", []byte("entry")))
	if !ok || g != "exact" || txt != "text" || string(e) != "entry" {
		t.Fatalf("payload: %q %q %q %v", g, txt, e, ok)
	}
}

func TestConfig(t *testing.T) {
	c, err := parseConfig(&rawConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if c.model != "embed" || c.isolation != perAgent || c.thresholds[c.domain] != 0.92 || c.baseTTL != 300*time.Second ||
		c.regime != "normal" || c.pace != "30" || !c.guard || c.minTokens != 10 {
		t.Fatalf("defaults: %+v", c)
	}
	for regime, want := range map[string]time.Duration{"calm": 300 * time.Second, "normal": 210 * time.Second, "volatile": 90 * time.Second, "crisis": 30 * time.Second} {
		if got := regimeTTL[regime](c.baseTTL); got != want {
			t.Errorf("%s TTL = %v, want %v (spec)", regime, got, want)
		}
	}
	if c.thresholds["static"] != 0.90 || c.thresholds["strategy"] != 0.95 || c.thresholds["trade"] != 0.98 {
		t.Errorf("domain thresholds: %v", c.thresholds)
	}
	for _, bad := range []rawConfig{
		{Isolation: "global"}, {Domain: "nope"}, {Thresholds: map[string]float64{"x": 1.5}},
		{BaseTTL: "1ms"}, {Regime: "panic"}, {ReplayPaceMs: ptr(int64(5000))},
	} {
		if _, err := parseConfig(&bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func ptr[T any](v T) *T { return &v }
