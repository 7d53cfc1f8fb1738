package wire

import "fmt"

// This file holds the hand-written encoders and decoders of every ABI message.
// Field order is the format: append new fields only at the end of a message and
// bump FormatVersion for anything else (see docs/abi.md, "Compatibility").

func (e *Encoder) block(b *Block) {
	e.Uint(uint64(b.Type))
	e.String(b.Text)
	e.String(b.ID)
	e.String(b.Name)
	e.Raw(b.Data)
	e.String(b.Signature)
	e.Bool(b.IsError)
	e.Raw(b.CacheControl)
}

func (d *Decoder) block(b *Block) {
	b.Type = BlockType(d.Uint())
	b.Text = d.String()
	b.ID = d.String()
	b.Name = d.String()
	b.Data = d.Raw()
	b.Signature = d.String()
	b.IsError = d.Bool()
	b.CacheControl = d.Raw()
}

func (e *Encoder) blocks(bs []Block) {
	e.Uint(uint64(len(bs)))
	for i := range bs {
		e.block(&bs[i])
	}
}

func (d *Decoder) blocks() []Block {
	n := d.count(8)
	if n == 0 {
		return nil
	}
	var bs []Block
	if d.arena != nil {
		bs = take(&d.arena.blocks, n)
	} else {
		bs = make([]Block, n)
	}
	for i := range bs {
		d.block(&bs[i])
	}
	return bs
}

func (e *Encoder) usage(u *Usage) {
	e.Int(u.InputTokens)
	e.Int(u.OutputTokens)
	e.Int(u.CacheReadTokens)
	e.Int(u.CacheWriteTokens)
}

func (d *Decoder) usage(u *Usage) {
	u.InputTokens = d.Int()
	u.OutputTokens = d.Int()
	u.CacheReadTokens = d.Int()
	u.CacheWriteTokens = d.Int()
}

func (e *Encoder) meta(m *Meta) {
	e.String(m.RequestID)
	e.String(m.Tenant)
	e.String(m.Session)
	e.Uint(uint64(m.Dialect))
	e.String(m.Model)
	e.Bool(m.Stream)
	e.KVs(m.Annotations)
}

func (d *Decoder) meta(m *Meta) {
	m.RequestID = d.String()
	m.Tenant = d.String()
	m.Session = d.String()
	m.Dialect = Dialect(d.Uint())
	m.Model = d.String()
	m.Stream = d.Bool()
	m.Annotations = d.KVs()
}

func (e *Encoder) route(r *Route) {
	e.String(r.Provider)
	e.String(r.Model)
	e.String(r.BaseURL)
}

func (d *Decoder) route(r *Route) {
	r.Provider = d.String()
	r.Model = d.String()
	r.BaseURL = d.String()
}

func (e *Encoder) optError(x *Error) {
	e.Bool(x != nil)
	if x == nil {
		return
	}
	e.Int(x.Status)
	e.String(x.Kind)
	e.String(x.Message)
	e.Bool(x.Retryable)
	e.Int(x.RetryAfterMs)
}

func (d *Decoder) optError() *Error {
	if !d.Bool() {
		return nil
	}
	var x *Error
	if d.arena != nil {
		x = &take(&d.arena.errs, 1)[0]
	} else {
		x = &Error{}
	}
	x.Status = d.Int()
	x.Kind = d.String()
	x.Message = d.String()
	x.Retryable = d.Bool()
	x.RetryAfterMs = d.Int()
	return x
}

// requestParts writes the parts mask followed by the selected parts of r.
// Stream is always written: it is a property of the exchange, not a part.
func (e *Encoder) requestParts(r *Request, parts Part) {
	e.Uint(uint64(parts))
	e.Bool(r.Stream)
	for bit := PartModel; bit <= PartExtra; bit <<= 1 {
		if parts&bit != 0 {
			e.part(r, bit) // parts.go
		}
	}
}

// requestParts reads what Encoder.requestParts wrote and returns the mask.
func (d *Decoder) requestParts(r *Request) Part {
	parts := Part(d.Uint())
	r.Stream = d.Bool()
	if parts&PartModel != 0 {
		r.Model = d.String()
	}
	if parts&PartSystem != 0 {
		r.System = d.blocks()
	}
	if parts&PartMessages != 0 {
		if n := d.count(3); n > 0 {
			if d.arena != nil {
				r.Messages = take(&d.arena.msgs, n)
			} else {
				r.Messages = make([]Message, n)
			}
			for i := range r.Messages {
				m := &r.Messages[i]
				m.Role = d.String()
				m.Name = d.String()
				m.Content = d.blocks()
			}
		}
	}
	if parts&PartTools != 0 {
		if n := d.count(4); n > 0 {
			if d.arena != nil {
				r.Tools = take(&d.arena.tools, n)
			} else {
				r.Tools = make([]Tool, n)
			}
			for i := range r.Tools {
				t := &r.Tools[i]
				t.Name = d.String()
				t.Description = d.String()
				t.Schema = d.Raw()
				t.CacheControl = d.Raw()
			}
		}
		r.ToolChoice = d.Raw()
	}
	if parts&PartParams != 0 {
		p := &r.Params
		p.Set = uint32(d.Uint())
		p.MaxTokens = d.Int()
		p.Temperature = d.Float()
		p.TopP = d.Float()
		p.TopK = d.Int()
		p.Seed = d.Int()
		p.Stop = d.Strings()
	}
	if parts&PartExtra != 0 {
		r.Extra = d.Raw()
	}
	return parts
}

// nestedExtras reports whether any Extra below the top level of the parts
// in mask is set.
func nestedExtras(r *Request, parts Part) bool {
	has := func(bs []Block) bool {
		for i := range bs {
			if len(bs[i].Extra) > 0 {
				return true
			}
		}
		return false
	}
	if parts&PartSystem != 0 && has(r.System) {
		return true
	}
	if parts&PartMessages != 0 {
		for i := range r.Messages {
			if len(r.Messages[i].Extra) > 0 || has(r.Messages[i].Content) {
				return true
			}
		}
	}
	if parts&PartTools != 0 {
		for i := range r.Tools {
			if len(r.Tools[i].Extra) > 0 {
				return true
			}
		}
	}
	return false
}

// requestExtras writes the Extra members of the system blocks, messages,
// their blocks and the tools of the parts in mask (ABI v1.4): a section
// appended after the last field of LayerRequest, LayerResult and
// EncodeInput, so that earlier peers stop reading before it. It is a
// version varint (1) and, in the order of requestParts, one raw value per
// element: the counts are those already written. Nothing at all is written
// when no element has any, so requests without unknown members encode as
// before, byte for byte.
func (e *Encoder) requestExtras(r *Request, parts Part) {
	if !nestedExtras(r, parts) {
		return
	}
	e.requestExtrasSection(r, parts)
}

// requestExtrasSection writes the section whether or not any element has
// an Extra: a field appended after it (LayerResult's v1.6 flags) needs it
// there, or a v1.4 reader would take that field for the section's version.
func (e *Encoder) requestExtrasSection(r *Request, parts Part) {
	e.Uint(1)
	if parts&PartSystem != 0 {
		for i := range r.System {
			e.Raw(r.System[i].Extra)
		}
	}
	if parts&PartMessages != 0 {
		for i := range r.Messages {
			m := &r.Messages[i]
			e.Raw(m.Extra)
			for j := range m.Content {
				e.Raw(m.Content[j].Extra)
			}
		}
	}
	if parts&PartTools != 0 {
		for i := range r.Tools {
			e.Raw(r.Tools[i].Extra)
		}
	}
}

// requestExtras reads what Encoder.requestExtras wrote, when it is there.
func (d *Decoder) requestExtras(r *Request, parts Part) {
	if !d.More() {
		return
	}
	if v := d.Uint(); v != 1 {
		if d.err == nil {
			d.fail(fmt.Errorf("wire: request extras section version %d, this side understands 1", v))
		}
		return
	}
	if parts&PartSystem != 0 {
		for i := range r.System {
			r.System[i].Extra = d.Raw()
		}
	}
	if parts&PartMessages != 0 {
		for i := range r.Messages {
			m := &r.Messages[i]
			m.Extra = d.Raw()
			for j := range m.Content {
				m.Content[j].Extra = d.Raw()
			}
		}
	}
	if parts&PartTools != 0 {
		for i := range r.Tools {
			r.Tools[i].Extra = d.Raw()
		}
	}
}

func (e *Encoder) response(r *Response) {
	e.String(r.ID)
	e.String(r.Model)
	e.blocks(r.Content)
	e.String(r.StopReason)
	e.String(r.StopSeq)
	e.usage(&r.Usage)
}

func (d *Decoder) response(r *Response) {
	r.ID = d.String()
	r.Model = d.String()
	r.Content = d.blocks()
	r.StopReason = d.String()
	r.StopSeq = d.String()
	d.usage(&r.Usage)
}

func (e *Encoder) optResponse(r *Response) {
	e.Bool(r != nil)
	if r != nil {
		e.response(r)
	}
}

func (d *Decoder) optResponse() *Response {
	if !d.Bool() {
		return nil
	}
	var r *Response
	if d.arena != nil {
		r = &take(&d.arena.resps, 1)[0]
	} else {
		r = &Response{}
	}
	d.response(r)
	return r
}

func (e *Encoder) events(evs []Event) {
	e.Uint(uint64(len(evs)))
	for i := range evs {
		ev := &evs[i]
		e.Uint(uint64(ev.Type))
		e.Int(ev.Index)
		e.String(ev.ID)
		e.String(ev.Model)
		e.block(&ev.Block)
		e.Uint(uint64(ev.Delta))
		e.String(ev.Text)
		e.String(ev.StopReason)
		e.String(ev.StopSeq)
		e.usage(&ev.Usage)
		e.optError(ev.Error)
	}
}

func (d *Decoder) events() []Event {
	n := d.count(16)
	if n == 0 {
		return nil
	}
	var evs []Event
	if d.arena != nil {
		evs = take(&d.arena.events, n)
	} else {
		evs = make([]Event, n)
	}
	for i := range evs {
		ev := &evs[i]
		ev.Type = EventType(d.Uint())
		ev.Index = d.Int()
		ev.ID = d.String()
		ev.Model = d.String()
		d.block(&ev.Block)
		ev.Delta = DeltaKind(d.Uint())
		ev.Text = d.String()
		ev.StopReason = d.String()
		ev.StopSeq = d.String()
		d.usage(&ev.Usage)
		ev.Error = d.optError()
	}
	return evs
}

// Encode writes the descriptor.
func (x *Descriptor) Encode(e *Encoder) {
	e.Reset()
	e.Uint(uint64(x.ABI))
	e.String(x.Name)
	e.String(x.Version)
	e.String(x.Kind)
	e.Uint(uint64(x.Phases))
	e.Uint(uint64(x.Reads))
	e.Uint(uint64(x.Writes))
	if x.Flags != 0 {
		e.Uint(uint64(x.Flags)) // v1.6, appended
	}
}

// Decode reads the descriptor.
func (x *Descriptor) Decode(b []byte) error {
	d := NewDecoder(b)
	x.ABI = uint32(d.Uint())
	x.Name = d.String()
	x.Version = d.String()
	x.Kind = d.String()
	x.Phases = Phase(d.Uint())
	x.Reads = Part(d.Uint())
	x.Writes = Part(d.Uint())
	x.Flags = 0
	if d.More() {
		x.Flags = Flag(d.Uint())
	}
	return d.Err()
}

// EncodeLayerRequest writes a LayerRequest holding only the given parts of req.
// The host calls it directly so it never copies a Request to build one.
func EncodeLayerRequest(e *Encoder, m *Meta, req *Request, parts Part) {
	e.Reset()
	e.meta(m)
	e.requestParts(req, parts)
	e.requestExtras(req, parts) // v1.4, appended
}

// Encode writes the layer request with every part of its Request.
func (x *LayerRequest) Encode(e *Encoder) { EncodeLayerRequest(e, &x.Meta, &x.Request, PartAll) }

// Decode reads a layer request.
func (x *LayerRequest) Decode(b []byte) error { return x.DecodeArena(b, nil) }

// DecodeArena reads it taking its slices from a (see [Arena]); nil
// allocates them, as Decode does.
func (x *LayerRequest) DecodeArena(b []byte, a *Arena) error {
	var d Decoder
	d.InitArena(b, a)
	d.meta(&x.Meta)
	parts := d.requestParts(&x.Request)
	d.requestExtras(&x.Request, parts)
	return d.Err()
}

// Encode writes the layer result.
func (x *LayerResult) Encode(e *Encoder) {
	if x.Patched == 0 && x.Answer == nil && x.Error == nil && x.Action < 0x80 {
		e.buf = x.appendPlain(e.buf[:0])
		return
	}
	x.encode(e)
}

// encode is Encode's general path, out of line: Encode stays small.
//
//go:noinline
func (x *LayerResult) encode(e *Encoder) {
	e.Reset()
	e.Uint(uint64(x.Action))
	e.requestParts(&x.Request, x.Patched)
	e.optResponse(x.Answer)
	e.optError(x.Error)
	e.KVs(x.Headers)
	e.KVs(x.Annotations)
	if !x.SkipAnswer {
		e.requestExtras(&x.Request, x.Patched) // v1.4, appended
		return
	}
	// v1.6, appended after the (then always written) v1.4 section: a
	// flags varint.
	e.requestExtrasSection(&x.Request, x.Patched)
	e.Uint(resultSkipAnswer)
}

// LayerResult's v1.6 flags.
const resultSkipAnswer = 1

// appendPlain appends what Encode writes for a result that patches
// nothing and carries no answer or error — most results of a run — byte
// for byte, in one small function: inside wasm a Go function's every
// jump dispatches through its one jump table, so the general path's size
// (it and the encoders it calls were ~11 KB of wasm) was paid by every
// result (docs/performance.md, the v1.7 subsection).
func (x *LayerResult) appendPlain(b []byte) []byte {
	stream := byte(0)
	if x.Request.Stream {
		stream = 1
	}
	// version, action, parts mask 0, stream, no answer, no error
	b = append(b, FormatVersion, x.Action, 0, stream, 0, 0)
	b = appendKVs(b, x.Headers)
	b = appendKVs(b, x.Annotations)
	if x.SkipAnswer {
		// the v1.4 extras section (version 1, no parts: nothing more),
		// then the v1.6 flags
		b = append(b, 1, resultSkipAnswer)
	}
	return b
}

// Decode reads a layer result.
func (x *LayerResult) Decode(b []byte) error {
	d := NewDecoder(b)
	x.Action = uint8(d.Uint())
	x.Patched = d.requestParts(&x.Request)
	x.Answer = d.optResponse()
	x.Error = d.optError()
	x.Headers = d.KVs()
	x.Annotations = d.KVs()
	d.requestExtras(&x.Request, x.Patched)
	x.SkipAnswer = d.More() && d.Uint()&resultSkipAnswer != 0
	return d.Err()
}

// Encode writes the layer response.
func (x *LayerResponse) Encode(e *Encoder) {
	e.Reset()
	e.meta(&x.Meta)
	e.response(&x.Response)
}

// Decode reads a layer response.
func (x *LayerResponse) Decode(b []byte) error { return x.DecodeArena(b, nil) }

// DecodeArena reads it taking its slices from a (see [Arena]); nil
// allocates them, as Decode does.
func (x *LayerResponse) DecodeArena(b []byte, a *Arena) error {
	var d Decoder
	d.InitArena(b, a)
	d.meta(&x.Meta)
	d.response(&x.Response)
	return d.Err()
}

// Encode writes the layer response result.
func (x *LayerResponseResult) Encode(e *Encoder) {
	e.Reset()
	e.Bool(x.Replaced)
	if x.Replaced {
		e.response(&x.Response)
	}
	e.KVs(x.Headers)
}

// Decode reads a layer response result.
func (x *LayerResponseResult) Decode(b []byte) error {
	d := NewDecoder(b)
	x.Replaced = d.Bool()
	if x.Replaced {
		d.response(&x.Response)
	}
	x.Headers = d.KVs()
	return d.Err()
}

// Encode writes the layer stream batch.
func (x *LayerStream) Encode(e *Encoder) {
	e.Reset()
	e.meta(&x.Meta)
	e.events(x.Events)
	e.Raw(x.State)
	e.Bool(x.Final)
	if x.UnchangedOK {
		e.Bool(true) // v1.6, appended
	}
}

// Decode reads a layer stream batch.
func (x *LayerStream) Decode(b []byte) error { return x.DecodeArena(b, nil) }

// DecodeArena reads it taking its slices from a (see [Arena]); nil
// allocates them, as Decode does.
func (x *LayerStream) DecodeArena(b []byte, a *Arena) error {
	var d Decoder
	d.InitArena(b, a)
	d.meta(&x.Meta)
	x.Events = d.events()
	x.State = d.Raw()
	x.Final = d.Bool()
	x.UnchangedOK = d.More() && d.Bool()
	return d.Err()
}

// Encode writes the layer stream result. An Unchanged result carries no
// events (a count of zero), then State, then the v1.6 flag.
func (x *LayerStreamResult) Encode(e *Encoder) {
	e.Reset()
	if x.Unchanged {
		e.Uint(0)
	} else {
		e.events(x.Events)
	}
	e.Raw(x.State)
	if x.Unchanged {
		e.Bool(true) // v1.6, appended
	}
}

// Decode reads a layer stream result.
func (x *LayerStreamResult) Decode(b []byte) error {
	d := NewDecoder(b)
	x.Events = d.events()
	x.State = d.Raw()
	x.Unchanged = d.More() && d.Bool()
	return d.Err()
}

// Encode writes the encode input with every part of its Request.
func (x *EncodeInput) Encode(e *Encoder) {
	EncodeEncodeInput(e, &x.Meta, &x.Route, &x.Request, PartAll, x.Pristine)
}

// EncodeEncodeInput writes an EncodeInput holding only the given parts of req
// (a provider's declared Reads), without building one.
func EncodeEncodeInput(e *Encoder, m *Meta, r *Route, req *Request, parts Part, pristine bool) {
	e.Reset()
	e.meta(m)
	e.route(r)
	e.requestParts(req, parts)
	e.Bool(pristine)
	e.requestExtras(req, parts) // v1.4, appended
}

// Decode reads the encode input.
func (x *EncodeInput) Decode(b []byte) error { return x.DecodeArena(b, nil) }

// DecodeArena reads it taking its slices from a (see [Arena]); nil
// allocates them, as Decode does.
func (x *EncodeInput) DecodeArena(b []byte, a *Arena) error {
	var d Decoder
	d.InitArena(b, a)
	d.meta(&x.Meta)
	d.route(&x.Route)
	parts := d.requestParts(&x.Request)
	x.Pristine = d.Bool()
	d.requestExtras(&x.Request, parts)
	return d.Err()
}

// Encode writes the encode result.
func (x *EncodeResult) Encode(e *Encoder) {
	e.Reset()
	e.Bool(x.Call != nil)
	if c := x.Call; c != nil {
		e.String(c.Method)
		e.String(c.URL)
		e.KVs(c.Headers)
		e.Uint(uint64(c.BodyMode))
		e.Uint(uint64(c.BodyDialect))
		e.Raw(c.Body)
		e.Bool(c.Stream)
		e.Uint(uint64(c.ResponseDialect))
	}
	e.optResponse(x.Local)
	e.optError(x.Error)
	if x.Call != nil {
		e.Raw(x.Call.BodyMerge) // v1.3, appended
		e.Bool(x.Call.VerifySuccess)
	}
	if len(x.Degraded) > 0 {
		e.Strings(x.Degraded) // v1.4, appended; absent when empty
	}
}

// Decode reads the encode result.
func (x *EncodeResult) Decode(b []byte) error {
	d := NewDecoder(b)
	if d.Bool() {
		x.Call = &UpstreamCall{
			Method:          d.String(),
			URL:             d.String(),
			Headers:         d.KVs(),
			BodyMode:        uint8(d.Uint()),
			BodyDialect:     Dialect(d.Uint()),
			Body:            d.Raw(),
			Stream:          d.Bool(),
			ResponseDialect: Dialect(d.Uint()),
		}
	}
	x.Local = d.optResponse()
	x.Error = d.optError()
	if x.Call != nil && d.More() {
		x.Call.BodyMerge = d.Raw()
		x.Call.VerifySuccess = d.Bool()
	}
	if d.More() {
		x.Degraded = d.Strings()
	}
	return d.Err()
}

// Encode writes the decode input.
func (x *DecodeInput) Encode(e *Encoder) {
	e.Reset()
	e.meta(&x.Meta)
	e.route(&x.Route)
	e.Int(x.Status)
	e.KVs(x.Headers)
	e.Raw(x.Body)
}

// Decode reads the decode input.
func (x *DecodeInput) Decode(b []byte) error { return x.DecodeArena(b, nil) }

// DecodeArena reads it taking its slices from a (see [Arena]); nil
// allocates them, as Decode does.
func (x *DecodeInput) DecodeArena(b []byte, a *Arena) error {
	var d Decoder
	d.InitArena(b, a)
	d.meta(&x.Meta)
	d.route(&x.Route)
	x.Status = d.Int()
	x.Headers = d.KVs()
	x.Body = d.Raw()
	return d.Err()
}

// Encode writes the decode result.
func (x *DecodeResult) Encode(e *Encoder) {
	e.Reset()
	e.optResponse(x.Response)
	e.optError(x.Error)
}

// Decode reads the decode result.
func (x *DecodeResult) Decode(b []byte) error {
	d := NewDecoder(b)
	x.Response = d.optResponse()
	x.Error = d.optError()
	return d.Err()
}

// Encode writes the stream decode input.
func (x *DecodeStreamInput) Encode(e *Encoder) {
	e.Reset()
	e.meta(&x.Meta)
	e.route(&x.Route)
	e.Uint(uint64(len(x.Events)))
	for i := range x.Events {
		e.String(x.Events[i].Event)
		e.Raw(x.Events[i].Data)
	}
	e.Raw(x.State)
	e.Bool(x.Final)
	e.KVs(x.Headers) // v1.3, appended
}

// Decode reads the stream decode input.
func (x *DecodeStreamInput) Decode(b []byte) error { return x.DecodeArena(b, nil) }

// DecodeArena reads it taking its slices from a (see [Arena]); nil
// allocates them, as Decode does.
func (x *DecodeStreamInput) DecodeArena(b []byte, a *Arena) error {
	var d Decoder
	d.InitArena(b, a)
	d.meta(&x.Meta)
	d.route(&x.Route)
	if n := d.count(2); n > 0 {
		if d.arena != nil {
			x.Events = take(&d.arena.sses, n)
		} else {
			x.Events = make([]SSE, n)
		}
		for i := range x.Events {
			x.Events[i].Event = d.String()
			x.Events[i].Data = d.Raw()
		}
	}
	x.State = d.Raw()
	x.Final = d.Bool()
	if d.More() {
		x.Headers = d.KVs()
	}
	return d.Err()
}

// Encode writes the stream decode result.
func (x *DecodeStreamResult) Encode(e *Encoder) {
	e.Reset()
	e.events(x.Events)
	e.Raw(x.State)
	e.optError(x.Error)
}

// Decode reads the stream decode result.
func (x *DecodeStreamResult) Decode(b []byte) error {
	d := NewDecoder(b)
	x.Events = d.events()
	x.State = d.Raw()
	x.Error = d.optError()
	return d.Err()
}
