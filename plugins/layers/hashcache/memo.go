package main

import (
	"encoding/binary"
	"strings"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// An agent resends its system prompt, tools and whole conversation on every
// turn; of each request only the last turn or two are new. Normalizing every
// byte inside wasm was most of this layer's request phase, and so, once
// long texts were memoised by their SHA-256, was the host call hashing each
// of them, and then hashing the whole canonical string again for the key.
//
// A long system block, the tool definitions and each run of messages (from
// the first, closed once it holds memoMinBytes) are pieces:
// the canonical string holds, in each one's place, sepDigest and the
// SHA-256 of its canonical bytes (the key is then the hash of hashes where
// pieces are, which SHA-256's collision resistance keeps as unique as
// before). A piece's canonical bytes depend only on what they were built
// from (and the configuration, fixed for an instance's life), so its digest
// is remembered by that input, compared byte for byte: it is reused only
// when its input is identical, whatever the map's hash says, and the
// canonical string — and so the key — is byte for byte what building it
// afresh gives.
//
// The memo is per instance and partitioned by tenant (the tenant is part of
// every input), so how long a request takes cannot tell one tenant whether
// another sent a text.

// memoMaxBytes bounds the memo's inputs, canonical bytes and tool calls
// held; when full it starts over.
const memoMaxBytes = 4 << 20

// memoMinBytes is the size (text and data) from which a system block or a
// run of messages is looked up: inside wasm a shorter one costs less to
// normalize than to look up (about 0.3 µs + 1.1 ns a byte against 0.7 µs
// + 0.3 ns a byte, wazero on this machine).
const memoMinBytes = 512

// Kinds of remembered pieces; the first byte of an input.
const (
	pieceSystem   = 'S' // one system block
	pieceTools    = 'T' // every tool definition, in the order given
	pieceMessages = 'M' // a run of messages, with the calls their tool results answer
)

// piece is what a memo entry holds: the exact input (tenant included),
// the SHA-256 of the canonical bytes built from it, whether those hold a
// volatile marker, and the tool calls a message made, which later tool
// results are named by.
type piece struct {
	in     []byte
	sum    [32]byte
	marker bool
	calls  []pieceCall
}

type pieceCall struct {
	id, name string
	in       []byte // its normalized input
}

// pieceMemo maps a hash of an input to its piece; a lookup compares the
// whole input, so two inputs with the same hash are a miss, never a wrong
// piece.
type pieceMemo struct {
	m     map[uint64]*piece
	last  [memoSlots]*piece // by slot: the pieces of the instance's previous request
	bytes int
	hits  int // tests read it
}

// memoSlots is how many places of a request remember their last piece:
// the first system blocks, the tools, the first runs of messages.
const memoSlots = 16

// Slots: slotTools, then the system blocks from slotSystem, the runs of
// messages from slotRuns; a later one has none.
const (
	slotTools  = 0
	slotSystem = 1
	slotRuns   = 4
)

// get returns the piece remembered for in, or nil. slot is where the
// piece stands in its request (last holds the piece found there by the
// instance's previous request): an agent resends its pieces in the same
// places, so that one is compared first, and the sampled hash and the
// map's lookup (about a microsecond inside wasm for the three or four
// pieces of a request) are only paid when it differs.
func (p *pieceMemo) get(slot int, in []byte) (*piece, uint64) {
	if slot < len(p.last) {
		if e := p.last[slot]; e != nil && memo.Equal(e.in, in) {
			p.hits++
			return e, 0
		}
	}
	h := memo.Spread(in)
	e := p.m[h]
	if e == nil || !memo.Equal(e.in, in) {
		return nil, h
	}
	p.hits++
	p.remember(slot, e)
	return e, h
}

// remember notes e as the piece at slot.
func (p *pieceMemo) remember(slot int, e *piece) {
	if slot < len(p.last) {
		p.last[slot] = e
	}
}

func (p *pieceMemo) put(h uint64, e *piece) {
	cost := len(e.in) + 96
	for _, c := range e.calls {
		cost += len(c.id) + len(c.name) + len(c.in) + 32
	}
	if p.m == nil || p.bytes+cost > memoMaxBytes {
		p.reset()
	}
	p.m[h] = e
	p.bytes += cost
}

func (p *pieceMemo) reset() {
	if p.m == nil {
		p.m = map[uint64]*piece{}
	} else {
		clear(p.m)
	}
	p.last = [memoSlots]*piece{}
	p.bytes = 0
}

var pieces pieceMemo

// appendStr appends s length-prefixed (uvarint), so concatenated fields
// cannot be mistaken for other fields.
func appendStr(b []byte, s string) []byte {
	n := uint64(len(s))
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	b = append(b, byte(n))
	return append(b, s...)
}

// startInput starts the input of a piece of kind in k.in.
func (k *keyBuilder) startInput(kind byte) {
	k.in = append(k.in[:0], kind)
	k.in = appendStr(k.in, k.tenant)
}

// inputBlock appends every field of b the canonical bytes may depend on.
func (k *keyBuilder) inputBlock(b *wire.Block) {
	in := append(k.in, byte(b.Type))
	if b.IsError {
		in = append(in, 1)
	} else {
		in = append(in, 0)
	}
	in = appendStr(in, b.ID)
	in = appendStr(in, b.Name)
	in = appendStr(in, b.Text)
	in = appendStr(in, bstr(b.Data))
	k.in = appendStr(in, bstr(b.Extra))
}

// systemBlock appends a system block's canonical bytes, from the memo when
// it was built before (and long enough to be worth it). Tool blocks (not expected in a system prompt) take
// the plain path: they read and write the conversation's calls.
func (k *keyBuilder) systemBlock(b *wire.Block, i int) {
	if b.Type == wire.BlockToolUse || b.Type == wire.BlockToolResult || len(b.Text)+len(b.Data) < memoMinBytes {
		k.block(b)
		return
	}
	k.startInput(pieceSystem)
	k.inputBlock(b)
	slot := memoSlots
	if i < slotRuns-slotSystem {
		slot = slotSystem + i
	}
	e, h := pieces.get(slot, k.in)
	if e != nil {
		k.usePiece(e)
		return
	}
	at := len(k.buf)
	k.block(b)
	k.newPiece(slot, h, at, len(k.calls), false)
}

// toolsSection appends the tool definitions' canonical bytes (see tools),
// from the memo when the same definitions came before in the same order.
func (k *keyBuilder) toolsSection(ts []wire.Tool) {
	if len(ts) == 0 {
		return
	}
	k.startInput(pieceTools)
	for i := range ts {
		t := &ts[i]
		k.in = appendStr(k.in, t.Name)
		k.in = appendStr(k.in, t.Description)
		k.in = appendStr(k.in, bstr(t.Schema))
		k.in = appendStr(k.in, bstr(t.Extra))
	}
	e, h := pieces.get(slotTools, k.in)
	if e != nil {
		k.usePiece(e)
		return
	}
	at := len(k.buf)
	k.tools(ts)
	k.newPiece(slotTools, h, at, len(k.calls), false)
}

// messages appends the messages' canonical bytes. They are taken in runs,
// from the first message on: a run closes once its text and data reach
// memoMinBytes, and is one piece; what is left at the end, shorter, is
// normalized. A run depends only on the messages before it, so as a
// conversation grows its runs stay the same and are found in the memo;
// only the newest messages are normalized again.
func (k *keyBuilder) messages(ms []wire.Message) {
	run := 0
	for i := 0; i < len(ms); {
		j, size := i, 0
		for j < len(ms) && size < memoMinBytes {
			for b := range ms[j].Content {
				size += len(ms[j].Content[b].Text) + len(ms[j].Content[b].Data)
			}
			j++
		}
		if size < memoMinBytes {
			at := len(k.buf)
			for ; i < len(ms); i++ {
				k.plainMessage(&ms[i])
			}
			if k.markers != nil && !k.volatile {
				k.volatile = hasMarker(k.buf[at:], k.markers)
			}
			return
		}
		k.run(ms[i:j], slotRuns+run)
		i = j
		run++
	}
}

// run appends a run of messages, from the memo when the same messages came
// before with their tool results answering the same calls (a result is
// named by the call it answers, which may be in an earlier message).
func (k *keyBuilder) run(ms []wire.Message, slot int) {
	k.startInput(pieceMessages)
	k.in = binary.AppendUvarint(k.in, uint64(len(ms)))
	for i := range ms {
		m := &ms[i]
		k.in = appendStr(k.in, m.Role)
		k.in = appendStr(k.in, m.Name)
		k.in = appendStr(k.in, bstr(m.Extra))
		k.in = binary.AppendUvarint(k.in, uint64(len(m.Content)))
		for i := range m.Content {
			b := &m.Content[i]
			k.inputBlock(b)
			if b.Type == wire.BlockToolResult {
				// The call before the run, if any; one inside the run is
				// determined by the run itself.
				if c := k.callOf(b.ID); c >= 0 {
					k.in = append(k.in, 1)
					k.in = appendStr(k.in, k.calls[c].name)
					k.in = appendStr(k.in, bstr(k.arena[k.calls[c].in[0]:k.calls[c].in[1]]))
				} else {
					k.in = append(k.in, 0)
				}
			}
		}
	}
	e, h := pieces.get(min(slot, memoSlots), k.in)
	if e != nil {
		k.usePiece(e)
		for _, c := range e.calls {
			a := len(k.arena)
			k.arena = append(k.arena, c.in...)
			k.calls = append(k.calls, call{id: c.id, name: c.name, in: [2]int{a, len(k.arena)}})
		}
		return
	}
	at, calls := len(k.buf), len(k.calls)
	for i := range ms {
		k.plainMessage(&ms[i])
	}
	k.newPiece(min(slot, memoSlots), h, at, calls, true)
}

// usePiece appends a remembered piece: its digest.
func (k *keyBuilder) usePiece(e *piece) {
	k.buf = append(k.buf, sepDigest)
	k.buf = append(k.buf, e.sum[:]...)
	k.volatile = k.volatile || e.marker
}

// newPiece replaces the canonical bytes written since at by their digest
// (the host's SHA-256) and remembers it, with the calls made since calls,
// under the input in k.in (copied: the input and the request's strings
// are the call's), and as the piece at slot. inMessages: the piece is a
// message, whose words the volatile markers are looked for in.
func (k *keyBuilder) newPiece(slot int, h uint64, at, calls int, inMessages bool) {
	e := &piece{in: append([]byte(nil), k.in...), sum: plugin.SHA256(k.buf[at:])}
	if inMessages && k.markers != nil {
		e.marker = hasMarker(k.buf[at:], k.markers)
	}
	for _, c := range k.calls[calls:] {
		e.calls = append(e.calls, pieceCall{id: strings.Clone(c.id), name: strings.Clone(c.name),
			in: append([]byte(nil), k.arena[c.in[0]:c.in[1]]...)})
	}
	k.buf = k.buf[:at]
	k.usePiece(e)
	pieces.put(h, e)
	pieces.remember(slot, e)
}

// text appends s normalized to the canonical string.
func (k *keyBuilder) text(s string) { k.buf = k.n.text(k.buf, s) }
