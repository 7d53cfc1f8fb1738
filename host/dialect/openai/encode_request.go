package openai

import (
	"errors"
	"strconv"

	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// EncodeOptions tunes EncodeRequest.
type EncodeOptions struct {
	// StreamUsage makes a streamed request ask for the usage chunk
	// (stream_options.include_usage = true), which the host needs to account
	// for tokens, whatever the caller asked. Other stream_options members in
	// Extra are kept.
	StreamUsage bool
}

// EncodeRequest writes req as an OpenAI Chat Completions request body.
// Request.Extra members are merged in verbatim (except those naming a field
// this encoder writes itself). Raw JSON pieces (block data, schemas, tool
// choice, extra) are validated, so the output is always valid JSON.
func EncodeRequest(req *wire.Request) ([]byte, error) {
	return EncodeRequestWith(req, EncodeOptions{})
}

// EncodeRequestWith is EncodeRequest with options.
func EncodeRequestWith(req *wire.Request, opt EncodeOptions) ([]byte, error) {
	e := reqEncoder{buf: make([]byte, 0, requestSize(req))}
	if err := e.request(req, opt); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// requestSize estimates the encoded size, to allocate once.
func requestSize(req *wire.Request) int {
	n := 256 + len(req.Extra) + len(req.ToolChoice)
	for i := range req.System {
		n += blockSize(&req.System[i])
	}
	for i := range req.Messages {
		n += 48
		for j := range req.Messages[i].Content {
			n += blockSize(&req.Messages[i].Content[j])
		}
	}
	for i := range req.Tools {
		n += 64 + len(req.Tools[i].Name) + len(req.Tools[i].Description) + len(req.Tools[i].Schema)
	}
	return n
}

func blockSize(b *wire.Block) int {
	return 48 + len(b.Text) + len(b.Text)/16 + len(b.ID) + len(b.Name) + len(b.Data) + len(b.Data)/8 + len(b.CacheControl)
}

type reqEncoder struct {
	buf []byte
}

var errNotJSON = errors.New("openai: encode: a raw JSON field of the request is not valid JSON")

func checkRaw(b []byte) error {
	if !jsonx.Valid(b) {
		return errNotJSON
	}
	return nil
}

func (e *reqEncoder) request(req *wire.Request, opt EncodeOptions) error {
	b := append(e.buf, `{"model":`...)
	b = jsonx.AppendString(b, req.Model)
	b = append(b, `,"messages":[`...)
	e.buf = b
	first := true
	for i := range req.System {
		if err := e.systemMessage(&req.System[i], &first); err != nil {
			return err
		}
	}
	for i := range req.Messages {
		if err := e.message(&req.Messages[i], &first); err != nil {
			return err
		}
	}
	b = append(e.buf, ']')

	p := &req.Params
	var written [8]string
	nw := 0
	if p.Set&wire.HasMaxTokens != 0 {
		key := "max_completion_tokens"
		if p.Set&ParamLegacyMaxTokens != 0 {
			key = "max_tokens"
		}
		written[nw] = key
		nw++
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, p.MaxTokens, 10)
	}
	var err error
	if p.Set&wire.HasTemperature != 0 {
		b = append(b, `,"temperature":`...)
		if b, err = jsonx.AppendFloat(b, p.Temperature); err != nil {
			return err
		}
	}
	if p.Set&wire.HasTopP != 0 {
		b = append(b, `,"top_p":`...)
		if b, err = jsonx.AppendFloat(b, p.TopP); err != nil {
			return err
		}
	}
	if p.Set&wire.HasSeed != 0 {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, p.Seed, 10)
	}
	if len(p.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range p.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonx.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range req.Tools {
			t := &req.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = jsonx.AppendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonx.AppendString(b, t.Description)
			}
			b = append(b, `,"parameters":`...)
			if len(t.Schema) > 0 {
				if err := checkRaw(t.Schema); err != nil {
					return err
				}
				b = append(b, t.Schema...)
			} else {
				b = append(b, `{"type":"object","properties":{}}`...)
			}
			if b, err = appendExtra(b, t.Extra, "name", "description", "parameters"); err != nil {
				return err
			}
			b = append(b, '}', '}')
		}
		b = append(b, ']')
	}
	if len(req.ToolChoice) > 0 {
		if err := checkRaw(req.ToolChoice); err != nil {
			return err
		}
		b = append(b, `,"tool_choice":`...)
		b = appendToolChoice(b, req.ToolChoice)
	}
	if req.Stream {
		b = append(b, `,"stream":true`...)
		if opt.StreamUsage {
			b, err = appendStreamOptions(b, req.Extra)
			if err != nil {
				return err
			}
		}
	}
	b, err = jsonx.AppendMembers(b, req.Extra, func(key []byte) bool {
		switch k := jsonx.KeyString(key); k {
		case "model", "messages", "temperature", "top_p", "seed", "stop", "tools", "tool_choice", "stream":
			return true
		case "stream_options":
			return req.Stream && opt.StreamUsage
		default:
			for _, w := range written[:nw] {
				if k == w {
					return true
				}
			}
		}
		return false
	})
	if err != nil {
		return errors.New("openai: encode: Request.Extra is not a JSON object")
	}
	e.buf = append(b, '}')
	return nil
}

// appendStreamOptions writes stream_options with include_usage forced on,
// keeping the other members the caller sent.
func appendStreamOptions(b, extra []byte) ([]byte, error) {
	b = append(b, `,"stream_options":{"include_usage":true`...)
	if len(extra) > 0 && jsonx.Valid(extra) && jsonx.KindOf(extra) == jsonx.Object {
		var so []byte
		_ = jsonx.ObjectEach(extra, func(key, val []byte) error {
			if jsonx.KeyIs(key, "stream_options") {
				so = val
			}
			return nil
		})
		if jsonx.KindOf(so) == jsonx.Object {
			var err error
			b, err = jsonx.AppendMembers(b, so, func(key []byte) bool { return jsonx.KeyIs(key, "include_usage") })
			if err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}

// appendToolChoice maps the canonical tool choice to OpenAI's; unknown forms
// are written verbatim.
func appendToolChoice(b, tc []byte) []byte {
	var typ, name string
	if jsonx.KindOf(tc) == jsonx.Object {
		_ = jsonx.ObjectEach(tc, func(key, val []byte) error {
			switch string(key) {
			case "type":
				typ, _ = jsonx.Unquote(val)
			case "name":
				name, _ = jsonx.Unquote(val)
			}
			return nil
		})
	}
	switch typ {
	case "auto":
		return append(b, `"auto"`...)
	case "none":
		return append(b, `"none"`...)
	case "any":
		return append(b, `"required"`...)
	case "tool":
		b = append(b, `{"type":"function","function":{"name":`...)
		b = jsonx.AppendString(b, name)
		return append(b, '}', '}')
	}
	return append(b, jsonx.TrimWS(tc)...)
}

func (e *reqEncoder) open(first *bool) {
	if !*first {
		e.buf = append(e.buf, ',')
	}
	*first = false
}

func (e *reqEncoder) systemMessage(bl *wire.Block, first *bool) error {
	e.open(first)
	if bl.Name == RoleDeveloper {
		e.buf = append(e.buf, `{"role":"developer","content":`...)
	} else {
		e.buf = append(e.buf, `{"role":"system","content":`...)
	}
	if bl.Type == wire.BlockText && bl.CacheControl == nil {
		e.buf = jsonx.AppendString(e.buf, bl.Text)
	} else {
		e.buf = append(e.buf, '[')
		n, err := e.part(bl, 0)
		if err != nil {
			return err
		}
		if n == 0 {
			e.buf = append(e.buf, `{"type":"text","text":""}`...)
		}
		e.buf = append(e.buf, ']')
	}
	// a leading system message's own members ride on its first block
	var err error
	if e.buf, err = appendExtra(e.buf, bl.Extra, "role", "content"); err != nil {
		return err
	}
	e.buf = append(e.buf, '}')
	return nil
}

// appendExtra splices the members of an Extra into the object being
// written, except those named (written already).
func appendExtra(b, extra []byte, written ...string) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	b, err := jsonx.AppendMembers(b, extra, func(key []byte) bool {
		k := jsonx.KeyString(key)
		for _, w := range written {
			if k == w {
				return true
			}
		}
		return false
	})
	if err != nil {
		return b, errors.New("openai: encode: an Extra is not a JSON object")
	}
	return b, nil
}

// isPart reports whether a block goes into a message's content array.
func isPart(t wire.BlockType) bool {
	switch t {
	case wire.BlockText, wire.BlockImage, wire.BlockDocument, wire.BlockOther:
		return true
	}
	return false
}

func (e *reqEncoder) message(m *wire.Message, first *bool) error {
	// tool results become tool messages, first
	for i := range m.Content {
		bl := &m.Content[i]
		if bl.Type != wire.BlockToolResult {
			continue
		}
		e.open(first)
		e.buf = append(e.buf, `{"role":"tool","tool_call_id":`...)
		e.buf = jsonx.AppendString(e.buf, bl.ID)
		e.buf = append(e.buf, `,"content":`...)
		if err := e.toolResultContent(bl); err != nil {
			return err
		}
		var err error
		if e.buf, err = appendExtra(e.buf, bl.Extra, "role", "tool_call_id", "content"); err != nil {
			return err
		}
		e.buf = append(e.buf, '}')
	}
	if m.Role == "system" {
		return e.midSystem(m, first)
	}
	var nparts, ntools, nthink, ntext, nresults int
	var textCache bool
	for i := range m.Content {
		bl := &m.Content[i]
		switch {
		case bl.Type == wire.BlockToolResult:
			nresults++
		case bl.Type == wire.BlockToolUse:
			ntools++
		case bl.Type == wire.BlockThinking && bl.Signature == "":
			nthink++
		case isPart(bl.Type):
			nparts++
			if bl.Type == wire.BlockText {
				ntext++
				textCache = textCache || bl.CacheControl != nil || bl.Extra != nil
			}
		}
	}
	if nresults > 0 && nparts == 0 && ntools == 0 && nthink == 0 {
		return nil // only tool results
	}
	role := m.Role
	if role == "" {
		role = "user"
	}
	e.open(first)
	e.buf = append(e.buf, `{"role":`...)
	e.buf = jsonx.AppendString(e.buf, role)
	if m.Name != "" {
		e.buf = append(e.buf, `,"name":`...)
		e.buf = jsonx.AppendString(e.buf, m.Name)
	}
	e.buf = append(e.buf, `,"content":`...)
	switch {
	case nparts == 1 && ntext == 1 && !textCache:
		for i := range m.Content {
			if m.Content[i].Type == wire.BlockText {
				e.buf = jsonx.AppendString(e.buf, m.Content[i].Text)
				break
			}
		}
	case nparts == 0 && role == "assistant" && ntools > 0:
		e.buf = append(e.buf, "null"...)
	case nparts == 0:
		e.buf = append(e.buf, `""`...)
	default:
		e.buf = append(e.buf, '[')
		n := 0
		for i := range m.Content {
			if isPart(m.Content[i].Type) {
				var err error
				if n, err = e.part(&m.Content[i], n); err != nil {
					return err
				}
			}
		}
		if n == 0 { // every part was dropped
			e.buf = e.buf[:len(e.buf)-1]
			if role == "assistant" && ntools > 0 {
				e.buf = append(e.buf, "null"...)
			} else {
				e.buf = append(e.buf, `""`...)
			}
		} else {
			e.buf = append(e.buf, ']')
		}
	}
	if nthink > 0 {
		e.buf = append(e.buf, `,"reasoning_content":"`...)
		for i := range m.Content {
			if bl := &m.Content[i]; bl.Type == wire.BlockThinking && bl.Signature == "" {
				s := jsonx.AppendString(e.buf, bl.Text)
				// drop the quotes AppendString added around this piece
				copy(s[len(e.buf):], s[len(e.buf)+1:len(s)-1])
				e.buf = s[:len(s)-2]
			}
		}
		e.buf = append(e.buf, '"')
	}
	if ntools > 0 {
		e.buf = append(e.buf, `,"tool_calls":[`...)
		n := 0
		for i := range m.Content {
			bl := &m.Content[i]
			if bl.Type != wire.BlockToolUse {
				continue
			}
			if n > 0 {
				e.buf = append(e.buf, ',')
			}
			n++
			e.buf = append(e.buf, `{"id":`...)
			e.buf = jsonx.AppendString(e.buf, bl.ID)
			e.buf = append(e.buf, `,"type":"function","function":{"name":`...)
			e.buf = jsonx.AppendString(e.buf, bl.Name)
			e.buf = append(e.buf, `,"arguments":`...)
			if len(bl.Data) > 0 {
				if err := checkRaw(bl.Data); err != nil {
					return err
				}
			}
			e.buf = jsonx.AppendString(e.buf, dataToArguments(bl.Data))
			e.buf = append(e.buf, '}')
			var err error
			if e.buf, err = appendExtra(e.buf, bl.Extra, "id", "type", "function"); err != nil {
				return err
			}
			e.buf = append(e.buf, '}')
		}
		e.buf = append(e.buf, ']')
	}
	var err error
	if e.buf, err = appendExtra(e.buf, m.Extra, "role", "name", "content", "reasoning_content", "tool_calls"); err != nil {
		return err
	}
	e.buf = append(e.buf, '}')
	return nil
}

// midSystem writes a system message that stands inside the conversation
// (developer when its blocks came from one): its text, as a string when it
// is one plain block.
func (e *reqEncoder) midSystem(m *wire.Message, first *bool) error {
	e.open(first)
	role := "system"
	if len(m.Content) > 0 && m.Content[0].Name == RoleDeveloper {
		role = RoleDeveloper
	}
	e.buf = append(e.buf, `{"role":"`...)
	e.buf = append(e.buf, role...)
	e.buf = append(e.buf, `","content":`...)
	if len(m.Content) == 1 && m.Content[0].Type == wire.BlockText && m.Content[0].CacheControl == nil && m.Content[0].Extra == nil {
		e.buf = jsonx.AppendString(e.buf, m.Content[0].Text)
	} else {
		e.buf = append(e.buf, '[')
		n := 0
		for i := range m.Content {
			var err error
			if n, err = e.part(&m.Content[i], n); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	}
	var err error
	if e.buf, err = appendExtra(e.buf, m.Extra, "role", "content"); err != nil {
		return err
	}
	e.buf = append(e.buf, '}')
	return nil
}

func (e *reqEncoder) toolResultContent(bl *wire.Block) error {
	if len(bl.Data) == 0 {
		e.buf = jsonx.AppendString(e.buf, bl.Text)
		return nil
	}
	if err := checkRaw(bl.Data); err != nil {
		return err
	}
	data := jsonx.TrimWS(bl.Data)
	switch {
	case jsonx.KindOf(data) != jsonx.Array:
		// structured content that is not a list of parts: send it as text
		s := bl.Text
		if s != "" {
			s += "\n"
		}
		e.buf = jsonx.AppendString(e.buf, s+string(data))
	case bl.Text == "":
		e.buf = append(e.buf, data...)
	default:
		e.buf = append(e.buf, `[{"type":"text","text":`...)
		e.buf = jsonx.AppendString(e.buf, bl.Text)
		e.buf = append(e.buf, '}')
		if inner := jsonx.TrimWS(data[1 : len(data)-1]); len(inner) > 0 {
			e.buf = append(e.buf, ',')
			e.buf = append(e.buf, inner...)
		}
		e.buf = append(e.buf, ']')
	}
	return nil
}

// part appends one content part (n parts were written before it) and returns
// the new count; blocks OpenAI cannot carry are skipped.
func (e *reqEncoder) part(bl *wire.Block, n int) (int, error) {
	if bl.CacheControl != nil {
		if err := checkRaw(bl.CacheControl); err != nil {
			return n, err
		}
	}
	sep := func() {
		if n > 0 {
			e.buf = append(e.buf, ',')
		}
		n++
	}
	switch bl.Type {
	case wire.BlockText:
		sep()
		e.buf = append(e.buf, `{"type":"text","text":`...)
		e.buf = jsonx.AppendString(e.buf, bl.Text)
		e.cache(bl)
		var err error
		if e.buf, err = appendExtra(e.buf, bl.Extra, "type", "text", "cache_control"); err != nil {
			return n, err
		}
		e.buf = append(e.buf, '}')
	case wire.BlockImage:
		if err := checkRaw(bl.Data); err != nil {
			return n, err
		}
		src := readSource(bl.Data)
		url := src.url
		if src.typ == "base64" {
			url = "data:" + src.mediaType + ";base64," + src.data
		} else if src.typ != "url" || url == "" {
			return n, nil // file ids and the like have no OpenAI form
		}
		sep()
		e.buf = append(e.buf, `{"type":"image_url","image_url":{"url":`...)
		e.buf = jsonx.AppendString(e.buf, url)
		if src.detail != "" {
			e.buf = append(e.buf, `,"detail":`...)
			e.buf = jsonx.AppendString(e.buf, src.detail)
		}
		e.buf = append(e.buf, '}')
		e.cache(bl)
		var err error
		if e.buf, err = appendExtra(e.buf, bl.Extra, "type", "image_url", "cache_control"); err != nil {
			return n, err
		}
		e.buf = append(e.buf, '}')
	case wire.BlockDocument:
		if err := checkRaw(bl.Data); err != nil {
			return n, err
		}
		doc := readDocument(bl.Data)
		switch doc.src.typ {
		case "base64":
			sep()
			e.buf = append(e.buf, `{"type":"file","file":{"filename":`...)
			name := doc.title
			if name == "" {
				name = "document.pdf"
			}
			e.buf = jsonx.AppendString(e.buf, name)
			e.buf = append(e.buf, `,"file_data":`...)
			e.buf = jsonx.AppendString(e.buf, "data:"+doc.src.mediaType+";base64,"+doc.src.data)
			e.buf = append(e.buf, '}', '}')
		case "text":
			sep()
			e.buf = append(e.buf, `{"type":"text","text":`...)
			e.buf = jsonx.AppendString(e.buf, doc.src.data)
			e.buf = append(e.buf, '}')
		}
	case wire.BlockOther:
		if err := checkRaw(bl.Data); err != nil {
			return n, err
		}
		sep()
		e.buf = append(e.buf, jsonx.TrimWS(bl.Data)...)
	}
	return n, nil
}

func (e *reqEncoder) cache(bl *wire.Block) {
	if bl.CacheControl != nil {
		e.buf = append(e.buf, `,"cache_control":`...)
		e.buf = append(e.buf, jsonx.TrimWS(bl.CacheControl)...)
	}
}

// source is a canonical image or document source.
type source struct {
	typ, mediaType, data, url, detail string
}

func readSource(raw []byte) source {
	var s source
	if jsonx.KindOf(raw) != jsonx.Object {
		return s
	}
	_ = jsonx.ObjectEach(raw, func(key, val []byte) error {
		switch string(key) {
		case "type":
			s.typ, _ = jsonx.Unquote(val)
		case "media_type":
			s.mediaType, _ = jsonx.Unquote(val)
		case "data":
			s.data, _ = jsonx.Unquote(val)
		case "url":
			s.url, _ = jsonx.Unquote(val)
		case "detail":
			s.detail, _ = jsonx.Unquote(val)
		}
		return nil
	})
	return s
}

type document struct {
	title string
	src   source
}

func readDocument(raw []byte) document {
	var d document
	if jsonx.KindOf(raw) != jsonx.Object {
		return d
	}
	_ = jsonx.ObjectEach(raw, func(key, val []byte) error {
		switch string(key) {
		case "title":
			d.title, _ = jsonx.Unquote(val)
		case "source":
			d.src = readSource(val)
		}
		return nil
	})
	return d
}
