package respcache

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/wire"
)

// AppendEntryFrom is AppendEntry for r as it was decoded from in, the
// call's input (plugin.Input in a response phase), and not changed since:
// r's encoding is then a span of in, copied as it is instead of encoded
// again field by field (inside wasm ~20 encoder steps, 4–5 µs for an
// agent's answer). The entry is byte for byte AppendEntry's. A response
// whose encoded ends are not where a decoder of in left them (built or
// edited by the caller, or from elsewhere) is encoded as AppendEntry does.
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

// responseSpan returns the bytes of in that r was decoded from, or nil. A
// response is encoded ID first and usage last (wire's response); r's ID
// and stop reason must be views of in, each after its length, and the stop
// sequence and usage must follow the stop reason in in as encoded: then
// the decoder read r from in[start:end], in order.
func responseSpan(in []byte, r *wire.Response) []byte {
	if len(r.ID) == 0 || len(r.StopReason) == 0 || len(in) == 0 {
		return nil
	}
	start, ok := stringAt(in, r.ID)
	if !ok {
		return nil
	}
	sr, ok := stringAt(in, r.StopReason)
	if !ok || sr <= start {
		return nil
	}
	p := sr + uvarintLen(uint64(len(r.StopReason))) + len(r.StopReason)
	n, k := binary.Uvarint(in[p:])
	if k <= 0 || n != uint64(len(r.StopSeq)) || len(in)-p-k < len(r.StopSeq) || string(in[p+k:p+k+len(r.StopSeq)]) != r.StopSeq {
		return nil
	}
	p += k + len(r.StopSeq)
	for _, u := range [4]int64{r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens} {
		v, k := binary.Varint(in[p:])
		if k <= 0 || v != u {
			return nil
		}
		p += k
	}
	return in[start:p]
}

// stringAt returns where s's encoding (its length, then its bytes) starts
// in in, when s is a view of in preceded by its length.
func stringAt(in []byte, s string) (int, bool) {
	off := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	if off >= uintptr(len(in)) || uintptr(len(in))-off < uintptr(len(s)) {
		return 0, false
	}
	n := uvarintLen(uint64(len(s)))
	at := int(off) - n
	if at < 0 {
		return 0, false
	}
	if v, k := binary.Uvarint(in[at:]); k != n || v != uint64(len(s)) {
		return 0, false
	}
	return at, true
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
