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
	"testing"

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
