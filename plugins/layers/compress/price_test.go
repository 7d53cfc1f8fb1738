//go:build !wasip1

package main

// The priced decision: the formula on worked numbers, the horizon prior,
// and the request hook's choices (profitable, unprofitable, over the
// limit, a stored summary kept) on the shared session.

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The README's worked example, term by term: the coding-agent replay's
// request 24 (host/replay), the first over the default budget, 24 requests
// so far.
func TestNetWorkedExample(t *testing.T) {
	anthropic := prices{cacheRead: 0.1, cacheWrite: 1.25, summaryInput: 1, summaryOutput: 5}
	f := fold{removed: 16076, summary: 1051, kept: 5641, fresh: 251, callsIn: 16341, callsOut: 1024, horizon: 8}
	asIs := 0.1*(16076+5641-251) + 1.25*251 // 2,460.35
	folded := 1.25 * (1051 + 5641)          // 8,365
	call := 16341 + 5*1024.0                // 21,461
	later := 8 * 0.1 * (16076 - 1051)       // 12,020
	if got, want := anthropic.net(f), later+asIs-folded-call; math.Abs(got-want) > 1e-6 || math.Abs(got+15345.65) > 1e-6 {
		t.Fatalf("net = %.2f, want %.2f (−15,345.65)", got, want)
	}
	// It would break even after (8,365 + 21,461 − 2,460.35) / 1,502.5 =
	// 18.2 further requests; with a summariser at a third of the price
	// (claude-haiku-4-5 for claude-sonnet-4-5) after 8.7.
	at := func(p prices, h float64) float64 { g := f; g.horizon = h; return p.net(g) }
	if at(anthropic, 18) >= 0 || at(anthropic, 19) <= 0 {
		t.Fatalf("break-even not between 18 and 19: %.0f, %.0f", at(anthropic, 18), at(anthropic, 19))
	}
	haiku := anthropic
	haiku.summaryInput, haiku.summaryOutput = 1.0/3, 5.0/3
	if at(haiku, 8) >= 0 || at(haiku, 9) <= 0 {
		t.Fatalf("haiku: break-even not between 8 and 9: %.0f, %.0f", at(haiku, 8), at(haiku, 9))
	}
	// No prompt cache: the same fold saves its size on this request and on
	// every later one.
	none := prices{cacheRead: 1, cacheWrite: 1, summaryInput: 1, summaryOutput: 5}
	if got, want := none.net(f), 8*15025+(16076-1051)-21461.0; math.Abs(got-want) > 1e-6 || got <= 0 {
		t.Fatalf("uncached net = %.2f, want %.2f", got, want)
	}
	// Monotone where it must be: dearer writes or cheaper reads never make
	// a fold more attractive.
	dearWrites := anthropic
	dearWrites.cacheWrite = 2
	cheapReads := anthropic
	cheapReads.cacheRead = 0.05
	if dearWrites.net(f) >= anthropic.net(f) || cheapReads.net(f) >= anthropic.net(f) {
		t.Fatal("net not monotone in the cache prices")
	}
}

func TestHorizon(t *testing.T) {
	turns := func(assistant int) []wire.Message {
		var m []wire.Message
		for range assistant {
			m = append(m, userSays("q"), assistantSays("a"))
		}
		return append(m, userSays("q"))
	}
	for _, tc := range []struct {
		n, max int
		want   float64
	}{{0, 20, 0}, {1, 20, 1.0 / 3}, {24, 20, 8}, {60, 20, 20}, {600, 20, 20}, {24, 0, 0}} {
		if h := horizon(turns(tc.n), tc.max); math.Abs(h-tc.want) > 1e-9 {
			t.Errorf("%d requests so far, cap %d: horizon %v, want %v", tc.n, tc.max, h, tc.want)
		}
	}
}

func TestFreshTokens(t *testing.T) {
	msgs := []wire.Message{
		userSays(strings.Repeat("q", 400)),                               // 104
		assistantCalls("", call{"A", "search", `{"q":"x"}`}),             // 4+2+3 = 9
		toolResults(result{id: "A", content: strings.Repeat("r", 4000)}), // 1004
	}
	toks := []int{messageTokens(&msgs[0]), messageTokens(&msgs[1]), messageTokens(&msgs[2])}
	if got := freshTokens(msgs, toks); got != toks[1]+toks[2] {
		t.Fatalf("fresh %d, want the last assistant turn and after (%d)", got, toks[1]+toks[2])
	}
	if got := freshTokens(msgs[:1], toks[:1]); got != toks[0] {
		t.Fatalf("no assistant turn: fresh %d, want all (%d)", got, toks[0])
	}
}

// scaled is the session's scale (smallBudget) at the default prices.
const scaled = `{"budget_tokens":5000,"chunk_tokens":1200,"summary_max_tokens":300`

// The hook's choices on the whole session in one request (28 requests so
// far, so a long expected horizon) and on a prefix of it.
func TestDecision(t *testing.T) {
	s := agentSession()
	req := func(msgs []wire.Message) wire.LayerRequest {
		r := sessionRequest(s)
		r.Request.Messages = msgs
		return r
	}
	netOf := func(res wire.LayerResult) int {
		n, err := strconv.Atoi(header(res.Headers, HeaderNet))
		if err != nil {
			t.Fatalf("%s: %v (headers %v)", HeaderNet, err, res.Headers)
		}
		return n
	}
	turns := userTurns(s.Msgs)

	// Default (cached) prices, the summariser the caller's own model. Early
	// in the session the kept tail is most of what is over budget: a fold
	// rewrites it at 1.25× and cannot pay back.
	early := s.Msgs[:turns[13]+1]
	h := plugintest.New(t, scaled+`}`)
	if estimate(s.System, early) <= 5000 {
		t.Fatalf("prefix under budget: %d", estimate(s.System, early))
	}
	res := h.OnRequest(req(early))
	if header(res.Headers, HeaderCompress) != StatusSkipped || header(res.Headers, HeaderReason) != ReasonUnprofitable ||
		netOf(res) >= 0 || res.Patched != 0 || h.Metrics[metricCalls] != 0 || h.Metrics[metricUnprofitable] != 1 {
		t.Fatalf("early: headers %v, metrics %v", res.Headers, h.Metrics)
	}

	// The whole session, 28 requests so far: with the caller's own model
	// as the summariser, still not; with one at a twentieth of its price
	// (gpt-4o-mini for claude-sonnet-4-5) the fold pays (the summariser
	// fails here, so the request goes on whole).
	res = h.OnRequest(req(s.Msgs))
	if header(res.Headers, HeaderReason) != ReasonUnprofitable || netOf(res) >= 0 {
		t.Fatalf("whole session: headers %v", res.Headers)
	}
	h = plugintest.New(t, scaled+`,"summary_input_price":0.05,"summary_output_price":0.2}`)
	res = h.OnRequest(req(s.Msgs))
	if header(res.Headers, HeaderCompress) != StatusFailed || header(res.Headers, HeaderReason) != ReasonProfitable ||
		netOf(res) <= 0 || h.Metrics[metricCalls] != 1 {
		t.Fatalf("whole session, cheap summariser: headers %v, metrics %v", res.Headers, h.Metrics)
	}

	// Over limit_tokens a fold is made whatever it costs.
	h = plugintest.New(t, scaled+`,"limit_tokens":5000}`)
	res = h.OnRequest(req(early))
	if header(res.Headers, HeaderCompress) != StatusFailed || header(res.Headers, HeaderReason) != ReasonOverLimit ||
		netOf(res) >= 0 || h.Metrics[metricOverLimit] != 1 || h.Metrics[metricCalls] != 1 {
		t.Fatalf("over limit: headers %v, metrics %v", res.Headers, h.Metrics)
	}

	// A stored summary stays in use when folding more does not pay: the
	// provider has the folded prefix cached.
	mid := s.Msgs[:turns[19]+1]
	h = plugintest.New(t, scaled+`}`)
	c := mustConfig(t, scaled+`}`)
	p := makePlan(s.System, mid, c)
	sm := summariser{cfg: c, model: "claude-sonnet-4-5"}
	keys := chunkKeys(sm.seed(), mid, p.ends, len(p.ends))
	h.KVPut(storeKey(keys[0]), encodeEntry("S"), 0)
	if p.size(mid, 1, 1) <= 5000 {
		t.Fatalf("the stored summary brings the conversation under budget: %d", p.size(mid, 1, 1))
	}
	res = h.OnRequest(req(mid))
	if header(res.Headers, HeaderCompress) != StatusCached || header(res.Headers, HeaderReason) != ReasonUnprofitable ||
		header(res.Headers, HeaderTurns) != strconv.Itoa(p.ends[0])+"/"+strconv.Itoa(len(mid)) || h.Metrics[metricCalls] != 0 {
		t.Fatalf("stored: headers %v, metrics %v", res.Headers, h.Metrics)
	}
}

// After a pause longer than the provider's cache lifetime, the whole
// history is billed as new whether or not the layer folds, so a fold that
// did not pay under a warm cache does. The lifetime is what the request's
// breakpoints say, or cache_lifetime (an hour) when it carries none; a
// conversation met for the first time counts as warm.
func TestColdCache(t *testing.T) {
	s := agentSession()
	withBP := func(ttl string) wire.LayerRequest {
		r := sessionRequest(s)
		msgs := clone(s.Msgs)
		last := &msgs[len(msgs)-1]
		last.Content[len(last.Content)-1].CacheControl = []byte(`{"type":"ephemeral"` + ttl + `}`)
		r.Request.Messages = msgs
		return r
	}
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		req    wire.LayerRequest
		pause  time.Duration
		reason string
	}{
		{"5-minute breakpoint, 4 minutes", withBP(""), 4 * time.Minute, ReasonUnprofitable},
		{"5-minute breakpoint, 6 minutes", withBP(""), 6 * time.Minute, ReasonColdCache},
		{"1-hour breakpoint, 6 minutes", withBP(`,"ttl":"1h"`), 6 * time.Minute, ReasonUnprofitable},
		{"1-hour breakpoint, 61 minutes", withBP(`,"ttl":"1h"`), 61 * time.Minute, ReasonColdCache},
		{"no breakpoint, 30 minutes", sessionRequest(s), 30 * time.Minute, ReasonUnprofitable},
		{"no breakpoint, 61 minutes", sessionRequest(s), 61 * time.Minute, ReasonColdCache},
	} {
		h := plugintest.New(t, scaled+`}`)
		now := t0
		h.Clock = func() time.Time { return now }
		// First met: warm, whatever the clock says.
		res := h.OnRequest(tc.req)
		if header(res.Headers, HeaderReason) != ReasonUnprofitable {
			t.Fatalf("%s: first request: %v", tc.name, res.Headers)
		}
		warm, _ := strconv.Atoi(header(res.Headers, HeaderNet))
		now = now.Add(tc.pause)
		res = h.OnRequest(tc.req)
		if header(res.Headers, HeaderReason) != tc.reason {
			t.Fatalf("%s: %v", tc.name, res.Headers)
		}
		net, _ := strconv.Atoi(header(res.Headers, HeaderNet))
		t.Logf("%-32s net %6d (warm %6d): %s", tc.name, net, warm, tc.reason)
	}
	if c := mustConfig(t, `{"cache_lifetime":"5m"}`); c.lifetime != 5*time.Minute {
		t.Fatalf("cache_lifetime: %v", c.lifetime)
	}
}
