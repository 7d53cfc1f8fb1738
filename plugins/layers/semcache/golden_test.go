//go:build !wasip1

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The golden files pin what the layer computes — every question's
// normalised words, every request's context hash and entry key, the
// request phase's whole result and the hit-or-miss verdict of each labelled
// pair — so that work on its speed cannot move a stored entry's key or
// change a decision. They were written by the code before that work; go
// test -run Golden -update rewrites them, which is only right when a change
// of key or verdict is intended (and then every stored entry is lost).

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenQuestions are the labelled pairs' questions and the cases the
// normaliser treats specially: unicode spaces, quotes and case, symbols,
// contractions, fronted phrases, market and private markers, invalid
// UTF-8, reminders, sizes around max_question_bytes.
func goldenQuestions(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var qs []string
	add := func(q string) {
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	for _, path := range []string{"testdata/pairs.jsonl", "testdata/holdout.jsonl", "testdata/agent_pairs.jsonl", "testdata/agent_holdout.jsonl"} {
		for _, p := range readPairs(t, path) {
			add(p.A)
			add(p.B)
		}
	}
	for _, q := range []string{
		"", " ", "?", "hi", "Thanks!", "thank you", "can you?", "hello", "ok so what's up",
		"What's   the\tTVL\nof Aave?", "what\u00a0is\u2003the price of ETH", "what is “the” price of ‘ETH’",
		"Explain `os.path.join` please", "what does $? do", "what does ? do in Rust", "a && b || c",
		"In Go, how do I read a file?", "how do I read a file in Go", "For a beginner, what is a mutex?",
		"In Go how do I read a file?", "Using Python, parse JSON", "(in Go), how do I x?",
		"Doesn't it work?", "it's fine", "whats the point", "I can't, won't, shan't", "John's car",
		"we're here, I'm there, you'll see, they've gone, she'd go",
		"Ünïcödé QUESTION about Ærø?", "ПРИВЕТ мир", "日本語の質問です", "emoji 🚀 launch?", "naïve café résumé",
		"ÉTÉ is summer", "İstanbul ıi", "ǅ titlecase ǈ", "ΣΊΣΥΦΟΣ σίσυφος",
		"bad \xff\xfe utf8 \xc3", "\xe2\x80", "x\x00y",
		"way to sort a list", "how to sort a list", "what is the meaning of life", "difference between TCP and UDP",
		"difference between UDP and TCP", "what is the difference between a and b and c",
		"send 0x52908400098527886E0F7030069857D2E4169EE7 to [EMAIL_1]", "my strategy: buy the dip",
		"What is the price of ETH in USD?", "what's the funding rate on BTC perps", "Gas fees today?",
		"\"quoted phrase\" means what", "say \"hello world\" twice", "print 'hi'", "“smart” quotes",
		"-p 8080:80 vs -p 80:8080", "rm -rf / --no-preserve-root", "x := *int", "a->b", "i++ vs ++i",
		"pytest or unittest?", "HOW DO I EXIT VIM", "How Do I Exit Vim", "how do i exit vim...",
		"… — – -", "!!!", ":)", "hmm... ok?", "delete vs remove the files", "enable and disable it",
		"<system-reminder>only a reminder</system-reminder>",
		"before <system-reminder>cut me</system-reminder> after",
		"<system-reminders>not a reminder</system-reminders>",
		"<environment_context>cwd</environment_context>\nfix the bug",
		"<user_instructions>be brief</user_instructions> and <system-reminder>x</system-reminder> tell me about goroutines",
		"unclosed <system-reminder> tag",
		strings.Repeat("why is the sky blue? ", 390), // just under 8 KiB
		strings.Repeat("why is the sky blue? ", 391), // just over
		strings.Repeat("word ", 2000),
	} {
		add(q)
	}
	return qs
}

type goldenPair struct {
	A, B string
	Same bool
}

func readPairs(t *testing.T, path string) []goldenPair {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ps []goldenPair
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p goldenPair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ps = append(ps, p)
	}
	return ps
}

// wrappers put a question into the requests agents send: the 4 KB agent
// fixture (canonical, and as an OpenAI body), Claude Code's 85 KB request
// (Anthropic, a reminder block beside the question), and a bare question.
var wrappers = []struct {
	name string
	make func(t *testing.T, q string) *wire.Request
}{
	{"agent", func(_ *testing.T, q string) *wire.Request {
		r := fixtures.AgentRequest()
		r.Messages[len(r.Messages)-1].Content[0].Text = q
		return r
	}},
	{"openai", func(t *testing.T, q string) *wire.Request {
		var body map[string]any
		if err := json.Unmarshal(fixtures.AgentRequestOpenAI(false), &body); err != nil {
			t.Fatal(err)
		}
		msgs := body["messages"].([]any)
		msgs[len(msgs)-1].(map[string]any)["content"] = q
		body["user"] = "u-1"
		body["response_format"] = map[string]any{"type": "text"}
		b, _ := json.Marshal(body)
		r, err := openai.DecodeRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}},
	{"claude-code", func(t *testing.T, q string) *wire.Request {
		r, err := anthropic.DecodeRequest(loadtest.ClaudeCode(q, true))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}},
	{"bare", func(_ *testing.T, q string) *wire.Request {
		return &wire.Request{Model: "gpt-4o", Messages: []wire.Message{text("user", q)}}
	}},
}

// goldenRequests are requests of unusual shape, for the context hash:
// extras the fast member walk hands to encoding/json, earlier turns of every
// block kind, the last turn's non-text blocks and reminders.
func goldenRequests() map[string]*wire.Request {
	base := func() *wire.Request {
		r := fixtures.AgentRequest()
		r.Messages[len(r.Messages)-1].Content = []wire.Block{
			{Type: wire.BlockText, Text: "<system-reminder>cwd /repo</system-reminder>", CacheControl: []byte(`{"type":"ephemeral"}`)},
			{Type: wire.BlockText, Text: "what does the health factor mean?", Extra: []byte(`{"citations":[]}`)},
		}
		return r
	}
	rs := map[string]*wire.Request{}
	for name, f := range map[string]func(r *wire.Request){
		"base":          func(*wire.Request) {},
		"extra plain":   func(r *wire.Request) { r.Extra = []byte(`{"z":1,"metadata":{"u":1},"a":[1, 2],"a":3,"user":"x"}`) },
		"extra escaped": func(r *wire.Request) { r.Extra = []byte(`{"metad\u0061ta":1,"k\"q":2,"k":3}`) },
		"extra unicode": func(r *wire.Request) { r.Extra = []byte(`{"été":1,"e":{"x":"é"}}`) },
		"extra array":   func(r *wire.Request) { r.Extra = []byte(`[1,2,3]`) },
		"extra spaces":  func(r *wire.Request) { r.Extra = []byte(" {\n\"b\" : 1 ,\t\"a\":null } ") },
		"params": func(r *wire.Request) {
			r.Params = wire.Params{Set: wire.HasMaxTokens | wire.HasTemperature | wire.HasTopP | wire.HasTopK | wire.HasSeed,
				MaxTokens: 9, Temperature: 0.7, TopP: 0.9, TopK: 40, Seed: -3, Stop: []string{"\n", "END"}}
		},
		"tool_choice": func(r *wire.Request) { r.ToolChoice = []byte(`{"type":"any"}`) },
		"tool extra":  func(r *wire.Request) { r.Tools[0].Extra = []byte(`{"strict":true}`) },
		"names": func(r *wire.Request) {
			r.Messages[0].Name = "alice"
			r.Messages[len(r.Messages)-1].Name = "bob"
			r.Messages[1].Extra = []byte(`{"refusal":null}`)
		},
		"image last": func(r *wire.Request) {
			m := &r.Messages[len(r.Messages)-1]
			m.Content = append(m.Content, wire.Block{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"https://x/y.png"}`)})
		},
		"thinking earlier": func(r *wire.Request) {
			r.Messages[3].Content = append([]wire.Block{{Type: wire.BlockThinking, Text: "hmm", Signature: "sig"}}, r.Messages[3].Content...)
			r.Messages[2].Content[0].IsError = true
		},
		"system blocks": func(r *wire.Request) {
			r.System = append(r.System, wire.Block{Type: wire.BlockText, Text: "second", Name: "developer", CacheControl: []byte(`{}`)})
		},
		"no model":       func(r *wire.Request) { r.Model = "" },
		"assistant last": func(r *wire.Request) { r.Messages = append(r.Messages, text("assistant", "prefill")) },
		"tool result last": func(r *wire.Request) {
			r.Messages[len(r.Messages)-1].Content = append(r.Messages[len(r.Messages)-1].Content,
				wire.Block{Type: wire.BlockToolResult, ID: "t", Text: "3100"})
		},
		"two texts": func(r *wire.Request) {
			m := &r.Messages[len(r.Messages)-1]
			m.Content = append(m.Content, wire.Block{Type: wire.BlockText, Text: "  and in euros?  "})
		},
	} {
		r := base()
		f(r)
		rs[name] = r
	}
	return rs
}

// goldenClock is the fixed time of every golden run (a hit's age header
// depends on it).
var goldenClock = time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)

func tokensString(ts []qtoken) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.w)
		if t.salient {
			b.WriteByte('*')
		}
	}
	return b.String()
}

func digest(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%v|", len(fmt.Sprint(p)), p)
	}
	return hex.EncodeToString(h.Sum(nil)[:10])
}

// callRequest runs the request phase natively and returns its raw result.
func callRequest(t *testing.T, r *wire.Request, meta wire.Meta) []byte {
	t.Helper()
	var enc wire.Encoder
	wire.EncodeLayerRequest(&enc, &meta, r, wire.PartAll)
	out := plugin.Call(plugin.OpOnRequest, enc.Bytes())
	if len(out) == 0 || out[0] == plugin.StatusError {
		t.Fatalf("on_request: %q", out)
	}
	return out
}

// canonicalResult is a request phase's result with its miss annotation
// written as the fields it carries rather than in the layer's encoding of
// the day: the golden file pins what a miss hands the answer phase, not
// how.
func canonicalResult(t *testing.T, out []byte) []byte {
	t.Helper()
	var res wire.LayerResult
	if err := res.Decode(out); err != nil {
		t.Fatal(err)
	}
	found := false
	for i, kv := range res.Annotations {
		if kv.Key != AnnotationMiss {
			continue
		}
		m, ok := decodeMiss(kv.Value)
		if !ok {
			t.Fatalf("undecodable miss %q", kv.Value)
		}
		res.Annotations[i].Value = fmt.Sprintf("ttl=%d key=%s ctx=%s id=%s vec=%v text=%q", m.ttl.Milliseconds(), m.key, m.ctx, m.id, m.vec, m.text)
		found = true
	}
	if !found {
		return out
	}
	var enc wire.Encoder
	res.Encode(&enc)
	return append([]byte(nil), enc.Bytes()...)
}

func storeAnswer(t *testing.T, h *plugintest.Host, meta wire.Meta, res wire.LayerResult) {
	t.Helper()
	meta.Annotations = res.Annotations
	h.OnResponse(wire.LayerResponse{Meta: meta, Response: wire.Response{Model: "gpt-4o", StopReason: wire.StopEndTurn,
		Usage:   wire.Usage{InputTokens: 900, OutputTokens: 40},
		Content: []wire.Block{{Type: wire.BlockText, Text: "A stored answer long enough to be worth caching, about forty tokens of text."}}}})
}

func header(kvs []wire.KV, key string) string {
	for i := len(kvs) - 1; i >= 0; i-- {
		if kvs[i].Key == key {
			return kvs[i].Value
		}
	}
	return ""
}

// goldenLines computes every golden line now.
func goldenLines(t *testing.T) []string {
	var lines []string
	emit := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	qs := goldenQuestions(t)
	cfg.market, cfg.strategy = defaultMarket, defaultStrategy
	for i, q := range qs {
		ts := normalize(q)
		short := q
		if len(short) > 120 {
			short = short[:120] + fmt.Sprintf("…(%d bytes)", len(q))
		}
		emit(map[string]any{"q": i, "text": short, "words": tokensString(ts), "content": contentText(ts),
			"market": hasAny(strings.ToLower(q), defaultMarket), "private": private(q, defaultStrategy)})
	}
	for name, r := range goldenRequests() {
		emit(map[string]any{"request": name, "lookupable": lookupable(r), "question": question(r),
			"ctx": contextHash(r, true), "ctx_any_model": contextHash(r, false)})
	}
	// Every question in every wrapper: what the request phase returns, in
	// one fresh cache per wrapper (so a miss every time but for repeats).
	for _, w := range wrappers {
		h := plugintest.New(t, `{}`)
		h.Clock = func() time.Time { return goldenClock }
		meta := wire.Meta{RequestID: "req_golden", Tenant: "golden", Dialect: wire.DialectOpenAI}
		for i, q := range qs {
			r := w.make(t, q)
			out := callRequest(t, r, meta)
			lines = append(lines, fmt.Sprintf("%s %d %v %s", w.name, i, lookupable(r), digest(contextHash(r, true), hex.EncodeToString(canonicalResult(t, out)))))
		}
	}
	// Each labelled pair: A answered and stored, then B asked, in one
	// cache per wrapper and corpus.
	for _, path := range []string{"testdata/pairs.jsonl", "testdata/holdout.jsonl", "testdata/agent_pairs.jsonl", "testdata/agent_holdout.jsonl"} {
		ps := readPairs(t, path)
		for i, p := range ps {
			a, b := normalize(p.A), normalize(p.B)
			lines = append(lines, fmt.Sprintf("%s %d strict=%v salient=%v", path, i, sameQuestion(a, b), sameSalient(a, b)))
		}
		for _, w := range wrappers {
			h := plugintest.New(t, `{}`)
			h.Clock = func() time.Time { return goldenClock }
			meta := wire.Meta{RequestID: "req_golden", Tenant: "golden", Dialect: wire.DialectAnthropic, Stream: true}
			var verdicts []string
			for _, p := range ps {
				var res wire.LayerResult
				if err := res.Decode(callRequest(t, w.make(t, p.A), meta)); err != nil {
					t.Fatal(err)
				}
				storeAnswer(t, h, meta, res)
				out := callRequest(t, w.make(t, p.B), meta)
				if err := res.Decode(out); err != nil {
					t.Fatal(err)
				}
				v := header(res.Headers, HeaderCache)
				if v == "" {
					v = "-"
				}
				verdicts = append(verdicts, v+"/"+digest(hex.EncodeToString(canonicalResult(t, out))))
			}
			emit(map[string]any{"pairs": path, "wrapper": w.name, "verdicts": verdicts})
		}
	}
	return lines
}

// TestGolden: keys, results and verdicts are byte for byte those the golden
// file pins.
func TestGolden(t *testing.T) {
	const path = "testdata/golden.txt"
	got := goldenLines(t)
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	// Map iteration orders the requests: compare as sets of lines.
	have := map[string]int{}
	for _, l := range want {
		have[l]++
	}
	bad := 0
	for _, l := range got {
		if have[l] == 0 {
			if bad++; bad <= 20 {
				t.Errorf("not in the golden file: %s", l)
			}
			continue
		}
		have[l]--
	}
	if len(got) != len(want) {
		t.Errorf("%d lines, the golden file has %d", len(got), len(want))
	}
	if bad > 0 {
		t.Fatalf("%d lines differ", bad)
	}
}
