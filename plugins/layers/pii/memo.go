package main

import (
	"math/bits"
	"strings"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/memo"
)

// An agent resends its system prompt, tools and whole conversation on every
// turn: of a request only the last turn is new. The built-in scan is a pure
// function of a segment's text, its JSON member name and the configuration
// (fixed for an instance's life), so its result for a segment seen before is
// remembered in the instance's memory, per tenant (so how long a request
// takes cannot tell one tenant what another sent). An entry holds offsets
// and placeholder-shaped tokens, never a detected value. The configured
// extra patterns (host regex set) are not memoised: they still run over
// every segment.
//
// Two tables, by the segment's length:
//
//   - up to textKeyMax bytes, the text itself is the key (texts): a hit is
//     never another text's result, and finding it costs a fraction of
//     scanning the text (inside wasm the scan of a digit-dense 400-byte
//     turn costs several µs) and of a host call;
//   - longer, the host's native SHA-256 of the text (memoized, sdk/memo):
//     hashing 85 KB natively costs a few tens of µs, the scan inside wasm
//     about half a millisecond, and keeping the text would cost its size.

const (
	// memoMinLen: shorter segments (JSON member names, short values) are
	// scanned, not looked up: the scan costs no more than the lookup.
	memoMinLen = 64
	// textKeyMax: segments up to this length are keyed by their text.
	textKeyMax = 8 << 10
	// textMaxBytes, textMaxSpans and textMaxEntries bound texts: its copies
	// of the texts (with tenant and member), the spans and tokens found,
	// its entries; when one is reached it starts over.
	textMaxBytes   = 256 << 10
	textMaxSpans   = 4096
	textMaxEntries = 2048
	textSlots      = 2 * textMaxEntries // open addressing, at most half full
	// textProbes bounds a lookup: it looks at the slot of its hash and the
	// next ones, this many in all; a text that finds them taken is not
	// remembered.
	textProbes = 8
	// memoMaxEntries bounds memoized; when full it starts over.
	memoMaxEntries = 4096
)

// memoEntry is what the scan found in a segment: its spans (offsets into
// the segment) and the placeholder-shaped tokens it holds.
type memoEntry struct {
	spans []span
	taken []string
}

var memoized = memo.Table[memoEntry]{Max: memoMaxEntries}

// textMemo is the table keyed by text. Go's own map hash and string
// compare go a byte or two at a time inside wasm (~1.4 µs per 500 bytes),
// and its maps allocate as they grow; so a 64-bit hash of tenant, member
// and text, eight bytes a step, picks a slot of a fixed open-addressing
// index, and the entry there keeps a copy of the three, compared in full,
// also eight bytes a step, before its result is used.
//
// The copies, spans and tokens live in slabs the entries index: once they
// have grown, remembering a text allocates nothing, and the guest's GC has
// no pointers to chase in the table.
type textMemo struct {
	slots   []uint32    // entry index + 1; 0 is empty
	entries []textEntry // in insertion order
	text    []byte      // each entry's tenant, member and text
	spans   []span      // each entry's spans, then its tokens (start, end; ent unused)
	hits    int         // lookups that found their text (tests read it)
}

// textEntry locates a remembered text and what the scan found in it.
type textEntry struct {
	hash       uint64
	off        uint32 // text[off:] holds the tenant (tn bytes), member (mn), text (n)
	tn, mn, n  uint32
	s0, ns, nt uint32 // spans[s0:s0+ns] its spans, the next nt its tokens
}

var texts textMemo

// get returns the entry of tenant, member and text, whose hash is h.
func (t *textMemo) get(h uint64, tenant, member, text string) (textEntry, bool) {
	if t.slots == nil {
		return textEntry{}, false
	}
	for n := range uint64(textProbes) {
		s := t.slots[(h+n)&(textSlots-1)]
		if s == 0 {
			break
		}
		e := t.entries[s-1]
		if e.hash != h || int(e.n) != len(text) || int(e.mn) != len(member) || int(e.tn) != len(tenant) {
			continue
		}
		kept := unsafe.String(unsafe.SliceData(t.text[e.off:]), int(e.tn+e.mn+e.n))
		if memo.EqualString(kept[e.tn+e.mn:], text) && kept[:e.tn] == tenant && kept[e.tn:e.tn+e.mn] == member {
			return e, true
		}
	}
	return textEntry{}, false
}

// put remembers what the scan of text found — spans, and the tokens taken
// (substrings of text) — under hash h. It is called after get missed.
func (t *textMemo) put(h uint64, tenant, member, text string, spans []span, taken []string) {
	if len(spans)+len(taken) > textMaxSpans {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	for _, tok := range taken {
		// The scan records substrings of text; anything else is not kept.
		if p := uintptr(unsafe.Pointer(unsafe.StringData(tok))); p < base || p-base+uintptr(len(tok)) > uintptr(len(text)) {
			return
		}
	}
	if t.slots == nil || len(t.entries) >= textMaxEntries ||
		len(t.text)+len(tenant)+len(member)+len(text) > textMaxBytes || len(t.spans)+len(spans)+len(taken) > textMaxSpans {
		t.reset()
	}
	e := textEntry{hash: h, off: uint32(len(t.text)), tn: uint32(len(tenant)), mn: uint32(len(member)), n: uint32(len(text)),
		s0: uint32(len(t.spans)), ns: uint32(len(spans)), nt: uint32(len(taken))}
	n := uint64(0)
	for t.slots[(h+n)&(textSlots-1)] != 0 {
		if n++; n == textProbes {
			return // its slot and the next ones are taken: scanned each time
		}
	}
	t.entries = append(t.entries, e)
	t.slots[(h+n)&(textSlots-1)] = uint32(len(t.entries))
	t.text = append(append(append(t.text, tenant...), member...), text...)
	t.spans = append(t.spans, spans...)
	for _, tok := range taken {
		st := int(uintptr(unsafe.Pointer(unsafe.StringData(tok))) - base)
		t.spans = append(t.spans, span{st, st + len(tok), -1})
	}
}

// use appends entry e's spans and tokens (substrings of text, the entry's
// text) to k's.
func (t *textMemo) use(k *masker, e textEntry, text string) {
	k.spans = append(k.spans, t.spans[e.s0:e.s0+e.ns]...)
	for _, r := range t.spans[e.s0+e.ns : e.s0+e.ns+e.nt] {
		k.det.taken = append(k.det.taken, text[r.start:r.end])
	}
}

// reset forgets everything; the slabs are kept for reuse.
func (t *textMemo) reset() {
	if t.slots == nil {
		t.slots = make([]uint32, textSlots)
	}
	clear(t.slots)
	t.entries, t.text, t.spans = t.entries[:0], t.text[:0], t.spans[:0]
}

const (
	hashMul1 = 0x9E3779B97F4A7C15
	hashMul2 = 0xC2B2AE3D27D4EB4F
)

// tenantSeed starts the hashes of a tenant's texts.
func tenantSeed(tenant string) uint64 { return mixWords(uint64(len(tenant))*hashMul1, tenant) }

// hashText hashes member and a sample of text after seed (tenantSeed): its
// length and seven eight-byte words, at both ends and spread between, so a
// lookup reads the text once, to compare it. Texts alike in all of these
// share a hash and sit side by side in the index (at most textProbes of
// them; a lookup compares each). Not a defence against chosen collisions:
// entries are compared in full before use. text is at least memoMinLen
// bytes long.
func hashText(seed uint64, member, text string) uint64 {
	n := len(text)
	h := seed ^ uint64(len(member))*hashMul1 ^ uint64(n)*hashMul2
	if member != "" {
		h = mixWords(h, member)
	}
	p := unsafe.Pointer(unsafe.StringData(text))
	q := n/4 - 4
	for _, off := range [...]int{0, 8, q, 2 * q, 3 * q, n - 16, n - 8} {
		h = bits.RotateLeft64((h^*(*uint64)(unsafe.Add(p, off)))*hashMul1, 29)
	}
	return h ^ h>>32
}

// mixWords hashes s into h eight bytes at a time (the unaligned loads
// assume a little-endian machine, as wasm is).
func mixWords(h uint64, s string) uint64 {
	n := len(s)
	p := unsafe.Pointer(unsafe.StringData(s))
	i := 0
	for ; i+32 <= n; i += 32 {
		// Four lanes a step: fewer loop tests inside wasm.
		a := (*(*uint64)(unsafe.Add(p, i)) ^ h) * hashMul1
		b := (*(*uint64)(unsafe.Add(p, i+8)) ^ h>>7) * hashMul2
		c := (*(*uint64)(unsafe.Add(p, i+16)) ^ h>>13) * hashMul1
		d := (*(*uint64)(unsafe.Add(p, i+24)) ^ h>>19) * hashMul2
		h = bits.RotateLeft64(a, 29) ^ bits.RotateLeft64(b, 37) ^ bits.RotateLeft64(c, 43) ^ d
	}
	for ; i+8 <= n; i += 8 {
		h = bits.RotateLeft64((h^*(*uint64)(unsafe.Add(p, i)))*hashMul1, 29)
	}
	var w uint64
	for j := n - 1; j >= i; j-- {
		w = w<<8 | uint64(s[j])
	}
	h = (h ^ w) * hashMul2
	return h ^ h>>32
}

// scanSegment appends the built-in entities of text (a segment whose JSON
// member is member) to k.spans, from a memo when this tenant's instance
// scanned the same text before.
func (k *masker) scanSegment(text, member string) {
	k.det.member = member
	if len(text) < memoMinLen {
		// JSON member names, short values and replies: most hold nothing
		// scan stops at, and are not worth a call.
		if len(text) >= mnemonicMinLen || !noAnchor(text) {
			k.spans = k.det.scan(text, k.spans)
		}
		return
	}
	if len(text) <= textKeyMax {
		h := hashText(k.seed, member, text)
		if e, ok := texts.get(h, k.tenant, member, text); ok {
			texts.hits++
			texts.use(k, e, text)
			return
		}
		s0, t0 := len(k.spans), len(k.det.taken)
		k.spans = k.det.scan(text, k.spans)
		texts.put(h, k.tenant, member, text, k.spans[s0:], k.det.taken[t0:])
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
