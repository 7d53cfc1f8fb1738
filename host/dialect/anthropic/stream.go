package anthropic

import (
	"slices"
	"strconv"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// StreamEncoder turns canonical stream events into Messages SSE events
// ("event: name\ndata: {…}\n\n"): message_start, then per content block
// content_block_start, content_block_delta (text_delta, input_json_delta,
// thinking_delta, signature_delta) and content_block_stop, then message_delta
// (stop_reason, stop_sequence, usage) and message_stop; ping and error too.
//
// Block indexes are renumbered 0, 1, 2… in start order, as the SDKs'
// accumulators index content by them. It repairs missing events: a stream
// without message_start gets one, blocks still open at message_delta or
// message_stop are stopped, and message_stop without message_delta gets one.
// An error event ends the stream.
type StreamEncoder struct {
	started, delta, done bool
	tools                bool // a tool_use block was started
	next                 int64
	blocks               []blockSlot // started blocks, canonical index → output index
	usage                wire.Usage
	scratch              []byte
}

type blockSlot struct {
	in, out int64
	open    bool
}

// NewStreamEncoder returns an encoder for one stream.
func NewStreamEncoder() *StreamEncoder { return &StreamEncoder{} }

// Done reports whether the stream was closed (message_stop or an error
// written).
func (s *StreamEncoder) Done() bool { return s.done }

func event(dst []byte, name string, data []byte) []byte {
	return dialect.AppendEvent(dst, name, data)
}

func (s *StreamEncoder) messageStart(dst []byte, ev *wire.Event) []byte {
	s.started = true
	id := ev.ID
	if id == "" {
		id = NewID()
	}
	s.usage = ev.Usage
	b := s.scratch[:0]
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = jsonx.AppendString(b, id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = jsonx.AppendString(b, ev.Model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	b = appendUsage(b, &ev.Usage)
	b = append(b, '}', '}')
	s.scratch = b
	return event(dst, "message_start", b)
}

func (s *StreamEncoder) slot(in int64) *blockSlot {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if s.blocks[i].in == in {
			return &s.blocks[i]
		}
	}
	return nil
}

func (s *StreamEncoder) stopBlock(dst []byte, sl *blockSlot) []byte {
	sl.open = false
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = strconv.AppendInt(dst, sl.out, 10)
	return append(dst, "}\n\n"...)
}

func (s *StreamEncoder) closeAll(dst []byte) []byte {
	for i := range s.blocks {
		if s.blocks[i].open {
			dst = s.stopBlock(dst, &s.blocks[i])
		}
	}
	return dst
}

// Encode appends the SSE bytes for ev (possibly none) to dst.
func (s *StreamEncoder) Encode(dst []byte, ev *wire.Event) []byte {
	if s.done {
		return dst
	}
	if !s.started && ev.Type != wire.EventError && ev.Type != wire.EventPing {
		if ev.Type == wire.EventMessageStart {
			return s.messageStart(dst, ev)
		}
		dst = s.messageStart(dst, &wire.Event{})
	}
	switch ev.Type {
	case wire.EventBlockStart:
		if s.delta {
			return dst
		}
		if old := s.slot(ev.Index); old != nil && old.open {
			dst = s.stopBlock(dst, old)
		}
		s.tools = s.tools || ev.Block.Type == wire.BlockToolUse
		sl := blockSlot{in: ev.Index, out: s.next, open: true}
		s.next++
		s.blocks = append(s.blocks, sl)
		b := s.scratch[:0]
		b = append(b, `{"type":"content_block_start","index":`...)
		b = strconv.AppendInt(b, sl.out, 10)
		b = append(b, `,"content_block":`...)
		b = appendStartBlock(b, &ev.Block)
		b = append(b, '}')
		s.scratch = b
		dst = event(dst, "content_block_start", b)
	case wire.EventDelta:
		sl := s.slot(ev.Index)
		if sl == nil || !sl.open || ev.Text == "" {
			return dst
		}
		var kind, field string
		switch ev.Delta {
		case wire.DeltaText:
			kind, field = "text_delta", "text"
		case wire.DeltaInputJSON:
			kind, field = "input_json_delta", "partial_json"
		case wire.DeltaThinking:
			kind, field = "thinking_delta", "thinking"
		case wire.DeltaSignature:
			kind, field = "signature_delta", "signature"
		default:
			return dst
		}
		b := s.scratch[:0]
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = strconv.AppendInt(b, sl.out, 10)
		b = append(b, `,"delta":{"type":"`...)
		b = append(b, kind...)
		b = append(b, `","`...)
		b = append(b, field...)
		b = append(b, `":`...)
		b = jsonx.AppendString(b, ev.Text)
		b = append(b, '}', '}')
		s.scratch = b
		dst = event(dst, "content_block_delta", b)
	case wire.EventBlockStop:
		if sl := s.slot(ev.Index); sl != nil && sl.open {
			dst = s.stopBlock(dst, sl)
		}
	case wire.EventMessageDelta:
		if !s.delta {
			dst = s.messageDelta(dst, ev)
		}
	case wire.EventMessageStop:
		if !s.delta {
			dst = s.messageDelta(dst, &wire.Event{})
		}
		dst = append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
		s.done = true
	case wire.EventPing:
		dst = append(dst, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
	case wire.EventError:
		e := ev.Error
		if e == nil {
			e = &wire.Error{Kind: wire.ErrInternal}
		}
		s.scratch = appendErrorObject(s.scratch[:0], e)
		dst = event(dst, "error", s.scratch)
		s.done = true
	}
	return dst
}

func (s *StreamEncoder) messageDelta(dst []byte, ev *wire.Event) []byte {
	dst = s.closeAll(dst)
	s.delta = true
	stop := ev.StopReason
	if stop == "" && s.tools {
		stop = wire.StopToolUse
	}
	b := s.scratch[:0]
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = jsonx.AppendString(b, StopReason(stop))
	b = append(b, `,"stop_sequence":`...)
	if ev.StopSeq != "" {
		b = jsonx.AppendString(b, ev.StopSeq)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `},"usage":{"output_tokens":`...)
	out := ev.Usage.OutputTokens
	if out == 0 {
		out = s.usage.OutputTokens
	}
	b = strconv.AppendInt(b, out, 10)
	// input-side counts are known only at the end when the upstream spoke
	// OpenAI; Anthropic's message_delta usage may carry them too
	if u := &ev.Usage; u.InputTokens != 0 || u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		b = append(b, `,"input_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = strconv.AppendInt(b, u.CacheWriteTokens, 10)
		b = append(b, `,"cache_read_input_tokens":`...)
		b = strconv.AppendInt(b, u.CacheReadTokens, 10)
	}
	b = append(b, '}', '}')
	s.scratch = b
	return event(dst, "message_delta", b)
}

// appendStartBlock writes the content_block of a content_block_start.
func appendStartBlock(b []byte, bl *wire.Block) []byte {
	switch bl.Type {
	case wire.BlockText:
		b = append(b, `{"type":"text","text":`...)
		b = jsonx.AppendString(b, bl.Text)
		return append(b, '}')
	case wire.BlockThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonx.AppendString(b, bl.Text)
		b = append(b, `,"signature":`...)
		b = jsonx.AppendString(b, bl.Signature)
		return append(b, '}')
	case wire.BlockToolUse:
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonx.AppendString(b, toolID(bl.ID))
		b = append(b, `,"name":`...)
		b = jsonx.AppendString(b, bl.Name)
		return append(b, `,"input":{}}`...)
	}
	// redacted thinking, server tool blocks, …: the whole block
	mark := len(b)
	b, err := appendBlock(b, bl, true)
	if err != nil {
		b = append(b[:mark], `{"type":"text","text":""}`...)
	}
	return b
}

// StreamDecoder turns an upstream's Messages SSE events into canonical
// events (nearly one to one). Unknown event and delta types are skipped.
type StreamDecoder struct {
	stopped, delta bool
	open           []int64
	// other are the indexes of blocks of a type the ABI does not model
	// (BlockOther): their deltas have nowhere to go in the caller's stream.
	other []int64
}

// NewStreamDecoder returns a decoder for one stream.
func NewStreamDecoder() *StreamDecoder { return &StreamDecoder{} }

// Done reports whether the stream ended properly (message_stop or an error
// event).
func (d *StreamDecoder) Done() bool { return d.stopped }

// Decode turns one SSE event (name, data) into canonical events. The event
// type is read from data's "type" (the SSE name is the fallback). Malformed
// data returns an error wrapping dialect.ErrInvalidResponse.
func (d *StreamDecoder) Decode(event string, data []byte) ([]wire.Event, error) {
	data = jsonx.TrimWS(data)
	if d.stopped || len(data) == 0 {
		return nil, nil
	}
	if err := rs.Validate(data, "stream event"); err != nil {
		return nil, err
	}
	var typ string
	var index int64
	var message, block, delta, usage []byte
	var err error
	err = jsonx.ObjectEach(data, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "type":
			typ, err = rs.Str("type", val)
		case "index":
			index, err = rs.Int("index", val)
		case "message":
			message = val
		case "content_block":
			block = val
		case "delta":
			delta = val
		case "usage":
			usage = val
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if typ == "" {
		typ = event
	}
	switch typ {
	case "message_start":
		ev := wire.Event{Type: wire.EventMessageStart}
		if jsonx.KindOf(message) == jsonx.Object {
			err = jsonx.ObjectEach(message, func(rawKey, val []byte) error {
				switch string(dec.K(rawKey)) {
				case "id":
					ev.ID, err = rs.Str("message.id", val)
				case "model":
					ev.Model, err = rs.Str("message.model", val)
				case "usage":
					ev.Usage, err = decodeUsage(val)
				}
				return err
			})
		}
		return []wire.Event{ev}, err
	case "content_block_start":
		b, err := decodeBlock(rs, block)
		if err != nil {
			return nil, dec.Prefix(err, "content_block")
		}
		d.open = append(d.open, index)
		if b.Type == wire.BlockOther {
			d.other = append(d.other, index)
		}
		return []wire.Event{{Type: wire.EventBlockStart, Index: index, Block: b}}, nil
	case "content_block_delta":
		if jsonx.KindOf(delta) != jsonx.Object {
			return nil, rs.Errf("delta", "must be an object")
		}
		var dtype string
		var kind wire.DeltaKind
		var text []byte
		_ = jsonx.ObjectEach(delta, func(rawKey, val []byte) error {
			switch string(dec.K(rawKey)) {
			case "type":
				dtype, _ = jsonx.Unquote(val)
			case "text":
				if kind == 0 || kind == wire.DeltaText {
					kind, text = wire.DeltaText, val
				}
			case "partial_json":
				kind, text = wire.DeltaInputJSON, val
			case "thinking":
				kind, text = wire.DeltaThinking, val
			case "signature":
				kind, text = wire.DeltaSignature, val
			}
			return nil
		})
		switch dtype {
		case "text_delta":
			kind = wire.DeltaText
		case "input_json_delta":
			kind = wire.DeltaInputJSON
		case "thinking_delta":
			kind = wire.DeltaThinking
		case "signature_delta":
			kind = wire.DeltaSignature
		default:
			return nil, nil // citations_delta and future kinds
		}
		if slices.Contains(d.other, index) {
			// A block of a type the ABI does not model is relayed as its
			// start only: a text or JSON delta into it would make the
			// caller's stream invalid (an SDK refuses a text_delta for a
			// block that is not text).
			return nil, nil
		}
		s, err := rs.Str("delta", text)
		if err != nil {
			return nil, err
		}
		return []wire.Event{{Type: wire.EventDelta, Index: index, Delta: kind, Text: s}}, nil
	case "content_block_stop":
		for i, o := range d.open {
			if o == index {
				d.open = append(d.open[:i], d.open[i+1:]...)
				break
			}
		}
		return []wire.Event{{Type: wire.EventBlockStop, Index: index}}, nil
	case "message_delta":
		ev := wire.Event{Type: wire.EventMessageDelta}
		if jsonx.KindOf(delta) == jsonx.Object {
			err = jsonx.ObjectEach(delta, func(rawKey, val []byte) error {
				switch string(dec.K(rawKey)) {
				case "stop_reason":
					ev.StopReason, err = rs.Str("delta.stop_reason", val)
				case "stop_sequence":
					ev.StopSeq, err = rs.Str("delta.stop_sequence", val)
				}
				return err
			})
			if err != nil {
				return nil, err
			}
		}
		if ev.Usage, err = decodeUsage(usage); err != nil {
			return nil, err
		}
		d.delta = true
		return []wire.Event{ev}, nil
	case "message_stop":
		d.stopped = true
		return []wire.Event{{Type: wire.EventMessageStop}}, nil
	case "ping":
		return []wire.Event{{Type: wire.EventPing}}, nil
	case "error":
		d.stopped = true
		return []wire.Event{{Type: wire.EventError, Error: dialect.DecodeErrorBody(0, data)}}, nil
	}
	return nil, nil
}

// Finish closes the stream if the upstream ended it without message_stop:
// open blocks are stopped, then message_delta (when none came) and
// message_stop are emitted.
func (d *StreamDecoder) Finish() []wire.Event {
	if d.stopped {
		return nil
	}
	var out []wire.Event
	for _, i := range d.open {
		out = append(out, wire.Event{Type: wire.EventBlockStop, Index: i})
	}
	d.open = d.open[:0]
	if !d.delta {
		out = append(out, wire.Event{Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn})
	}
	d.stopped = true
	return append(out, wire.Event{Type: wire.EventMessageStop})
}
