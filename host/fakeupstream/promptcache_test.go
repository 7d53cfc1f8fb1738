package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// vclock is a settable clock for the caches' lifetimes.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *vclock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *vclock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func cachingServer(t *testing.T) (*Server, *vclock) {
	clock := &vclock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return newServer(t, WithPromptCaching(clock.Now)), clock
}

type anUse struct{ in, write, read int }

func anCall(t *testing.T, s *Server, body string) anUse {
	t.Helper()
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), body), http.StatusOK)
	u := m["usage"].(map[string]any)
	return anUse{int(u["input_tokens"].(float64)), int(u["cache_creation_input_tokens"].(float64)), int(u["cache_read_input_tokens"].(float64))}
}

func text(n int, seed string) string { return strings.Repeat(seed+" ", n/(len(seed)+1)+1)[:n] }

func jsq(s string) string { b, _ := json.Marshal(s); return string(b) }

// anBody builds a Messages request: system text (with a breakpoint when
// bp), and user/assistant turns alternating, the last one marked.
func anBody(system string, sysBP bool, turns ...string) string {
	cc := ""
	if sysBP {
		cc = `,"cache_control":{"type":"ephemeral"}`
	}
	var msgs []string
	for i, tx := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		mark := ""
		if i == len(turns)-1 {
			mark = `,"cache_control":{"type":"ephemeral"}`
		}
		msgs = append(msgs, `{"role":"`+role+`","content":[{"type":"text","text":`+jsq(tx)+mark+`}]}`)
	}
	return `{"model":"claude-sonnet-4-5","max_tokens":64,"system":[{"type":"text","text":` + jsq(system) + cc + `}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

// tokens of a text block the simulator counts (its canonical JSON / 4).
func blockTokens(tx string) int {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": tx})
	return estimateTokens(string(b))
}

func TestAnthropicPromptCacheWriteThenRead(t *testing.T) {
	s, _ := cachingServer(t)
	sys := text(8000, "system")
	q1 := text(40, "q1")
	sysT, q1T := blockTokens(sys), blockTokens(q1)

	// q1 alone is under the minimum, but the prefix up to it is not: both
	// breakpoints are written.
	if got, want := anCall(t, s, anBody(sys, true, q1)), (anUse{0, sysT + q1T, 0}); got != want {
		t.Fatalf("first call: %+v, want %+v", got, want)
	}
	// The same prompt again: all of it read.
	if got, want := anCall(t, s, anBody(sys, true, q1)), (anUse{0, 0, sysT + q1T}); got != want {
		t.Fatalf("repeat: %+v, want %+v", got, want)
	}
	// The next turn: the previous turn's entry is found by lookback, the
	// two new blocks are written.
	a1, q2 := text(400, "a1"), text(400, "q2")
	got := anCall(t, s, anBody(sys, true, q1, a1, q2))
	if want := (anUse{0, blockTokens(a1) + blockTokens(q2), sysT + q1T}); got != want {
		t.Fatalf("next turn: %+v, want %+v", got, want)
	}
	bills := s.Bills()
	if len(bills) != 3 || bills[2].CacheRead != sysT+q1T || bills[2].Model != "claude-sonnet-4-5" || bills[2].Output == 0 {
		t.Fatalf("bills: %+v", bills)
	}
}

func TestAnthropicPromptCacheMinimumAndNoBreakpoint(t *testing.T) {
	s, _ := cachingServer(t)
	small := text(2000, "small") // ~500 tokens: under Sonnet's 1,024
	body := anBody(small, true, "hi")
	total := blockTokens(small) + blockTokens("hi")
	for i := 0; i < 2; i++ {
		if got, want := anCall(t, s, body), (anUse{total, 0, 0}); got != want {
			t.Fatalf("call %d under the minimum: %+v, want %+v", i, got, want)
		}
	}
	// Haiku 4.5 needs 4,096 tokens: a 2,000-token prefix is not cached.
	mid := text(8000, "mid")
	hb := strings.Replace(anBody(mid, true, "hi"), "claude-sonnet-4-5", "claude-haiku-4-5", 1)
	if got := anCall(t, s, hb); got.write != 0 {
		t.Fatalf("haiku 4.5 cached a 2k prefix: %+v", got)
	}
	// Without cache_control nothing is cached, however long.
	plain := `{"model":"claude-sonnet-4-5","max_tokens":8,"system":` + jsq(text(9000, "p")) + `,"messages":[{"role":"user","content":"x"}]}`
	anCall(t, s, plain)
	if got := anCall(t, s, plain); got.read != 0 || got.write != 0 {
		t.Fatalf("no breakpoint: %+v", got)
	}
	// A top-level cache_control marks the last block.
	auto := strings.Replace(plain, `{"model"`, `{"cache_control":{"type":"ephemeral"},"model"`, 1)
	if got := anCall(t, s, auto); got.write == 0 {
		t.Fatalf("automatic caching wrote nothing: %+v", got)
	}
	if got := anCall(t, s, auto); got.read == 0 || got.in != 0 {
		t.Fatalf("automatic caching did not read: %+v", got)
	}
}

func TestAnthropicPromptCacheTTL(t *testing.T) {
	s, clock := cachingServer(t)
	body := anBody(text(8000, "ttl"), true, "q")
	anCall(t, s, body)
	clock.Add(4 * time.Minute)
	if got := anCall(t, s, body); got.read == 0 {
		t.Fatalf("read at 4 min missed: %+v", got)
	}
	clock.Add(4 * time.Minute) // 8 min after the write, 4 after the read that refreshed it
	if got := anCall(t, s, body); got.read == 0 {
		t.Fatalf("a read did not refresh the entry: %+v", got)
	}
	clock.Add(5*time.Minute + time.Second)
	if got := anCall(t, s, body); got.read != 0 || got.write == 0 {
		t.Fatalf("expired entry read: %+v", got)
	}
	// A 1-hour breakpoint outlives 5 minutes and is billed as such.
	long := strings.ReplaceAll(anBody(text(8000, "hour"), true, "q"), `{"type":"ephemeral"}`, `{"type":"ephemeral","ttl":"1h"}`)
	anCall(t, s, long)
	clock.Add(30 * time.Minute)
	if got := anCall(t, s, long); got.read == 0 {
		t.Fatalf("1h entry expired after 30 min: %+v", got)
	}
	if b := s.Bills(); b[len(b)-2].CacheWrite1h == 0 || b[len(b)-2].CacheWrite5m != 0 {
		t.Fatalf("1h write billed as %+v", b[len(b)-2])
	}
}

func TestAnthropicPromptCacheInvalidation(t *testing.T) {
	s, _ := cachingServer(t)
	tool := func(desc string) string {
		return `{"name":"Read","description":` + jsq(desc) + `,"input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}`
	}
	with := func(tools, extra string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":8` + extra + `,"tools":[` + tools + `],"system":[{"type":"text","text":` +
			jsq(text(6000, "sys")) + `,"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":` +
			jsq(text(6000, "msg")) + `,"cache_control":{"type":"ephemeral"}}]}]}`
	}
	base := with(tool("reads a file"), "")
	first := anCall(t, s, base)
	full := first.write + first.in
	// Keys in another order and whitespace are the same prompt.
	reordered := strings.Replace(base, `{"name":"Read","description":"reads a file",`, `{ "description": "reads a file", "name": "Read", `, 1)
	if got := anCall(t, s, reordered); got.read != full {
		t.Fatalf("re-encoded prompt missed: %+v (want read %d)", got, full)
	}
	// A tool_choice change keeps tools+system, rewrites the messages.
	tc := anCall(t, s, with(tool("reads a file"), `,"tool_choice":{"type":"any"}`))
	if tc.read == 0 || tc.read >= full || tc.write == 0 {
		t.Fatalf("tool_choice change: %+v", tc)
	}
	// A changed tool changes every prefix.
	if got := anCall(t, s, with(tool("reads a file from disk"), "")); got.read != 0 {
		t.Fatalf("changed tool still read: %+v", got)
	}
}

func TestAnthropicPromptCacheLookbackAndLimit(t *testing.T) {
	s, _ := cachingServer(t)
	sys := text(6000, "lb")
	turns := []string{"u0"}
	anCall(t, s, anBody(sys, false, turns...)) // entry at the last block only
	for i := 1; i <= 22; i++ {
		turns = append(turns, fmt.Sprintf("t%d", i))
	}
	// 22 blocks later the old entry is out of the 20-block lookback.
	if got := anCall(t, s, anBody(sys, false, turns...)); got.read != 0 {
		t.Fatalf("read beyond the lookback: %+v", got)
	}
	// Five breakpoints are refused like the API does.
	five := anBody(sys, true, "a", "b", "c", "d")
	five = strings.Replace(five, `"text":"a"}`, `"text":"a","cache_control":{"type":"ephemeral"}}`, 1)
	five = strings.Replace(five, `"text":"b"}`, `"text":"b","cache_control":{"type":"ephemeral"}}`, 1)
	five = strings.Replace(five, `"text":"c"}`, `"text":"c","cache_control":{"type":"ephemeral"}}`, 1)
	m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), five), http.StatusBadRequest)
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "maximum of 4") {
		t.Fatalf("five breakpoints: %v", m)
	}
}

func oaCall(t *testing.T, s *Server, body string) (prompt, cached int) {
	t.Helper()
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), body), http.StatusOK)
	u := m["usage"].(map[string]any)
	return int(u["prompt_tokens"].(float64)), int(u["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64))
}

func oaBody(turns ...string) string {
	var msgs []string
	for i, tx := range turns {
		role := "user"
		if i == 0 {
			role = "system"
		} else if i%2 == 0 {
			role = "assistant"
		}
		msgs = append(msgs, `{"role":"`+role+`","content":`+jsq(tx)+`}`)
	}
	return `{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestOpenAIPromptCache(t *testing.T) {
	s, clock := cachingServer(t)
	// Under 1,024 tokens: never cached.
	short := oaBody(text(2000, "short"), "q")
	oaCall(t, s, short)
	if _, c := oaCall(t, s, short); c != 0 {
		t.Fatalf("short prompt cached %d", c)
	}
	sys := text(12000, "system") // 3,000 tokens
	p1, c1 := oaCall(t, s, oaBody(sys, "first question"))
	if c1 != 0 || p1 < 3000 {
		t.Fatalf("first: prompt %d cached %d", p1, c1)
	}
	// The next turn shares the system prompt and the first question: the
	// shared prefix is reused in 128-token steps from 1,024.
	p2, c2 := oaCall(t, s, oaBody(sys, "first question", "an answer", "second question"))
	if c2 < 2900 || c2 > p1 || (c2-1024)%128 != 0 || p2 <= p1 {
		t.Fatalf("second: prompt %d cached %d (first prompt %d)", p2, c2, p1)
	}
	// Text parts read as the string they join to.
	parts := strings.Replace(oaBody(sys, "first question"), `"content":"first question"`, `"content":[{"type":"text","text":"first "},{"type":"text","text":"question"}]`, 1)
	_, cp := oaCall(t, s, parts)
	if _, cr := oaCall(t, s, oaBody(sys, "first question")); cp != cr || cp < 2900 {
		t.Fatalf("text parts: cached %d, as a string %d", cp, cr)
	}
	// Idle for more than 5 minutes: evicted.
	clock.Add(6 * time.Minute)
	if _, c := oaCall(t, s, oaBody(sys, "first question")); c != 0 {
		t.Fatalf("after 6 idle minutes: cached %d", c)
	}
	// Another model does not share the cache.
	other := strings.Replace(oaBody(sys, "first question"), `"gpt-4o"`, `"gpt-4o-mini"`, 1)
	if _, c := oaCall(t, s, other); c != 0 {
		t.Fatalf("another model: cached %d", c)
	}
	if b := s.Bills(); len(b) != 8 || b[3].Path != "/v1/chat/completions" || b[3].CacheRead != c2 || b[3].Input != p2-c2 {
		t.Fatalf("bills: %+v", b)
	}
}

// Without WithPromptCaching usage is the plain estimate, as before.
func TestPromptCacheOff(t *testing.T) {
	s := newServer(t)
	body := anBody(text(8000, "off"), true, "q")
	anCall(t, s, body)
	if got := anCall(t, s, body); got.read != 0 || got.write != 0 || s.Bills() != nil {
		t.Fatalf("caching off: %+v %v", got, s.Bills())
	}
}
