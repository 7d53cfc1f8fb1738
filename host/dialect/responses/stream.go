package responses

import (
	"strconv"
	"time"

	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// StreamEncoder turns canonical stream events into the Responses API's
// event grammar, in the order the official SDKs' accumulators expect:
//
//	response.created, response.in_progress,
//	per text block: response.output_item.added, response.content_part.added,
//	  response.output_text.delta…, response.output_text.done,
//	  response.content_part.done, response.output_item.done;
//	per tool_use block: response.output_item.added,
//	  response.function_call_arguments.delta…, …arguments.done,
//	  response.output_item.done;
//	per thinking block: response.output_item.added (reasoning),
//	  response.reasoning_summary_part.added, …summary_text.delta…,
//	  …summary_text.done, …summary_part.done, response.output_item.done
//	  (the signature as encrypted_content);
//	response.completed (response.incomplete after max_tokens), with the
//	whole response and its usage.
//
// An error event becomes "error" followed by response.failed, and ends the
// stream. Every event carries a sequence_number. Like the other codecs'
// encoders it repairs missing events (a stream without message_start still
// gets response.created).
type StreamEncoder struct {
	// ID is the response's id; NewStreamEncoder draws one.
	ID string
	// Created is created_at (Unix seconds); NewStreamEncoder sets now.
	Created int64

	model   string
	seq     int64
	started bool
	joined  bool // writing into a stream it did not start (Joined)
	done    bool
	stop    string
	usage   wire.Usage
	items   []outItem
}

// NewStreamEncoder returns an encoder for one response.
func NewStreamEncoder() *StreamEncoder {
	return &StreamEncoder{ID: NewID(), Created: time.Now().Unix()}
}

// Joined makes the encoder write into a stream it did not start: one the
// gateway relayed from a Responses upstream as it came, until it broke. It
// writes no lifecycle events of its own, and an error is the error event
// alone: a response.created or response.failed of its own would name a
// response the caller never saw created (the SDKs refuse a changed
// identity).
func (s *StreamEncoder) Joined() { s.started, s.joined = true, true }

// Done reports whether the stream's last event (response.completed, or
// response.failed) was written.
func (s *StreamEncoder) Done() bool { return s.done }

// event appends "event: typ" and the data line's head, up to the members
// after type and sequence_number ({"type":…,"sequence_number":n).
func (s *StreamEncoder) event(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, s.seq, 10)
	s.seq++
	return dst
}

func end(dst []byte) []byte { return append(dst, "}\n\n"...) }

func (s *StreamEncoder) head(status, reason string) head {
	return head{id: s.ID, model: s.model, status: status, reason: reason, created: s.Created}
}

func (s *StreamEncoder) start(dst []byte, model string) []byte {
	s.started = true
	s.model = model
	h := s.head("in_progress", "")
	for _, typ := range []string{"response.created", "response.in_progress"} {
		dst = s.event(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = appendResponse(dst, &h, nil, nil, nil)
		dst = end(dst)
	}
	return dst
}

// item returns the open item of a canonical block index.
func (s *StreamEncoder) item(block int64) (*outItem, int) {
	for i := len(s.items) - 1; i >= 0; i-- {
		if s.items[i].block == block && !s.items[i].closed {
			return &s.items[i], i
		}
	}
	return nil, -1
}

// itemHead appends `,"item_id":…,"output_index":n`.
func itemHead(dst []byte, it *outItem, index int) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = jsonx.AppendString(dst, it.id)
	dst = append(dst, `,"output_index":`...)
	return strconv.AppendInt(dst, int64(index), 10)
}

// Encode appends the SSE bytes for ev (possibly none) to dst.
func (s *StreamEncoder) Encode(dst []byte, ev *wire.Event) []byte {
	if s.done {
		return dst
	}
	if !s.started && ev.Type != wire.EventPing {
		dst = s.start(dst, ev.Model)
	}
	switch ev.Type {
	case wire.EventMessageStart:
		if s.model == "" {
			s.model = ev.Model
		}
		mergeUsage(&s.usage, &ev.Usage)
	case wire.EventBlockStart:
		it, ok := itemFor(&ev.Block)
		if !ok {
			return dst
		}
		it.block, it.text = ev.Index, nil
		if ev.Block.Type == wire.BlockThinking {
			it.enc = ""
		}
		s.items = append(s.items, it)
		index := len(s.items) - 1
		p := &s.items[index]
		dst = s.event(dst, "response.output_item.added")
		dst = append(dst, `,"output_index":`...)
		dst = strconv.AppendInt(dst, int64(index), 10)
		dst = append(dst, `,"item":`...)
		dst = appendItem(dst, p, "in_progress")
		dst = end(dst)
		switch p.kind {
		case 'm':
			dst = s.event(dst, "response.content_part.added")
			dst = itemHead(dst, p, index)
			dst = append(dst, `,"content_index":0,"part":`...)
			dst = appendTextPart(dst, nil)
			dst = end(dst)
		case 'r':
			if ev.Block.Type == wire.BlockThinking {
				dst = s.event(dst, "response.reasoning_summary_part.added")
				dst = itemHead(dst, p, index)
				dst = append(dst, `,"summary_index":0,"part":`...)
				dst = appendSummaryPart(dst, nil)
				dst = end(dst)
			}
		}
	case wire.EventDelta:
		p, index := s.item(ev.Index)
		if p == nil {
			return dst
		}
		switch {
		case p.kind == 'm' && ev.Delta == wire.DeltaText:
			p.text = append(p.text, ev.Text...)
			dst = s.event(dst, "response.output_text.delta")
			dst = itemHead(dst, p, index)
			dst = append(dst, `,"content_index":0,"delta":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = append(dst, `,"logprobs":[]`...)
			dst = end(dst)
		case p.kind == 'f' && ev.Delta == wire.DeltaInputJSON:
			p.text = append(p.text, ev.Text...)
			dst = s.event(dst, "response.function_call_arguments.delta")
			dst = itemHead(dst, p, index)
			dst = append(dst, `,"delta":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = end(dst)
		case p.kind == 'r' && ev.Delta == wire.DeltaThinking:
			p.text = append(p.text, ev.Text...)
			dst = s.event(dst, "response.reasoning_summary_text.delta")
			dst = itemHead(dst, p, index)
			dst = append(dst, `,"summary_index":0,"delta":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = end(dst)
		case p.kind == 'r' && ev.Delta == wire.DeltaSignature:
			p.enc += ev.Text
		}
	case wire.EventBlockStop:
		if p, index := s.item(ev.Index); p != nil {
			dst = s.close(dst, p, index)
		}
	case wire.EventMessageDelta:
		if ev.StopReason != "" {
			s.stop = ev.StopReason
		}
		mergeUsage(&s.usage, &ev.Usage)
	case wire.EventMessageStop:
		dst = s.finish(dst)
	case wire.EventError:
		dst = s.fail(dst, ev.Error)
	case wire.EventPing:
		dst = append(dst, ": ping\n\n"...)
	}
	return dst
}

// close writes the done events of an item.
func (s *StreamEncoder) close(dst []byte, p *outItem, index int) []byte {
	p.closed = true
	switch p.kind {
	case 'm':
		dst = s.event(dst, "response.output_text.done")
		dst = itemHead(dst, p, index)
		dst = append(dst, `,"content_index":0,"text":`...)
		dst = jsonx.AppendString(dst, string(p.text))
		dst = append(dst, `,"logprobs":[]`...)
		dst = end(dst)
		dst = s.event(dst, "response.content_part.done")
		dst = itemHead(dst, p, index)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = appendTextPart(dst, p.text)
		dst = end(dst)
	case 'f':
		if len(p.text) == 0 {
			p.text = append(p.text, "{}"...)
		}
		dst = s.event(dst, "response.function_call_arguments.done")
		dst = itemHead(dst, p, index)
		dst = append(dst, `,"name":`...)
		dst = jsonx.AppendString(dst, p.name)
		dst = append(dst, `,"arguments":`...)
		dst = jsonx.AppendString(dst, string(p.text))
		dst = end(dst)
	case 'r':
		if len(p.text) > 0 {
			dst = s.event(dst, "response.reasoning_summary_text.done")
			dst = itemHead(dst, p, index)
			dst = append(dst, `,"summary_index":0,"text":`...)
			dst = jsonx.AppendString(dst, string(p.text))
			dst = end(dst)
			dst = s.event(dst, "response.reasoning_summary_part.done")
			dst = itemHead(dst, p, index)
			dst = append(dst, `,"summary_index":0,"part":`...)
			dst = appendSummaryPart(dst, p.text)
			dst = end(dst)
		}
	}
	dst = s.event(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"item":`...)
	dst = appendItem(dst, p, "completed")
	return end(dst)
}

func (s *StreamEncoder) closeAll(dst []byte) []byte {
	for i := range s.items {
		if !s.items[i].closed {
			dst = s.close(dst, &s.items[i], i)
		}
	}
	return dst
}

// finish closes what is open and writes response.completed (or
// response.incomplete).
func (s *StreamEncoder) finish(dst []byte) []byte {
	dst = s.closeAll(dst)
	status, reason := statusOf(s.stop)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	h := s.head(status, reason)
	dst = s.event(dst, typ)
	dst = append(dst, `,"response":`...)
	dst = appendResponse(dst, &h, s.items, &s.usage, nil)
	s.done = true
	return end(dst)
}

// fail writes an error event and response.failed, with the output so far.
func (s *StreamEncoder) fail(dst []byte, e *wire.Error) []byte {
	if e == nil {
		e = &wire.Error{Kind: wire.ErrInternal}
	}
	dst = s.event(dst, "error")
	dst = append(dst, `,"code":`...)
	dst = jsonx.AppendString(dst, errorCode(e))
	dst = append(dst, `,"message":`...)
	dst = jsonx.AppendString(dst, errorMessage(e))
	dst = append(dst, `,"param":null`...)
	dst = end(dst)
	if s.joined {
		s.done = true
		return dst
	}
	for i := range s.items {
		s.items[i].closed = true
	}
	h := s.head("failed", "")
	dst = s.event(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	dst = appendResponse(dst, &h, s.items, &s.usage, e)
	s.done = true
	return end(dst)
}

func mergeUsage(dst, u *wire.Usage) {
	if u.InputTokens != 0 {
		dst.InputTokens = u.InputTokens
	}
	if u.OutputTokens != 0 {
		dst.OutputTokens = u.OutputTokens
	}
	if u.CacheReadTokens != 0 {
		dst.CacheReadTokens = u.CacheReadTokens
	}
	if u.CacheWriteTokens != 0 {
		dst.CacheWriteTokens = u.CacheWriteTokens
	}
}
