package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

func text(role, s string) wire.Message {
	return wire.Message{Role: role, Content: []wire.Block{{Type: wire.BlockText, Text: s}}}
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
	m := miss{id: "abc", key: "q:abc", vec: []float32{0.5, -0.25, 1}, ctx: "0123abcd", text: "supply USDC to Morpho", ttl: 90 * time.Second}
	got, ok := decodeMiss(encodeMiss(&m))
	if !ok || got.id != m.id || got.key != m.key || got.ctx != m.ctx || got.text != m.text || got.ttl != m.ttl ||
		len(got.vec) != 3 || got.vec[1] != -0.25 {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	enc := encodeMiss(&m)
	for _, bad := range []string{"", "!!!", enc[:10], "1,2,3,4,5", "1,0,0,0,0,", ",5,0,0,0,q:abc", "1,5,0,0,0q:abc", "99999999999999,5,0,0,0,q:abc",
		"1,5,0,0,3,q:abc!!!", "1,5,0,0,6,q:abcAAAA", "1,5,0,0,999999,q:abc"} {
		if _, ok := decodeMiss(bad); ok {
			t.Errorf("decoded %q", bad)
		}
	}
	// Cut anywhere before the question, the value is refused; the question
	// is all that follows the vector.
	for i := range len(enc) - len(m.text) {
		if _, ok := decodeMiss(enc[:i]); ok {
			t.Errorf("decoded %q, cut at %d", enc[:i], i)
		}
	}
	strict := miss{id: "0123456789abcdef0123456789abcdef", key: "q:0123456789abcdef0123456789abcdef:m1a", ctx: "fedcba9876543210fedcba9876543210",
		text: "what is 1,2,3?\n\x00 ünï", ttl: 210 * time.Second}
	if got, ok := decodeMiss(encodeMiss(&strict)); !ok || got.vec != nil || got.id != strict.id || got.key != strict.key || got.ctx != strict.ctx ||
		got.text != strict.text || got.ttl != strict.ttl {
		t.Fatalf("round trip without a vector: %+v %v", got, ok)
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
		c.regime != "normal" || c.pace != "30" || !c.guard || c.minTokens != 10 || c.maxQuestion != 8<<10 {
		t.Fatalf("defaults: %+v", c)
	}
	for regime, want := range map[string]time.Duration{"calm": 300 * time.Second, "normal": 210 * time.Second, "volatile": 90 * time.Second, "crisis": 30 * time.Second} {
		if got, ok := regimeTTL(regime, c.baseTTL); got != want || !ok {
			t.Errorf("%s TTL = %v, want %v (spec)", regime, got, want)
		}
	}
	if c.thresholds["static"] != 0.90 || c.thresholds["strategy"] != 0.95 || c.thresholds["trade"] != 0.98 {
		t.Errorf("domain thresholds: %v", c.thresholds)
	}
	for _, bad := range []rawConfig{
		{Isolation: "global"}, {Domain: "nope"}, {Thresholds: map[string]float64{"x": 1.5}},
		{BaseTTL: "1ms"}, {Regime: "panic"}, {ReplayPaceMs: ptr(int64(5000))}, {MaxQuestion: ptr(int64(10))},
	} {
		if _, err := parseConfig(&bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestQuestionLeavesRemindersToTheContext(t *testing.T) {
	reminder := "<system-reminder>\nThe user opened config.toml in the IDE.\n</system-reminder>"
	r := wire.Request{
		System: []wire.Block{{Type: wire.BlockText, Text: "You are Claude Code."}},
		Messages: []wire.Message{
			text("user", "first question"),
			text("assistant", "an answer"),
			{Role: "user", Content: []wire.Block{
				{Type: wire.BlockText, Text: reminder},
				{Type: wire.BlockText, Text: "What does $? mean in bash?"},
				{Type: wire.BlockText, Text: "<system-reminder>todo list is empty</system-reminder>"},
			}},
		},
	}
	if got := question(&r); got != "What does $? mean in bash?" {
		t.Fatalf("question = %q", got)
	}
	// A reminder inside the caller's text block is cut out of it too.
	r.Messages[2].Content = []wire.Block{{Type: wire.BlockText, Text: "why is the sky blue? " + reminder}}
	if got := question(&r); got != "why is the sky blue?" {
		t.Fatalf("question = %q", got)
	}
	// Only reminders: nothing asked, nothing to look up.
	r.Messages[2].Content = []wire.Block{{Type: wire.BlockText, Text: reminder}}
	if lookupable(&r) {
		t.Fatal("a turn of reminders only is lookupable")
	}
	// An unclosed tag is the caller's own text.
	if own, inj := splitReminders("what is <system-reminder> for?"); own != "what is <system-reminder> for?" || inj != nil {
		t.Fatalf("unclosed: %q %q", own, inj)
	}
}

func TestLookupable(t *testing.T) {
	toolTail := wire.Request{Messages: []wire.Message{
		text("user", "what is the price of ETH?"),
		{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "t1", Name: "price"}}},
		{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "t1", Text: "3100"}}},
	}}
	// A tool result with the user's text beside it is still a tool round.
	toolAndText := wire.Request{Messages: []wire.Message{
		text("user", "what is the price of ETH?"),
		{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "t1", Name: "price"}}},
		{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "t1", Text: "3100"}, {Type: wire.BlockText, Text: "and in euros?"}}},
	}}
	for _, c := range []struct {
		name string
		r    wire.Request
		want bool
	}{
		{"question", wire.Request{Messages: []wire.Message{text("user", "hello there")}}, true},
		{"tool result tail", toolTail, false},
		{"tool result and text", toolAndText, false},
		{"assistant tail", wire.Request{Messages: []wire.Message{text("user", "q"), text("assistant", "prefill")}}, false},
		{"blank", wire.Request{Messages: []wire.Message{text("user", "   ")}}, false},
		{"empty", wire.Request{}, false},
	} {
		if got := lookupable(&c.r); got != c.want {
			t.Errorf("%s: lookupable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestContextHash: everything but the question and what never changes an
// answer is context.
func TestContextHash(t *testing.T) {
	base := func() wire.Request {
		return wire.Request{
			Model:  "claude-sonnet-4-5",
			System: []wire.Block{{Type: wire.BlockText, Text: strings.Repeat("You are an agent. ", 1200)}},
			Messages: []wire.Message{
				text("user", "earlier question"),
				text("assistant", "earlier answer"),
				{Role: "user", Content: []wire.Block{
					{Type: wire.BlockText, Text: "<system-reminder>cwd is /repo</system-reminder>"},
					{Type: wire.BlockText, Text: "write a haiku about the mountains 7"},
				}},
			},
			Tools:  []wire.Tool{{Name: "Edit", Description: "edit a file", Schema: []byte(`{"type":"object"}`)}},
			Params: wire.Params{Set: wire.HasMaxTokens | wire.HasTemperature, MaxTokens: 32000, Temperature: 1},
			Extra:  []byte(`{"metadata":{"user_id":"session-1"},"thinking":{"type":"enabled","budget_tokens":1024}}`),
		}
	}
	ref := contextHash(ptr(base()), true)
	same := map[string]func(r *wire.Request){
		"another question": func(r *wire.Request) { r.Messages[2].Content[1].Text = "write a poem about the sea 7" },
		"another session": func(r *wire.Request) {
			r.Extra = []byte(`{"thinking":{"type":"enabled","budget_tokens":1024},"metadata":{"user_id":"s2"}}`)
		},
		"cache_control moved": func(r *wire.Request) {
			r.Messages[0].Content[0].CacheControl = []byte(`{"type":"ephemeral"}`)
		},
		"stream": func(r *wire.Request) { r.Stream = true },
	}
	for name, f := range same {
		r := base()
		f(&r)
		if contextHash(&r, true) != ref {
			t.Errorf("%s changed the context", name)
		}
	}
	differ := map[string]func(r *wire.Request){
		"model":          func(r *wire.Request) { r.Model = "claude-opus-4-1" },
		"system prompt":  func(r *wire.Request) { r.System[0].Text += "!" },
		"earlier turn":   func(r *wire.Request) { r.Messages[0].Content[0].Text = "another earlier question" },
		"earlier answer": func(r *wire.Request) { r.Messages[1].Content[0].Text = "another answer" },
		"reminder": func(r *wire.Request) {
			r.Messages[2].Content[0].Text = "<system-reminder>cwd is /other</system-reminder>"
		},
		"tool":            func(r *wire.Request) { r.Tools[0].Description = "edit files" },
		"tool extra":      func(r *wire.Request) { r.Tools[0].Extra = []byte(`{"defer_loading":true}`) },
		"tool set":        func(r *wire.Request) { r.Tools = append(r.Tools, wire.Tool{Name: "Write"}) },
		"tool_choice":     func(r *wire.Request) { r.ToolChoice = []byte(`{"type":"any"}`) },
		"temperature":     func(r *wire.Request) { r.Params.Temperature = 0 },
		"max_tokens":      func(r *wire.Request) { r.Params.MaxTokens = 100 },
		"seed":            func(r *wire.Request) { r.Params.Set |= wire.HasSeed; r.Params.Seed = 7 },
		"stop":            func(r *wire.Request) { r.Params.Stop = []string{"\n\n"} },
		"thinking budget": func(r *wire.Request) { r.Extra = []byte(`{"thinking":{"type":"enabled","budget_tokens":4096}}`) },
		"image in the question": func(r *wire.Request) {
			r.Messages[2].Content = append(r.Messages[2].Content, wire.Block{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"https://x/y.png"}`)})
		},
		"a turn less": func(r *wire.Request) { r.Messages = r.Messages[2:] },
	}
	for name, f := range differ {
		r := base()
		f(&r)
		if contextHash(&r, true) == ref {
			t.Errorf("%s did not change the context", name)
		}
	}
	other := base()
	other.Model = "gpt-4o"
	if contextHash(&other, false) != contextHash(ptr(base()), false) {
		t.Error("match_model = false: the model still changes the context")
	}
}

// TestGuard: the near misses of issue 11 and its kinds, and what the
// normaliser forgives.
func TestGuard(t *testing.T) {
	differ := [][2]string{
		{"What does docker run -p 8080:80 do?", "What does docker run -p 80:8080 do?"},
		{"How do I run a single test with pytest?", "How do I run a single test with unittest?"},
		{"What does $? mean in bash?", "What does $! mean in bash?"},
		{"When should a Go function take *int?", "When should a Go function take int?"},
		{"write a haiku about the mountains 7", "write a poem about the sea 7"},
		{"What does photosynthesis mean?", "What does latency mean?"},
		{"Supply 500 USDC to Morpho on Base.", "Supply 500 USDC to Aave on Base."},
		{"How do I enable 2FA on my account?", "How do I disable 2FA on my account?"},
		{"Bridge 2 ETH from Base to Arbitrum.", "Bridge 2 ETH from Arbitrum to Base."},
		{"Why does my code compile?", "Why doesn't my code compile?"},
		{"Is 7 greater than 12?", "Is 12 greater than 7?"},
		{"What does the -r flag do in cp?", "What does the -f flag do in cp?"},
		{"hello", "thanks"},
		{"In Rust what does ? do after a call?", "In Rust what does ! do after a call?"},
	}
	for _, d := range differ {
		a, b := normalize(d[0]), normalize(d[1])
		if sameQuestion(a, b) {
			t.Errorf("%q and %q are one question to the strict guard (%q)", d[0], d[1], contentText(a))
		}
		if sameSalient(a, b) && d[0] != "write a haiku about the mountains 7" && d[0] != "What does photosynthesis mean?" &&
			d[0] != "How do I run a single test with pytest?" && d[0] != "hello" {
			t.Errorf("%q and %q agree on their salient words (%q / %q)", d[0], d[1], contentText(a), contentText(b))
		}
	}
	same := [][2]string{
		{"What is a goroutine?", "what is a goroutine??"},
		{"How do I exit vim?", "Can you tell me how do I exit Vim ?"},
		{"What's the capital of Japan?", "whats the capital of japan"},
		{"In Go, how do I read a file line by line?", "How do I read a file line by line in Go?"},
		{"What does `git rebase -i` do?", "what does git rebase -i do?"},
		{"What is the difference between TCP and UDP?", "what's the difference between udp and tcp"},
		{"Explain impermanent loss", "What is impermanent loss?"},
		{"How do I delete a docker image?", "how do I remove a docker image"},
		{"Supply 500 USDC to Morpho on Base", "On Base, deposit 500 USDC into Morpho"},
	}
	for _, s := range same {
		if a, b := normalize(s[0]), normalize(s[1]); !sameQuestion(a, b) {
			t.Errorf("%q / %q are not one question: %q / %q", s[0], s[1], contentText(a), contentText(b))
		}
	}
}

// TestGuardPronounsAndPlurals: the pronouns of a framing phrase go, the
// ones asked about stay; words that only look plural keep their "s".
func TestGuardPronounsAndPlurals(t *testing.T) {
	for _, d := range [][2]string{
		{"Who are you?", "Who am I?"},
		{"Can you help me?", "Can I help you?"},
		{"What's new?", "What's the news?"},
		{"Thank you", "Thank me"},
	} {
		if a, b := normalize(d[0]), normalize(d[1]); sameQuestion(a, b) {
			t.Errorf("%q and %q are one question (%q)", d[0], d[1], contentText(a))
		}
	}
	for _, s := range [][2]string{
		{"Can you tell me how do I create a Python virtual environment?", "How do I create a python virtual environment"},
		{"Could you show me the logs?", "Show the logs"},
		{"How can I see my Go version?", "how do I see my go version"},
		{"thank you!", "Thank you."},
	} {
		if a, b := normalize(s[0]), normalize(s[1]); !sameQuestion(a, b) {
			t.Errorf("%q / %q are not one question: %q / %q", s[0], s[1], contentText(a), contentText(b))
		}
	}
}

// TestGuardLiterals: words in quotes or backticks are what is asked about,
// never framing; greetings frame only at the start.
func TestGuardLiterals(t *testing.T) {
	for _, d := range [][2]string{
		{`Translate "the" into French`, `Translate "a" into French`},
		{"Print hello", "Print hi"},
		{"Explain quick sort", "Explain sort"},
		{"What does `do` mean in Lua?", "What does `does` mean in Lua?"},
	} {
		if a, b := normalize(d[0]), normalize(d[1]); sameQuestion(a, b) {
			t.Errorf("%q and %q are one question (%q)", d[0], d[1], contentText(a))
		}
	}
	for _, s := range [][2]string{
		{"What does `$?` mean in bash?", "what does $? mean in bash"},
		{"What does `git rebase -i` do?", "what does git rebase -i do?"},
		{"Hi! Thanks, how do I exit vim?", "how do I exit vim"},
		{`What does "idempotent" mean?`, `What does "idempotent" mean`},
	} {
		if a, b := normalize(s[0]), normalize(s[1]); !sameQuestion(a, b) {
			t.Errorf("%q / %q are not one question: %q / %q", s[0], s[1], contentText(a), contentText(b))
		}
	}
}

// TestNormalizeEmptyField: a fronted phrase closed by a lone comma leaves
// an empty field behind (unfront trims the comma off its word), which the
// word loop must pass over as before its byte-level rewrite.
func TestNormalizeEmptyField(t *testing.T) {
	for q, want := range map[string]string{
		"In Go , how do I read a file": "how* read* file in* go*",
		"for x , y z":                  "y z for x",
		`On Base, "quoted, thing" ok`:  "quoted* thing* ok on* base*",
	} {
		var got []string
		for _, tk := range normalize(q) {
			w := tk.w
			if tk.salient {
				w += "*"
			}
			got = append(got, w)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("normalize(%q) = %q, want %q", q, strings.Join(got, " "), want)
		}
	}
}

// TestHasAnyFold: the one-pass, case-folding marker search finds what
// strings.Contains on the lower-cased text does.
func TestHasAnyFold(t *testing.T) {
	texts := []string{"", "gas", "What is the PRICE", "Priceless", "no markers here", "Funding Rate now",
		"funding  rate", "TVL", "tvl of aave", "Stop Loss at 5%", "my Wallet", "ggas", "apyr", "GAS É",
		"prÉce", "PRICE É", "Éprice", "fundinG RATÉ", "my wallÉt", "\xffTVL", "stop lo\xffss", "x\u0130y",
		"trading Volume", "the APR", "trend", "w65x and w3x", "a w69", "xA", "pRICE", "ab", "a", "zAc", "Xy"}
	var many []string // more than 64: the path without the per-byte sets
	for i := range 70 {
		many = append(many, fmt.Sprintf("w%dx", i))
	}
	many = append(many, "tvl", "gas")
	for _, markers := range [][]string{defaultMarket, defaultStrategy, {"a"}, {""}, nil, {"aa", "a"}, {"é"}, {"ré", "tvl"}, {"i\u0307"}, many, many[60:],
		{"ab", "ac", "x"}, {"xy", "x"}, {"zac", "za"}} {
		for _, s := range texts {
			if got, want := hasAnyFold(s, markers), hasAny(strings.ToLower(s), markers); got != want {
				t.Errorf("hasAnyFold(%q, %q) = %v, want %v", s, markers, got, want)
			}
		}
	}
	// Random texts and markers over a small alphabet, so that markers
	// share first and second bytes and meet the text's end.
	rng := rand.New(rand.NewPCG(3, 5))
	draw := func(alphabet []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		var markers []string
		for range 1 + rng.IntN(5) {
			markers = append(markers, draw([]string{"a", "b", "c", "a", "b", "c", "é", "k"}, 1+rng.IntN(3)))
		}
		s := draw([]string{"a", "b", "c", "A", "B", " ", "a", "b", "c", "A", "B", " ", "É", "é", "\xff", "\u212a", "K"}, rng.IntN(8))
		if got, want := hasAnyFold(s, markers), hasAny(strings.ToLower(s), markers); got != want {
			t.Fatalf("hasAnyFold(%q, %q) = %v, want %v", s, markers, got, want)
		}
	}
}

// TestReadAnnotations: the one pass over the meta finds, for each key the
// request phase reads, the value annotation finds (the last of the key's).
func TestReadAnnotations(t *testing.T) {
	keys := []string{annotationHeaderRegime, AnnotationRegime, annotationHeaderDomain, "bardo.hdr.user-agent", "semcache.miss"}
	values := []string{"", "calm", "Crisis", "volatile", "static"}
	rng := rand.New(rand.NewPCG(1, 9))
	for range 5000 {
		var m wire.Meta
		for range rng.IntN(8) {
			m.Annotations = append(m.Annotations, wire.KV{Key: keys[rng.IntN(len(keys))], Value: values[rng.IntN(len(values))]})
		}
		got := readAnnotations(&m)
		want := requestAnnotations{annotation(&m, annotationHeaderRegime), annotation(&m, AnnotationRegime), annotation(&m, annotationHeaderDomain)}
		if got != want {
			t.Fatalf("readAnnotations(%v) = %+v, want %+v", m.Annotations, got, want)
		}
	}
}

// TestPlainASCII: the eight-bytes-a-step check says what a byte loop says,
// whichever byte holds the backtick or the non-ASCII byte.
func TestPlainASCII(t *testing.T) {
	byteLoop := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 || s[i] == '`' {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(2, 4))
	special := []byte{'`', 0x80, 0xff, 0xe2, 0x5f, 0x61, 0x7f, 0x00, 0x20, 0x60 ^ 0x01, 0xe0}
	for range 50000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
			if rng.IntN(12) == 0 {
				b[i] = special[rng.IntN(len(special))]
			}
		}
		if got, want := plainASCII(string(b)), byteLoop(string(b)); got != want {
			t.Fatalf("plainASCII(%q) = %v, want %v", b, got, want)
		}
	}
}

// TestAppendFields: the mask-driven split gives strings.Fields' words, for
// texts around and across its 64-byte steps.
func TestAppendFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	pieces := []string{"a", "bc", "def", " ", "  ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\x85", "x,", "\x00"}
	for range 30000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if rng.IntN(4) == 0 {
			s = strings.Repeat("w", rng.IntN(130)) + s
		}
		ascii := isASCII(s)
		got := appendFields(nil, s, ascii)
		if want := strings.Fields(s); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("appendFields(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzDecodeMiss: any annotation value decodes without a panic, and a
// miss encoded decodes to itself.
func FuzzDecodeMiss(f *testing.F) {
	f.Add("210000,38,32,32,0,q:0123456789abcdef0123456789abcdef:m1a", "what is 1,2,3?", uint32(5))
	f.Add("", "", uint32(0))
	f.Fuzz(func(t *testing.T, s, text string, n uint32) {
		decodeMiss(s)
		var vec []float32
		for i := range n % 5 {
			vec = append(vec, float32(i)/3)
		}
		m := miss{id: "0123456789abcdef0123456789abcdef", key: "q:" + s, ctx: "fedcba9876543210fedcba9876543210", text: text, vec: vec,
			ttl: time.Duration(n) * time.Millisecond}
		got, ok := decodeMiss(encodeMiss(&m))
		if !ok || got.key != m.key || got.ctx != m.ctx || got.id != m.id || got.text != m.text || got.ttl != m.ttl || !slices.Equal(got.vec, m.vec) {
			t.Fatalf("round trip of %+v: %+v %v", m, got, ok)
		}
	})
}

// encodeMiss writes its numbers as strconv does: appendDec is
// strconv.AppendUint at every power of ten and its neighbours, and a miss
// encodes to the same bytes as the form built with strconv.
func TestEncodeMissDecimal(t *testing.T) {
	for n := uint64(1); n != 0 && n < 1<<63; n *= 10 {
		for _, v := range []uint64{n - 1, n, n + 1, 2*n - 1} {
			if got, want := string(appendDec([]byte("x"), v)), string(strconv.AppendUint([]byte("x"), v, 10)); got != want {
				t.Fatalf("appendDec(%d) = %q, want %q", v, got, want)
			}
		}
	}
	if got := string(appendDec(nil, math.MaxUint64)); got != strconv.FormatUint(math.MaxUint64, 10) {
		t.Fatalf("appendDec(max) = %q", got)
	}
	m := miss{id: "0123456789abcdef0123456789abcdef", key: "q:0123456789abcdef0123456789abcdef", ctx: "fedcba9876543210fedcba9876543210",
		text: "what is 1,2,3?", ttl: 210 * time.Second}
	// The kept TTL's digits follow a change of TTL.
	for _, ttl := range []time.Duration{210 * time.Second, 210 * time.Second, 30 * time.Second, 90*time.Second + time.Millisecond, 210 * time.Second} {
		m.ttl = ttl
		want := strconv.FormatInt(ttl.Milliseconds(), 10) + ",34,32,32,0," + m.key + m.ctx + m.id + m.text
		if got := encodeMiss(&m); got != want {
			t.Fatalf("encodeMiss = %q, want %q", got, want)
		}
	}
}
