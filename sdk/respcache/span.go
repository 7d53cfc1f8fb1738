package respcache

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/wire"
)

// AppendEntryFrom is AppendEntry for a response decoded from in, the
// call's input (plugin.Input in a response phase): r's encoding is then a
// span of in, copied as it is instead of encoded again field by field
// (inside wasm ~20 encoder steps, 2–4 µs for an agent's answer). The span
// is checked field by field — every string a view of in at the place its
// encoding puts it, every number equal — so it encodes exactly r; a
// response that is not so (built or edited by the caller, decoded from
// elsewhere) is encoded as AppendEntry does.
func AppendEntryFrom(dst, in []byte, enc *wire.Encoder, r *wire.Response, storedMs int64) []byte {
	span := responseSpan(in, r)
	if span == nil {
		return AppendEntry(dst, enc, r, storedMs)
	}
	dst = slices.Grow(dst, len(entryMagic)+8+3+len(span))
	dst = append(dst, entryMagic...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(storedMs))
	// A LayerResponseResult that replaces (its format byte, Replaced),
	// the response, no headers.
	dst = append(dst, wire.FormatVersion, 1)
	dst = append(dst, span...)
	return append(dst, 0)
}

// responseSpan returns the bytes of in that encode r (wire's response:
// ID, model, blocks, stop reason, stop sequence, usage), or nil. It starts
// where r's ID is (a view of in, after its length) and follows the
// encoding from there.
func responseSpan(in []byte, r *wire.Response) []byte {
	if len(r.ID) == 0 || len(in) == 0 {
		return nil
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(r.ID))) - uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	if off >= uintptr(len(in)) {
		return nil
	}
	start := int(off) - uvarintLen(uint64(len(r.ID)))
	if start < 0 {
		return nil
	}
	s := spanReader{in: in, p: start, ok: true}
	s.str(r.ID)
	s.str(r.Model)
	s.uint(uint64(len(r.Content)))
	for i := range r.Content {
		b := &r.Content[i]
		s.uint(uint64(b.Type))
		s.str(b.Text)
		s.str(b.ID)
		s.str(b.Name)
		s.raw(b.Data)
		s.str(b.Signature)
		s.bool(b.IsError)
		s.raw(b.CacheControl)
	}
	s.str(r.StopReason)
	s.str(r.StopSeq)
	s.int(r.Usage.InputTokens)
	s.int(r.Usage.OutputTokens)
	s.int(r.Usage.CacheReadTokens)
	s.int(r.Usage.CacheWriteTokens)
	if !s.ok {
		return nil
	}
	return in[start:s.p]
}

// spanReader checks, field after field, that in holds at p the encoding
// of the values given; ok turns false at the first that it does not.
type spanReader struct {
	in []byte
	p  int
	ok bool
}

func (s *spanReader) uint(v uint64) {
	if !s.ok {
		return
	}
	x, k := binary.Uvarint(s.in[s.p:])
	if k <= 0 || x != v {
		s.ok = false
		return
	}
	s.p += k
}

func (s *spanReader) int(v int64) {
	if !s.ok {
		return
	}
	x, k := binary.Varint(s.in[s.p:])
	if k <= 0 || x != v {
		s.ok = false
		return
	}
	s.p += k
}

func (s *spanReader) bool(v bool) {
	if !s.ok {
		return
	}
	if s.p >= len(s.in) || s.in[s.p] > 1 || (s.in[s.p] == 1) != v {
		s.ok = false
		return
	}
	s.p++
}

// str checks a length-prefixed string: its length, then v itself as a
// view of in right after it (an empty one has no bytes to point at).
func (s *spanReader) str(v string) {
	s.uint(uint64(len(v)))
	if !s.ok || len(v) == 0 {
		return
	}
	if len(s.in)-s.p < len(v) || unsafe.StringData(v) != &s.in[s.p] {
		s.ok = false
		return
	}
	s.p += len(v)
}

func (s *spanReader) raw(v []byte) { s.str(unsafe.String(unsafe.SliceData(v), len(v))) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
