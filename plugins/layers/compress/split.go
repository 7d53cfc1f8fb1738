package main

import (
	"strconv"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Token estimate: one token per four bytes, rounded up, per block (the rule
// of thumb sdk/adapter.EstimateTokens and the fake upstream use), plus
// messageOverhead per message for the role markers chat templates add.
// Deliberately cheap — this runs on every request — and it only has to
// decide when to compress, not bill anyone.

// messageOverhead is the estimated framing of one message, in tokens.
const messageOverhead = 4

func est(bytes int) int { return (bytes + 3) / 4 }

func blockTokens(b *wire.Block) int {
	return est(len(b.Text)) + est(len(b.Data)) + est(len(b.Name))
}

func messageTokens(m *wire.Message) int {
	n := messageOverhead
	for i := range m.Content {
		n += blockTokens(&m.Content[i])
	}
	return n
}

func systemTokens(system []wire.Block) int {
	n := 0
	for i := range system {
		n += blockTokens(&system[i])
	}
	return n
}

// estimate is the estimated prompt size of a request's system prompt and
// messages. Tool definitions are not counted: this layer cannot shrink them
// (that is L4's job), and reading them would cost every request their
// decoding.
func estimate(system []wire.Block, msgs []wire.Message) int {
	n := systemTokens(system)
	for i := range msgs {
		n += messageTokens(&msgs[i])
	}
	return n
}

// cutBefore reports whether a split may fall just before m, as far as m
// itself is concerned: the kept turns then start with m. Before an assistant
// turn the summary becomes a user turn of its own; before a user turn it is
// put at the start of that turn — either way the roles still alternate. A
// user turn holding tool results is never a start: its tool calls would be
// summarised away from it.
func cutBefore(m *wire.Message) bool {
	switch m.Role {
	case "assistant":
		return true
	case "user":
		for i := range m.Content {
			if m.Content[i].Type == wire.BlockToolResult {
				return false
			}
		}
		return true
	}
	return false
}

// trackCalls updates the list of tool calls still waiting for their results
// after message m: a split is allowed only where none is open, so a tool
// call and its result are always on the same side.
func trackCalls(open []string, m *wire.Message) []string {
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case wire.BlockToolUse:
			open = append(open, b.ID)
		case wire.BlockToolResult:
			for j, id := range open {
				if id == b.ID {
					open = append(open[:j], open[j+1:]...)
					break
				}
			}
		}
	}
	return open
}

// protectFrom is the largest split allowed: the last keepRecent turns stay
// verbatim, and so does the last user turn that asks something (a user turn
// with content other than tool results: the question being answered — a
// trailing tool result does not displace it) and everything after it.
func protectFrom(msgs []wire.Message, keepRecent int) int {
	limit := max(len(msgs)-keepRecent, 0)
	lastUser := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != "user" {
			continue
		}
		if lastUser < 0 {
			lastUser = i
		}
		for j := range m.Content {
			if m.Content[j].Type != wire.BlockToolResult {
				return min(limit, i)
			}
		}
	}
	if lastUser < 0 {
		return 0 // no user turn at all: nothing is summarised
	}
	return min(limit, lastUser)
}

// chunkEnds appends to dst the ends of the chunks the conversation is
// summarised in, up to limit: walking from the first turn, a chunk closes at
// the first allowed split once it holds at least chunk tokens. The ends
// depend only on the turns before them, so when a conversation grows, the
// chunks it already had keep their boundaries (and their summaries' keys).
func chunkEnds(dst []int, msgs []wire.Message, toks []int, chunk, limit int) []int {
	open := openScratch[:0]
	acc := 0
	for i := 0; i < len(msgs) && i <= limit; i++ {
		if i > 0 {
			acc += toks[i-1]
			if acc >= chunk && len(open) == 0 && cutBefore(&msgs[i]) {
				dst = append(dst, i)
				acc = 0
			}
		}
		open = trackCalls(open, &msgs[i])
	}
	openScratch = open[:0]
	return dst
}

// Scratch reused by every request of the instance.
var (
	openScratch []string
	tokScratch  []int
	endScratch  []int
)

// plan is what one request over budget may fold.
type plan struct {
	total int   // estimated tokens of the system prompt and messages, as sent
	sys   int   // of which the system prompt
	toks  []int // estimated tokens of each message (valid until the next request)
	ends  []int // chunk ends that may be summarised (valid until the next request)
}

// summaryIntro is what the summary is introduced with in the conversation.
func summaryIntro(turns int) string {
	return "Summary of the earlier conversation (" + strconv.Itoa(turns) +
		" turns, condensed by the gateway to save context):\n\n"
}

// makePlan estimates the request and, over budget, finds the chunk ends
// that may be summarised.
func makePlan(system []wire.Block, msgs []wire.Message, c config) plan {
	sys := systemTokens(system)
	toks := tokScratch[:0]
	total := sys
	for i := range msgs {
		t := messageTokens(&msgs[i])
		toks = append(toks, t)
		total += t
	}
	tokScratch = toks
	p := plan{total: total, sys: sys, toks: toks}
	if total <= c.budget {
		return p
	}
	p.ends = chunkEnds(endScratch[:0], msgs, toks, c.chunk, protectFrom(msgs, c.keepRecent))
	endScratch = p.ends
	return p
}

// split is where folding chunks [0, k) cuts the conversation (k ≥ 1).
func (p *plan) split(k int) int { return p.ends[k-1] }

// kept is the estimated size of the turns kept verbatim when chunks [0, k)
// are folded (k ≥ 1).
func (p *plan) kept(k int) int { return sum(p.toks[p.split(k):]) }

// summaryTokens is the estimated size of a summary of text's length put in
// front of the turns from split on: its block, and a turn of its own when
// the first kept turn is the assistant's.
func summaryTokens(msgs []wire.Message, split, textBytes int) int {
	n := est(len(summaryIntro(split)) + textBytes)
	if msgs[split].Role != "user" {
		n += messageOverhead
	}
	return n
}

// size is the estimated request with chunks [0, k) replaced by a summary of
// textBytes bytes.
func (p *plan) size(msgs []wire.Message, k, textBytes int) int {
	return p.sys + summaryTokens(msgs, p.split(k), textBytes) + p.kept(k)
}

// target is the fewest chunks, more than the have+1 a stored summary
// already covers, whose folding brings the estimate, counting a new
// summary at its maximum size, to at most target tokens — or every chunk
// when none does. Folding down to a low-water mark rather than just under
// the budget leaves the conversation room to grow on the same summary, so
// the provider caches the new prefix for many requests before the next
// fold rewrites it.
func (p *plan) target(msgs []wire.Message, have int, c config) int {
	for k := have + 2; k <= len(p.ends); k++ {
		if p.size(msgs, k, 4*c.summaryMax) <= c.target {
			return k
		}
	}
	return len(p.ends)
}

// apply returns the conversation with msgs[:split] replaced by the summary:
// put at the start of the first kept turn when that is a user turn, or as a
// user turn of its own before a kept assistant turn, so the roles still
// alternate and the conversation still starts with the user. The system
// prompt is not touched (the provider's prefix cache of system + tools stays
// valid).
func apply(msgs []wire.Message, split int, summary string) []wire.Message {
	block := wire.Block{Type: wire.BlockText, Text: summaryIntro(split) + summary}
	first := &msgs[split]
	out := make([]wire.Message, 0, len(msgs)-split+1)
	if first.Role == "user" {
		content := make([]wire.Block, 0, len(first.Content)+1)
		content = append(append(content, block), first.Content...)
		out = append(out, wire.Message{Role: "user", Name: first.Name, Content: content})
		return append(out, msgs[split+1:]...)
	}
	out = append(out, wire.Message{Role: "user", Content: []wire.Block{block}})
	return append(out, msgs[split:]...)
}
