//go:build !wasip1

package main

// Priced end to end: the session replayed as a Claude-Code-like client does
// (one request per user turn, a rolling cache_control breakpoint on the
// newest block) against a fake upstream that bills by Anthropic's
// prompt-caching rules (fakeupstream.WithPromptCaching), sent directly and
// through the layer, and priced at claude-sonnet-4-5's list prices. The
// summariser is the caller's own model, on the same fake, so its calls are
// on the same bill.

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
)

// sonnet prices one call at claude-sonnet-4-5's list prices (USD per
// million tokens: input 3, 5-minute cache write 3.75, cache read 0.30,
// output 15), in micro-USD.
func sonnet(b fakeupstream.Bill) float64 {
	return 3*float64(b.Input) + 3.75*float64(b.CacheWrite5m) + 6*float64(b.CacheWrite1h) + 0.3*float64(b.CacheRead) + 15*float64(b.Output)
}

// withBreakpoint marks the newest message's last block with cache_control,
// as Claude Code does on every request.
func withBreakpoint(t *testing.T, body string) string {
	var req map[string]any
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	msgs := req["messages"].([]any)
	blocks := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	blocks[len(blocks)-1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
	return mustJSON(req)
}

// pricedReplay sends the session turn by turn, with a rolling breakpoint or
// none (then the provider caches nothing), to the fake directly (layer "")
// or through a gateway running the layer with the given config, and
// returns the fake's bill in micro-USD, the calls it billed and the layer's
// statuses.
func pricedReplay(t *testing.T, layer string, breakpoints bool) (bill float64, calls int, statuses map[string]int) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithPromptCaching(nil))
	defer fake.Close()
	base := fake.URL()
	if layer != "" {
		base = startGateway(t, layerTOML+layer+providersTOML(fake.URL(), fake.URL())).URL
	}
	s := agentSession()
	statuses = map[string]int{}
	for _, u := range userTurns(s.Msgs) {
		body := anthropicBody(s, s.Msgs[:u+1])
		if breakpoints {
			body = withBreakpoint(t, body)
		}
		r := apitest.Post(t, base, "/v1/messages", []byte(body), "x-api-key", upKey)
		if r.Status != 200 {
			t.Fatalf("turn %d: %d %s", u, r.Status, r.Body)
		}
		if st := r.Header.Get(HeaderCompress); st != "" {
			statuses[st+"/"+r.Header.Get(HeaderReason)]++
		}
	}
	for _, b := range fake.Bills() {
		bill += sonnet(b)
		calls++
	}
	return bill, calls, statuses
}

const scaledTOML = "budget_tokens = 5000\nchunk_tokens = 1200\nsummary_max_tokens = 300\n"

// The layer never makes the session cost more than sending it directly:
// under a warm prompt cache, folding history the provider reads at 0.1×
// into a summary means a summariser call and a rewrite at 1.25× of every
// kept turn, which the session's remaining requests do not pay back — so
// the priced layer does not fold. The same layer priced as if there were no
// prompt cache (what it did before it was priced: fold whenever over
// budget) costs more than direct.
func TestE2EPricedSessionNeverCostsMore(t *testing.T) {
	direct, directCalls, _ := pricedReplay(t, "", true)
	priced, pricedCalls, pricedStatuses := pricedReplay(t, scaledTOML, true)
	unpriced, unpricedCalls, unpricedStatuses := pricedReplay(t, scaledTOML+"cache_read_price = 1\ncache_write_price = 1\n", true)
	t.Logf("direct:   $%.4f, %d calls", direct/1e6, directCalls)
	t.Logf("priced:   $%.4f (%+.1f%%), %d calls, %v", priced/1e6, 100*(priced-direct)/direct, pricedCalls, pricedStatuses)
	t.Logf("unpriced: $%.4f (%+.1f%%), %d calls, %v", unpriced/1e6, 100*(unpriced-direct)/direct, unpricedCalls, unpricedStatuses)
	if priced > direct {
		t.Errorf("the priced layer costs $%.4f, more than direct ($%.4f)", priced/1e6, direct/1e6)
	}
	if unpriced <= direct {
		t.Errorf("folding as if uncached costs $%.4f, no more than direct ($%.4f): the case this test guards is gone", unpriced/1e6, direct/1e6)
	}
}

// Without a prompt cache (a client that sets no breakpoint, no promptcache
// layer), every request pays its whole history: priced so, the layer folds,
// and the session costs less than sent directly.
func TestE2EPricedSessionSavesWithoutCache(t *testing.T) {
	direct, directCalls, _ := pricedReplay(t, "", false)
	folded, calls, statuses := pricedReplay(t, scaledTOML+"cache_read_price = 1\ncache_write_price = 1\n", false)
	t.Logf("direct, no cache: $%.4f, %d calls", direct/1e6, directCalls)
	t.Logf("layer, no cache:  $%.4f (%+.1f%%), %d calls, %v", folded/1e6, 100*(folded-direct)/direct, calls, statuses)
	if folded >= direct || statuses[StatusCompressed+"/"+ReasonProfitable] == 0 {
		t.Errorf("the layer costs $%.4f, direct $%.4f (%v)", folded/1e6, direct/1e6, statuses)
	}
}

// gpt4o prices one call at gpt-4o's list prices (USD per million tokens:
// input 2.50, cached input 1.25, output 10), in micro-USD.
func gpt4o(b fakeupstream.Bill) float64 {
	return 2.5*float64(b.Input) + 1.25*float64(b.CacheRead) + 10*float64(b.Output)
}

// gpt4oTOML prices the layer for gpt-4o callers as gpt-4o is billed:
// cached input at half the input price, no write surcharge, the summariser
// (the caller's own model) writing at 4× input. It must come last in the
// layer's config (a table of its own).
const gpt4oTOML = `
[[layer.config.prices]]
models = ["claude-*"]
cache_read_price = 0.1
[[layer.config.prices]]
models = ["gpt-4o", "gpt-4o-2024-*"]
cache_read_price = 0.5
cache_write_price = 1
summary_output_price = 4
`

// coldReplay sends the session as an OpenAI caller does (the provider's
// automatic prefix cache, no breakpoints) to the fake directly or through
// the layer; before the request of user turn pauseAt the provider's clock
// moves on by 10 minutes (its cache goes cold) and the gateway's by
// realPause.
func coldReplay(t *testing.T, layer string, pauseAt int, realPause time.Duration) (bill float64, statuses map[string]int) {
	var mu sync.Mutex
	virtual := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return virtual }
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithPromptCaching(clock))
	defer fake.Close()
	base := fake.URL() + "/v1"
	if layer != "" {
		base = startGateway(t, layerTOML+layer+providersTOML(fake.URL(), fake.URL())).URL + "/v1"
	}
	s := agentSession()
	statuses = map[string]int{}
	for i, u := range userTurns(s.Msgs) {
		mu.Lock()
		virtual = virtual.Add(30 * time.Second)
		if i == pauseAt {
			virtual = virtual.Add(10 * time.Minute)
		}
		mu.Unlock()
		if i == pauseAt {
			time.Sleep(realPause)
		}
		r := apitest.Post(t, base, "/chat/completions", []byte(openAIBody(s, s.Msgs[:u+1])), "Authorization", "Bearer "+upKey)
		if r.Status != 200 {
			t.Fatalf("turn %d: %d %s", u, r.Status, r.Body)
		}
		if st := r.Header.Get(HeaderCompress); st != "" {
			statuses[st+"/"+r.Header.Get(HeaderReason)]++
		}
	}
	for _, b := range fake.Bills() {
		bill += gpt4o(b)
	}
	return bill, statuses
}

// On gpt-4o (cached input at half price), priced as it is billed, folding
// pays even under a warm cache. Priced by the conservative defaults
// (Anthropic's 0.1× reads, 1.25× writes) it does not — until a pause longer
// than the provider keeps a prefix: the layer, told so by its clock
// (cache_lifetime = 2s, the pause 2.5 s), folds then, as the provider
// rewrites the whole history anyway, and the session costs less than sent
// directly. When no pause the gateway sees is longer than the lifetime, the
// layer sees a warm cache and makes no fold.
func TestE2EPricedColdCache(t *testing.T) {
	const pauseAt = 20
	direct, _ := coldReplay(t, "", pauseAt, 0)
	billed, billedStatuses := coldReplay(t, scaledTOML+gpt4oTOML, pauseAt, 0)
	cfg := scaledTOML + "cache_lifetime = \"2s\"\n"
	cold, coldStatuses := coldReplay(t, cfg, pauseAt, 2500*time.Millisecond)
	// Warm: the same, but no gap the gateway sees is as long as the
	// lifetime (an hour: no timing involved).
	warm, warmStatuses := coldReplay(t, scaledTOML+"cache_lifetime = \"1h\"\n", pauseAt, 0)
	t.Logf("direct:                                $%.4f", direct/1e6)
	t.Logf("layer priced as gpt-4o bills:          $%.4f (%+.1f%%) %v", billed/1e6, 100*(billed-direct)/direct, billedStatuses)
	t.Logf("layer, defaults, pause seen:           $%.4f (%+.1f%%) %v", cold/1e6, 100*(cold-direct)/direct, coldStatuses)
	t.Logf("layer, defaults, pause not seen:       $%.4f (%+.1f%%) %v", warm/1e6, 100*(warm-direct)/direct, warmStatuses)
	if billed >= direct || billedStatuses[StatusCompressed+"/"+ReasonProfitable] == 0 {
		t.Errorf("priced as billed: $%.4f against $%.4f direct, %v", billed/1e6, direct/1e6, billedStatuses)
	}
	if coldStatuses[StatusCompressed+"/"+ReasonColdCache] == 0 || cold >= direct {
		t.Errorf("pause seen: $%.4f against $%.4f direct, %v", cold/1e6, direct/1e6, coldStatuses)
	}
	if warm != direct || warmStatuses[StatusCompressed+"/"+ReasonProfitable] != 0 {
		t.Errorf("pause not seen: $%.4f against $%.4f direct, %v", warm/1e6, direct/1e6, warmStatuses)
	}
}
