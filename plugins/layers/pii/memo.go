package main

import (
	"strings"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// An agent resends its system prompt, tools and whole conversation on every
// turn: of an 85 KB Claude Code request only the last turn is new. The
// built-in scan is a pure function of a segment's text, its JSON member
// name and the configuration (fixed for an instance's life), so its result
// for a segment seen before is remembered, keyed by the host's native
// SHA-256 of the text: hashing 85 KB natively costs a few tens of µs, the
// scan inside wasm about half a millisecond.
//
// The memo lives in the instance's memory (each instance of the pool keeps
// its own) and is keyed per tenant as well, so how long a request takes
// cannot tell one tenant whether another sent a text. It holds only
// offsets and placeholder-shaped tokens, never a detected value. The
// configured extra patterns (host regex set) are not memoised: they still
// run over every segment.

const (
	// memoMinLen: shorter segments are scanned, not hashed; a host call and
	// a map lookup cost about as much as scanning a few hundred bytes.
	memoMinLen = 512
	// memoMaxEntries bounds the memo; when full it starts over.
	memoMaxEntries = 4096
)

type memoKey struct {
	tenant string
	member string
	sum    [32]byte
}

// memoEntry is what the scan found in a segment: its spans (offsets into
// the segment) and the placeholder-shaped tokens it holds.
type memoEntry struct {
	spans []span
	taken []string
}

var (
	memo     = map[memoKey]memoEntry{}
	memoHits int // segments answered from the memo (tests read it)
)

// scanSegment appends the built-in entities of text (a segment whose JSON
// member is member) to k.spans, from the memo when this tenant's instance
// scanned the same text before.
func (k *masker) scanSegment(text, member string) {
	k.det.member = member
	if len(text) < memoMinLen {
		k.spans = k.det.scan(text, k.spans)
		return
	}
	key := memoKey{tenant: k.tenant, member: member,
		sum: plugin.SHA256(unsafe.Slice(unsafe.StringData(text), len(text)))}
	if e, ok := memo[key]; ok {
		memoHits++
		k.spans = append(k.spans, e.spans...)
		k.det.taken = append(k.det.taken, e.taken...)
		return
	}
	s0, t0 := len(k.spans), len(k.det.taken)
	k.spans = k.det.scan(text, k.spans)
	if len(memo) >= memoMaxEntries {
		clear(memo)
	}
	var e memoEntry
	if len(k.spans) > s0 {
		e.spans = append([]span(nil), k.spans[s0:]...)
	}
	for _, t := range k.det.taken[t0:] {
		// A copy: the token must not keep the request's text alive.
		e.taken = append(e.taken, strings.Clone(t))
	}
	key.tenant, key.member = strings.Clone(key.tenant), strings.Clone(key.member)
	memo[key] = e
}
