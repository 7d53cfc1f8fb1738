package gateway

// The OpenAI Responses API front: POST /v1/responses as a third caller
// dialect (wire.DialectResponses, codec host/dialect/responses), and the
// stored responses behind store and previous_response_id:
// GET/DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items.
//
// A request is decoded and handed to the engine like the other dialects'.
// The gateway itself serves two members: previous_response_id (the stored
// chain's input and output items are spliced in front of the request's
// input, so every upstream sees the whole conversation) and store (the
// answer is kept, per tenant, for ResponsesTTL). previous_response_id is
// removed from the body the engine gets; a body without it is forwarded as
// the caller sent it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/dialect/responses"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// DefaultResponsesTTL is how long a stored response is kept when
// Gateway.ResponsesTTL is zero: OpenAI's 30 days.
const DefaultResponsesTTL = 30 * 24 * time.Hour

// maxChain bounds how many stored responses one previous_response_id
// walks back through.
const maxChain = 1000

func (g *Gateway) responsesTTL() time.Duration {
	if g.ResponsesTTL > 0 {
		return g.ResponsesTTL
	}
	return DefaultResponsesTTL
}

func remoteIP(ctx *fasthttp.RequestCtx) netip.Addr {
	if a, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		return a.Unmap()
	}
	return netip.Addr{}
}

// responsesMembers are the top-level members of a request the front reads.
type responsesMembers struct {
	previous string
	store    bool // default true, as OpenAI's
	input    []byte
}

func readResponsesMembers(body []byte) responsesMembers {
	m := responsesMembers{store: true}
	jsonscan.EachMember(body, func(k, v []byte) {
		switch string(k) {
		case "previous_response_id":
			_ = json.Unmarshal(v, &m.previous)
		case "store":
			if string(v) == "false" {
				m.store = false
			}
		case "input":
			m.input = v
		}
	})
	return m
}

// inputItems is a request's input as a JSON array of items: an array as
// sent, a string as one user message.
func inputItems(input []byte) []byte {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || string(input) == "null" {
		return []byte("[]")
	}
	if input[0] == '[' {
		return input
	}
	b := []byte(`[{"type":"message","role":"user","content":[{"type":"input_text","text":`)
	b = append(b, input...)
	return append(b, "}]}]"...)
}

// arrayElems returns the elements of a JSON array without its brackets
// (empty for an empty array).
func arrayElems(arr []byte) []byte {
	arr = bytes.TrimSpace(arr)
	if len(arr) < 2 {
		return nil
	}
	return bytes.TrimSpace(arr[1 : len(arr)-1])
}

// chainItems is the conversation a previous_response_id continues: every
// stored turn's input items and output items, oldest first.
func (g *Gateway) chainItems(ctx context.Context, tenant, id string) ([]byte, *wire.Error) {
	if g.Responses == nil {
		return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "previous_response_id is not available: this gateway stores no responses"}
	}
	var turns [][]byte
	for n := 0; id != ""; n++ {
		if n == maxChain {
			return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
				Message: "previous_response_id: the conversation is longer than " + strconv.Itoa(maxChain) + " responses"}
		}
		r, err := g.Responses.GetResponse(ctx, tenant, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
				Message: "Previous response with id '" + id + "' not found."}
		}
		if err != nil {
			g.Log.Error("reading a stored response", "id", id, "err", err)
			return nil, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true,
				Message: "the stored responses cannot be read right now; retry later"}
		}
		var out struct {
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(r.Response, &out)
		var turn []byte
		for _, part := range [][]byte{arrayElems(r.Input), arrayElems(outputAsInput(out.Output))} {
			if len(part) == 0 {
				continue
			}
			if len(turn) > 0 {
				turn = append(turn, ',')
			}
			turn = append(turn, part...)
		}
		turns = append(turns, turn)
		id = r.Previous
	}
	var b []byte
	for i := len(turns) - 1; i >= 0; i-- {
		if len(turns[i]) == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, turns[i]...)
	}
	return b, nil
}

// outputAsInput returns a response's output items as input items: they are
// the same shapes, but a message's "status" and an output_text's
// annotations are output-only, which the codec ignores; items the
// canonical model cannot hold (a built-in tool's call) are left out.
func outputAsInput(output []byte) []byte {
	var items []json.RawMessage
	if json.Unmarshal(output, &items) != nil {
		return nil
	}
	b := []byte{'['}
	n := 0
	for _, it := range items {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(it, &head)
		switch head.Type {
		case "message", "function_call", "reasoning":
		default:
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, it...)
	}
	return append(b, ']')
}

// spliceBody is body without previous_response_id (the gateway's id,
// unknown upstream) and with its input replaced by the chain followed by
// the request's own items. store stays as sent: a Responses upstream told
// store:false must not keep the conversation either.
func spliceBody(body, chain []byte, m *responsesMembers) []byte {
	out := make([]byte, 0, len(body)+len(chain)+64)
	out = append(out, '{')
	n := 0
	jsonscan.EachMember(body, func(k, v []byte) {
		switch string(k) {
		case "previous_response_id", "input":
			return
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		out = append(out, v...)
	})
	if n > 0 {
		out = append(out, ',')
	}
	out = append(out, `"input":[`...)
	out = append(out, chain...)
	if own := arrayElems(inputItems(m.input)); len(own) > 0 {
		if len(chain) > 0 {
			out = append(out, ',')
		}
		out = append(out, own...)
	}
	return append(out, ']', '}')
}

// responsesPost serves POST /v1/responses.
func (g *Gateway) responsesPost(ctx *fasthttp.RequestCtx, method string) {
	const d = wire.DialectResponses
	rid := newRequestID()
	began := time.Now()
	ctx.Response.Header.Set(HeaderRequestID, rid)
	if method != fasthttp.MethodPost {
		ctx.Response.Header.Set("Allow", "POST")
		e := &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest,
			Message: "method " + method + " is not allowed on " + string(ctx.Path()) + "; use POST"}
		WriteError(ctx, d, e)
		g.refused(rid, d, e, began)
		return
	}
	body := ctx.PostBody()
	m := readResponsesMembers(body)
	keep := m.store && g.Responses != nil
	tenant := ""
	if m.previous != "" {
		// The stored responses are the tenant's: the caller is identified
		// before they are read (the engine admits the completion itself).
		// An answer to store needs no such step: the engine's admission
		// names its tenant, so a caller paying per request (x402, which
		// only a completion's admission accepts) is stored under its
		// wallet.
		caller, werr := g.admit(context.Background(), &Admission{Dialect: d, Path: string(ctx.Path()),
			Header: &ctx.Request.Header, RemoteIP: remoteIP(ctx)})
		if werr != nil {
			WriteError(ctx, d, werr)
			g.refused(rid, d, werr, began)
			return
		}
		tenant = caller.Tenant
	}
	sent := body
	if m.previous != "" {
		// The splice reads members leniently: a body that is not JSON
		// must not become one by losing its tail.
		if !json.Valid(body) {
			e := &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "invalid request: the body is not valid JSON"}
			WriteError(ctx, d, e)
			g.refused(rid, d, e, began)
			return
		}
		chain, werr := g.chainItems(context.Background(), tenant, m.previous)
		if werr != nil {
			WriteError(ctx, d, werr)
			g.refused(rid, d, werr, began)
			return
		}
		sent = spliceBody(body, chain, &m)
	}
	req, err := responses.DecodeRequest(sent)
	if err != nil {
		e := &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()}
		WriteError(ctx, d, e)
		g.refused(rid, d, e, began)
		return
	}
	o := g.Serve(&Call{RequestID: rid, Dialect: d, Req: req, Body: sent, Header: &ctx.Request.Header,
		Path: string(ctx.Path()), RemoteIP: remoteIP(ctx), began: began})
	if keep && o.Err == nil {
		s := &storing{g: g, tenant: o.tenant, previous: m.previous, model: req.Model, input: inputItems(m.input)}
		switch {
		case o.Stream != nil:
			inner := o.Stream
			o.Stream = func(w *bufio.Writer) {
				sw := &storeWriter{w: w, s: s}
				bw := bufio.NewWriterSize(sw, 4096)
				inner(bw)
				bw.Flush()
			}
		default:
			o.Body = s.body(o.Body)
		}
	} else if m.previous != "" && o.Err == nil && o.Stream == nil {
		o.Body = echoPrevious(o.Body, m.previous)
	}
	writeOutcome(ctx, d, o)
}

// echoPrevious sets the response object's previous_response_id.
func echoPrevious(body []byte, previous string) []byte {
	add, _ := json.Marshal(map[string]string{"previous_response_id": previous})
	if b, err := mergeMembers(body, add, false); err == nil {
		return b
	}
	return body
}

// storing keeps one answer.
type storing struct {
	g        *Gateway
	tenant   string
	previous string
	model    string
	input    []byte
}

// body stores a JSON answer and returns it as the caller gets it.
func (s *storing) body(b []byte) []byte {
	if s.previous != "" {
		b = echoPrevious(b, s.previous)
	}
	s.put(b)
	return b
}

// put stores a response object; a failure is logged, never the caller's.
func (s *storing) put(resp []byte) {
	var head struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	}
	if json.Unmarshal(resp, &head) != nil || head.ID == "" {
		return
	}
	now := time.Now()
	r := &store.StoredResponse{ID: head.ID, Tenant: s.tenant, Previous: s.previous, Model: cmpOr(head.Model, s.model),
		Input: s.input, Response: bytes.Clone(resp), Created: now, Expires: now.Add(s.g.responsesTTL())}
	if err := s.g.Responses.PutResponse(context.Background(), r); err != nil {
		s.g.Log.Error("storing a response", "id", head.ID, "err", err)
	}
}

// storeWriter passes a Responses stream through and stores the response
// of its terminal event (response.completed or response.incomplete) before
// the caller can read that event, so a follow-up request naming it finds
// it.
type storeWriter struct {
	w       *bufio.Writer
	s       *storing
	pending []byte // the start of an event not yet complete
	stored  bool
}

func (sw *storeWriter) Write(p []byte) (int, error) {
	if !sw.stored {
		sw.scan(p)
	}
	if _, err := sw.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), sw.w.Flush()
}

// scan looks for the terminal event in complete events.
func (sw *storeWriter) scan(p []byte) {
	buf := p
	if len(sw.pending) > 0 {
		sw.pending = append(sw.pending, p...)
		buf = sw.pending
	}
	for {
		i := bytes.Index(buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		ev := buf[:i]
		buf = buf[i+2:]
		if !bytes.HasPrefix(ev, []byte("event: response.completed\n")) && !bytes.HasPrefix(ev, []byte("event: response.incomplete\n")) {
			continue
		}
		_, data, _ := bytes.Cut(ev, []byte("\ndata: "))
		jsonscan.EachMember(data, func(k, v []byte) {
			if string(k) == "response" {
				sw.s.put(sw.s.withPrevious(v))
			}
		})
		sw.stored = true
		sw.pending = nil
		return
	}
	sw.pending = append(sw.pending[:0], buf...)
}

func (s *storing) withPrevious(resp []byte) []byte {
	if s.previous == "" {
		return resp
	}
	return echoPrevious(resp, s.previous)
}

// responseByID serves GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items.
func (g *Gateway) responseByID(ctx *fasthttp.RequestCtx, method, path string) {
	const d = wire.DialectResponses
	rid := newRequestID()
	ctx.Response.Header.Set(HeaderRequestID, rid)
	id, sub, _ := strings.Cut(strings.TrimPrefix(path, "/v1/responses/"), "/")
	switch {
	case sub == "" && (method == fasthttp.MethodGet || method == fasthttp.MethodDelete):
	case sub == "input_items" && method == fasthttp.MethodGet:
	case sub == "" || sub == "input_items":
		allow := "GET, DELETE"
		if sub != "" {
			allow = "GET"
		}
		ctx.Response.Header.Set("Allow", allow)
		WriteError(ctx, d, &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest,
			Message: "method " + method + " is not allowed on " + path})
		return
	default:
		WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: "no route for " + method + " " + path})
		return
	}
	caller, werr := g.admit(context.Background(), &Admission{Dialect: d, Path: "/v1/responses",
		Header: &ctx.Request.Header, RemoteIP: remoteIP(ctx)})
	if werr != nil {
		WriteError(ctx, d, werr)
		return
	}
	notFound := &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: "Response with id '" + id + "' not found."}
	if g.Responses == nil {
		WriteError(ctx, d, notFound)
		return
	}
	bg := context.Background()
	if method == fasthttp.MethodDelete {
		err := g.Responses.DeleteResponse(bg, caller.Tenant, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			WriteError(ctx, d, notFound)
		case err != nil:
			g.Log.Error("deleting a stored response", "id", id, "err", err)
			WriteError(ctx, d, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Message: "the stored responses cannot be changed right now; retry later"})
		default:
			b, _ := json.Marshal(map[string]any{"id": id, "object": "response", "deleted": true})
			ctx.SetContentType("application/json")
			ctx.SetBody(b)
		}
		return
	}
	r, err := g.Responses.GetResponse(bg, caller.Tenant, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		WriteError(ctx, d, notFound)
		return
	case err != nil:
		g.Log.Error("reading a stored response", "id", id, "err", err)
		WriteError(ctx, d, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Message: "the stored responses cannot be read right now; retry later"})
		return
	}
	ctx.SetContentType("application/json")
	if sub == "" {
		ctx.SetBody(r.Response)
		return
	}
	ctx.SetBody(inputItemsList(r.ID, r.Input, string(ctx.QueryArgs().Peek("order")) == "asc"))
}

// inputItemsList is the list object of GET …/input_items: newest first
// unless asc (OpenAI's default order is desc). An item sent without an id
// is listed with a stable one made of the response's and its position.
func inputItemsList(respID string, input []byte, asc bool) []byte {
	var items []json.RawMessage
	_ = json.Unmarshal(input, &items)
	ids := make([]string, len(items))
	for i, it := range items {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &head)
		if head.ID == "" {
			head.ID = "item_" + strings.TrimPrefix(respID, "resp_") + "_" + strconv.Itoa(i)
			add, _ := json.Marshal(map[string]string{"id": head.ID})
			if b, err := mergeMembers(it, add, false); err == nil {
				items[i] = b
			}
		}
		ids[i] = head.ID
	}
	if !asc {
		slices.Reverse(items)
		slices.Reverse(ids)
	}
	list := map[string]any{"object": "list", "data": items, "has_more": false, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		list["first_id"], list["last_id"] = ids[0], ids[len(ids)-1]
	}
	if items == nil {
		list["data"] = []json.RawMessage{}
	}
	b, _ := json.Marshal(list)
	return b
}

// carryExtra returns the caller's top-level members that have an
// equivalent in the upstream's dialect, under that dialect's names, and
// the caller's members it took care of (carried, or served by the gateway
// and meaningless upstream), which are not reported as dropped. Only the
// two OpenAI dialects have such members in common.
func carryExtra(from, to wire.Dialect, extra []byte) (carried []byte, honoured []string) {
	if len(extra) == 0 {
		return nil, nil
	}
	members := map[string]json.RawMessage{}
	if json.Unmarshal(extra, &members) != nil {
		return nil, nil
	}
	out := map[string]json.RawMessage{}
	keep := func(name string) {
		if v, ok := members[name]; ok {
			out[name] = v
			honoured = append(honoured, name)
		}
	}
	served := func(names ...string) {
		for _, n := range names {
			if _, ok := members[n]; ok {
				honoured = append(honoured, n)
			}
		}
	}
	switch {
	case from == wire.DialectResponses && to == wire.DialectOpenAI:
		for _, n := range []string{"parallel_tool_calls", "prompt_cache_key", "safety_identifier", "service_tier", "user"} {
			keep(n)
		}
		// The caller's metadata, include, truncation and client_metadata
		// (Codex's telemetry ids) shape what the gateway keeps and
		// answers, not the generation.
		served("metadata", "include", "truncation", "store", "client_metadata")
		if v, ok := members["text"]; ok {
			var text struct {
				Format    json.RawMessage `json:"format"`
				Verbosity json.RawMessage `json:"verbosity"`
			}
			if json.Unmarshal(v, &text) == nil {
				if rf := textFormatToChat(text.Format); rf != nil {
					out["response_format"] = rf
				}
				if len(text.Verbosity) > 0 && string(text.Verbosity) != "null" {
					out["verbosity"] = text.Verbosity
				}
				honoured = append(honoured, "text")
			}
		}
		if v, ok := members["reasoning"]; ok {
			var r struct {
				Effort json.RawMessage `json:"effort"`
			}
			if json.Unmarshal(v, &r) == nil {
				if len(r.Effort) > 0 && string(r.Effort) != "null" {
					out["reasoning_effort"] = r.Effort
				}
				honoured = append(honoured, "reasoning")
			}
		}
	case from == wire.DialectOpenAI && to == wire.DialectResponses:
		for _, n := range []string{"parallel_tool_calls", "prompt_cache_key", "safety_identifier", "service_tier", "user", "metadata", "store"} {
			keep(n)
		}
		text := map[string]json.RawMessage{}
		if v, ok := members["response_format"]; ok {
			if f := chatFormatToText(v); f != nil {
				text["format"] = f
				honoured = append(honoured, "response_format")
			}
		}
		if v, ok := members["verbosity"]; ok {
			text["verbosity"] = v
			honoured = append(honoured, "verbosity")
		}
		if len(text) > 0 {
			out["text"], _ = json.Marshal(text)
		}
		if v, ok := members["reasoning_effort"]; ok {
			out["reasoning"], _ = json.Marshal(map[string]json.RawMessage{"effort": v})
			honoured = append(honoured, "reasoning_effort")
		}
	case from == wire.DialectResponses:
		// Anthropic: the structured output is translated (translate.go);
		// these are the gateway's own.
		served("metadata", "include", "truncation", "store", "client_metadata")
		return nil, honoured
	default:
		return nil, nil
	}
	if len(out) == 0 {
		return nil, honoured
	}
	carried, _ = json.Marshal(out)
	return carried, honoured
}

// responsesFormat is the Responses API's text.format: Chat's
// response_format with json_schema's members flattened into it.
type responsesFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      json.RawMessage `json:"strict,omitempty"`
	Description string          `json:"description,omitempty"`
}

// textFormatToChat turns a text.format into a response_format (nil for
// plain text or nothing).
func textFormatToChat(f json.RawMessage) json.RawMessage {
	var tf responsesFormat
	if len(f) == 0 || json.Unmarshal(f, &tf) != nil {
		return nil
	}
	switch tf.Type {
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		js := map[string]any{"name": cmpOr(tf.Name, structuredToolDefault)}
		if len(tf.Schema) > 0 {
			js["schema"] = tf.Schema
		}
		if len(tf.Strict) > 0 {
			js["strict"] = tf.Strict
		}
		if tf.Description != "" {
			js["description"] = tf.Description
		}
		b, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
		return b
	}
	return nil
}

// chatFormatToText is the inverse of textFormatToChat.
func chatFormatToText(rf json.RawMessage) json.RawMessage {
	var c struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Schema      json.RawMessage `json:"schema"`
			Strict      json.RawMessage `json:"strict"`
			Description string          `json:"description"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(rf, &c) != nil {
		return nil
	}
	tf := responsesFormat{Type: c.Type}
	if js := c.JSONSchema; js != nil {
		tf.Name, tf.Schema, tf.Strict, tf.Description = js.Name, js.Schema, js.Strict, js.Description
	}
	b, _ := json.Marshal(tf)
	return b
}

// textFormat reads a Responses caller's text.format as the Chat
// response_format the structured-output translation understands; nil for
// none or plain text.
func textFormat(extra []byte) *chatResponseFormat {
	var top struct {
		Text *struct {
			Format json.RawMessage `json:"format"`
		} `json:"text"`
	}
	if json.Unmarshal(extra, &top) != nil || top.Text == nil {
		return nil
	}
	rf := textFormatToChat(top.Text.Format)
	if rf == nil {
		return nil
	}
	var out chatResponseFormat
	if json.Unmarshal(rf, &out) != nil {
		return nil
	}
	return &out
}

// sharedToolMembers names the tool members the caller's dialect and the
// upstream's define alike: function "strict" in Chat and Responses.
func sharedToolMembers(from, to wire.Dialect) []string {
	openaiFamily := func(d wire.Dialect) bool { return d == wire.DialectOpenAI || d == wire.DialectResponses }
	if from != to && openaiFamily(from) && openaiFamily(to) {
		return []string{"strict"}
	}
	return nil
}

// splitMembers splits a raw JSON object into the members named in keep
// and the others (each nil when empty).
func splitMembers(obj []byte, keep []string) (kept, gone []byte) {
	if len(keep) == 0 {
		return nil, obj
	}
	jsonscan.EachMember(obj, func(k, v []byte) {
		dst := &gone
		for _, n := range keep {
			if string(k) == n {
				dst = &kept
			}
		}
		if *dst == nil {
			*dst = append(*dst, '{')
		} else {
			*dst = append(*dst, ',')
		}
		*dst = append(*dst, '"')
		*dst = append(*dst, k...)
		*dst = append(*dst, '"', ':')
		*dst = append(*dst, v...)
	})
	if kept != nil {
		kept = append(kept, '}')
	}
	if gone != nil {
		gone = append(gone, '}')
	}
	return kept, gone
}

// hasSignedThinking reports whether req holds thinking a Chat upstream
// cannot take: signed or redacted.
func hasSignedThinking(req *wire.Request) bool {
	for i := range req.Messages {
		for _, b := range req.Messages[i].Content {
			if (b.Type == wire.BlockThinking && b.Signature != "") || b.Type == wire.BlockRedactedThinking {
				return true
			}
		}
	}
	return false
}
