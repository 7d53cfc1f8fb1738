package anthropic

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

var errNotJSON = errors.New("anthropic: encode: a raw JSON field of the request is not valid JSON")

func checkRaw(b []byte) error {
	if !jsonx.Valid(b) {
		return errNotJSON
	}
	return nil
}

// EncodeRequest writes req as an Anthropic Messages request body. max_tokens
// is DefaultMaxTokens when req has none. Request.Extra members are merged in
// verbatim (except those naming a field this encoder writes itself). Raw
// JSON pieces are validated, so the output is always valid JSON.
func EncodeRequest(req *wire.Request) ([]byte, error) {
	b := make([]byte, 0, requestSize(req))
	b = append(b, `{"model":`...)
	b = jsonx.AppendString(b, req.Model)
	b = append(b, `,"max_tokens":`...)
	p := &req.Params
	if p.Set&wire.HasMaxTokens != 0 {
		b = strconv.AppendInt(b, p.MaxTokens, 10)
	} else {
		b = strconv.AppendInt(b, DefaultMaxTokens, 10)
	}
	var err error
	if len(req.System) > 0 {
		b = append(b, `,"system":`...)
		if b, err = appendContent(b, req.System); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"messages":[`...)
	for i := range req.Messages {
		m := &req.Messages[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		role := m.Role
		if role == "" {
			role = "user"
		}
		b = jsonx.AppendString(b, role)
		b = append(b, `,"content":`...)
		if b, err = appendContent(b, m.Content); err != nil {
			return nil, err
		}
		if b, err = appendExtra(b, m.Extra, false, messageMember); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range req.Tools {
			t := &req.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			start := len(b)
			b = append(b, '{')
			server := ServerTool(t)
			if t.Name != "" || !server {
				b = append(b, `"name":`...)
				b = jsonx.AppendString(b, t.Name)
			}
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonx.AppendString(b, t.Description)
			}
			if !server { // a server tool's schema is Anthropic's
				b = append(b, `,"input_schema":`...)
				if len(t.Schema) > 0 {
					if err := checkRaw(t.Schema); err != nil {
						return nil, err
					}
					b = append(b, jsonx.TrimWS(t.Schema)...)
				} else {
					b = append(b, `{"type":"object","properties":{}}`...)
				}
			}
			if b, err = appendCache(b, t.CacheControl); err != nil {
				return nil, err
			}
			if b, err = appendExtra(b, t.Extra, false, toolMember); err != nil {
				return nil, err
			}
			if len(b) > start+1 && b[start+1] == ',' { // a nameless server tool: nothing before the first comma
				b = append(b[:start+1], b[start+2:]...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(req.ToolChoice) > 0 {
		if err := checkRaw(req.ToolChoice); err != nil {
			return nil, err
		}
		b = append(b, `,"tool_choice":`...)
		b = append(b, jsonx.TrimWS(req.ToolChoice)...)
	}
	if p.Set&wire.HasTemperature != 0 {
		b = append(b, `,"temperature":`...)
		if b, err = jsonx.AppendFloat(b, p.Temperature); err != nil {
			return nil, err
		}
	}
	if p.Set&wire.HasTopP != 0 {
		b = append(b, `,"top_p":`...)
		if b, err = jsonx.AppendFloat(b, p.TopP); err != nil {
			return nil, err
		}
	}
	if p.Set&wire.HasTopK != 0 {
		b = append(b, `,"top_k":`...)
		b = strconv.AppendInt(b, p.TopK, 10)
	}
	if len(p.Stop) > 0 {
		b = append(b, `,"stop_sequences":[`...)
		for i, s := range p.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonx.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if req.Stream {
		b = append(b, `,"stream":true`...)
	}
	b, err = jsonx.AppendMembers(b, req.Extra, func(key []byte) bool {
		switch jsonx.KeyString(key) {
		case "model", "max_tokens", "system", "messages", "tools", "tool_choice",
			"temperature", "top_p", "top_k", "stop_sequences", "stream":
			return true
		}
		return false
	})
	if err != nil {
		return nil, errors.New("anthropic: encode: Request.Extra is not a JSON object")
	}
	return append(b, '}'), nil
}

func requestSize(req *wire.Request) int {
	n := 256 + len(req.Extra) + len(req.ToolChoice)
	for i := range req.System {
		n += blockSize(&req.System[i])
	}
	for i := range req.Messages {
		n += 40
		for j := range req.Messages[i].Content {
			n += blockSize(&req.Messages[i].Content[j])
		}
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		n += 64 + len(t.Name) + len(t.Description) + len(t.Schema) + len(t.CacheControl)
	}
	return n
}

func blockSize(b *wire.Block) int {
	return 64 + len(b.Text) + len(b.Text)/16 + len(b.ID) + len(b.Name) + len(b.Data) + len(b.Signature) + len(b.CacheControl)
}

func appendCache(b, cc []byte) ([]byte, error) {
	if cc == nil {
		return b, nil
	}
	if err := checkRaw(cc); err != nil {
		return b, err
	}
	b = append(b, `,"cache_control":`...)
	if jsonx.HasNewline(cc) { // keep stream events on one line
		return jsonx.AppendCompact(b, cc), nil
	}
	return append(b, jsonx.TrimWS(cc)...), nil
}

// appendContent writes blocks as message (or system) content: a plain string
// when it is a single text block without cache_control or other members,
// else an array.
func appendContent(b []byte, blocks []wire.Block) ([]byte, error) {
	n, only := 0, -1
	for i := range blocks {
		if sendable(&blocks[i]) {
			n++
			only = i
		}
	}
	if n == 1 && blocks[only].Type == wire.BlockText && blocks[only].CacheControl == nil && blocks[only].Extra == nil {
		return jsonx.AppendString(b, blocks[only].Text), nil
	}
	b = append(b, '[')
	n = 0
	for i := range blocks {
		bl := &blocks[i]
		if !sendable(bl) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		var err error
		if b, err = appendBlock(b, bl, false); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// sendable reports whether a block may be sent to Anthropic in a request.
func sendable(bl *wire.Block) bool {
	return bl.Type != wire.BlockThinking || bl.Signature != ""
}

// appendBlock writes one content block. compact makes raw JSON pieces fit on
// one SSE data line.
func appendBlock(b []byte, bl *wire.Block, compact bool) ([]byte, error) {
	raw := func(b, v []byte) []byte {
		if compact && jsonx.HasNewline(v) {
			return jsonx.AppendCompact(b, v)
		}
		return append(b, jsonx.TrimWS(v)...)
	}
	switch bl.Type {
	case wire.BlockText:
		b = append(b, `{"type":"text","text":`...)
		b = jsonx.AppendString(b, bl.Text)
	case wire.BlockImage:
		if err := checkRaw(bl.Data); err != nil {
			return b, err
		}
		b = append(b, `{"type":"image","source":`...)
		src := jsonx.TrimWS(bl.Data)
		if bytes.Contains(src, []byte(`"detail"`)) && jsonx.KindOf(src) == jsonx.Object {
			src = withoutMember(src, "detail") // OpenAI's image detail has no Anthropic form
		}
		b = raw(b, src)
	case wire.BlockToolUse:
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonx.AppendString(b, bl.ID)
		b = append(b, `,"name":`...)
		b = jsonx.AppendString(b, bl.Name)
		b = append(b, `,"input":`...)
		if len(bl.Data) > 0 {
			if err := checkRaw(bl.Data); err != nil {
				return b, err
			}
		}
		if jsonx.KindOf(bl.Data) == jsonx.Object {
			b = raw(b, bl.Data)
		} else {
			// an OpenAI arguments string that was not a JSON object
			b = append(b, '{', '}')
		}
	case wire.BlockToolResult:
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = jsonx.AppendString(b, bl.ID)
		if len(bl.Data) > 0 {
			if err := checkRaw(bl.Data); err != nil {
				return b, err
			}
			data := jsonx.TrimWS(bl.Data)
			b = append(b, `,"content":`...)
			switch {
			case jsonx.KindOf(data) != jsonx.Array:
				s := bl.Text
				if s != "" {
					s += "\n"
				}
				b = jsonx.AppendString(b, s+string(data))
			case bl.Text == "":
				b = raw(b, data)
			default:
				b = append(b, `[{"type":"text","text":`...)
				b = jsonx.AppendString(b, bl.Text)
				b = append(b, '}')
				if inner := jsonx.TrimWS(data[1 : len(data)-1]); len(inner) > 0 {
					b = append(b, ',')
					b = raw(b, inner)
				}
				b = append(b, ']')
			}
		} else if bl.Text != "" {
			b = append(b, `,"content":`...)
			b = jsonx.AppendString(b, bl.Text)
		}
		if bl.IsError {
			b = append(b, `,"is_error":true`...)
		}
	case wire.BlockThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonx.AppendString(b, bl.Text)
		b = append(b, `,"signature":`...)
		b = jsonx.AppendString(b, bl.Signature)
	case wire.BlockRedactedThinking:
		b = append(b, `{"type":"redacted_thinking","data":`...)
		if jsonx.KindOf(bl.Data) == jsonx.String && jsonx.Valid(bl.Data) {
			b = append(b, jsonx.TrimWS(bl.Data)...)
		} else {
			b = jsonx.AppendString(b, string(bl.Data))
		}
	default: // document, other: the raw block
		if err := checkRaw(bl.Data); err != nil {
			return b, err
		}
		body, ok := jsonx.ObjectBody(bl.Data)
		if !ok {
			return b, errors.New("anthropic: encode: a block's raw JSON is not an object")
		}
		b = append(b, '{')
		b = raw(b, body)
		if len(body) == 0 && bl.CacheControl != nil {
			// appendCache writes a leading comma, which {} cannot take
			if err := checkRaw(bl.CacheControl); err != nil {
				return b, err
			}
			b = append(b, `"cache_control":`...)
			b = jsonx.AppendCompact(b, bl.CacheControl)
			return append(b, '}'), nil
		}
	}
	b, err := appendCache(b, bl.CacheControl)
	if err != nil {
		return b, err
	}
	if b, err = appendExtra(b, bl.Extra, compact, func(key []byte) bool { return blockWritten(bl.Type, key) }); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendExtra splices the members of a message's, block's or tool's Extra
// into the object being written, except those written already.
func appendExtra(b, extra []byte, compact bool, written func(key []byte) bool) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	if compact && jsonx.HasNewline(extra) {
		extra = jsonx.AppendCompact(nil, extra)
	}
	b, err := jsonx.AppendMembers(b, extra, written)
	if err != nil {
		return b, errors.New("anthropic: encode: an Extra is not a JSON object")
	}
	return b, nil
}

func messageMember(key []byte) bool {
	k := jsonx.KeyString(key)
	return k == "role" || k == "content"
}

func toolMember(key []byte) bool {
	switch jsonx.KeyString(key) {
	case "name", "description", "input_schema", "cache_control":
		return true
	}
	return false
}

// blockWritten reports whether appendBlock writes the member key itself for
// a block of type t.
func blockWritten(t wire.BlockType, key []byte) bool {
	k := jsonx.KeyString(key)
	return k == "type" || k == "cache_control" || blockMember(t, k)
}

// ServerTool reports whether t is one of Anthropic's server tools (web
// search, code execution, an MCP toolset, …): its Extra names a "type"
// other than "custom". It has no input schema of the caller's.
func ServerTool(t *wire.Tool) bool {
	if len(t.Extra) == 0 {
		return false
	}
	server := false
	_ = jsonx.ObjectEach(t.Extra, func(k, v []byte) error {
		if jsonx.KeyIs(k, "type") {
			s, _ := jsonx.Unquote(v)
			server = s != "custom"
		}
		return nil
	})
	return server
}
