package wire

// Arena lends a Decoder the slices a message decodes into — blocks,
// messages, tools, key/value pairs, strings, events, SSE events — out of a
// few slabs kept from one call to the next, instead of allocating each one.
// Inside wasm an allocation costs about a microsecond and every call's
// garbage is collected by the guest's own GC; the 4 KB agent request alone
// is eleven slices.
//
// Reset hands the slabs out again from the start, so every slice (and every
// string or byte slice still aliasing the input) decoded since the previous
// Reset is overwritten by the next decode: an Arena suits a decode whose
// results are dropped when the call ends. The guest SDK resets its arena at
// the start of every call (docs/abi.md, "What a plugin may keep"). The zero
// Arena is ready to use; an Arena is not safe for concurrent use.
type Arena struct {
	blocks []Block
	msgs   []Message
	tools  []Tool
	kvs    []KV
	strs   []string
	events []Event
	sses   []SSE
	resps  []Response
	errs   []Error
}

// arenaKeep is the largest slab, in elements, Reset keeps: one huge message
// must not pin its slabs in the instance's memory for the rest of its life.
const arenaKeep = 4096

// Reset makes the whole of every slab available again (see the type's
// contract: what was decoded before is overwritten by the next decode).
func (a *Arena) Reset() {
	a.blocks = reslab(a.blocks)
	a.msgs = reslab(a.msgs)
	a.tools = reslab(a.tools)
	a.kvs = reslab(a.kvs)
	a.strs = reslab(a.strs)
	a.events = reslab(a.events)
	a.sses = reslab(a.sses)
	a.resps = reslab(a.resps)
	a.errs = reslab(a.errs)
}

func reslab[T any](s []T) []T {
	if cap(s) > arenaKeep {
		return nil
	}
	return s[:0]
}

// take lends n zeroed elements of *slab, growing it (into a new backing
// array: what was lent before stays where it is) when it has too few. The
// slice's capacity is clipped so that appending to it copies instead of
// writing over the next element lent.
func take[T any](slab *[]T, n int) []T {
	s := *slab
	if cap(s)-len(s) < n {
		c := 2 * cap(s)
		if c < n {
			c = n
		}
		if c < 16 {
			c = 16
		}
		s = make([]T, 0, c)
	}
	lo := len(s)
	s = s[:lo+n]
	*slab = s
	out := s[lo : lo+n : lo+n]
	clear(out)
	return out
}
