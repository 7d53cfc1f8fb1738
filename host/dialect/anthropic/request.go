// Package anthropic is the native codec for the Anthropic Messages dialect:
// requests, responses, SSE streams and error bodies, to and from the
// canonical model of package wire (whose grammar follows Anthropic's, so the
// mapping is nearly one to one).
//
// Mapping notes:
//   - cache_control is kept, as raw JSON, on every system block, content
//     block and tool. For document blocks and block types the canonical model
//     does not know (kept as BlockOther with their raw JSON), cache_control is
//     moved out of Block.Data into Block.CacheControl and put back on encode.
//   - Members the canonical model has no field for are kept as raw JSON in
//     the Extra of their message, block or tool (text "citations", a
//     system message's cache_control, Claude Code's tool "defer_loading",
//     "eager_input_streaming", …) and written back by EncodeRequest, so a
//     request a layer rewrote loses nothing. Server tools (a "type" other
//     than "custom") are kept whole: their type and settings in Tool.Extra.
//   - Mid-conversation system messages ({"role":"system"} inside messages)
//     are Messages with Role "system", in place; their content must be text.
//     Where they may stand is the upstream's rule to enforce.
//   - Thinking blocks without a signature (they come from OpenAI
//     reasoning_content) are not sent to an Anthropic upstream, which would
//     reject them.
//   - Every other top-level field (metadata, thinking, service_tier, …) goes
//     to Request.Extra unchanged.
package anthropic

import (
	"bytes"

	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// DefaultMaxTokens is the max_tokens EncodeRequest writes when the request
// has none (Anthropic requires the field).
const DefaultMaxTokens = 4096

var rq = dec.Request

// DecodeRequest parses an Anthropic Messages request body into the canonical
// model. Errors wrap dialect.ErrInvalidRequest. The result does not alias
// body.
func DecodeRequest(body []byte) (*wire.Request, error) {
	if err := rq.Validate(body, "request body"); err != nil {
		return nil, err
	}
	buf := bytes.Clone(body) // raw pieces of req alias this private copy
	req := &wire.Request{}
	var (
		extra                   []byte
		haveModel, haveMessages bool
		err                     error
	)
	err = jsonx.ObjectEach(buf, func(rawKey, val []byte) error {
		key := dec.K(rawKey)
		if jsonx.IsNull(val) && nullMeansAbsent(key) {
			return nil
		}
		switch string(key) {
		case "model":
			haveModel = true
			if jsonx.KindOf(val) != jsonx.String {
				return rq.Errf("model", "must be a string")
			}
			req.Model, err = rq.Str("model", val)
		case "messages":
			haveMessages = true
			err = decodeMessages(req, val)
		case "system":
			err = decodeSystem(req, val)
		case "tools":
			err = decodeTools(req, val)
		case "tool_choice":
			err = rq.Object("tool_choice", val)
			if err == nil {
				var typ []byte
				_ = jsonx.ObjectEach(val, func(k, v []byte) error {
					if jsonx.KeyIs(k, "type") {
						typ = v
					}
					return nil
				})
				if jsonx.KindOf(typ) != jsonx.String {
					return rq.Errf("tool_choice.type", "is required")
				}
				req.ToolChoice = val
			}
		case "max_tokens":
			req.Params.MaxTokens, err = rq.Int("max_tokens", val)
			req.Params.Set |= wire.HasMaxTokens
		case "temperature":
			req.Params.Temperature, err = rq.Float("temperature", val)
			req.Params.Set |= wire.HasTemperature
		case "top_p":
			req.Params.TopP, err = rq.Float("top_p", val)
			req.Params.Set |= wire.HasTopP
		case "top_k":
			req.Params.TopK, err = rq.Int("top_k", val)
			req.Params.Set |= wire.HasTopK
		case "stop_sequences":
			req.Params.Stop, err = rq.Strings("stop_sequences", val, false)
		case "stream":
			req.Stream, err = rq.Bool("stream", val)
		default:
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !haveModel || req.Model == "" {
		return nil, rq.Errf("model", "is required")
	}
	if req.Params.Set&wire.HasMaxTokens == 0 {
		return nil, rq.Errf("max_tokens", "is required")
	}
	if !haveMessages || len(req.Messages) == 0 {
		return nil, rq.Errf("messages", "is required and must not be empty")
	}
	req.Extra = dec.CloseObject(extra)
	return req, nil
}

// nullMeansAbsent lists the modeled fields for which an explicit null means
// "use the default", exactly as leaving them out does.
func nullMeansAbsent(key []byte) bool {
	switch string(key) {
	case "system", "tools", "tool_choice", "temperature", "top_p", "top_k", "stop_sequences", "stream":
		return true
	}
	return false
}

func decodeSystem(req *wire.Request, val []byte) error {
	switch jsonx.KindOf(val) {
	case jsonx.String:
		s, err := rq.Str("system", val)
		req.System = append(req.System, wire.Block{Type: wire.BlockText, Text: s})
		return err
	case jsonx.Array:
		return jsonx.ArrayEach(val, func(i int, raw []byte) error {
			b, err := decodeBlock(rq, raw)
			if err != nil {
				return dec.Prefix(err, dec.Index("system", i))
			}
			req.System = append(req.System, b)
			return nil
		})
	}
	return rq.Errf("system", "must be a string or an array of content blocks")
}

func decodeMessages(req *wire.Request, val []byte) error {
	if err := rq.Array("messages", val); err != nil {
		return err
	}
	return jsonx.ArrayEach(val, func(i int, raw []byte) error {
		m, err := decodeMessage(raw)
		if err != nil {
			return dec.Prefix(err, dec.Index("messages", i))
		}
		req.Messages = append(req.Messages, m)
		return nil
	})
}

func decodeMessage(raw []byte) (wire.Message, error) {
	var m wire.Message
	if err := rq.Object("", raw); err != nil {
		return m, err
	}
	var content, extra []byte
	var err error
	err = jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "role":
			m.Role, err = rq.Str("role", val)
		case "content":
			content = val
		default: // a system message's cache_control, members of later API versions
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return m, err
	}
	m.Extra = dec.CloseObject(extra)
	switch m.Role {
	case "user", "assistant":
	case "system":
		// A mid-conversation system message: text only, as Anthropic
		// requires; its placement rules are the upstream's to enforce.
		m.Content, err = decodeContent(rq, nil, content, "content")
		if err == nil {
			for i := range m.Content {
				if m.Content[i].Type != wire.BlockText {
					return m, rq.Errf(dec.Index("content", i), `text-only role "system" messages require text blocks`)
				}
			}
		}
		return m, err
	case "":
		return m, rq.Errf("role", "is required")
	default:
		return m, rq.Errf("role", `must be "user", "assistant" or "system"`)
	}
	m.Content, err = decodeContent(rq, nil, content, "content")
	return m, err
}

// decodeContent decodes message content: a string or an array of blocks.
func decodeContent(d dec.D, dst []wire.Block, val []byte, field string) ([]wire.Block, error) {
	switch jsonx.KindOf(val) {
	case jsonx.String:
		s, err := d.Str(field, val)
		return append(dst, wire.Block{Type: wire.BlockText, Text: s}), err
	case jsonx.Array:
		err := jsonx.ArrayEach(val, func(i int, raw []byte) error {
			b, err := decodeBlock(d, raw)
			if err != nil {
				return dec.Prefix(err, dec.Index(field, i))
			}
			dst = append(dst, b)
			return nil
		})
		return dst, err
	case jsonx.Invalid:
		return dst, d.Errf(field, "is required")
	}
	return dst, d.Errf(field, "must be a string or an array of content blocks")
}

// decodeBlock decodes one content block.
func decodeBlock(d dec.D, raw []byte) (wire.Block, error) {
	var b wire.Block
	if err := d.Object("", raw); err != nil {
		return b, err
	}
	var typ, text, source, id, name, input, toolUseID, content, isError, thinking, signature, data, cache, extra []byte
	_ = jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "type":
			typ = val
		case "text":
			text = val
		case "source":
			source = val
		case "id":
			id = val
		case "name":
			name = val
		case "input":
			input = val
		case "tool_use_id":
			toolUseID = val
		case "content":
			content = val
		case "is_error":
			isError = val
		case "thinking":
			thinking = val
		case "signature":
			signature = val
		case "data":
			data = val
		case "cache_control":
			cache = val
		default: // citations, caller, …: kept for a same-dialect re-encode
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return nil
	})
	t, err := d.Str("type", typ)
	if err != nil {
		return b, err
	}
	if cache != nil && !jsonx.IsNull(cache) {
		b.CacheControl = cache
	}
	switch t {
	case "text":
		b.Type = wire.BlockText
		if jsonx.KindOf(text) != jsonx.String {
			return b, d.Errf("text", "must be a string")
		}
		b.Text, err = d.Str("text", text)
	case "image":
		b.Type = wire.BlockImage
		if err := d.Object("source", source); err != nil {
			return b, err
		}
		b.Data = source
	case "tool_use":
		b.Type = wire.BlockToolUse
		if b.ID, err = d.Str("id", id); err != nil {
			return b, err
		}
		if b.Name, err = d.Str("name", name); err != nil {
			return b, err
		}
		switch jsonx.KindOf(input) {
		case jsonx.Invalid, jsonx.Null:
			b.Data = []byte("{}")
		default:
			b.Data = input
		}
	case "tool_result":
		b.Type = wire.BlockToolResult
		if b.ID, err = d.Str("tool_use_id", toolUseID); err != nil {
			return b, err
		}
		switch jsonx.KindOf(content) {
		case jsonx.String:
			b.Text, err = d.Str("content", content)
		case jsonx.Array:
			b.Data = content
		case jsonx.Invalid, jsonx.Null:
		default:
			return b, d.Errf("content", "must be a string or an array of content blocks")
		}
		if err != nil {
			return b, err
		}
		b.IsError, err = d.Bool("is_error", isError)
	case "thinking":
		b.Type = wire.BlockThinking
		if b.Text, err = d.Str("thinking", thinking); err != nil {
			return b, err
		}
		b.Signature, err = d.Str("signature", signature)
	case "redacted_thinking":
		b.Type = wire.BlockRedactedThinking
		if jsonx.KindOf(data) != jsonx.String {
			return b, d.Errf("data", "must be a string")
		}
		b.Data = data
	case "":
		return b, d.Errf("type", "is required")
	default:
		b.Type = wire.BlockOther
		if t == "document" {
			b.Type = wire.BlockDocument
		}
		b.Data = raw
		if cache != nil {
			b.Data = withoutMember(raw, "cache_control")
		}
		return b, err // the raw block keeps every member
	}
	// Members of the modelled block types that belong to another type go
	// to Extra too, so nothing the caller sent is lost.
	for _, m := range [...]struct {
		key string
		val []byte
	}{{"text", text}, {"source", source}, {"id", id}, {"name", name}, {"input", input},
		{"tool_use_id", toolUseID}, {"content", content}, {"is_error", isError},
		{"thinking", thinking}, {"signature", signature}, {"data", data}} {
		if m.val != nil && !blockMember(b.Type, m.key) {
			extra = dec.AppendMember(extra, []byte(m.key), m.val)
		}
	}
	b.Extra = dec.CloseObject(extra)
	return b, err
}

// blockMember reports whether key is a member EncodeRequest writes for a
// block of type t (type and cache_control are written for every type).
func blockMember(t wire.BlockType, key string) bool {
	switch t {
	case wire.BlockText:
		return key == "text"
	case wire.BlockImage:
		return key == "source"
	case wire.BlockToolUse:
		return key == "id" || key == "name" || key == "input"
	case wire.BlockToolResult:
		return key == "tool_use_id" || key == "content" || key == "is_error"
	case wire.BlockThinking:
		return key == "thinking" || key == "signature"
	case wire.BlockRedactedThinking:
		return key == "data"
	}
	return false
}

// withoutMember copies the object raw without the member key.
func withoutMember(raw []byte, key string) []byte {
	out := make([]byte, 0, len(raw))
	out = append(out, '{')
	first := true
	_ = jsonx.ObjectEach(raw, func(k, v []byte) error {
		if jsonx.KeyIs(k, key) {
			return nil
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		out = append(out, v...)
		return nil
	})
	return append(out, '}')
}

func decodeTools(req *wire.Request, val []byte) error { return rq.Tools(req, val, decodeTool) }

func decodeTool(raw []byte) (wire.Tool, bool, error) {
	var t wire.Tool
	if err := rq.Object("", raw); err != nil {
		return t, false, err
	}
	var typ string
	var extra []byte
	var err error
	err = jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "name":
			t.Name, err = rq.Str("name", val)
		case "description":
			t.Description, err = rq.Str("description", val)
		case "input_schema":
			if !jsonx.IsNull(val) {
				err = rq.Object("input_schema", val)
				t.Schema = val
			}
		case "cache_control":
			if !jsonx.IsNull(val) {
				t.CacheControl = val
			}
		case "type":
			typ, err = rq.Str("type", val)
			extra = dec.AppendMember(extra, rawKey, val)
		default: // defer_loading, eager_input_streaming, strict, input_examples, …
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return t, false, err
	}
	t.Extra = dec.CloseObject(extra)
	// A server tool ("type" other than "custom": web_search, bash, an MCP
	// toolset, …) is kept with its type and settings in Extra; some have
	// no name.
	if t.Name == "" && (typ == "" || typ == "custom") {
		return t, false, rq.Errf("name", "is required")
	}
	return t, true, nil
}
