// Package responses is the native codec for the OpenAI Responses API
// (POST /v1/responses): requests, responses, SSE streams and error bodies,
// to and from the canonical model of package wire.
//
// Mapping notes (canonical ⇄ Responses):
//   - instructions, and system or developer messages before the first user
//     or assistant item, become Request.System text blocks (a developer
//     message's have Name "developer"); later ones stay in place as
//     Messages with Role "system".
//   - input items: consecutive assistant items (an assistant message,
//     function_call, reasoning) fold into one assistant message, and
//     consecutive function_call_output items into one user message of
//     tool_result blocks; a user message is a user turn of its own.
//   - a function_call is a tool_use block (ID = call_id, Data = the parsed
//     arguments, as the Chat codec does); a function_call_output a
//     tool_result block (output as Text, or an array of parts as Data).
//   - reasoning items are thinking blocks: the summary (or, without one,
//     the reasoning_text content) is the Text, encrypted_content the
//     Signature, so an Anthropic upstream's signed thinking round-trips
//     through a Responses client; an encrypted_content starting with
//     [RedactedPrefix] is a redacted thinking block.
//   - max_output_tokens, temperature, top_p are Params; tools of type
//     "function" are Tools (strict and other members in Tool.Extra).
//     Built-in tools (web_search, file_search, computer use, …) and custom
//     tools are refused: [ErrBuiltinTool].
//   - every other top-level member (text, reasoning, parallel_tool_calls,
//     metadata, prompt_cache_key, …) stays in Request.Extra, unchanged; the
//     gateway carries those with a Chat Completions equivalent over when it
//     encodes for a Chat upstream (host/gateway/translate.go).
package responses

import (
	"bytes"
	"errors"
	"strings"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// RoleDeveloper is the Block.Name of a system block that came from a
// developer message (the Chat codec's convention, so both re-encode it).
const RoleDeveloper = "developer"

// RedactedPrefix starts the encrypted_content of a reasoning item that
// stands for a redacted thinking block; the rest is its opaque data.
const RedactedPrefix = "redacted_thinking:"

// ErrBuiltinTool names, in the error for a request that forces a hosted
// tool, why it cannot be served: only an upstream that runs the Responses
// API itself could.
var ErrBuiltinTool = errors.New("built-in tool")

var rq = dec.Request

// DecodeRequest parses a Responses API request body into the canonical
// model. Errors wrap dialect.ErrInvalidRequest. The result does not alias
// body.
func DecodeRequest(body []byte) (*wire.Request, error) {
	if err := rq.Validate(body, "request body"); err != nil {
		return nil, err
	}
	buf := bytes.Clone(body)
	req := &wire.Request{}
	var (
		extra     []byte
		haveModel bool
		input     []byte
		err       error
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
		case "input":
			input = val
		case "instructions":
			s, err := rq.Str("instructions", val)
			if err != nil {
				return err
			}
			if s != "" {
				req.System = append([]wire.Block{{Type: wire.BlockText, Text: s}}, req.System...)
			}
		case "tools":
			return rq.Tools(req, val, decodeTool)
		case "tool_choice":
			req.ToolChoice, err = decodeToolChoice(val)
			return err
		case "max_output_tokens":
			req.Params.MaxTokens, err = rq.Int("max_output_tokens", val)
			req.Params.Set |= wire.HasMaxTokens
			return err
		case "temperature":
			req.Params.Temperature, err = rq.Float("temperature", val)
			req.Params.Set |= wire.HasTemperature
			return err
		case "top_p":
			req.Params.TopP, err = rq.Float("top_p", val)
			req.Params.Set |= wire.HasTopP
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
	if !haveModel || req.Model == "" {
		return nil, rq.Errf("model", "is required")
	}
	if input != nil {
		if err := decodeInput(req, input); err != nil {
			return nil, err
		}
	}
	if len(req.Messages) == 0 && len(req.System) == 0 {
		return nil, rq.Errf("input", "is required and must not be empty")
	}
	req.Extra = dec.CloseObject(extra)
	return req, nil
}

// nullMeansAbsent lists the modelled fields for which null means the
// default, as leaving them out does.
func nullMeansAbsent(key []byte) bool {
	switch string(key) {
	case "input", "instructions", "tools", "tool_choice", "max_output_tokens", "temperature", "top_p", "stream":
		return true
	}
	return false
}

// decodeInput reads input: a string (one user message) or an array of
// items.
func decodeInput(req *wire.Request, val []byte) error {
	switch jsonx.KindOf(val) {
	case jsonx.String:
		s, err := rq.Str("input", val)
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: s}}})
		return nil
	case jsonx.Array:
	default:
		return rq.Errf("input", "must be a string or an array of items")
	}
	return jsonx.ArrayEach(val, func(i int, raw []byte) error {
		if err := decodeItem(req, raw); err != nil {
			return dec.Prefix(err, dec.Index("input", i))
		}
		return nil
	})
}

// item is the members of one input item the codec reads.
type item struct {
	typ, role, id, callID, name string
	content, arguments, output  []byte
	summary, encrypted          []byte
}

func decodeItem(req *wire.Request, raw []byte) error {
	if err := rq.Object("", raw); err != nil {
		return err
	}
	var it item
	err := jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		var err error
		switch string(dec.K(rawKey)) {
		case "type":
			it.typ, err = rq.Str("type", val)
		case "role":
			it.role, err = rq.Str("role", val)
		case "id":
			it.id, err = rq.Str("id", val)
		case "call_id":
			it.callID, err = rq.Str("call_id", val)
		case "name":
			it.name, err = rq.Str("name", val)
		case "content":
			it.content = val
		case "arguments":
			it.arguments = val
		case "output":
			it.output = val
		case "summary":
			it.summary = val
		case "encrypted_content":
			it.encrypted = val
		}
		return err
	})
	if err != nil {
		return err
	}
	if it.typ == "" && it.role != "" {
		it.typ = "message" // an EasyInputMessage: {"role","content"}
	}
	switch it.typ {
	case "message":
		return decodeMessage(req, &it)
	case "function_call":
		if it.callID == "" {
			return rq.Errf("call_id", "is required")
		}
		if it.name == "" {
			return rq.Errf("name", "is required")
		}
		args, err := rq.Str("arguments", it.arguments)
		if err != nil {
			return err
		}
		assistant(req).Content = append(assistant(req).Content,
			wire.Block{Type: wire.BlockToolUse, ID: it.callID, Name: it.name, Data: argumentsToData(args)})
		return nil
	case "function_call_output":
		if it.callID == "" {
			return rq.Errf("call_id", "is required")
		}
		b := wire.Block{Type: wire.BlockToolResult, ID: it.callID}
		switch jsonx.KindOf(it.output) {
		case jsonx.String:
			s, err := rq.Str("output", it.output)
			if err != nil {
				return err
			}
			b.Text = s
		case jsonx.Array:
			b.Data = outputParts(it.output)
		default:
			return rq.Errf("output", "must be a string or an array of content parts")
		}
		toolTurn(req).Content = append(toolTurn(req).Content, b)
		return nil
	case "reasoning":
		return decodeReasoning(req, &it, raw)
	case "item_reference":
		return rq.Errf("type", "item_reference is not supported: send the item itself, or chain with previous_response_id")
	case "":
		return rq.Errf("type", "is required")
	}
	return rq.Errf("type", "input items of type "+it.typ+" are not supported")
}

// assistant returns the assistant message the next assistant item joins:
// the last message when it is one, else a new one.
func assistant(req *wire.Request) *wire.Message {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
		return &req.Messages[n-1]
	}
	req.Messages = append(req.Messages, wire.Message{Role: "assistant"})
	return &req.Messages[len(req.Messages)-1]
}

// toolTurn returns the user message tool results join: the last message
// when it is a user message holding only tool results, else a new one.
func toolTurn(req *wire.Request) *wire.Message {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		m := &req.Messages[n-1]
		only := true
		for i := range m.Content {
			if m.Content[i].Type != wire.BlockToolResult {
				only = false
			}
		}
		if only {
			return m
		}
	}
	req.Messages = append(req.Messages, wire.Message{Role: "user"})
	return &req.Messages[len(req.Messages)-1]
}

func decodeMessage(req *wire.Request, it *item) error {
	blocks, err := decodeContent(it.content)
	if err != nil {
		return dec.Prefix(err, "content")
	}
	switch it.role {
	case "user":
		req.Messages = append(req.Messages, wire.Message{Role: "user", Content: blocks})
	case "assistant":
		m := assistant(req)
		m.Content = append(m.Content, blocks...)
	case "system", "developer":
		for i := range blocks {
			if blocks[i].Type != wire.BlockText {
				return rq.Errf("content", "a "+it.role+" message may hold text only")
			}
			if it.role == "developer" {
				blocks[i].Name = RoleDeveloper
			}
		}
		if len(req.Messages) == 0 {
			req.System = append(req.System, blocks...)
			return nil
		}
		req.Messages = append(req.Messages, wire.Message{Role: "system", Content: blocks})
	case "":
		return rq.Errf("role", "is required")
	default:
		return rq.Errf("role", "must be user, assistant, system or developer")
	}
	return nil
}

// decodeContent reads a message's content: a string, or an array of parts.
func decodeContent(val []byte) ([]wire.Block, error) {
	switch jsonx.KindOf(val) {
	case jsonx.String:
		s, err := rq.Str("", val)
		return []wire.Block{{Type: wire.BlockText, Text: s}}, err
	case jsonx.Array:
	default:
		return nil, rq.Errf("", "must be a string or an array of content parts")
	}
	var out []wire.Block
	err := jsonx.ArrayEach(val, func(i int, part []byte) error {
		b, err := decodePart(part)
		if err != nil {
			return dec.Prefix(err, dec.Index("", i))
		}
		out = append(out, b)
		return nil
	})
	return out, err
}

func decodePart(part []byte) (wire.Block, error) {
	if err := rq.Object("", part); err != nil {
		return wire.Block{}, err
	}
	var typ, text, imageURL, detail string
	var extra []byte
	err := jsonx.ObjectEach(part, func(rawKey, val []byte) error {
		var err error
		switch k := dec.K(rawKey); string(k) {
		case "type":
			typ, err = rq.Str("type", val)
		case "text", "refusal":
			text, err = rq.Str(string(k), val)
		case "image_url":
			imageURL, err = rq.Str("image_url", val)
		case "detail":
			detail, err = rq.Str("detail", val)
		case "annotations", "logprobs":
			// Output-only members of an output_text part sent back.
		default:
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return wire.Block{}, err
	}
	switch typ {
	case "input_text", "output_text", "text", "refusal":
		return wire.Block{Type: wire.BlockText, Text: text, Extra: dec.CloseObject(extra)}, nil
	case "input_image":
		if imageURL == "" {
			return wire.Block{}, rq.Errf("image_url", "is required (file_id images are not supported)")
		}
		return wire.Block{Type: wire.BlockImage, Data: imageSource(imageURL, detail)}, nil
	case "":
		return wire.Block{}, rq.Errf("type", "is required")
	}
	return wire.Block{}, rq.Errf("type", "content parts of type "+typ+" are not supported")
}

// imageSource is the canonical image source of an image URL: base64 for a
// data: URL, else a URL source (the Chat codec's form).
func imageSource(url, detail string) []byte {
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
	return append(out, '}')
}

func parseDataURL(u string) (mediaType, data string, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", "", false
	}
	meta, data, ok := strings.Cut(u[5:], ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	mediaType = strings.TrimSuffix(meta, ";base64")
	if mediaType == "" || strings.IndexByte(mediaType, ';') >= 0 {
		return "", "", false
	}
	return mediaType, data, true
}

// outputParts turns a function_call_output's array of parts into a
// tool_result's structured content (Anthropic's block shapes): input_text
// becomes text; other parts pass as they are.
func outputParts(val []byte) []byte {
	out := []byte{'['}
	_ = jsonx.ArrayEach(val, func(i int, part []byte) error {
		if i > 0 {
			out = append(out, ',')
		}
		b, err := decodePart(part)
		if err == nil && b.Type == wire.BlockText {
			out = append(out, `{"type":"text","text":`...)
			out = jsonx.AppendString(out, b.Text)
			out = append(out, '}')
			return nil
		}
		out = jsonx.AppendCompact(out, part)
		return nil
	})
	return append(out, ']')
}

// decodeReasoning reads a reasoning item into a thinking block.
func decodeReasoning(req *wire.Request, it *item, raw []byte) error {
	var text []string
	collect := func(field string, val []byte, want string) error {
		if val == nil || jsonx.IsNull(val) {
			return nil
		}
		if err := rq.Array(field, val); err != nil {
			return err
		}
		return jsonx.ArrayEach(val, func(i int, part []byte) error {
			var typ, t string
			err := jsonx.ObjectEach(part, func(rawKey, v []byte) error {
				var err error
				switch string(dec.K(rawKey)) {
				case "type":
					typ, err = rq.Str("type", v)
				case "text":
					t, err = rq.Str("text", v)
				}
				return err
			})
			if err != nil {
				return dec.Prefix(err, dec.Index(field, i))
			}
			if typ == want {
				text = append(text, t)
			}
			return nil
		})
	}
	if err := collect("summary", it.summary, "summary_text"); err != nil {
		return err
	}
	if len(text) == 0 {
		var content []byte
		_ = jsonx.ObjectEach(raw, func(rawKey, v []byte) error {
			if jsonx.KeyIs(rawKey, "content") {
				content = v
			}
			return nil
		})
		if err := collect("content", content, "reasoning_text"); err != nil {
			return err
		}
	}
	enc, err := rq.Str("encrypted_content", it.encrypted)
	if err != nil {
		return err
	}
	m := assistant(req)
	if data, ok := strings.CutPrefix(enc, RedactedPrefix); ok {
		m.Content = append(m.Content, wire.Block{Type: wire.BlockRedactedThinking, Data: jsonx.AppendString(nil, data)})
		return nil
	}
	m.Content = append(m.Content, wire.Block{Type: wire.BlockThinking, Text: strings.Join(text, "\n\n"), Signature: enc})
	return nil
}

// decodeTool reads one tool: function tools become canonical tools; any
// other type is a hosted tool, kept whole (HostedTool).
func decodeTool(raw []byte) (wire.Tool, bool, error) {
	if err := rq.Object("", raw); err != nil {
		return wire.Tool{}, false, err
	}
	var t wire.Tool
	var typ string
	var extra []byte
	err := jsonx.ObjectEach(raw, func(rawKey, val []byte) error {
		var err error
		switch string(dec.K(rawKey)) {
		case "type":
			typ, err = rq.Str("type", val)
		case "name":
			t.Name, err = rq.Str("name", val)
		case "description":
			t.Description, err = rq.Str("description", val)
		case "parameters":
			if !jsonx.IsNull(val) {
				if err = rq.Object("parameters", val); err == nil {
					t.Schema = val
				}
			}
		default:
			extra = dec.AppendMember(extra, rawKey, val)
		}
		return err
	})
	if err != nil {
		return wire.Tool{}, false, err
	}
	if typ != "function" {
		if typ == "" {
			return wire.Tool{}, false, rq.Errf("type", "is required")
		}
		// A hosted tool (web_search, file_search, a namespace of tools,
		// …) is kept whole in Extra, named by its name or type: a
		// Responses upstream gets it back as sent, the gateway drops it
		// (named in X-Bardo-Degraded) for the other dialects.
		if t.Name == "" {
			t.Name = typ
		}
		return wire.Tool{Name: t.Name, Extra: bytes.Clone(raw)}, true, nil
	}
	if t.Name == "" {
		return wire.Tool{}, false, rq.Errf("name", "is required")
	}
	if t.Schema == nil {
		t.Schema = []byte(`{"type":"object","properties":{}}`)
	}
	t.Extra = dec.CloseObject(extra)
	return t, true, nil
}

// decodeToolChoice maps tool_choice to the canonical form.
func decodeToolChoice(val []byte) ([]byte, error) {
	switch jsonx.KindOf(val) {
	case jsonx.String:
		s, _ := rq.Str("tool_choice", val)
		switch s {
		case "auto":
			return []byte(`{"type":"auto"}`), nil
		case "none":
			return []byte(`{"type":"none"}`), nil
		case "required":
			return []byte(`{"type":"any"}`), nil
		}
		return nil, rq.Errf("tool_choice", "must be auto, none, required or an object")
	case jsonx.Object:
		var typ, name string
		_ = jsonx.ObjectEach(val, func(rawKey, v []byte) error {
			switch string(dec.K(rawKey)) {
			case "type":
				typ, _ = rq.Str("type", v)
			case "name":
				name, _ = rq.Str("name", v)
			}
			return nil
		})
		if typ == "function" && name != "" {
			out := append([]byte(`{"type":"tool","name":`), jsonx.AppendString(nil, name)...)
			return append(out, '}'), nil
		}
		return nil, &dialect.FormatError{Kind: dialect.ErrInvalidRequest, Field: "tool_choice",
			Msg: "only {\"type\":\"function\",\"name\":…} can be forced: a forced " + typ + " (" + ErrBuiltinTool.Error() + ") needs an upstream that runs it"}
	}
	return nil, rq.Errf("tool_choice", "must be a string or an object")
}

// argumentsToData turns an arguments string into a tool_use input: the
// JSON itself when it is an object or array, else the string as a JSON
// string, so dataToArguments restores it exactly (the Chat codec's rule).
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
		return "{}"
	case jsonx.String:
		if s, err := jsonx.Unquote(data); err == nil {
			return s
		}
	}
	return string(data)
}

// HostedTool reports whether t is a Responses API hosted tool (web_search,
// file_search, computer use, MCP, a namespace, a custom tool, …): one whose
// Extra is the whole tool object, with a type other than "function". Only
// a Responses upstream can take it.
func HostedTool(t *wire.Tool) bool {
	if len(t.Schema) > 0 || len(t.Extra) == 0 {
		return false
	}
	typ := ""
	_ = jsonx.ObjectEach(t.Extra, func(k, v []byte) error {
		if jsonx.KeyIs(k, "type") {
			typ, _ = jsonx.Unquote(v)
		}
		return nil
	})
	return typ != "" && typ != "function"
}
