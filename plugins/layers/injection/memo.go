package main

import (
	"unsafe"

	"github.com/bardoinference/bardo/sdk/memo"
)

// scoreMemo is this instance's memory of the scores its tenants' texts got,
// in front of the tenant's kv: an agent resends its whole conversation
// every turn, and a text found here costs a lookup where the kv costs a
// SHA-256 and a kv_get host call each. It is keyed by the tenant and the
// text itself (no hash can make one text answer for another: a lookup
// compares both whole), so how long a request takes cannot tell one tenant
// whether another sent a text, like the kv. It is bounded by memo_bytes
// (each entry costs its tenant, its text and 64 bytes; past the bound it
// starts over) and forgotten as a whole once it is score_ttl old, so no
// score outlives the ttl the kv gives it. The model is fixed for an
// instance's life.
//
// It is an open-addressed table over one byte arena rather than a Go map
// of maps: inside wasm a string-keyed map hashes every byte of the text
// and compares it a byte at a time, and each entry's key was an
// allocation. memo.Spread samples the text, memo.EqualString compares it
// eight bytes a step, and an entry costs no allocation once the arena
// and the table have grown.
type scoreMemo struct {
	slots   []uint32    // entry index + 1; 0 is empty; a power of two long, at most half full
	entries []memoEntry // in insertion order
	text    []byte      // each entry's tenant, then its text
	bytes   int         // the memo_bytes cost of what it holds
	since   int64       // plugin.Now of the first entry, in ns
}

// memoEntry locates one remembered text and holds its score.
type memoEntry struct {
	hash  uint64
	off   uint32 // text[off:] holds the tenant (tn bytes), then the text (n)
	tn, n uint32
	score float32
}

var scored scoreMemo

// memoSlots is the table's first size; it doubles as entries come.
const memoSlots = 1024

// tenantHash is the part of an entry's hash the tenant gives, computed
// once a request.
func tenantHash(tenant string) uint64 {
	return memo.Spread(unsafe.Slice(unsafe.StringData(tenant), len(tenant))) * 0x9e3779b97f4a7c15
}

func textHash(th uint64, text string) uint64 {
	return th ^ memo.Spread(unsafe.Slice(unsafe.StringData(text), len(text)))
}

// find returns the slot of tenant's text (hashed h): the entry's, or the
// empty slot where it would go.
func (m *scoreMemo) find(h uint64, tenant, text string) (slot int, found bool) {
	mask := uint64(len(m.slots) - 1)
	for i := h; ; i++ {
		s := m.slots[i&mask]
		if s == 0 {
			return int(i & mask), false
		}
		e := &m.entries[s-1]
		if e.hash != h || int(e.n) != len(text) || int(e.tn) != len(tenant) {
			continue
		}
		kept := unsafe.String(unsafe.SliceData(m.text[e.off:]), int(e.tn+e.n))
		if memo.EqualString(kept[e.tn:], text) && kept[:e.tn] == tenant {
			return int(i & mask), true
		}
	}
}

// get returns the score remembered for tenant's text; th is tenantHash.
func (m *scoreMemo) get(th uint64, tenant, text string) (float32, bool) {
	if len(m.entries) == 0 {
		return 0, false
	}
	slot, ok := m.find(textHash(th, text), tenant, text)
	if !ok {
		return 0, false
	}
	return m.entries[m.slots[slot]-1].score, true
}

// put remembers tenant's text's score; now is plugin.Now in ns. The
// tenant and text are copied into the arena: they alias the call's input,
// which the next call overwrites.
func (m *scoreMemo) put(th uint64, tenant, text string, score float32, now int64) {
	cost := len(tenant) + len(text) + 64 // the texts, and roughly an entry's own
	if cost > cfg.memoBytes {
		return
	}
	if m.bytes+cost > cfg.memoBytes || m.slots == nil {
		m.reset(now)
	}
	if 2*(len(m.entries)+1) > len(m.slots) {
		m.grow()
	}
	h := textHash(th, text)
	slot, ok := m.find(h, tenant, text)
	if ok {
		return // the same text twice in one request
	}
	if len(m.entries) == 0 {
		m.since = now
	}
	m.entries = append(m.entries, memoEntry{hash: h, off: uint32(len(m.text)), tn: uint32(len(tenant)), n: uint32(len(text)), score: score})
	m.text = append(append(m.text, tenant...), text...)
	m.slots[slot] = uint32(len(m.entries))
	m.bytes += cost
}

// grow doubles the table and puts every entry back by its hash.
func (m *scoreMemo) grow() {
	slots := make([]uint32, max(memoSlots, 2*len(m.slots)))
	mask := uint64(len(slots) - 1)
	for k := range m.entries {
		i := m.entries[k].hash
		for slots[i&mask] != 0 {
			i++
		}
		slots[i&mask] = uint32(k + 1)
	}
	m.slots = slots
}

// reset forgets everything, keeping what has grown.
func (m *scoreMemo) reset(now int64) {
	if m.slots == nil {
		m.slots = make([]uint32, memoSlots)
	} else {
		clear(m.slots)
	}
	m.entries, m.text = m.entries[:0], m.text[:0]
	m.bytes, m.since = 0, now
}

// len is the number of texts remembered.
func (m *scoreMemo) len() int { return len(m.entries) }
