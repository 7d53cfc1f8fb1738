package main

import (
	"unsafe"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// An agent's request is its whole conversation again, with one new turn.
// When the turns before the newest user message (and the system prompt)
// held nothing to mask —
// no value found, no placeholder-shaped token — in the previous request,
// the same turns this time hold nothing either: what the scan finds in a
// turn is a pure function of its bytes and the configuration. So the
// bytes of those turns, as the host encoded them (one span of the call's
// input, plugin.Input), are remembered per tenant, and a request whose
// turns start with a remembered run, byte for byte and ending on a turn,
// skips them: no segments collected, no memo lookups. A turn beyond the
// run (the previous request's newest turns, the answers since) is
// scanned, through the text memo, as before; when every turn before the
// newest user message is clean, the longer run is remembered.
//
// Not used when extra patterns are configured: the host's regex set runs
// over every segment and is not memoised (memo.go).

const (
	// historyRuns is how many runs are kept (recent tenants and
	// conversations); a new one replaces the oldest.
	historyRuns = 4
	// historyMaxBytes bounds a run's copy of its turns, and of its system
	// prompt: at most 256 KiB an instance. A longer history is not
	// remembered (its turns go through the text memo), nor a longer
	// system prompt (it goes through the text memo).
	historyMaxBytes = 32 << 10
)

// historyRun is the encoded bytes of a tenant's first n turns, all clean,
// and of its system prompt's blocks when they were clean too (sys; nil
// when not).
type historyRun struct {
	tenant string
	b      []byte
	n      int
	sys    []byte
}

var (
	history     [historyRuns]historyRun
	historyNext int
	historyHits int // requests that skipped turns (tests read it)
)

// forgetHistory drops every run (a new configuration).
func forgetHistory() {
	for i := range history {
		history[i].n, history[i].tenant = 0, ""
		history[i].b, history[i].sys = history[i].b[:0], nil
	}
}

// turnAt is where message i starts in in (its role's length prefix), or
// false when it was not decoded from in or has no role to anchor it.
func turnAt(in []byte, r *wire.Request, i int) (int, bool) {
	role := r.Messages[i].Role
	if role == "" || len(in) == 0 {
		return 0, false
	}
	d := uintptr(unsafe.Pointer(unsafe.StringData(role))) - uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	if d == 0 || d > uintptr(len(in)) || len(role) >= 0x80 {
		return 0, false
	}
	return int(d) - 1, true // a role is shorter than 128 bytes: a one-byte length
}

// systemSpan is where the system prompt's blocks are in in: from its
// first block (a text, anchored by its text) to the messages' count. False
// when there is no such anchor.
func systemSpan(in []byte, r *wire.Request) (int, int, bool) {
	if len(r.System) == 0 || len(r.Messages) == 0 || r.System[0].Type != wire.BlockText || r.System[0].Text == "" {
		return 0, 0, false
	}
	t := r.System[0].Text
	d := uintptr(unsafe.Pointer(unsafe.StringData(t))) - uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	to, ok := turnAt(in, r, 0)
	if !ok || d > uintptr(len(in)) {
		return 0, 0, false
	}
	from := int(d) - uvarintLen(len(t)) - 1 // the block's type (text: one byte) and the text's length
	to -= uvarintLen(len(r.Messages))
	if from <= 0 || from > to {
		return 0, 0, false
	}
	return from, to, true
}

// uvarintLen is the length of n as an unsigned varint.
func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// cleanTurns returns how many leading turns of r, before message latest,
// a remembered run of tenant covers, and whether it covers the system
// prompt too.
func cleanTurns(r *wire.Request, tenant string, latest int) (int, bool) {
	if customSet != nil || latest < 1 {
		return 0, false
	}
	in := plugin.Input()
	from, ok := turnAt(in, r, 0)
	if !ok {
		return 0, false
	}
	best := -1
	for i := range history {
		h := &history[i]
		if best >= 0 && h.n <= history[best].n || h.n > latest || h.n < 1 || h.tenant != tenant {
			continue
		}
		to, ok := turnAt(in, r, h.n)
		if ok && to-from == len(h.b) && memo.Equal(in[from:to], h.b) {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	historyHits++
	h := &history[best]
	sys := false
	if h.sys != nil {
		if sf, st, ok := systemSpan(in, r); ok && memo.Equal(in[sf:st], h.sys) {
			sys = true
		}
	}
	return h.n, sys
}

// rememberTurns keeps the first latest turns of r as a clean run of
// tenant, with the system prompt when sysClean, unless a run of them is
// kept already.
func rememberTurns(r *wire.Request, tenant string, latest int, sysClean bool) {
	if customSet != nil || latest < 1 {
		return
	}
	in := plugin.Input()
	from, ok1 := turnAt(in, r, 0)
	to, ok2 := turnAt(in, r, latest)
	if !ok1 || !ok2 || to <= from || to-from > historyMaxBytes {
		return
	}
	b := in[from:to]
	var sys []byte
	if sf, st, ok := systemSpan(in, r); ok && sysClean && st-sf <= historyMaxBytes {
		sys = in[sf:st]
	}
	for i := range history {
		h := &history[i]
		if h.n == latest && h.tenant == tenant && memo.Equal(h.b, b) && (sys == nil) == (h.sys == nil) && memo.Equal(h.sys, sys) {
			return
		}
	}
	// The same conversation one turn on replaces its shorter run, when it
	// is the one kept: the slot of a run that b extends.
	slot := -1
	for i := range history {
		h := &history[i]
		if h.tenant == tenant && h.n > 0 && h.n < latest && len(h.b) < len(b) && memo.Equal(h.b, b[:len(h.b)]) {
			slot = i
			break
		}
	}
	if slot < 0 {
		slot = historyNext
		historyNext = (historyNext + 1) % historyRuns
	}
	h := &history[slot]
	if h.tenant != tenant {
		h.tenant = tenant // the masker's copy (onRequest), not a view of the input
	}
	h.b = append(h.b[:0], b...)
	h.n = latest
	if sys != nil {
		h.sys = append(h.sys[:0:cap(h.sys)], sys...)
	} else {
		h.sys = nil
	}
}
