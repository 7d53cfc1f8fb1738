// Package wire defines the data that crosses the host ⇄ plugin boundary (ABI v1)
// and its binary encoding.
//
// The same package is compiled into the native host and into every WASM guest,
// so both sides agree on the format by construction. The encoding is a compact,
// reflection-free, length-prefixed layout (varints, length-prefixed strings and
// raw bytes) because Go code inside wasm runs 5–7× slower than native and
// encoding/json's reflection would dominate a layer's per-call cost.
//
// Every message starts with a one-byte format version (see [FormatVersion]) so a
// host can refuse, with a clear error, data it does not understand.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// FormatVersion is the version byte that starts every encoded message.
const FormatVersion byte = 1

// ErrTruncated is returned when a message ends before a field it declares.
var ErrTruncated = errors.New("wire: message truncated")

// Encoder appends encoded values to a byte slice. The zero value is ready to use;
// Reset lets one Encoder be reused without allocating.
type Encoder struct {
	buf []byte
}

// Bytes returns the encoded message. The slice is owned by the Encoder until Reset.
func (e *Encoder) Bytes() []byte { return e.buf }

// Reset empties the Encoder and writes the format version byte.
func (e *Encoder) Reset() {
	e.buf = append(e.buf[:0], FormatVersion)
}

// Append appends b as it is, without a length: for exports whose payload
// after the format byte is not a wire message (the routing exports' JSON).
func (e *Encoder) Append(b []byte) { e.buf = append(e.buf, b...) }

// Uint writes an unsigned varint.
func (e *Encoder) Uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

// Int writes a zig-zag signed varint.
func (e *Encoder) Int(v int64) { e.buf = binary.AppendVarint(e.buf, v) }

// Bool writes one byte, 0 or 1.
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Float writes an IEEE-754 float64, little endian.
func (e *Encoder) Float(v float64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(v))
}

// String writes a length-prefixed string.
func (e *Encoder) String(s string) {
	e.Uint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// Raw writes length-prefixed bytes. A nil slice and an empty one encode alike.
func (e *Encoder) Raw(b []byte) {
	e.Uint(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

// Strings writes a count followed by each string.
func (e *Encoder) Strings(ss []string) {
	e.Uint(uint64(len(ss)))
	for _, s := range ss {
		e.String(s)
	}
}

// KVs writes a count followed by key/value pairs.
func (e *Encoder) KVs(kvs []KV) { e.buf = appendKVs(e.buf, kvs) }

// appendKVs is KVs on a slice held in a local: every result encodes two
// lists, and inside wasm the encoder's field, re-read and re-stored for
// each string, made the loop larger (3.4 KB of wasm, now 2.4).
func appendKVs(b []byte, kvs []KV) []byte {
	b = binary.AppendUvarint(b, uint64(len(kvs)))
	for i := range kvs {
		b = appendString(b, kvs[i].Key)
		b = appendString(b, kvs[i].Value)
	}
	return b
}

// appendString appends a length-prefixed string, as String.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decoder reads values written by an Encoder. Errors are sticky: after the first
// failure every read returns a zero value and Err reports the cause, so decoding
// code reads straight through and checks once at the end.
//
// Decoded strings and byte slices alias the input buffer: the buffer must not
// be modified or reused while anything decoded from it is in use. The host
// decodes from fresh copies; the guest SDK reuses its input buffer and its
// [Arena] from one call to the next, so what a plugin keeps past a call it
// copies (docs/abi.md, "What a plugin may keep").
type Decoder struct {
	buf   []byte
	pos   int
	err   error
	arena *Arena // nil: every slice is allocated
}

// NewDecoder checks the format version byte and returns a Decoder positioned after it.
func NewDecoder(b []byte) *Decoder {
	d := &Decoder{}
	d.Init(b)
	return d
}

// Init resets d to read b, checking the format version byte. The slices it
// decodes are allocated.
func (d *Decoder) Init(b []byte) { d.InitArena(b, nil) }

// InitArena resets d to read b, taking the slices it decodes from a (see
// [Arena]) when a is not nil.
func (d *Decoder) InitArena(b []byte, a *Arena) {
	d.buf, d.pos, d.err, d.arena = b, 0, nil, a
	if len(b) == 0 {
		d.fail(ErrTruncated)
		return
	}
	if b[0] != FormatVersion {
		d.fail(fmt.Errorf("wire: format version %d, this side understands %d", b[0], FormatVersion))
		return
	}
	d.pos = 1
}

// More reports whether bytes are left: a field appended to a message in a
// later ABI minor version is read only when More says it is there, so a
// message from an older peer decodes with the field at its zero value.
func (d *Decoder) More() bool { return d.err == nil && d.pos < len(d.buf) }

// Err reports the first decoding error, if any.
func (d *Decoder) Err() error { return d.err }

// fail records the first error and moves to the end of the input, so the
// inlined fast paths, which check only the position, read nothing more.
func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.pos = len(d.buf)
}

// Uint reads an unsigned varint.
//
// Most varints of a message (lengths, counts, enums) are one byte: that case
// is small enough to inline, because inside wasm a function call costs more
// than the whole read.
func (d *Decoder) Uint() uint64 {
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		d.pos = p + 1
		return uint64(d.buf[p])
	}
	return d.uintSlow()
}

func (d *Decoder) uintSlow() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		d.fail(ErrTruncated)
		return 0
	}
	d.pos += n
	return v
}

// Int reads a zig-zag signed varint.
func (d *Decoder) Int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf[d.pos:])
	if n <= 0 {
		d.fail(ErrTruncated)
		return 0
	}
	d.pos += n
	return v
}

// Bool reads one byte.
func (d *Decoder) Bool() bool {
	if d.err != nil {
		return false
	}
	if d.pos >= len(d.buf) {
		d.fail(ErrTruncated)
		return false
	}
	v := d.buf[d.pos]
	d.pos++
	return v != 0
}

// Float reads an IEEE-754 float64.
func (d *Decoder) Float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.buf)-d.pos < 8 {
		d.fail(ErrTruncated)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.buf[d.pos:]))
	d.pos += 8
	return v
}

// count reads a length and checks it against the bytes left, so a corrupt length
// can never make the reader allocate more than the message holds.
func (d *Decoder) count(minElem int) int {
	n := d.Uint()
	if d.err != nil {
		return 0
	}
	if minElem < 1 {
		minElem = 1
	}
	if n > uint64((len(d.buf)-d.pos)/minElem) {
		d.fail(ErrTruncated)
		return 0
	}
	return int(n)
}

// rawView returns a length-prefixed slice that aliases the input buffer.
// A one-byte length that fits is read inline (see Uint).
func (d *Decoder) rawView() []byte {
	if p := d.pos; p < len(d.buf) {
		if n := int(d.buf[p]); n < 0x80 && n < len(d.buf)-p {
			d.pos = p + 1 + n
			return d.buf[p+1 : p+1+n]
		}
	}
	return d.rawViewSlow()
}

func (d *Decoder) rawViewSlow() []byte {
	n := d.Uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)-d.pos) {
		d.fail(ErrTruncated)
		return nil
	}
	b := d.buf[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b
}

// String reads a length-prefixed string. It aliases the input buffer instead
// of copying (see the Decoder's contract): inside wasm every allocation is
// 5–7× dearer than natively, and a 4 KB request holds dozens of strings.
func (d *Decoder) String() string {
	b := d.rawView()
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Raw reads length-prefixed bytes (nil when empty). The slice aliases the
// input buffer; its capacity is clipped, so appending to it copies rather than
// overwriting the bytes that follow.
func (d *Decoder) Raw() []byte {
	b := d.rawView()
	if len(b) == 0 {
		return nil
	}
	return b[:len(b):len(b)]
}

// Strings reads a count followed by strings.
func (d *Decoder) Strings() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	var ss []string
	if d.arena != nil {
		ss = take(&d.arena.strs, n)
	} else {
		ss = make([]string, n)
	}
	for i := range ss {
		ss[i] = d.String()
	}
	return ss
}

// KVs reads a count followed by key/value pairs.
func (d *Decoder) KVs() []KV {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	var kvs []KV
	if d.arena != nil {
		kvs = take(&d.arena.kvs, n)
	} else {
		kvs = make([]KV, n)
	}
	for i := range kvs {
		kvs[i].Key = d.String()
		kvs[i].Value = d.String()
	}
	return kvs
}
