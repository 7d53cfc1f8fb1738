package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Compression is priced. Replacing turns with a summary makes every later
// request shorter, but it has two costs of its own: the summariser's call,
// and — because the provider caches prompts by exact prefix — the rewrite of
// everything after the system prompt, which the provider had cached and now
// bills again as new (Anthropic: a cache write at 1.25× input, where reading
// the same history cost 0.1×). Under a warm cache the history being folded
// costs only its read price per request, so a fold pays back slowly and
// often never within the conversation. The layer therefore folds only when
// the expected saving over the requests still to come beats those costs, or
// when the conversation would otherwise overflow (limit_tokens), where
// compression is necessary rather than an optimisation.
//
// Prices are relative to the caller's model's uncached input token (= 1),
// so the rule needs no catalog: the layer is not handed prices (it sees the
// model name, the system prompt and the messages), and the defaults are the
// least favourable of the major providers' usual rules — reads at 0.1×
// (Anthropic, OpenAI's gpt-5 family; gpt-4o 0.5×), writes at 1.25×
// (Anthropic's 5-minute entries; OpenAI writes at 1×), a summariser as dear
// as the caller's own model with output at 5× input (Anthropic; OpenAI 4×).
// A fold that pays under them pays under any of those rules for the same
// horizon; an operator who knows better sets the four prices (README, "How
// it decides"), e.g. cache_write_price = 2 for Anthropic's 1-hour entries.

// prices are the per-token prices the decision uses, relative to the
// caller's model's uncached input token.
type prices struct {
	cacheRead     float64 // a prompt token read from the provider's cache
	cacheWrite    float64 // a prompt token written to it (1 when writes cost nothing extra)
	summaryInput  float64 // a token the summariser reads
	summaryOutput float64 // a token it writes
}

// fold describes one candidate compression, in estimated tokens, as the
// provider would see the messages of this request.
type fold struct {
	removed  int     // tokens the fold replaces: the turns folded in, and the summary they were folded into before, if any
	summary  int     // the new summary's tokens (at most, counted in full)
	kept     int     // tokens of the turns kept verbatim after it
	fresh    int     // tokens the provider bills as new either way: the newest turns, or all of them when its cache went cold
	callsIn  int     // tokens the summariser reads, over all its calls (instructions and prompt included)
	callsOut int     // tokens it may write, over all its calls
	horizon  float64 // further requests expected in this conversation
}

// net is the expected saving of the fold, in the caller's model's input
// tokens, over this request and the horizon after it; a fold is worth
// making only when it is positive.
//
//	this request, as is:     cacheRead·(removed + kept − fresh) + cacheWrite·fresh
//	this request, folded:    cacheWrite·(summary + kept)
//	the summariser:          summaryInput·callsIn + summaryOutput·callsOut
//	each later request:      cacheRead·(removed − summary) saved
//
// The system prompt and the tools are the same either way, and so is the
// answer. The later saving assumes the cache stays warm (a cold one would
// bill both prompts in full: a larger saving, not counted). When the cache
// has gone cold since the conversation's last request, fresh is everything:
// the provider rewrites the whole history anyway, and a fold costs little
// more than its summariser call.
func (p prices) net(f fold) float64 {
	asIs := p.cacheRead*float64(f.removed+f.kept-f.fresh) + p.cacheWrite*float64(f.fresh)
	folded := p.cacheWrite * float64(f.summary+f.kept)
	call := p.summaryInput*float64(f.callsIn) + p.summaryOutput*float64(f.callsOut)
	later := f.horizon * p.cacheRead * float64(f.removed-f.summary)
	return later + asIs - folded - call
}

// horizon is the number of further requests a fold must pay back within,
// at most maxHorizon. Nothing is known of a conversation's future but its
// past, so it takes the usual prior for lifetimes that spread like a power
// law (Lindy's): a conversation that has made n requests makes at least t
// further with probability n/(n+t) — as many again with even odds. A fold
// is a bet that the conversation goes on long enough; the layer makes it
// only when it pays back within the number of requests the conversation
// reaches with probability 3/4, t = n/3. (Counting the expected number of
// further requests instead — about 14.5 for n = 24, against 8 — folded a
// session that ended six requests later, at a 12 % loss.) Each request so
// far left one assistant turn in the conversation this one carries.
func horizon(msgs []wire.Message, maxHorizon int) float64 {
	n := 0
	for i := range msgs {
		if msgs[i].Role == "assistant" {
			n++
		}
	}
	return min(float64(n)/3, float64(maxHorizon))
}

// freshTokens is the estimated size of the turns the provider has not seen
// yet whether or not the layer folds: the previous request's prompt ended
// before its answer, the last assistant turn, so that turn and what follows
// it are new.
func freshTokens(msgs []wire.Message, toks []int) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		n += toks[i]
		if msgs[i].Role == "assistant" {
			break
		}
	}
	return n
}

// Cache lifetimes of the providers' prompt caches, refreshed by every read.
const (
	lifetime5m = 5 * time.Minute // Anthropic's default entries
	lifetime1h = time.Hour       // Anthropic's "ttl":"1h" entries; OpenAI's longest in-memory retention
)

// cacheLifetime is how long the provider keeps the conversation's prefix
// between two requests: what the request's breakpoints say (Anthropic: five
// minutes, an hour for "ttl":"1h"), or def when it carries none (OpenAI's
// automatic cache keeps a prefix 5–10 minutes and up to an hour; a later
// layer may add breakpoints).
func cacheLifetime(system []wire.Block, msgs []wire.Message, def time.Duration) time.Duration {
	found := false
	scan := func(blocks []wire.Block) bool {
		for i := range blocks {
			if cc := blocks[i].CacheControl; cc != nil {
				found = true
				if bytes.Contains(cc, []byte(`"1h"`)) {
					return true
				}
			}
		}
		return false
	}
	if scan(system) {
		return lifetime1h
	}
	for i := range msgs {
		if scan(msgs[i].Content) {
			return lifetime1h
		}
	}
	if found {
		return lifetime5m
	}
	return def
}

// lastSeen records that the conversation whose first chunk has key first
// sends a request now, and reports when it sent the one before (ok false
// when none is on record).
func lastSeen(first [32]byte, now time.Time, keep time.Duration) (prev time.Time, ok bool) {
	key := "t:" + hex.EncodeToString(first[:])
	if v, found := plugin.KVGet(key); found && len(v) == 8 {
		prev, ok = time.UnixMilli(int64(binary.BigEndian.Uint64(v))), true
	}
	_ = plugin.KVPut(key, binary.BigEndian.AppendUint64(nil, uint64(now.UnixMilli())), keep)
	return prev, ok
}
