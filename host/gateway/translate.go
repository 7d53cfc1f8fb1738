package gateway

// Cross-dialect fixes the native codecs cannot make on their own, because
// they need the caller's dialect, the upstream's, and the Exchange:
//
//   - Structured outputs. Anthropic has no response_format. When an OpenAI
//     caller's response_format ({"type":"json_schema",…} or
//     {"type":"json_object"}) goes to an Anthropic upstream, the request gets
//     one more tool, named after json_schema.name (else "json_response"),
//     whose input_schema is the schema ({"type":"object"} for json_object),
//     and tool_choice forces it. The upstream's tool_use of that tool is
//     turned back into a text block holding the JSON input (stop reason
//     end_turn), in complete responses and in streams (input_json_delta
//     become text deltas). A caller that forces a tool of its own cannot have
//     both: its request goes as is and X-Bardo-Degraded says
//     "structured-output-unsupported".
//   - Sampling ranges. Anthropic's temperature is 0..1 (OpenAI's 0..2),
//     top_p is 0..1 for both, top_k must not be negative. A value out of the
//     upstream's range is clamped, with a degraded note such as
//     "temperature-clamped:1.6>1".
//
//   - Unknown members below the top level (wire Extra of messages, blocks
//     and tools: Claude Code's tool "defer_loading", text "citations",
//     OpenAI's function "strict", …) are the caller's dialect's: they are
//     dropped, named in the "dropped-fields:" note ("tools[].defer_loading"),
//     and so are Anthropic server tools ("tools[web_search]") for an OpenAI
//     upstream and tool_choice members beyond type and name
//     ("tool_choice.disable_parallel_tool_use").
//   - Mid-conversation system messages. OpenAI upstreams take them in place
//     (system messages). For an Anthropic upstream those of an OpenAI
//     caller are moved into the top-level system prompt, as before they
//     were modelled (only some Anthropic models accept them in place), with
//     the note "system-moved"; an Anthropic caller's go as it sent them.
//
// All apply only when the gateway encodes a request for an upstream of
// another dialect; a pristine passthrough is never touched.

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/responses"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// structuredToolDefault names the structured-output tool when json_schema
// has no name (or for json_object).
const structuredToolDefault = "json_response"

// translateRequest returns req fitted for an upstream of dialect up (req
// itself when nothing changes, else a copy: x.Req must stay the caller's, a
// failover may encode it for another provider). It sets x.StructuredTool
// and appends degraded notes. honoured lists the caller's Extra fields the
// translation took care of (not to be reported as dropped).
func translateRequest(x *pipeline.Exchange, req *wire.Request, up wire.Dialect) (out *wire.Request, honoured, dropped []string) {
	out = req
	if cp, names := withoutNestedExtras(req, x.Meta.Dialect, up); cp != nil {
		out, dropped = cp, names
	}
	if x.Meta.Dialect == wire.DialectResponses && up == wire.DialectOpenAI && hasSignedThinking(out) {
		// Chat Completions has no form for signed or redacted reasoning
		// (the codec leaves it out): say so.
		addDegraded(x, "reasoning-dropped")
	}
	if x.Meta.Dialect != wire.DialectAnthropic && up == wire.DialectAnthropic && hasSystemMessages(out) {
		if out == req {
			cp := *req
			out = &cp
		}
		hoistSystem(out)
		addDegraded(x, "system-moved")
	}
	if (x.Meta.Dialect == wire.DialectOpenAI || x.Meta.Dialect == wire.DialectResponses) && up == wire.DialectAnthropic {
		if name, schema, ok := responseFormat(req.Extra); ok {
			if forcesTool(req) {
				addDegraded(x, "structured-output-unsupported")
			} else {
				cp := *out
				cp.Tools = append(append([]wire.Tool(nil), out.Tools...), wire.Tool{
					Name:        name,
					Description: "Respond with a JSON object matching this schema. Call this tool exactly once, with the whole answer as its input.",
					Schema:      schema,
				})
				tc, _ := json.Marshal(map[string]string{"type": "tool", "name": name})
				cp.ToolChoice = tc
				out = &cp
				x.StructuredTool = name
				honoured = append(honoured, "response_format", "text")
			}
		}
	}
	if p, notes := clampParams(out.Params, up); len(notes) > 0 {
		if out == req {
			cp := *req
			out = &cp
		}
		out.Params = p
		for _, n := range notes {
			addDegraded(x, n)
		}
	}
	return out, honoured, dropped
}

// withoutNestedExtras returns a copy of req without the Extra of its system
// blocks, messages, their blocks and its tools, and without Anthropic server
// tools when up is not Anthropic, naming what it dropped; nil when there is
// nothing to drop. req is left as it is: a failover may encode it for an
// upstream of the caller's own dialect.
//
// The tool members both dialects define alike (a function's "strict" in
// the two OpenAI dialects) are kept; a Responses caller's hosted tools
// (web_search, …) are dropped and named, like Anthropic server tools.
func withoutNestedExtras(req *wire.Request, from, up wire.Dialect) (*wire.Request, []string) {
	shared := sharedToolMembers(from, up)
	seen := map[string]bool{}
	var names []string
	note := func(where string, extra []byte) {
		jsonscan.EachMember(extra, func(k, _ []byte) {
			n := where + "." + string(k)
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		})
	}
	blocks := func(where string, bs []wire.Block) []wire.Block {
		var out []wire.Block
		for i := range bs {
			if bs[i].Extra == nil {
				continue
			}
			if out == nil {
				out = append([]wire.Block(nil), bs...)
			}
			note(where, bs[i].Extra)
			out[i].Extra = nil
		}
		if out == nil {
			return bs
		}
		return out
	}
	cp := *req
	cp.System = blocks("system[]", req.System)
	var msgs []wire.Message
	for i := range req.Messages {
		m := req.Messages[i]
		content := blocks("messages[].content[]", m.Content)
		if m.Extra == nil && (len(m.Content) == 0 || &content[0] == &m.Content[0]) {
			continue // nothing dropped here
		}
		if msgs == nil {
			msgs = append([]wire.Message(nil), req.Messages...)
		}
		note("messages[]", m.Extra)
		m.Extra, m.Content = nil, content
		msgs[i] = m
	}
	if msgs != nil {
		cp.Messages = msgs
	}
	var tools []wire.Tool
	changed := false
	for i := range req.Tools {
		t := req.Tools[i]
		if t.Extra != nil {
			changed = true
			if (up != wire.DialectAnthropic && anthropic.ServerTool(&t)) || (from == wire.DialectResponses && responses.HostedTool(&t)) {
				n := "tools[" + cmpOr(t.Name, "server") + "]"
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
				continue
			}
			kept, gone := splitMembers(t.Extra, shared)
			note("tools[]", gone)
			t.Extra = kept
		}
		tools = append(tools, t)
	}
	if changed {
		cp.Tools = tools
	}
	// tool_choice members beyond the canonical type and name (Anthropic's
	// disable_parallel_tool_use) have no place in the other dialect's form.
	if len(req.ToolChoice) > 0 {
		var tc map[string]json.RawMessage
		if json.Unmarshal(req.ToolChoice, &tc) == nil {
			kept := map[string]json.RawMessage{}
			for k, v := range tc {
				if k == "type" || k == "name" {
					kept[k] = v
				} else if n := "tool_choice." + k; !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
			if len(kept) < len(tc) {
				cp.ToolChoice, _ = json.Marshal(kept)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names)
	return &cp, names
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hasSystemMessages reports whether req has system messages inside the
// conversation.
func hasSystemMessages(req *wire.Request) bool {
	for i := range req.Messages {
		if req.Messages[i].Role == "system" {
			return true
		}
	}
	return false
}

// hoistSystem moves the conversation's system messages, in order, to the end
// of the top-level system prompt (req is a copy whose slices it replaces).
func hoistSystem(req *wire.Request) {
	sys := append([]wire.Block(nil), req.System...)
	msgs := make([]wire.Message, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == "system" {
			sys = append(sys, m.Content...)
			continue
		}
		msgs = append(msgs, m)
	}
	req.System, req.Messages = sys, msgs
}

// responseFormat reads an OpenAI response_format from the caller's extra
// fields: the tool name and input schema that stand for it.
func responseFormat(extra []byte) (name string, schema []byte, ok bool) {
	if len(extra) == 0 {
		return "", nil, false
	}
	var top struct {
		ResponseFormat *chatResponseFormat `json:"response_format"`
	}
	if json.Unmarshal(extra, &top) != nil {
		return "", nil, false
	}
	rf := top.ResponseFormat
	if rf == nil {
		// The Responses API's text.format: the same, flattened.
		if rf = textFormat(extra); rf == nil {
			return "", nil, false
		}
	}
	switch rf.Type {
	case "json_object":
		return structuredToolDefault, []byte(`{"type":"object"}`), true
	case "json_schema":
		name, schema = structuredToolDefault, []byte(`{"type":"object"}`)
		if js := rf.JSONSchema; js != nil {
			if js.Name != "" {
				name = js.Name
			}
			if len(js.Schema) > 0 && js.Schema[0] == '{' {
				schema = js.Schema
			}
		}
		return name, schema, true
	}
	return "", nil, false
}

// chatResponseFormat is the part of Chat Completions' response_format the
// structured-output translation reads.
type chatResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// forcesTool reports whether the caller offered tools of its own and forced
// their use (canonical tool_choice "any" or "tool").
func forcesTool(req *wire.Request) bool {
	if len(req.Tools) == 0 || len(req.ToolChoice) == 0 {
		return false
	}
	var tc struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(req.ToolChoice, &tc) != nil {
		return false
	}
	return tc.Type == "any" || tc.Type == "tool"
}

// clampParams fits sampling parameters into the ranges of dialect up.
func clampParams(p wire.Params, up wire.Dialect) (wire.Params, []string) {
	var notes []string
	clamp := func(name string, v *float64, lo, hi float64) {
		c := min(max(*v, lo), hi)
		if c != *v {
			notes = append(notes, name+"-clamped:"+fmtFloat(*v)+">"+fmtFloat(c))
			*v = c
		}
	}
	maxTemp := 2.0
	if up == wire.DialectAnthropic {
		maxTemp = 1
	}
	if p.Set&wire.HasTemperature != 0 {
		clamp("temperature", &p.Temperature, 0, maxTemp)
	}
	if p.Set&wire.HasTopP != 0 {
		clamp("top_p", &p.TopP, 0, 1)
	}
	if p.Set&wire.HasTopK != 0 && p.TopK < 0 {
		notes = append(notes, "top_k-clamped:"+strconv.FormatInt(p.TopK, 10)+">0")
		p.TopK = 0
	}
	return p, notes
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// addDegraded appends a note once (an attempt may be repeated).
func addDegraded(x *pipeline.Exchange, note string) {
	for _, d := range x.Degraded {
		if d == note {
			return
		}
	}
	x.Degraded = append(x.Degraded, note)
}

// unwrapStructured turns the structured-output tool's tool_use back into the
// text answer the caller asked for.
func unwrapStructured(x *pipeline.Exchange, resp *wire.Response) {
	if x.StructuredTool == "" || resp == nil {
		return
	}
	found, others := false, false
	for i := range resp.Content {
		b := &resp.Content[i]
		if b.Type != wire.BlockToolUse {
			continue
		}
		if b.Name != x.StructuredTool {
			others = true
			continue
		}
		*b = wire.Block{Type: wire.BlockText, Text: string(b.Data)}
		found = true
	}
	if found && !others && resp.StopReason == wire.StopToolUse {
		resp.StopReason = wire.StopEndTurn
	}
}

// structuredStream does what unwrapStructured does, for a stream: the tool's
// block start becomes a text block start, its input_json deltas text deltas.
type structuredStream struct {
	tool   string
	blocks []int64 // canonical indexes of the tool's blocks
	found  bool
	others bool // the model used another tool too
}

func newStructuredStream(x *pipeline.Exchange) *structuredStream {
	if x.StructuredTool == "" {
		return nil
	}
	return &structuredStream{tool: x.StructuredTool}
}

func (s *structuredStream) mine(index int64) bool {
	for _, b := range s.blocks {
		if b == index {
			return true
		}
	}
	return false
}

// events rewrites a batch of canonical events in place.
func (s *structuredStream) events(evs []wire.Event) []wire.Event {
	if s == nil {
		return evs
	}
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case wire.EventBlockStart:
			if ev.Block.Type != wire.BlockToolUse {
				continue
			}
			if ev.Block.Name != s.tool {
				s.others = true
				continue
			}
			s.blocks = append(s.blocks, ev.Index)
			s.found = true
			ev.Block = wire.Block{Type: wire.BlockText}
		case wire.EventDelta:
			if ev.Delta == wire.DeltaInputJSON && s.mine(ev.Index) {
				ev.Delta = wire.DeltaText
			}
		case wire.EventMessageDelta:
			if s.found && !s.others && ev.StopReason == wire.StopToolUse {
				ev.StopReason = wire.StopEndTurn
			}
		}
	}
	return evs
}
