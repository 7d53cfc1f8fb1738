package wire

// partCount is the number of request parts a Part mask names (PartModel
// to PartExtra).
const partCount = 6

// RequestEncoder writes the LayerRequests of one request for layers that
// each read their own parts: it encodes every part once, and after that
// only copies, until a layer replaces a part (Changed). A pipeline of
// eight layers over a 4 KB request otherwise encodes the request eight
// times. What it writes is byte for byte what EncodeLayerRequest writes.
//
// A LayerRequest is the format byte, the meta, the mask and the stream
// flag (the head, written for every call: earlier layers' annotations
// change the meta), the selected parts in the order of Part, and, when
// any selected part holds a nested Extra, the v1.4 section with the
// extras of each selected part in the same order. The encoder keeps each
// part's body and extras as a span of one buffer.
//
// The zero RequestEncoder is ready for Reset; it is not safe for
// concurrent use.
type RequestEncoder struct {
	req  *Request
	have Part // parts whose spans are current
	body [partCount]span
	ext  [partCount]span // empty: the part has no nested Extra
	buf  []byte          // every span's bytes

	head  Encoder // the call's head (Prepare)
	parts Part    // the call's mask (Prepare)
	size  int     // the call's length (Prepare)
}

type span struct{ from, to int }

// requestEncoderKeep is the largest buffer Reset keeps: one huge request
// must not pin its bytes in a pooled encoder.
const requestEncoderKeep = 256 << 10

// Reset makes e encode req, forgetting every part encoded before.
func (e *RequestEncoder) Reset(req *Request) {
	e.req, e.have = req, 0
	if cap(e.buf) > requestEncoderKeep {
		e.buf = nil
	}
	e.buf = e.buf[:0]
}

// Changed says parts of the request were replaced: they are encoded again
// when next asked for. (Request.Stream is read at every Prepare.)
func (e *RequestEncoder) Changed(parts Part) { e.have &^= parts }

// Prepare readies the LayerRequest of m and the given parts of the request
// and returns its length; Put writes it.
func (e *RequestEncoder) Prepare(m *Meta, parts Part) int {
	e.head.Reset()
	e.head.meta(m)
	e.head.Uint(uint64(parts))
	e.head.Bool(e.req.Stream)
	e.parts = parts
	n := len(e.head.buf)
	extras := false
	for i := range partCount {
		if parts&(1<<i) == 0 {
			continue
		}
		e.encode(i)
		n += e.body[i].to - e.body[i].from
		if x := e.ext[i]; x.to > x.from {
			extras = true
		}
	}
	if extras {
		n++ // the section's version, 1
		for i := range partCount {
			if parts&(1<<i) != 0 {
				n += e.extLen(i)
			}
		}
	}
	e.size = n
	return n
}

// Len is the length of the LayerRequest last prepared.
func (e *RequestEncoder) Len() int { return e.size }

// Put writes the LayerRequest last prepared into dst, which holds Len
// bytes (a plugin's input buffer, written in place).
func (e *RequestEncoder) Put(dst []byte) {
	n := copy(dst, e.head.buf)
	extras := false
	for i := range partCount {
		if e.parts&(1<<i) == 0 {
			continue
		}
		b := e.body[i]
		n += copy(dst[n:], e.buf[b.from:b.to])
		if x := e.ext[i]; x.to > x.from {
			extras = true
		}
	}
	if !extras {
		return
	}
	dst[n] = 1
	n++
	for i := range partCount {
		if e.parts&(1<<i) == 0 {
			continue
		}
		if x := e.ext[i]; x.to > x.from {
			n += copy(dst[n:], e.buf[x.from:x.to])
		} else {
			n += e.emptyExtras(dst[n:], i)
		}
	}
}

// Encode writes the LayerRequest of m and parts into enc, as
// EncodeLayerRequest(enc, m, req, parts) would.
func (e *RequestEncoder) Encode(enc *Encoder, m *Meta, parts Part) {
	n := e.Prepare(m, parts)
	enc.buf = append(enc.buf[:0], make([]byte, n)...)
	e.Put(enc.buf)
}

// encode writes part i's body and extras into buf unless they are current.
func (e *RequestEncoder) encode(i int) {
	bit := Part(1) << i
	if e.have&bit != 0 {
		return
	}
	enc := Encoder{buf: e.buf}
	from := len(enc.buf)
	enc.part(e.req, bit)
	e.body[i] = span{from, len(enc.buf)}
	from = len(enc.buf)
	if nestedExtras(e.req, bit) {
		enc.partExtras(e.req, bit)
	}
	e.ext[i] = span{from, len(enc.buf)}
	e.buf = enc.buf
	e.have |= bit
}

// extLen is the length part i takes in an extras section: its extras, or,
// when it has none, one empty value (a zero byte) per element.
func (e *RequestEncoder) extLen(i int) int {
	if x := e.ext[i]; x.to > x.from {
		return x.to - x.from
	}
	return e.extCount(i)
}

// emptyExtras writes part i's elements' empty extras (one zero length
// each) into dst and returns how many bytes that took.
func (e *RequestEncoder) emptyExtras(dst []byte, i int) int {
	n := e.extCount(i)
	clear(dst[:n])
	return n
}

// extCount is the number of elements of part i that carry an Extra in the
// extras section.
func (e *RequestEncoder) extCount(i int) int {
	r := e.req
	switch Part(1) << i {
	case PartSystem:
		return len(r.System)
	case PartMessages:
		n := len(r.Messages)
		for j := range r.Messages {
			n += len(r.Messages[j].Content)
		}
		return n
	case PartTools:
		return len(r.Tools)
	}
	return 0
}

// part writes one part of r (a single bit) as requestParts does.
func (e *Encoder) part(r *Request, bit Part) {
	switch bit {
	case PartModel:
		e.String(r.Model)
	case PartSystem:
		e.blocks(r.System)
	case PartMessages:
		e.Uint(uint64(len(r.Messages)))
		for i := range r.Messages {
			m := &r.Messages[i]
			e.String(m.Role)
			e.String(m.Name)
			e.blocks(m.Content)
		}
	case PartTools:
		e.Uint(uint64(len(r.Tools)))
		for i := range r.Tools {
			t := &r.Tools[i]
			e.String(t.Name)
			e.String(t.Description)
			e.Raw(t.Schema)
			e.Raw(t.CacheControl)
		}
		e.Raw(r.ToolChoice)
	case PartParams:
		p := &r.Params
		e.Uint(uint64(p.Set))
		e.Int(p.MaxTokens)
		e.Float(p.Temperature)
		e.Float(p.TopP)
		e.Int(p.TopK)
		e.Int(p.Seed)
		e.Strings(p.Stop)
	case PartExtra:
		e.Raw(r.Extra)
	}
}

// partExtras writes one part's extras as requestExtras does.
func (e *Encoder) partExtras(r *Request, bit Part) {
	switch bit {
	case PartSystem:
		for i := range r.System {
			e.Raw(r.System[i].Extra)
		}
	case PartMessages:
		for i := range r.Messages {
			m := &r.Messages[i]
			e.Raw(m.Extra)
			for j := range m.Content {
				e.Raw(m.Content[j].Extra)
			}
		}
	case PartTools:
		for i := range r.Tools {
			e.Raw(r.Tools[i].Extra)
		}
	}
}
