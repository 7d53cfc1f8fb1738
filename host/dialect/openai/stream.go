package openai

import (
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// IncludeUsage reports whether a request asked for the usage chunk
// (stream_options.include_usage in Request.Extra); pass it to
// NewStreamEncoder when answering that request.
func IncludeUsage(req *wire.Request) bool {
	if len(req.Extra) == 0 || !jsonx.Valid(req.Extra) || jsonx.KindOf(req.Extra) != jsonx.Object {
		return false
	}
	include := false
	_ = jsonx.ObjectEach(req.Extra, func(key, val []byte) error {
		if !jsonx.KeyIs(key, "stream_options") || jsonx.KindOf(val) != jsonx.Object {
			return nil
		}
		return jsonx.ObjectEach(val, func(k2, v2 []byte) error {
			if jsonx.KeyIs(k2, "include_usage") {
				include, _ = jsonx.ParseBool(v2)
			}
			return nil
		})
	})
	return include
}

// StreamEncoder turns canonical stream events into Chat Completions chunks
// ("data: {…}\n\n" lines ending with "data: [DONE]\n\n"), in the order the
// official SDKs' accumulators expect: a first chunk with the assistant role,
// content / reasoning_content / tool_calls deltas (tool call indexes count
// tool calls, not content blocks; a thinking block's signature, and redacted
// thinking, go out as delta.reasoning_details, OpenRouter's convention), one chunk with finish_reason, then the
// usage chunk (choices: [], only when include_usage was asked), then [DONE].
// Every chunk carries the same id. Pings become SSE comments. An error event
// is written as data: {"error":{…}} and ends the stream (no [DONE]).
//
// It repairs missing events: a stream without message_start gets one,
// message_stop without message_delta still writes a finish_reason.
type StreamEncoder struct {
	// Created is the chunks' "created" time (Unix seconds); NewStreamEncoder
	// sets it to now.
	Created int64

	includeUsage bool
	started      bool
	roleSent     bool // the first chunk, with the role, went out
	finished     bool // finish_reason written
	done         bool
	usage        wire.Usage
	prefix       []byte // `data: {"id":…,"choices":[{"index":0,"delta":`
	tools        []toolSlot
	thinks       []thinkSlot // thinking blocks, for reasoning_details
	details      int         // reasoning_details entries written
}

// thinkSlot collects a thinking block's text, so its signature delta can
// go out as one complete reasoning_details entry.
type thinkSlot struct {
	block int64
	text  []byte
}

func (s *StreamEncoder) think(block int64) *thinkSlot {
	for i := len(s.thinks) - 1; i >= 0; i-- {
		if s.thinks[i].block == block {
			return &s.thinks[i]
		}
	}
	s.thinks = append(s.thinks, thinkSlot{block: block})
	return &s.thinks[len(s.thinks)-1]
}

type toolSlot struct {
	block int64 // canonical block index
	index int   // OpenAI tool_calls index
}

// NewStreamEncoder returns an encoder; includeUsage writes the usage chunk
// before [DONE] (see IncludeUsage).
func NewStreamEncoder(includeUsage bool) *StreamEncoder {
	return &StreamEncoder{Created: now().Unix(), includeUsage: includeUsage}
}

func (s *StreamEncoder) start(id, model string) {
	if id == "" {
		id = NewID()
	}
	p := make([]byte, 0, 96+len(id)+len(model))
	p = append(p, `data: {"id":`...)
	p = jsonx.AppendString(p, id)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, s.Created, 10)
	p = append(p, `,"model":`...)
	p = jsonx.AppendString(p, model)
	s.prefix = p
	s.started = true
}

// chunkHead appends the chunk up to the start of the delta object's value.
func (s *StreamEncoder) chunkHead(dst []byte) []byte {
	dst = append(dst, s.prefix...)
	return append(dst, `,"choices":[{"index":0,"delta":`...)
}

// chunkTail closes a chunk whose delta was just written.
func (s *StreamEncoder) chunkTail(dst []byte, finish string) []byte {
	if finish == "" {
		dst = append(dst, `,"finish_reason":null}]`...)
	} else {
		dst = append(dst, `,"finish_reason":"`...)
		dst = append(dst, finish...)
		dst = append(dst, '"', '}', ']')
	}
	if s.includeUsage {
		dst = append(dst, `,"usage":null`...)
	}
	return append(dst, '}', '\n', '\n')
}

func mergeUsage(dst *wire.Usage, u *wire.Usage) {
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

// Encode appends the SSE bytes for ev (possibly none) to dst.
func (s *StreamEncoder) Encode(dst []byte, ev *wire.Event) []byte {
	if s.done {
		return dst
	}
	if !s.started && ev.Type != wire.EventError && ev.Type != wire.EventPing {
		if ev.Type == wire.EventMessageStart {
			s.start(ev.ID, ev.Model)
			mergeUsage(&s.usage, &ev.Usage)
			// The role chunk waits for the first content: OpenAI opens a
			// tool-only answer with "content":null beside its first tool
			// call, a text answer with "content":"" (SDK accumulators tell
			// the two apart).
			return dst
		}
		s.start("", "")
	}
	if !s.roleSent && s.started && ev.Type != wire.EventError && ev.Type != wire.EventPing && ev.Type != wire.EventMessageStart {
		toolFirst := ev.Type == wire.EventBlockStart && ev.Block.Type == wire.BlockToolUse && !s.finished
		if !toolFirst {
			s.roleSent = true
			dst = s.chunkHead(dst)
			dst = append(dst, `{"role":"assistant","content":""}`...)
			dst = s.chunkTail(dst, "")
		}
	}
	switch ev.Type {
	case wire.EventMessageStart:
		// a second message_start: nothing to say
	case wire.EventBlockStart:
		if s.finished {
			return dst
		}
		switch ev.Block.Type {
		case wire.BlockThinking:
			t := s.think(ev.Index)
			t.text = append(t.text[:0], ev.Block.Text...)
			return dst
		case wire.BlockRedactedThinking:
			// redacted thinking has no reasoning_content form: only
			// reasoning_details carries it
			dst = s.chunkHead(dst)
			dst = append(dst, `{"reasoning_details":[`...)
			dst = appendEncryptedDetail(dst, ev.Block.Data, s.details)
			s.details++
			dst = append(dst, ']', '}')
			return s.chunkTail(dst, "")
		}
		if ev.Block.Type != wire.BlockToolUse {
			return dst
		}
		slot := toolSlot{block: ev.Index, index: len(s.tools)}
		s.tools = append(s.tools, slot)
		dst = s.chunkHead(dst)
		if !s.roleSent {
			s.roleSent = true
			dst = append(dst, `{"role":"assistant","content":null,"tool_calls":[{"index":`...)
		} else {
			dst = append(dst, `{"tool_calls":[{"index":`...)
		}
		dst = strconv.AppendInt(dst, int64(slot.index), 10)
		dst = append(dst, `,"id":`...)
		dst = jsonx.AppendString(dst, toolID(ev.Block.ID))
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = jsonx.AppendString(dst, ev.Block.Name)
		dst = append(dst, `,"arguments":""}}]}`...)
		dst = s.chunkTail(dst, "")
	case wire.EventDelta:
		if ev.Text == "" || s.finished {
			return dst
		}
		switch ev.Delta {
		case wire.DeltaText:
			dst = s.chunkHead(dst)
			dst = append(dst, `{"content":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = append(dst, '}')
			dst = s.chunkTail(dst, "")
		case wire.DeltaSignature:
			// the thinking block is complete: one reasoning_details entry
			// with its whole text and signature (OpenRouter's convention)
			t := s.think(ev.Index)
			dst = s.chunkHead(dst)
			dst = append(dst, `{"reasoning_details":[`...)
			dst = appendTextDetail(dst, string(t.text), ev.Text, s.details)
			s.details++
			dst = append(dst, ']', '}')
			dst = s.chunkTail(dst, "")
		case wire.DeltaThinking:
			t := s.think(ev.Index)
			t.text = append(t.text, ev.Text...)
			dst = s.chunkHead(dst)
			dst = append(dst, `{"reasoning_content":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = append(dst, '}')
			dst = s.chunkTail(dst, "")
		case wire.DeltaInputJSON:
			idx := -1
			for i := len(s.tools) - 1; i >= 0; i-- {
				if s.tools[i].block == ev.Index {
					idx = s.tools[i].index
					break
				}
			}
			if idx < 0 {
				return dst // no tool_use block was started at this index
			}
			dst = s.chunkHead(dst)
			dst = append(dst, `{"tool_calls":[{"index":`...)
			dst = strconv.AppendInt(dst, int64(idx), 10)
			dst = append(dst, `,"function":{"arguments":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = append(dst, `}}]}`...)
			dst = s.chunkTail(dst, "")
		}
	case wire.EventMessageDelta:
		mergeUsage(&s.usage, &ev.Usage)
		if !s.finished {
			dst = s.finish(dst, ev.StopReason)
		}
	case wire.EventMessageStop:
		if !s.finished {
			dst = s.finish(dst, "")
		}
		if s.includeUsage {
			dst = append(dst, s.prefix...)
			dst = append(dst, `,"choices":[],"usage":`...)
			dst = appendUsage(dst, &s.usage)
			dst = append(dst, '}', '\n', '\n')
		}
		dst = append(dst, "data: [DONE]\n\n"...)
		s.done = true
	case wire.EventError:
		e := ev.Error
		if e == nil {
			e = &wire.Error{Kind: wire.ErrInternal}
		}
		dst = append(dst, "data: "...)
		dst = appendErrorObject(dst, e)
		dst = append(dst, '\n', '\n')
		s.done = true
	case wire.EventPing:
		dst = append(dst, ": ping\n\n"...)
	}
	return dst
}

func (s *StreamEncoder) finish(dst []byte, stop string) []byte {
	s.finished = true
	if stop == "" && len(s.tools) > 0 {
		stop = wire.StopToolUse
	}
	dst = s.chunkHead(dst)
	dst = append(dst, '{', '}')
	return s.chunkTail(dst, FinishReason(stop))
}

// Done reports whether the stream was closed ([DONE] or an error written).
func (s *StreamEncoder) Done() bool { return s.done }

// StreamDecoder turns an upstream's Chat Completions chunks into canonical
// events: message_start on the first chunk, block start/stop around runs of
// reasoning, text and each tool call, deltas, and message_delta (stop reason
// and usage, which OpenAI sends last) plus message_stop at [DONE]. Only
// choice 0 is followed. A leading "<think>…</think>" in content becomes a
// thinking block (tags may be split across chunks).
type StreamDecoder struct {
	started, stopped bool
	open             blockKind
	openIndex        int64
	next             int64
	calls            []callSlot
	stop             string
	usage            wire.Usage
	tag              tagState // leading <think> extraction from content
	held             string   // content held back: maybe part of a tag
}

// tagState follows a leading "<think>…</think>" in streamed content.
type tagState uint8

const (
	tagUndecided tagState = iota // no content yet: a leading <think> may come
	tagInside                    // inside <think>: content is reasoning
	tagAfter                     // just after </think>: leading whitespace is dropped
	tagDone                      // content is text
)

const tagSpace = " \t\r\n"

type blockKind uint8

const (
	openNone blockKind = iota
	openText
	openThinking
	openTool
)

type callSlot struct {
	index int64 // OpenAI tool_calls index
	id    string
	block int64
}

// NewStreamDecoder returns a decoder for one stream.
func NewStreamDecoder() *StreamDecoder { return &StreamDecoder{} }

// Done reports whether the stream ended properly ([DONE] or an error event).
func (d *StreamDecoder) Done() bool { return d.stopped }

// Decode turns one SSE event (name, data) into canonical events. Empty data,
// comments and events after the end yield nothing. A malformed chunk returns
// an error wrapping dialect.ErrInvalidResponse.
func (d *StreamDecoder) Decode(event string, data []byte) ([]wire.Event, error) {
	data = jsonx.TrimWS(data)
	if d.stopped || len(data) == 0 {
		return nil, nil
	}
	if string(data) == "[DONE]" {
		return d.end(nil), nil
	}
	if err := rs.Validate(data, "stream chunk"); err != nil {
		return nil, err
	}
	var (
		choices, usage, errObj []byte
		id, model              string
		err                    error
	)
	err = jsonx.ObjectEach(data, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "id":
			id, err = rs.Str("id", val)
		case "model":
			model, err = rs.Str("model", val)
		case "choices":
			choices = val
		case "usage":
			usage = val
		case "error":
			errObj = val
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if event == "error" || (errObj != nil && !jsonx.IsNull(errObj)) {
		d.stopped = true
		return []wire.Event{{Type: wire.EventError, Error: dialect.DecodeErrorBody(0, data)}}, nil
	}
	var out []wire.Event
	if !d.started {
		d.started = true
		out = append(out, wire.Event{Type: wire.EventMessageStart, ID: id, Model: model})
	}
	if jsonx.KindOf(usage) == jsonx.Object {
		u, err := decodeUsage(usage)
		if err != nil {
			return nil, err
		}
		d.usage = u
	}
	if jsonx.KindOf(choices) == jsonx.Array {
		err = jsonx.ArrayEach(choices, func(i int, c []byte) error {
			var err error
			out, err = d.choice(out, c)
			return err
		})
		if err != nil {
			return nil, dec.Prefix(err, "choices")
		}
	}
	return out, nil
}

func (d *StreamDecoder) choice(out []wire.Event, c []byte) ([]wire.Event, error) {
	if err := rs.Object("", c); err != nil {
		return out, err
	}
	var index int64
	var delta, finish []byte
	var err error
	err = jsonx.ObjectEach(c, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "index":
			index, err = intOrNull("index", val)
		case "delta":
			delta = val
		case "finish_reason":
			finish = val
		}
		return err
	})
	if err != nil || index != 0 {
		return out, err
	}
	if jsonx.KindOf(delta) == jsonx.Object {
		var content, reasoning, refusal, toolCalls []byte
		_ = jsonx.ObjectEach(delta, func(rawKey, val []byte) error {
			switch string(dec.K(rawKey)) {
			case "content":
				content = val
			case "reasoning_content":
				reasoning = val
			case "reasoning":
				if reasoning == nil {
					reasoning = val
				}
			case "refusal":
				refusal = val
			case "tool_calls":
				toolCalls = val
			}
			return nil
		})
		if out, err = d.text(out, reasoning, openThinking, wire.DeltaThinking, "delta.reasoning_content"); err != nil {
			return out, err
		}
		if jsonx.KindOf(content) == jsonx.String {
			c, err := rs.Str("delta.content", content)
			if err != nil {
				return out, err
			}
			out = d.content(out, c)
		}
		if out, err = d.text(out, refusal, openText, wire.DeltaText, "delta.refusal"); err != nil {
			return out, err
		}
		if jsonx.KindOf(refusal) == jsonx.String && len(refusal) > 2 {
			d.stop = wire.StopRefusal
		}
		if jsonx.KindOf(toolCalls) == jsonx.Array {
			out = d.flushHeld(out)
			err = jsonx.ArrayEach(toolCalls, func(i int, tc []byte) error {
				var err error
				out, err = d.toolCall(out, tc, int64(i))
				return err
			})
			if err != nil {
				return out, dec.Prefix(err, "delta.tool_calls")
			}
		}
	}
	if jsonx.KindOf(finish) == jsonx.String {
		f, err := rs.Str("finish_reason", finish)
		if err != nil {
			return out, err
		}
		if d.stop != wire.StopRefusal || f != "stop" {
			d.stop = StopReason(f)
		}
		out = d.flushHeld(out)
		out = d.closeOpen(out)
	}
	return out, nil
}

func (d *StreamDecoder) closeOpen(out []wire.Event) []wire.Event {
	if d.open != openNone {
		out = append(out, wire.Event{Type: wire.EventBlockStop, Index: d.openIndex})
		d.open = openNone
	}
	return out
}

func (d *StreamDecoder) openBlock(out []wire.Event, kind blockKind, b wire.Block) []wire.Event {
	out = d.closeOpen(out)
	d.open = kind
	d.openIndex = d.next
	d.next++
	return append(out, wire.Event{Type: wire.EventBlockStart, Index: d.openIndex, Block: b})
}

func (d *StreamDecoder) text(out []wire.Event, val []byte, kind blockKind, dk wire.DeltaKind, field string) ([]wire.Event, error) {
	if jsonx.KindOf(val) != jsonx.String {
		return out, nil
	}
	s, err := rs.Str(field, val)
	if err != nil {
		return out, err
	}
	return d.emit(out, kind, dk, s), nil
}

// emit appends a delta of s to the open block of kind, opening one first
// when needed.
func (d *StreamDecoder) emit(out []wire.Event, kind blockKind, dk wire.DeltaKind, s string) []wire.Event {
	if s == "" {
		return out
	}
	if d.open != kind {
		bt := wire.BlockText
		if kind == openThinking {
			bt = wire.BlockThinking
		}
		out = d.openBlock(out, kind, wire.Block{Type: bt})
	}
	return append(out, wire.Event{Type: wire.EventDelta, Index: d.openIndex, Delta: dk, Text: s})
}

// content handles a content delta: a leading "<think>…</think>" becomes a
// thinking block, the rest text. Tags may be split across chunks, so a
// possible partial tag is held back until the next chunk tells.
func (d *StreamDecoder) content(out []wire.Event, s string) []wire.Event {
	for s != "" {
		switch d.tag {
		case tagDone:
			return d.emit(out, openText, wire.DeltaText, s)
		case tagUndecided:
			d.held += s
			s = ""
			t := strings.TrimLeft(d.held, tagSpace)
			switch {
			case strings.HasPrefix(t, thinkOpen):
				d.tag, d.held = tagInside, ""
				s = t[len(thinkOpen):]
			case strings.HasPrefix(thinkOpen, t):
				return out // only whitespace, or the start of "<think>": wait
			default:
				d.tag, s, d.held = tagDone, d.held, ""
			}
		case tagInside:
			h := d.held + s
			s, d.held = "", ""
			if i := strings.Index(h, thinkClose); i >= 0 {
				out = d.emit(out, openThinking, wire.DeltaThinking, h[:i])
				d.tag = tagAfter
				s = h[i+len(thinkClose):]
				continue
			}
			keep := partialSuffix(h, thinkClose)
			d.held = h[len(h)-keep:]
			return d.emit(out, openThinking, wire.DeltaThinking, h[:len(h)-keep])
		case tagAfter:
			if s = strings.TrimLeft(s, tagSpace); s != "" {
				d.tag = tagDone
			}
		}
	}
	return out
}

// flushHeld emits content held back by content, as what it was taken for.
func (d *StreamDecoder) flushHeld(out []wire.Event) []wire.Event {
	if d.held == "" {
		return out
	}
	h := d.held
	d.held = ""
	if d.tag == tagInside {
		return d.emit(out, openThinking, wire.DeltaThinking, h)
	}
	d.tag = tagDone
	return d.emit(out, openText, wire.DeltaText, h)
}

// partialSuffix is the length of the longest proper prefix of tag that s
// ends with.
func partialSuffix(s, tag string) int {
	for k := min(len(tag)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, tag[:k]) {
			return k
		}
	}
	return 0
}

func (d *StreamDecoder) toolCall(out []wire.Event, tc []byte, pos int64) ([]wire.Event, error) {
	if err := rs.Object("", tc); err != nil {
		return out, err
	}
	index := pos
	var id, name, args string
	var fn []byte
	var err error
	err = jsonx.ObjectEach(tc, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "index":
			index, err = intOrNull("index", val)
		case "id":
			id, err = rs.Str("id", val)
		case "function":
			fn = val
		}
		return err
	})
	if err != nil {
		return out, err
	}
	if jsonx.KindOf(fn) == jsonx.Object {
		err = jsonx.ObjectEach(fn, func(rawKey, val []byte) error {
			switch string(dec.K(rawKey)) {
			case "name":
				name, err = rs.Str("function.name", val)
			case "arguments":
				if jsonx.KindOf(val) == jsonx.Object { // sent as an object by a few servers
					args = string(val)
				} else {
					args, err = rs.Str("function.arguments", val)
				}
			}
			return err
		})
		if err != nil {
			return out, err
		}
	}
	var slot *callSlot
	for i := len(d.calls) - 1; i >= 0; i-- {
		if d.calls[i].index == index {
			slot = &d.calls[i]
			break
		}
	}
	if slot == nil || (id != "" && slot.id != "" && id != slot.id) {
		out = d.openBlock(out, openTool, wire.Block{Type: wire.BlockToolUse, ID: id, Name: name})
		d.calls = append(d.calls, callSlot{index: index, id: id, block: d.openIndex})
		slot = &d.calls[len(d.calls)-1]
	}
	if args != "" {
		out = append(out, wire.Event{Type: wire.EventDelta, Index: slot.block, Delta: wire.DeltaInputJSON, Text: args})
	}
	return out, nil
}

func (d *StreamDecoder) end(out []wire.Event) []wire.Event {
	if !d.started {
		d.started = true
		out = append(out, wire.Event{Type: wire.EventMessageStart})
	}
	out = d.flushHeld(out)
	out = d.closeOpen(out)
	stop := d.stop
	if stop == "" {
		stop = wire.StopEndTurn
		if len(d.calls) > 0 {
			stop = wire.StopToolUse
		}
	}
	out = append(out,
		wire.Event{Type: wire.EventMessageDelta, StopReason: stop, Usage: d.usage},
		wire.Event{Type: wire.EventMessageStop})
	d.stopped = true
	return out
}

// Finish closes the stream if the upstream ended it without [DONE]: open
// blocks are stopped and message_delta/message_stop are emitted. Done tells
// whether the stream had ended properly before.
func (d *StreamDecoder) Finish() []wire.Event {
	if d.stopped {
		return nil
	}
	return d.end(nil)
}
