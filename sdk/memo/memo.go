// Package memo remembers, inside one plugin instance, what a layer computed
// for a long text it has seen before.
//
// An agent resends its system prompt, tools and whole conversation on every
// turn: of an 85 KB Claude Code request only the last turn is new. A layer
// whose work on a text is a pure function of the text (and of its
// configuration, fixed for an instance's life) can key that work by the
// host's native SHA-256 of the text — a few tens of µs for 85 KB, where
// scanning or normalising it inside wasm costs several hundred.
//
// A Table is instance memory (each pooled instance keeps its own) and is
// partitioned by tenant, so how long a request takes cannot tell one tenant
// whether another sent a text. Keys are copied on insert: the strings a
// plugin decodes alias the call's input buffer, which the next call
// overwrites, and a map key must not change under the map.
package memo

import (
	"strings"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// Key names one remembered text: the tenant that sent it, a part that
// changes what the work means (pii: the JSON member the text came from; ""
// when nothing does), and the text's SHA-256.
type Key struct {
	Tenant string
	Part   string
	Sum    [32]byte
}

// KeyOf hashes text natively (plugin.SHA256) into a Key.
func KeyOf(tenant, part, text string) Key {
	return Key{Tenant: tenant, Part: part, Sum: plugin.SHA256(unsafe.Slice(unsafe.StringData(text), len(text)))}
}

// Table is a bounded memo of V by Key. The zero Table is not ready: set Max.
type Table[V any] struct {
	// Max bounds the sum of the costs Put was given; past it the table
	// starts over (clearing is O(1) amortised and a memo has no entry
	// worth more than another).
	Max int
	// Hits counts Gets that found their key (tests and metrics read it).
	Hits int

	m    map[Key]V
	cost int
}

// Get returns the value remembered for k.
func (t *Table[V]) Get(k Key) (V, bool) {
	v, ok := t.m[k]
	if ok {
		t.Hits++
	}
	return v, ok
}

// Put remembers v for k at the given cost (entries, bytes: the caller's
// unit, the one Max is in). v must not alias the call's input.
func (t *Table[V]) Put(k Key, v V, cost int) {
	if t.m == nil || t.cost+cost > t.Max {
		t.Reset()
	}
	k.Tenant, k.Part = strings.Clone(k.Tenant), strings.Clone(k.Part)
	t.m[k] = v
	t.cost += cost
}

// Reset forgets everything.
func (t *Table[V]) Reset() {
	if t.m == nil {
		t.m = map[Key]V{}
	} else {
		clear(t.m)
	}
	t.cost = 0
}

// Len is the number of entries.
func (t *Table[V]) Len() int { return len(t.m) }
