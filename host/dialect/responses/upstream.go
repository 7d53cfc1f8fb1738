package responses

// The upstream side: requests encoded for, and responses and streams
// decoded from, an upstream that speaks the Responses API.

import (
	"bytes"
	"strconv"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

var rs = dec.Response

// EncodeRequest writes req as a Responses API request. System blocks
// become leading system (or developer) input messages; tool_result blocks
// function_call_output items ahead of the rest of their user turn;
// thinking blocks with a signature reasoning items (summary and
// encrypted_content), those without one are left out. top_k, stop and
// seed have no Responses form and are left out. Extra members are written
// back.
func EncodeRequest(req *wire.Request) ([]byte, error) {
	b := make([]byte, 0, 512+len(req.Extra))
	b = append(b, `{"model":`...)
	b = jsonx.AppendString(b, req.Model)
	b = append(b, `,"input":[`...)
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	for i := range req.System {
		role := "system"
		if req.System[i].Name == RoleDeveloper {
			role = "developer"
		}
		sep()
		b = appendInputMessage(b, role, req.System[i:i+1])
	}
	for mi := range req.Messages {
		m := &req.Messages[mi]
		switch m.Role {
		case "system":
			sep()
			b = appendInputMessage(b, "system", m.Content)
		case "user":
			var rest []wire.Block
			for i := range m.Content {
				c := &m.Content[i]
				if c.Type != wire.BlockToolResult {
					rest = append(rest, *c)
					continue
				}
				sep()
				b = append(b, `{"type":"function_call_output","call_id":`...)
				b = jsonx.AppendString(b, c.ID)
				b = append(b, `,"output":`...)
				if len(c.Data) > 0 && jsonx.KindOf(c.Data) == jsonx.Array {
					b = appendOutputParts(b, c.Data)
				} else {
					b = jsonx.AppendString(b, c.Text)
				}
				b = append(b, '}')
			}
			if len(rest) > 0 {
				sep()
				b = appendInputMessage(b, "user", rest)
			}
		case "assistant":
			var text []wire.Block
			flush := func() {
				if len(text) > 0 {
					sep()
					b = appendInputMessage(b, "assistant", text)
					text = text[:0]
				}
			}
			for i := range m.Content {
				c := &m.Content[i]
				switch c.Type {
				case wire.BlockText:
					text = append(text, *c)
				case wire.BlockToolUse:
					flush()
					sep()
					b = append(b, `{"type":"function_call","call_id":`...)
					b = jsonx.AppendString(b, c.ID)
					b = append(b, `,"name":`...)
					b = jsonx.AppendString(b, c.Name)
					b = append(b, `,"arguments":`...)
					b = jsonx.AppendString(b, dataToArguments(c.Data))
					b = append(b, '}')
				case wire.BlockThinking, wire.BlockRedactedThinking:
					it, _ := itemFor(c)
					if it.enc == "" {
						continue
					}
					flush()
					sep()
					it.id = ""
					b = append(b, `{"type":"reasoning","summary":[`...)
					if len(it.text) > 0 {
						b = appendSummaryPart(b, it.text)
					}
					b = append(b, `],"encrypted_content":`...)
					b = jsonx.AppendString(b, it.enc)
					b = append(b, '}')
				}
			}
			flush()
		}
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range req.Tools {
			t := &req.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			if HostedTool(t) {
				b = jsonx.AppendCompact(b, t.Extra)
				continue
			}
			b = append(b, `{"type":"function","name":`...)
			b = jsonx.AppendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonx.AppendString(b, t.Description)
			}
			if len(t.Schema) > 0 {
				b = append(b, `,"parameters":`...)
				b = jsonx.AppendCompact(b, t.Schema)
			}
			var err error
			if b, err = appendExtra(b, t.Extra, "type", "name", "description", "parameters"); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if tc := encodeToolChoice(req.ToolChoice); tc != nil {
		b = append(b, `,"tool_choice":`...)
		b = append(b, tc...)
	}
	p := &req.Params
	if p.Set&wire.HasMaxTokens != 0 {
		b = append(b, `,"max_output_tokens":`...)
		b = strconv.AppendInt(b, p.MaxTokens, 10)
	}
	if p.Set&wire.HasTemperature != 0 {
		b = append(b, `,"temperature":`...)
		b, _ = jsonx.AppendFloat(b, p.Temperature)
	}
	if p.Set&wire.HasTopP != 0 {
		b = append(b, `,"top_p":`...)
		b, _ = jsonx.AppendFloat(b, p.TopP)
	}
	if req.Stream {
		b = append(b, `,"stream":true`...)
	}
	b, err := appendExtra(b, req.Extra, "model", "input", "tools", "tool_choice", "max_output_tokens", "temperature", "top_p", "stream")
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendExtra appends the members of extra (a raw object) but those named.
func appendExtra(b, extra []byte, skip ...string) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	return jsonx.AppendMembers(b, extra, func(key []byte) bool {
		for _, s := range skip {
			if jsonx.KeyIs(key, s) {
				return true
			}
		}
		return false
	})
}

func appendInputMessage(b []byte, role string, blocks []wire.Block) []byte {
	b = append(b, `{"type":"message","role":"`...)
	b = append(b, role...)
	b = append(b, `","content":[`...)
	partType := "input_text"
	if role == "assistant" {
		partType = "output_text"
	}
	n := 0
	for i := range blocks {
		c := &blocks[i]
		switch c.Type {
		case wire.BlockText:
		case wire.BlockImage:
			if url := imageURL(c.Data); url != "" && role == "user" {
				if n > 0 {
					b = append(b, ',')
				}
				n++
				b = append(b, `{"type":"input_image","image_url":`...)
				b = jsonx.AppendString(b, url)
				if detail := imageDetail(c.Data); detail != "" {
					b = append(b, `,"detail":`...)
					b = jsonx.AppendString(b, detail)
				}
				b = append(b, '}')
			}
			continue
		default:
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"type":"`...)
		b = append(b, partType...)
		b = append(b, `","text":`...)
		b = jsonx.AppendString(b, c.Text)
		b = append(b, '}')
	}
	return append(b, ']', '}')
}

// imageURL turns a canonical image source back into a URL (a data: URL
// for base64).
func imageURL(src []byte) string {
	var typ, url, mt, data string
	_ = jsonx.ObjectEach(src, func(k, v []byte) error {
		s, _ := jsonx.Unquote(v)
		switch jsonx.KeyString(k) {
		case "type":
			typ = s
		case "url":
			url = s
		case "media_type":
			mt = s
		case "data":
			data = s
		}
		return nil
	})
	if typ == "base64" {
		return "data:" + mt + ";base64," + data
	}
	return url
}

// imageDetail is a canonical image source's detail member, "" for none.
func imageDetail(src []byte) string {
	var detail string
	_ = jsonx.ObjectEach(src, func(k, v []byte) error {
		if jsonx.KeyIs(k, "detail") {
			detail, _ = jsonx.Unquote(v)
		}
		return nil
	})
	return detail
}

// appendOutputParts writes a tool_result's structured content as a
// function_call_output's parts (text parts as input_text).
func appendOutputParts(b, data []byte) []byte {
	b = append(b, '[')
	_ = jsonx.ArrayEach(data, func(i int, part []byte) error {
		if i > 0 {
			b = append(b, ',')
		}
		var typ, text string
		_ = jsonx.ObjectEach(part, func(k, v []byte) error {
			switch jsonx.KeyString(k) {
			case "type":
				typ, _ = jsonx.Unquote(v)
			case "text":
				text, _ = jsonx.Unquote(v)
			}
			return nil
		})
		if typ == "text" {
			b = append(b, `{"type":"input_text","text":`...)
			b = jsonx.AppendString(b, text)
			b = append(b, '}')
			return nil
		}
		b = jsonx.AppendCompact(b, part)
		return nil
	})
	return append(b, ']')
}

func encodeToolChoice(tc []byte) []byte {
	if len(tc) == 0 {
		return nil
	}
	var typ, name string
	_ = jsonx.ObjectEach(tc, func(k, v []byte) error {
		switch jsonx.KeyString(k) {
		case "type":
			typ, _ = jsonx.Unquote(v)
		case "name":
			name, _ = jsonx.Unquote(v)
		}
		return nil
	})
	switch typ {
	case "auto":
		return []byte(`"auto"`)
	case "none":
		return []byte(`"none"`)
	case "any":
		return []byte(`"required"`)
	case "tool":
		return append(append([]byte(`{"type":"function","name":`), jsonx.AppendString(nil, name)...), '}')
	}
	return nil
}

// DecodeResponse parses a Responses API response object from an upstream.
// Errors wrap dialect.ErrInvalidResponse.
func DecodeResponse(body []byte) (*wire.Response, error) {
	if err := rs.Validate(body, "response body"); err != nil {
		return nil, err
	}
	body = bytes.Clone(body)
	resp := &wire.Response{}
	var status, reason string
	err := jsonx.ObjectEach(body, func(k, v []byte) error {
		var err error
		switch jsonx.KeyString(k) {
		case "id":
			resp.ID, err = rs.Str("id", v)
		case "model":
			resp.Model, err = rs.Str("model", v)
		case "status":
			status, err = rs.Str("status", v)
		case "incomplete_details":
			if jsonx.KindOf(v) == jsonx.Object {
				_ = jsonx.ObjectEach(v, func(k2, v2 []byte) error {
					if jsonx.KeyIs(k2, "reason") {
						reason, _ = jsonx.Unquote(v2)
					}
					return nil
				})
			}
		case "output":
			if jsonx.IsNull(v) {
				return nil
			}
			if err = rs.Array("output", v); err != nil {
				return err
			}
			err = jsonx.ArrayEach(v, func(i int, raw []byte) error {
				return dec.Prefix(outputBlocks(resp, raw), dec.Index("output", i))
			})
		case "usage":
			if jsonx.KindOf(v) == jsonx.Object {
				resp.Usage = decodeUsage(v)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.StopReason = stopReason(status, reason, resp.Content)
	return resp, nil
}

// stopReason derives the canonical stop reason of a response.
func stopReason(status, reason string, content []wire.Block) string {
	if status == "incomplete" {
		if reason == "content_filter" {
			return wire.StopContentFilter
		}
		return wire.StopMaxTokens
	}
	for i := range content {
		if content[i].Type == wire.BlockToolUse {
			return wire.StopToolUse
		}
	}
	return wire.StopEndTurn
}

// itemType is the type member of an item.
func itemType(raw []byte) string {
	var typ string
	_ = jsonx.ObjectEach(raw, func(k, v []byte) error {
		if jsonx.KeyIs(k, "type") {
			typ, _ = jsonx.Unquote(v)
		}
		return nil
	})
	return typ
}

// outputBlocks appends the blocks of one output item.
func outputBlocks(resp *wire.Response, raw []byte) error {
	req := &wire.Request{Messages: []wire.Message{{Role: "assistant"}}}
	switch itemType(raw) {
	case "message", "function_call", "reasoning":
	default:
		return nil // web_search_call and the like: nothing the canonical model holds
	}
	if err := decodeItem(req, raw); err != nil {
		return rs.Errf("", err.Error())
	}
	for _, m := range req.Messages {
		resp.Content = append(resp.Content, m.Content...)
	}
	return nil
}

// decodeUsage reads a Responses usage object; input_tokens includes the
// cached ones.
func decodeUsage(v []byte) wire.Usage {
	var u wire.Usage
	var in, cached int64
	_ = jsonx.ObjectEach(v, func(k, val []byte) error {
		switch jsonx.KeyString(k) {
		case "input_tokens":
			in, _ = jsonx.ParseInt(val)
		case "output_tokens":
			u.OutputTokens, _ = jsonx.ParseInt(val)
		case "input_tokens_details":
			_ = jsonx.ObjectEach(val, func(k2, v2 []byte) error {
				if jsonx.KeyIs(k2, "cached_tokens") {
					cached, _ = jsonx.ParseInt(v2)
				}
				return nil
			})
		}
		return nil
	})
	u.CacheReadTokens = min(cached, in)
	u.InputTokens = in - u.CacheReadTokens
	return u
}

// StreamDecoder turns a Responses API event stream into canonical events:
// response.created starts the message; each output item (message,
// function_call, reasoning) is one block; response.completed or
// response.incomplete ends it with the stop reason and usage;
// response.failed and error events become an error.
type StreamDecoder struct {
	blocks  map[int64]int64 // output_index → canonical block index
	tools   bool
	started bool
	stopped bool
}

// NewStreamDecoder returns a decoder for one upstream stream.
func NewStreamDecoder() *StreamDecoder { return &StreamDecoder{blocks: map[int64]int64{}} }

// Done reports whether the stream's terminal event was seen.
func (d *StreamDecoder) Done() bool { return d.stopped }

// event is the members of a stream event the decoder reads.
type event struct {
	typ, delta, message, code string
	outputIndex               int64
	item, response            []byte
}

// Decode decodes one SSE event.
func (d *StreamDecoder) Decode(name string, data []byte) ([]wire.Event, error) {
	if d.stopped {
		return nil, nil
	}
	if err := rs.Validate(data, "stream event"); err != nil {
		return nil, err
	}
	var ev event
	err := jsonx.ObjectEach(data, func(k, v []byte) error {
		var err error
		switch jsonx.KeyString(k) {
		case "type":
			ev.typ, err = rs.Str("type", v)
		case "delta":
			if jsonx.KindOf(v) == jsonx.String {
				ev.delta, err = rs.Str("delta", v)
			}
		case "output_index":
			ev.outputIndex, err = rs.Int("output_index", v)
		case "item":
			ev.item = v
		case "response":
			ev.response = v
		case "message":
			ev.message, _ = jsonx.Unquote(v)
		case "code":
			ev.code, _ = jsonx.Unquote(v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if ev.typ == "" {
		ev.typ = name
	}
	var out []wire.Event
	if !d.started && ev.typ != "error" {
		d.started = true
		m := wire.Event{Type: wire.EventMessageStart}
		if ev.response != nil {
			if r, err := DecodeResponse(ev.response); err == nil {
				m.ID, m.Model = r.ID, r.Model
			}
		}
		out = append(out, m)
	}
	switch ev.typ {
	case "response.output_item.added":
		r := &wire.Response{}
		if err := outputBlocks(r, ev.item); err != nil {
			return out, err
		}
		if len(r.Content) == 0 {
			// A message item is announced with empty content.
			if itemType(ev.item) != "message" {
				return out, nil
			}
			r.Content = []wire.Block{{Type: wire.BlockText}}
		}
		b := r.Content[0]
		start := wire.Block{Type: b.Type, ID: b.ID, Name: b.Name}
		if b.Type == wire.BlockToolUse {
			d.tools = true
		}
		if b.Type == wire.BlockRedactedThinking {
			start.Data = b.Data
		}
		idx := int64(len(d.blocks))
		d.blocks[ev.outputIndex] = idx
		out = append(out, wire.Event{Type: wire.EventBlockStart, Index: idx, Block: start})
	case "response.output_text.delta", "response.refusal.delta":
		out = d.delta(out, ev.outputIndex, wire.DeltaText, ev.delta)
	case "response.function_call_arguments.delta":
		out = d.delta(out, ev.outputIndex, wire.DeltaInputJSON, ev.delta)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		out = d.delta(out, ev.outputIndex, wire.DeltaThinking, ev.delta)
	case "response.output_item.done":
		idx, ok := d.blocks[ev.outputIndex]
		if !ok {
			return out, nil
		}
		r := &wire.Response{}
		if outputBlocks(r, ev.item) == nil && len(r.Content) > 0 && r.Content[0].Type == wire.BlockThinking && r.Content[0].Signature != "" {
			out = append(out, wire.Event{Type: wire.EventDelta, Index: idx, Delta: wire.DeltaSignature, Text: r.Content[0].Signature})
		}
		out = append(out, wire.Event{Type: wire.EventBlockStop, Index: idx})
	case "response.completed", "response.incomplete":
		r, err := DecodeResponse(ev.response)
		if err != nil {
			return out, err
		}
		stop := r.StopReason
		if d.tools && stop == wire.StopEndTurn {
			stop = wire.StopToolUse
		}
		d.stopped = true
		out = append(out, wire.Event{Type: wire.EventMessageDelta, StopReason: stop, Usage: r.Usage}, wire.Event{Type: wire.EventMessageStop})
	case "response.failed":
		d.stopped = true
		msg, code := "", ""
		_ = jsonx.ObjectEach(ev.response, func(k, v []byte) error {
			if jsonx.KeyIs(k, "error") && jsonx.KindOf(v) == jsonx.Object {
				_ = jsonx.ObjectEach(v, func(k2, v2 []byte) error {
					switch jsonx.KeyString(k2) {
					case "message":
						msg, _ = jsonx.Unquote(v2)
					case "code":
						code, _ = jsonx.Unquote(v2)
					}
					return nil
				})
			}
			return nil
		})
		out = append(out, d.errorEvent(code, msg))
	case "error":
		d.stopped = true
		out = append(out, d.errorEvent(ev.code, ev.message))
	}
	return out, nil
}

func (d *StreamDecoder) errorEvent(code, msg string) wire.Event {
	b := []byte(`{"error":{"code":`)
	b = jsonx.AppendString(b, code)
	b = append(b, `,"message":`...)
	b = jsonx.AppendString(b, msg)
	b = append(b, `}}`...)
	return wire.Event{Type: wire.EventError, Error: dialect.DecodeErrorBody(0, b)}
}

func (d *StreamDecoder) delta(out []wire.Event, outputIndex int64, kind wire.DeltaKind, text string) []wire.Event {
	idx, ok := d.blocks[outputIndex]
	if !ok || text == "" {
		return out
	}
	return append(out, wire.Event{Type: wire.EventDelta, Index: idx, Delta: kind, Text: text})
}

// Finish ends a stream the upstream closed: nothing to add (a stream
// without its terminal event is reported as cut by the host, Done false).
func (d *StreamDecoder) Finish() []wire.Event { return nil }
