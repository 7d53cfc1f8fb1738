// Package openai is the native codec for the OpenAI Chat Completions dialect:
// requests, responses, SSE streams and error bodies, to and from the
// canonical model of package wire.
//
// Mapping notes (canonical ⇄ OpenAI):
//   - system and developer messages become Request.System text blocks, in
//     order; a block from a developer message has Name "developer" so it is
//     re-encoded with that role. Each system block is re-encoded as its own
//     message.
//   - tool messages become BlockToolResult blocks; consecutive tool messages
//     are folded into one user message. On encode, the tool_result blocks of a
//     user message become tool messages, followed by a user message holding
//     the message's other blocks, if any.
//   - assistant reasoning_content becomes a BlockThinking (no signature).
//     Thinking blocks that carry a signature (Anthropic's) and redacted
//     thinking are not sent to an OpenAI upstream.
//   - reasoning_details (OpenRouter's convention, see FormatAnthropic) carry
//     signed thinking through this dialect: an assistant message's
//     reasoning.text entries become BlockThinking with their signature,
//     reasoning.encrypted entries BlockRedactedThinking (and take precedence
//     over reasoning_content). Responses and streams write them beside
//     reasoning_content when a thinking block is signed or redacted, so an
//     OpenAI-dialect client served by Anthropic can send them back.
//   - A response's content that starts (after whitespace) with
//     "<think>…</think>" (reasoning models on llama.cpp, vLLM, Ollama) is
//     split: the tagged part becomes a BlockThinking, the rest text. Only a
//     leading think block is taken; streams handle tags split across chunks.
//   - max_completion_tokens and max_tokens both set Params.MaxTokens; a
//     request that used max_tokens alone also gets [ParamLegacyMaxTokens] in
//     Params.Set so it is re-encoded under the same name. When both are sent,
//     max_tokens is kept in Extra.
//   - System and developer messages after the first user or assistant
//     message stay in place, as Messages with Role "system" (a developer
//     message's blocks have Name "developer").
//   - Members the canonical model has no field for are kept as raw JSON in
//     the Extra of their message (refusal, audio, …), content part, tool call
//     (tool_use block), tool message (tool_result block), tool (function
//     "strict", …) and, for a leading system message, its first block; the
//     encoder writes them back. Tools that are not function tools are
//     dropped; the host forwards the caller's original bytes when nothing
//     changed the request (wire.EncodeInput.Pristine).
//   - Every other top-level field goes to Request.Extra unchanged.
package openai

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// ParamLegacyMaxTokens is an extra Params.Set flag: the caller sent the
// deprecated max_tokens rather than max_completion_tokens, and the request is
// re-encoded that way. Without it EncodeRequest writes max_completion_tokens.
const ParamLegacyMaxTokens uint32 = 1 << 31

// RoleDeveloper is the Block.Name of a system block that came from a
// developer message.
const RoleDeveloper = "developer"

var rq = dec.Request

// DecodeRequest parses an OpenAI Chat Completions request body into the
// canonical model. Errors wrap dialect.ErrInvalidRequest. The result does not
// alias body.
func DecodeRequest(body []byte) (*wire.Request, error) {
	if err := rq.Validate(body, "request body"); err != nil {
		return nil, err
	}
	buf := bytes.Clone(body) // raw pieces of req alias this private copy
	req := &wire.Request{}
	var (
		extra                    []byte
		haveModel, haveMessages  bool
		maxTokens, maxCompletion []byte
		maxTokensKey             []byte
		err                      error
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
			return err
		case "messages":
			haveMessages = true
			return decodeMessages(req, val)
		case "tools":
			return decodeTools(req, val)
		case "tool_choice":
			req.ToolChoice, err = decodeToolChoice(val)
			return err
		case "max_tokens":
			maxTokens, maxTokensKey = val, rawKey
		case "max_completion_tokens":
			maxCompletion = val
		case "temperature":
			req.Params.Temperature, err = rq.Float("temperature", val)
			req.Params.Set |= wire.HasTemperature
			return err
		case "top_p":
			req.Params.TopP, err = rq.Float("top_p", val)
			req.Params.Set |= wire.HasTopP
			return err
		case "seed":
			req.Params.Seed, err = rq.Int("seed", val)
			req.Params.Set |= wire.HasSeed
			return err
		case "stop":
			req.Params.Stop, err = rq.Strings("stop", val, true)
			return err
		case "stream":
			req.Stream, err = rq.Bool("stream", val)
			return err
		default:
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case maxCompletion != nil:
		req.Params.MaxTokens, err = rq.Int("max_completion_tokens", maxCompletion)
		req.Params.Set |= wire.HasMaxTokens
		if maxTokens != nil {
			extra = dec.AppendMember(extra, maxTokensKey, maxTokens)
		}
	case maxTokens != nil:
		req.Params.MaxTokens, err = rq.Int("max_tokens", maxTokens)
		req.Params.Set |= wire.HasMaxTokens | ParamLegacyMaxTokens
	}
	if err != nil {
		return nil, err
	}
	if !haveModel || req.Model == "" {
		return nil, rq.Errf("model", "is required")
	}
	if !haveMessages || len(req.Messages) == 0 && len(req.System) == 0 {
		return nil, rq.Errf("messages", "is required and must not be empty")
	}
	req.Extra = dec.CloseObject(extra)
	return req, nil
}

// nullMeansAbsent lists the modeled fields for which an explicit null means
// "use the default", exactly as leaving them out does.
func nullMeansAbsent(key []byte) bool {
	switch string(key) {
	case "tools", "tool_choice", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop", "stream":
		return true
	}
	return false
}

// oaMessage is one message as read from the wire, before folding.
type oaMessage struct {
	role, name, toolCallID string
	content                []byte // raw
	reasoning              []byte // raw string
	details                []byte // raw reasoning_details array
	toolCalls              []byte // raw array
	extra                  []byte // members not modelled, a raw object
}

func decodeMessages(req *wire.Request, val []byte) error {
	if err := rq.Array("messages", val); err != nil {
		return err
	}
	toolGroup := -1 // index in req.Messages of the user message collecting tool results
	return jsonx.ArrayEach(val, func(i int, raw []byte) error {
		if err := decodeMessage(req, raw, &toolGroup); err != nil {
			return dec.Prefix(err, dec.Index("messages", i))
		}
		return nil
	})
}

func decodeMessage(req *wire.Request, raw []byte, toolGroup *int) error {
	if err := rq.Object("", raw); err != nil {
		return err
	}
	var m oaMessage
	var err error
	err = jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "role":
			m.role, err = rq.Str("role", val)
		case "content":
			m.content = val
		case "name":
			m.name, err = rq.Str("name", val)
		case "tool_call_id":
			m.toolCallID, err = rq.Str("tool_call_id", val)
		case "tool_calls":
			m.toolCalls = val
		case "reasoning_content":
			m.reasoning = val
		case "reasoning_details":
			m.details = val
		case "reasoning":
			if m.reasoning == nil && jsonx.KindOf(val) == jsonx.String {
				m.reasoning = val
			} else {
				m.extra = dec.AppendMember(m.extra, rawKey, val)
			}
		default: // refusal, audio, annotations, …
			m.extra = dec.AppendMember(m.extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return err
	}
	m.extra = dec.CloseObject(m.extra)
	switch m.role {
	case "system", "developer":
		*toolGroup = -1
		if len(req.Messages) > 0 {
			// after the conversation started: a system message in place
			msg := wire.Message{Role: "system", Extra: m.extra}
			msg.Content, err = appendContent(nil, m.content, "content")
			if m.name != "" {
				msg.Extra = withMember(msg.Extra, "name", m.name)
			}
			if m.role == "developer" {
				for j := range msg.Content {
					msg.Content[j].Name = RoleDeveloper
				}
			}
			req.Messages = append(req.Messages, msg)
			return err
		}
		start := len(req.System)
		req.System, err = appendContent(req.System, m.content, "content")
		for j := start; j < len(req.System); j++ {
			if m.role == "developer" {
				req.System[j].Name = RoleDeveloper
			}
		}
		if start < len(req.System) {
			// the message's own members ride on its first block
			sx := m.extra
			if m.name != "" {
				sx = withMember(sx, "name", m.name)
			}
			req.System[start].Extra = mergeObjects(sx, req.System[start].Extra)
		}
		return err
	case "user":
		*toolGroup = -1
		msg := wire.Message{Role: "user", Name: m.name, Extra: m.extra}
		msg.Content, err = appendContent(nil, m.content, "content")
		req.Messages = append(req.Messages, msg)
		return err
	case "assistant":
		*toolGroup = -1
		msg := wire.Message{Role: "assistant", Name: m.name, Extra: m.extra}
		if m.details != nil {
			// signed thinking sent back (OpenRouter's reasoning_details):
			// it replaces reasoning_content, which holds the same text
			msg.Content, err = decodeReasoningDetails(rq, "reasoning_details", m.details)
			if err != nil {
				return err
			}
		}
		if m.reasoning != nil && !jsonx.IsNull(m.reasoning) && len(msg.Content) == 0 {
			s, err := rq.Str("reasoning_content", m.reasoning)
			if err != nil {
				return err
			}
			if s != "" {
				msg.Content = append(msg.Content, wire.Block{Type: wire.BlockThinking, Text: s})
			}
		}
		msg.Content, err = appendContent(msg.Content, m.content, "content")
		if err != nil {
			return err
		}
		if m.toolCalls != nil && !jsonx.IsNull(m.toolCalls) {
			if err := rq.Array("tool_calls", m.toolCalls); err != nil {
				return err
			}
			err = jsonx.ArrayEach(m.toolCalls, func(i int, tc []byte) error {
				b, err := decodeToolCall(rq, tc)
				if err != nil {
					return dec.Prefix(err, dec.Index("tool_calls", i))
				}
				msg.Content = append(msg.Content, b)
				return nil
			})
		}
		req.Messages = append(req.Messages, msg)
		return err
	case "tool":
		if m.toolCallID == "" {
			return rq.Errf("tool_call_id", "is required in a tool message")
		}
		b := wire.Block{Type: wire.BlockToolResult, ID: m.toolCallID, Extra: m.extra}
		if m.name != "" {
			b.Extra = withMember(b.Extra, "name", m.name)
		}
		switch jsonx.KindOf(m.content) {
		case jsonx.String:
			b.Text, err = rq.Str("content", m.content)
		case jsonx.Array:
			b.Data = m.content
		case jsonx.Null, jsonx.Invalid:
		default:
			return rq.Errf("content", "must be a string or an array of content parts")
		}
		if err != nil {
			return err
		}
		if *toolGroup < 0 {
			req.Messages = append(req.Messages, wire.Message{Role: "user"})
			*toolGroup = len(req.Messages) - 1
		}
		g := &req.Messages[*toolGroup]
		g.Content = append(g.Content, b)
		return nil
	case "":
		return rq.Errf("role", "is required")
	}
	return rq.Errf("role", "unsupported role \""+dialect.Truncate(m.role, 40)+"\"")
}

func decodeToolCall(d dec.D, raw []byte) (wire.Block, error) {
	b := wire.Block{Type: wire.BlockToolUse}
	if err := d.Object("", raw); err != nil {
		return b, err
	}
	var fn, extra []byte
	var err error
	err = jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "id":
			b.ID, err = d.Str("id", val)
		case "function":
			fn = val
		case "type":
		default:
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return b, err
	}
	b.Extra = dec.CloseObject(extra)
	if err := d.Object("function", fn); err != nil {
		return b, err
	}
	var args []byte
	err = jsonx.ObjectEach(fn, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "name":
			b.Name, err = d.Str("function.name", val)
		case "arguments":
			args = val
		}
		return err
	})
	if err != nil {
		return b, err
	}
	switch jsonx.KindOf(args) {
	case jsonx.String:
		s, err := d.Str("function.arguments", args)
		if err != nil {
			return b, err
		}
		b.Data = argumentsToData(s)
	case jsonx.Object:
		// some clients send the arguments as an object
		b.Data = args
	case jsonx.Invalid, jsonx.Null:
		b.Data = []byte(`""`)
	default:
		return b, d.Errf("function.arguments", "must be a string")
	}
	return b, nil
}

// argumentsToData turns an OpenAI arguments string into a tool_use input:
// the JSON itself when it is an object or array, else the string as a JSON
// string (invalid JSON, a bare scalar, or empty), so dataToArguments restores
// it exactly.
func argumentsToData(s string) []byte {
	t := jsonx.TrimWS([]byte(s))
	if k := jsonx.KindOf(t); (k == jsonx.Object || k == jsonx.Array) && jsonx.Valid(t) {
		return []byte(s)
	}
	return jsonx.AppendString(nil, s)
}

// dataToArguments is the inverse of argumentsToData.
func dataToArguments(data []byte) string {
	switch jsonx.KindOf(data) {
	case jsonx.Invalid:
		return ""
	case jsonx.String:
		s, err := jsonx.Unquote(data)
		if err == nil {
			return s
		}
	}
	return string(data)
}

// appendContent decodes message content (a string, an array of content parts,
// or null) into blocks.
func appendContent(dst []wire.Block, val []byte, field string) ([]wire.Block, error) {
	switch jsonx.KindOf(val) {
	case jsonx.Invalid, jsonx.Null:
		return dst, nil
	case jsonx.String:
		s, err := rq.Str(field, val)
		return append(dst, wire.Block{Type: wire.BlockText, Text: s}), err
	case jsonx.Array:
		err := jsonx.ArrayEach(val, func(i int, part []byte) error {
			b, err := decodePart(part)
			if err != nil {
				return dec.Prefix(err, dec.Index(field, i))
			}
			dst = append(dst, b)
			return nil
		})
		return dst, err
	}
	return dst, rq.Errf(field, "must be a string or an array of content parts")
}

func decodePart(raw []byte) (wire.Block, error) {
	var b wire.Block
	if err := rq.Object("", raw); err != nil {
		return b, err
	}
	var typ, text, image, cache, extra []byte
	err := jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "type":
			typ = val
		case "text":
			text = val
		case "image_url":
			image = val
		case "cache_control":
			cache = val
		default:
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return nil
	})
	if err != nil {
		return b, err
	}
	t, err := rq.Str("type", typ)
	if err != nil {
		return b, err
	}
	switch t {
	case "text":
		b.Type = wire.BlockText
		if jsonx.KindOf(text) != jsonx.String {
			return b, rq.Errf("text", "must be a string")
		}
		b.Text, err = rq.Str("text", text)
		if cache != nil && !jsonx.IsNull(cache) {
			b.CacheControl = cache
		}
		if image != nil {
			extra = dec.AppendMember(extra, []byte("image_url"), image)
		}
		b.Extra = dec.CloseObject(extra)
		return b, err
	case "image_url":
		b.Type = wire.BlockImage
		b.Data, err = decodeImageURL(image)
		if cache != nil && !jsonx.IsNull(cache) {
			b.CacheControl = cache
		}
		if text != nil {
			extra = dec.AppendMember(extra, []byte("text"), text)
		}
		b.Extra = dec.CloseObject(extra)
		return b, err
	case "":
		return b, rq.Errf("type", "is required")
	}
	// input_audio, file, refusal, …: kept verbatim
	return wire.Block{Type: wire.BlockOther, Data: raw}, nil
}

// decodeImageURL turns an image_url object ({"url","detail"}; a bare string
// is accepted too) into a canonical image source.
func decodeImageURL(val []byte) ([]byte, error) {
	var url, detail string
	var err error
	switch jsonx.KindOf(val) {
	case jsonx.String:
		url, err = rq.Str("image_url", val)
	case jsonx.Object:
		err = jsonx.ObjectEach(val, func(rawKey, v []byte) error {
			var err error
			switch string(dec.K(rawKey)) {
			case "url":
				url, err = rq.Str("image_url.url", v)
			case "detail":
				detail, err = rq.Str("image_url.detail", v)
			}
			return err
		})
	default:
		return nil, rq.Errf("image_url", "must be an object")
	}
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, rq.Errf("image_url.url", "is required")
	}
	out := make([]byte, 0, len(url)+64)
	if mt, data, ok := parseDataURL(url); ok {
		out = append(out, `{"type":"base64","media_type":`...)
		out = jsonx.AppendString(out, mt)
		out = append(out, `,"data":`...)
		out = jsonx.AppendString(out, data)
	} else {
		out = append(out, `{"type":"url","url":`...)
		out = jsonx.AppendString(out, url)
	}
	if detail != "" {
		out = append(out, `,"detail":`...)
		out = jsonx.AppendString(out, detail)
	}
	return append(out, '}'), nil
}

// parseDataURL splits "data:<media type>;base64,<data>".
func parseDataURL(u string) (mediaType, data string, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", "", false
	}
	comma := strings.IndexByte(u, ',')
	if comma < 0 {
		return "", "", false
	}
	meta := u[5:comma]
	if !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	mediaType = meta[:len(meta)-len(";base64")]
	if mediaType == "" || strings.IndexByte(mediaType, ';') >= 0 {
		return "", "", false
	}
	return mediaType, u[comma+1:], true
}

func decodeTools(req *wire.Request, val []byte) error { return rq.Tools(req, val, decodeTool) }

// withMember returns the raw object obj (nil: none) with the string member
// key added.
func withMember(obj []byte, key, val string) []byte {
	m := jsonx.AppendString([]byte(nil), val)
	return mergeObjects(dec.CloseObject(dec.AppendMember(nil, []byte(key), m)), obj)
}

// mergeObjects returns the members of the raw objects a and b in one object
// (nil when both are nil).
func mergeObjects(a, b []byte) []byte {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out, _ := jsonx.AppendMembers(append([]byte(nil), a[:len(a)-1]...), b, nil)
	return append(out, '}')
}

func decodeTool(raw []byte) (wire.Tool, bool, error) {
	var t wire.Tool
	if err := rq.Object("", raw); err != nil {
		return t, false, err
	}
	var typ string
	var fn []byte
	var err error
	err = jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "type":
			typ, err = rq.Str("type", val)
		case "function":
			fn = val
		}
		return err
	})
	if err != nil {
		return t, false, err
	}
	if typ != "function" && !(typ == "" && fn != nil) {
		return t, false, nil // not representable; see the package doc
	}
	if err := rq.Object("function", fn); err != nil {
		return t, false, err
	}
	var extra []byte
	err = jsonx.ObjectEach(fn, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		default: // strict, …
			extra = dec.AppendMember(extra, rawKey, val)
		case "name":
			t.Name, err = rq.Str("function.name", val)
		case "description":
			t.Description, err = rq.Str("function.description", val)
		case "parameters":
			if !jsonx.IsNull(val) {
				if err := rq.Object("function.parameters", val); err != nil {
					return err
				}
				t.Schema = val
			}
		}
		return err
	})
	t.Extra = dec.CloseObject(extra)
	if err == nil && t.Name == "" {
		err = rq.Errf("function.name", "is required")
	}
	return t, err == nil, err
}

// decodeToolChoice maps OpenAI's tool_choice to the canonical form.
func decodeToolChoice(val []byte) ([]byte, error) {
	switch jsonx.KindOf(val) {
	case jsonx.String:
		s, _ := jsonx.Unquote(val)
		switch s {
		case "auto":
			return []byte(`{"type":"auto"}`), nil
		case "none":
			return []byte(`{"type":"none"}`), nil
		case "required":
			return []byte(`{"type":"any"}`), nil
		}
		return nil, rq.Errf("tool_choice", `must be "auto", "none", "required" or an object`)
	case jsonx.Object:
		var typ string
		var fn []byte
		_ = jsonx.ObjectEach(val, func(rawKey, v []byte) error {
			switch string(dec.K(rawKey)) {
			case "type":
				typ, _ = jsonx.Unquote(v)
			case "function":
				fn = v
			}
			return nil
		})
		switch typ {
		case "auto", "none", "any", "tool":
			// The canonical form's own types (Anthropic's): kept verbatim,
			// {"type":"tool"} would read as a forced tool with no name.
			return nil, rq.Errf("tool_choice.type", strconv.Quote(typ)+` is not an OpenAI tool_choice object; use "auto", "none" or "required" as a string, or {"type":"function","function":{"name":…}}`)
		}
		if typ == "function" && jsonx.KindOf(fn) == jsonx.Object {
			var name string
			_ = jsonx.ObjectEach(fn, func(rawKey, v []byte) error {
				if jsonx.KeyIs(rawKey, "name") {
					name, _ = jsonx.Unquote(v)
				}
				return nil
			})
			if name == "" {
				return nil, rq.Errf("tool_choice.function.name", "is required")
			}
			out := append([]byte(`{"type":"tool","name":`), jsonx.AppendString(nil, name)...)
			return append(out, '}'), nil
		}
		return val, nil // allowed_tools, custom, …: kept verbatim
	}
	return nil, rq.Errf("tool_choice", "must be a string or an object")
}
