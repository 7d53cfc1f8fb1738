package main

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/memo"
)

// An agent resends its system prompt, tools and whole conversation on every
// turn: of an 85 KB Claude Code request only the last turn is new. The
// built-in scan is a pure function of a segment's text, its JSON member
// name and the configuration (fixed for an instance's life), so its result
// for a segment seen before is remembered, keyed by the host's native
// SHA-256 of the text: hashing 85 KB natively costs a few tens of µs, the
// scan inside wasm about half a millisecond.
//
// The memo (sdk/memo) lives in the instance's memory and is keyed per
// tenant and member as well. It holds only offsets and placeholder-shaped
// tokens, never a detected value. The configured extra patterns (host regex
// set) are not memoised: they still run over every segment.

const (
	// memoMinLen: shorter segments are scanned, not hashed; a host call and
	// a map lookup cost about as much as scanning a few hundred bytes.
	memoMinLen = 512
	// memoMaxEntries bounds the memo; when full it starts over.
	memoMaxEntries = 4096
)

// memoEntry is what the scan found in a segment: its spans (offsets into
// the segment) and the placeholder-shaped tokens it holds.
type memoEntry struct {
	spans []span
	taken []string
}

var memoized = memo.Table[memoEntry]{Max: memoMaxEntries}

// scanSegment appends the built-in entities of text (a segment whose JSON
// member is member) to k.spans, from the memo when this tenant's instance
// scanned the same text before.
func (k *masker) scanSegment(text, member string) {
	k.det.member = member
	if len(text) < memoMinLen {
		k.spans = k.det.scan(text, k.spans)
		return
	}
	key := memo.KeyOf(k.tenant, member, text)
	if e, ok := memoized.Get(key); ok {
		k.spans = append(k.spans, e.spans...)
		k.det.taken = append(k.det.taken, e.taken...)
		return
	}
	s0, t0 := len(k.spans), len(k.det.taken)
	k.spans = k.det.scan(text, k.spans)
	var e memoEntry
	if len(k.spans) > s0 {
		e.spans = append([]span(nil), k.spans[s0:]...)
	}
	for _, t := range k.det.taken[t0:] {
		// A copy: the token must not keep the request's text alive.
		e.taken = append(e.taken, strings.Clone(t))
	}
	memoized.Put(key, e, 1)
}
