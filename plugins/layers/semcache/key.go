package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The key. An agent's request is a long, fixed context (a 20–90 KB system
// prompt, its tools, the conversation so far) and a short question at the
// end. Embedding the two together lets the context swamp the question: any
// two requests of one agent score 0.9997–1.0000. So the two parts are keyed
// apart:
//
//   - the context is hashed, never embedded: two requests meet only when
//     everything that could change the answer but the question itself is
//     byte-identical (contextHash);
//   - the similarity is taken on the question alone: the last user turn's
//     own text, without the reminders an agent injects into it (question).

// reminderTags are the elements agents wrap text they inject into a user
// turn with: Claude Code's <system-reminder>, Codex's <environment_context>
// and <user_instructions>. Such text is context, not the question.
var reminderTags = []struct{ open, closing string }{
	{"<system-reminder", "</system-reminder>"},
	{"<environment_context", "</environment_context>"},
	{"<user_instructions", "</user_instructions>"},
}

// splitReminders cuts the reminder elements out of text: what is left is the
// caller's own words; the cut elements are returned in order. An unclosed
// element is left in place (it is the caller's text, not an injection).
func splitReminders(text string) (own string, injected []string) {
	if strings.IndexByte(text, '<') < 0 { // most text: no element at all
		return strings.TrimSpace(text), nil
	}
	for _, tag := range reminderTags {
		open, closing := tag.open, tag.closing
		for {
			i := strings.Index(text, open)
			if i < 0 {
				break
			}
			if end := i + len(open); end < len(text) && text[end] != '>' && text[end] != ' ' && text[end] != '\n' {
				break // <system-reminders…: another tag
			}
			j := strings.Index(text[i:], closing)
			if j < 0 {
				break
			}
			j += i + len(closing)
			injected = append(injected, text[i:j])
			text = text[:i] + text[j:]
		}
	}
	return strings.TrimSpace(text), injected
}

// lastTurn is the request's last message when it is a user turn, else nil.
func lastTurn(r *wire.Request) *wire.Message {
	if len(r.Messages) == 0 {
		return nil
	}
	m := &r.Messages[len(r.Messages)-1]
	if m.Role != "user" {
		return nil
	}
	return m
}

// question is what the caller asks now: the text of the last user turn
// without injected reminders, its text blocks joined by newlines.
func question(r *wire.Request) string {
	m := lastTurn(r)
	if m == nil {
		return ""
	}
	var first string
	var parts []string // only for a question of several blocks
	for _, bl := range m.Content {
		if bl.Type != wire.BlockText {
			continue
		}
		own, _ := splitReminders(bl.Text)
		switch {
		case own == "":
		case first == "":
			first = own
		default:
			if parts == nil {
				parts = append(parts, first)
			}
			parts = append(parts, own)
		}
	}
	if parts != nil {
		return strings.Join(parts, "\n")
	}
	return first
}

// lookupable reports whether a request may be answered from the semantic
// cache at all: its last turn is the user's, carries no tool result (an
// agent loop waiting on a tool is never answered from a cache: the result is
// new information the stored answer did not see) and asks something in its
// own words.
func lookupable(r *wire.Request) bool {
	_, ok := lookupQuestion(r)
	return ok
}

// lookupQuestion is the request's question and whether it is lookupable.
func lookupQuestion(r *wire.Request) (string, bool) {
	m := lastTurn(r)
	if m == nil {
		return "", false
	}
	for _, bl := range m.Content {
		if bl.Type == wire.BlockToolResult {
			return "", false
		}
	}
	q := question(r)
	return q, q != ""
}

// ignoredExtra reports whether a top-level request member never changes
// the answer: who is asking (Claude Code's metadata.user_id names the
// session), how the stream is framed, billing and storage. Every other
// unknown member ("thinking", "response_format", "reasoning_effort", "n",
// …) is context. A switch: inside wasm a Go map lookup of a string costs
// ~0.5 µs, one a member.
func ignoredExtra(key string) bool {
	switch key {
	case "metadata", "user", "stream_options", "store", "service_tier", "prompt_cache_key", "safety_identifier":
		return true
	}
	return false
}

// contextHash is the hash of everything in the request that could change
// the answer except the question itself: the model (unless match_model is
// off), the system prompt, the tools and tool_choice, the sampling
// parameters, the answer-changing unknown members, every earlier turn in
// full (text, tool calls and results, thinking, images), and of the last
// turn its injected reminders and non-text blocks. cache_control markers are
// left out: they move from turn to turn and never change an answer.
func contextHash(r *wire.Request, matchModel bool) string {
	var x [32]byte
	return string(contextHashTo(&x, r, matchModel))
}

// contextHashTo is contextHash written into x, which the result views: the
// request phase keeps x from call to call (inside wasm an allocation costs
// about a microsecond).
func contextHashTo(x *[32]byte, r *wire.Request, matchModel bool) string {
	// A local hasher over the kept buffer: appends to a global's slice
	// pass a write barrier each, ~100 of them a request.
	h := &hasher{b: ctxHasher.b[:0], members: ctxHasher.members}
	in := plugin.Input()
	if m := lastTurn(r); m == nil {
		// Not a lookup (lookupQuestion): every turn is history, field by
		// field, under a tag of its own.
		h.num(tAll, 0)
		if matchModel {
			h.str(tModel, r.Model)
		}
		h.blocks(tSystem, r.System)
		for i := range r.Messages {
			m := &r.Messages[i]
			h.str(tRole, m.Role)
			h.str(tName, m.Name)
			h.raw(tExtra, m.Extra)
			h.blocks(tContent, m.Content)
		}
	} else {
		if !h.history(r, matchModel, in, -1) {
			h.historyEncoded(r, matchModel)
		}
		h.str(tLast, m.Name)
		h.raw(tExtra, m.Extra)
		for _, bl := range m.Content {
			if bl.Type != wire.BlockText {
				h.block(&bl)
				continue
			}
			_, injected := splitReminders(bl.Text)
			for _, s := range injected {
				h.str(tReminder, s)
			}
			h.raw(tExtra, bl.Extra)
		}
	}
	if len(r.Tools) > 0 && !h.tools(r.Tools, in) {
		h.toolsEncoded(r.Tools)
	}
	h.raw(tToolChoice, r.ToolChoice)
	p := &r.Params
	h.num(tParams, uint64(p.Set))
	if p.Set&wire.HasMaxTokens != 0 {
		h.num(tMaxTokens, uint64(p.MaxTokens))
	}
	if p.Set&wire.HasTemperature != 0 {
		h.num(tTemperature, math.Float64bits(p.Temperature))
	}
	if p.Set&wire.HasTopP != 0 {
		h.num(tTopP, math.Float64bits(p.TopP))
	}
	if p.Set&wire.HasTopK != 0 {
		h.num(tTopK, uint64(p.TopK))
	}
	if p.Set&wire.HasSeed != 0 {
		h.num(tSeed, uint64(p.Seed))
	}
	for _, s := range p.Stop {
		h.str(tStop, s)
	}
	h.extra(r.Extra)
	sum := plugin.SHA256(h.b)
	if cap(h.b) > maxKeptHashBuf {
		h.b = nil // a huge request's buffer is not kept for life
	}
	ctxHasher = hasher{b: h.b[:0], members: h.members}
	hex.Encode(x[:], sum[:16])
	return unsafe.String(&x[0], len(x))
}

// history appends the model (when matched), the system prompt and every
// turn before the last as the host encoded them: one span of the call's
// input in (their strings alias it), from the model's field to the last
// turn's, copied in one piece but for each non-empty cache_control, which
// is written as an empty one (the byte 0). Inside wasm that costs a few
// copies where writing ~8 fields a turn one by one cost ~7 µs on a 4 KB
// request. The wire encoding is length-prefixed with canonical varints and
// holds the number of messages, so the span delimits itself and differs
// for any two histories that differ. The turns' and blocks' unknown members
// (the encoding's appended section) follow, each with its index.
//
// modelAt is the offset of the model's field in in, or -1: found from the
// model's bytes. It reports false, having appended nothing, when r was not
// decoded from in (a request built in Go, an empty model).
func (h *hasher) history(r *wire.Request, matchModel bool, in []byte, modelAt int) bool {
	last := len(r.Messages) - 1
	if last < 0 || len(in) == 0 || r.Messages[last].Role == "" {
		return false
	}
	role := r.Messages[last].Role
	to, ok := offsetIn(in, unsafe.StringData(role))
	if !ok {
		return false
	}
	to -= uvarintLen(len(role))
	from := modelAt
	if from < 0 {
		if r.Model == "" {
			return false
		}
		at, ok := offsetIn(in, unsafe.StringData(r.Model))
		if !ok {
			return false
		}
		from = at - uvarintLen(len(r.Model))
	}
	if !matchModel {
		from += uvarintLen(len(r.Model)) + len(r.Model)
	}
	if from < 0 || from > to || to > len(in) {
		return false
	}
	start := len(h.b)
	b := h.field(tHistory, 0, to-from)
	pos, nested := from, false
	for i := -1; i < last; i++ {
		bs := r.System
		if i >= 0 {
			bs = r.Messages[i].Content
			nested = nested || len(r.Messages[i].Extra) > 0
		}
		for j := range bs {
			bl := &bs[j]
			nested = nested || len(bl.Extra) > 0
			if len(bl.CacheControl) == 0 {
				continue
			}
			at, ok := offsetIn(in, unsafe.SliceData(bl.CacheControl))
			cut := at - uvarintLen(len(bl.CacheControl))
			if !ok || cut < pos || at+len(bl.CacheControl) > to {
				h.b = b[:start]
				return false
			}
			b = append(b, in[pos:cut]...)
			b = append(b, 0)
			pos = at + len(bl.CacheControl)
		}
	}
	h.b = append(b, in[pos:to]...)
	if nested {
		k := uint64(0)
		for i := -1; i < last; i++ {
			bs := r.System
			if i >= 0 {
				h.nested(&k, r.Messages[i].Extra)
				bs = r.Messages[i].Content
			}
			for j := range bs {
				h.nested(&k, bs[j].Extra)
			}
		}
	}
	return true
}

// nested appends a non-empty unknown-members object with its index k, and
// counts it.
func (h *hasher) nested(k *uint64, x []byte) {
	if len(x) > 0 {
		h.num(tIndex, *k)
		h.raw(tExtra, x)
	}
	*k++
}

// historyEncoded is history for a request that was not decoded from the
// call's input: its model, system prompt and turns encoded as the host
// encodes them, decoded back, and hashed as history hashes an input, so
// the same request hashes the same whichever way it came.
func (h *hasher) historyEncoded(r *wire.Request, matchModel bool) {
	var e wire.Encoder
	part := wire.Request{Model: r.Model, System: r.System, Messages: r.Messages}
	wire.EncodeLayerRequest(&e, &wire.Meta{}, &part, wire.PartModel|wire.PartSystem|wire.PartMessages)
	var d wire.LayerRequest
	if d.Decode(e.Bytes()) == nil && h.history(&d.Request, matchModel, e.Bytes(), modelAt) {
		return
	}
	// Only if the SDK stopped decoding in place: field by field, under a
	// tag of its own (the same request still hashes the same).
	h.num(tWalk, 0)
	if matchModel {
		h.str(tModel, r.Model)
	}
	h.blocks(tSystem, r.System)
	for i := range len(r.Messages) - 1 {
		m := &r.Messages[i]
		h.str(tRole, m.Role)
		h.str(tName, m.Name)
		h.raw(tExtra, m.Extra)
		h.blocks(tContent, m.Content)
	}
}

// tools appends the tools as the host encoded them, as history does the
// turns: their number, then one span of in from the first tool's name to
// the last tool's cache_control, each non-empty cache_control written as
// an empty one; then the non-empty unknown members with their index. It
// reports false, having appended nothing, when ts was not decoded from in
// or the first or last tool has no name (no anchor).
func (h *hasher) tools(ts []wire.Tool, in []byte) bool {
	first, last := &ts[0], &ts[len(ts)-1]
	if len(in) == 0 || first.Name == "" || last.Name == "" {
		return false
	}
	from, ok := offsetIn(in, unsafe.StringData(first.Name))
	if !ok {
		return false
	}
	from -= uvarintLen(len(first.Name))
	// The last tool ends after its cache_control; an empty field is its
	// length alone, the byte 0.
	var to int
	switch {
	case len(last.CacheControl) > 0:
		to, ok = offsetIn(in, unsafe.SliceData(last.CacheControl))
		to += len(last.CacheControl)
	case len(last.Schema) > 0:
		to, ok = offsetIn(in, unsafe.SliceData(last.Schema))
		to += len(last.Schema) + 1
	case last.Description != "":
		to, ok = offsetIn(in, unsafe.StringData(last.Description))
		to += len(last.Description) + 2
	default:
		to, ok = offsetIn(in, unsafe.StringData(last.Name))
		to += len(last.Name) + 3
	}
	if !ok || from < 0 || from > to || to > len(in) {
		return false
	}
	start := len(h.b)
	b := h.field(tToolSpan, uint64(len(ts)), to-from)
	pos, nested := from, false
	for i := range ts {
		t := &ts[i]
		nested = nested || len(t.Extra) > 0
		if len(t.CacheControl) == 0 {
			continue
		}
		at, ok := offsetIn(in, unsafe.SliceData(t.CacheControl))
		cut := at - uvarintLen(len(t.CacheControl))
		if !ok || cut < pos || at+len(t.CacheControl) > to {
			h.b = b[:start]
			return false
		}
		b = append(b, in[pos:cut]...)
		b = append(b, 0)
		pos = at + len(t.CacheControl)
	}
	h.b = append(b, in[pos:to]...)
	if nested {
		k := uint64(0)
		for i := range ts {
			h.nested(&k, ts[i].Extra)
		}
	}
	return true
}

// toolsEncoded is tools for tools not decoded from the call's input, as
// historyEncoded is history; tools without a name to anchor on are written
// field by field (the same tools still hash the same).
func (h *hasher) toolsEncoded(ts []wire.Tool) {
	var e wire.Encoder
	wire.EncodeLayerRequest(&e, &wire.Meta{}, &wire.Request{Tools: ts}, wire.PartTools)
	var d wire.LayerRequest
	if d.Decode(e.Bytes()) == nil && len(d.Request.Tools) == len(ts) && h.tools(d.Request.Tools, e.Bytes()) {
		return
	}
	for i := range ts {
		t := &ts[i]
		h.str(tTool, t.Name)
		h.str(tDesc, t.Description)
		h.raw(tSchema, t.Schema)
		h.raw(tExtra, t.Extra)
	}
}

// modelAt is the offset of the model's field in a LayerRequest of an empty
// Meta (the format byte, the meta, the parts mask and the stream flag
// before it).
var modelAt = func() int {
	var e wire.Encoder
	wire.EncodeLayerRequest(&e, &wire.Meta{}, &wire.Request{}, wire.PartModel)
	return len(e.Bytes()) - 1 // the empty model's length, 0
}()

// offsetIn is the offset of p in in, and whether it lies within it.
func offsetIn(in []byte, p *byte) (int, bool) {
	d := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	return int(d), d <= uintptr(len(in))
}

// uvarintLen is the length of n as an unsigned varint.
func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// hasher collects length-prefixed fields, so that no two different
// requests can serialise to the same bytes.
type hasher struct {
	b       []byte
	members []member // extra's scratch
}

type member struct {
	key string
	val []byte
}

// ctxHasher is contextHash's buffer, kept from call to call (an instance
// serves one call at a time): an agent's context is 20–90 KB, and growing
// a new buffer to that size on every request, inside wasm, cost more than
// the rest of the hash (allocation, zeroing, copying on growth, and the
// garbage collections it brings on).
var ctxHasher hasher

// maxKeptHashBuf: a larger buffer is let go after its call.
const maxKeptHashBuf = 1 << 20

// Inside wasm every call costs: a Go call's prologue, and appending a
// string is a call to memmove. So a field is written by one call that
// grows the buffer once, stores the tag as three 8-byte words (cut to its
// length) and copies the value; an empty value costs no memmove.

func (h *hasher) str(t tag, s string) {
	b := h.field(t, uint64(len(s)), len(s))
	if len(s) > 0 {
		b = append(b, s...)
	}
	h.b = b
}

func (h *hasher) raw(t tag, v []byte) {
	b := h.field(t, uint64(len(v)), len(v))
	if len(v) > 0 {
		b = append(b, v...)
	}
	h.b = b
}

func (h *hasher) num(t tag, v uint64) { h.b = h.field(t, v, 0) }

// field is the buffer with t and the varint v appended, and room for n
// more bytes.
func (h *hasher) field(t tag, v uint64, n int) []byte {
	b := h.b
	at := len(b)
	if cap(b)-at < 24+binary.MaxVarintLen64+n {
		b = slices.Grow(b, 24+binary.MaxVarintLen64+n)
	}
	b = b[:at+24]
	binary.LittleEndian.PutUint64(b[at:], t.w[0])
	binary.LittleEndian.PutUint64(b[at+8:], t.w[1])
	binary.LittleEndian.PutUint64(b[at+16:], t.w[2])
	return binary.AppendUvarint(b[:at+int(t.n)], v)
}

// tag is a field's name (or emptyBlockTail) as three little-endian words
// and a length (at most 24 bytes).
type tag struct {
	w [3]uint64
	n uint8
}

func mkTag(s string) tag {
	var b [24]byte
	if len(s) > len(b) {
		panic("semcache: tag " + s + " is longer than 24 bytes")
	}
	copy(b[:], s)
	return tag{w: [3]uint64{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:16]), binary.LittleEndian.Uint64(b[16:])},
		n: uint8(len(s))}
}

// The tags of contextHash's fields.
var (
	tBlock       = mkTag("block")
	tContent     = mkTag("content")
	tData        = mkTag("data")
	tDesc        = mkTag("desc")
	tError       = mkTag("error")
	tExtra       = mkTag("extra")
	tId          = mkTag("id")
	tKey         = mkTag("key")
	tLast        = mkTag("last")
	tMaxTokens   = mkTag("max_tokens")
	tModel       = mkTag("model")
	tName        = mkTag("name")
	tParams      = mkTag("params")
	tReminder    = mkTag("reminder")
	tRole        = mkTag("role")
	tSchema      = mkTag("schema")
	tSeed        = mkTag("seed")
	tSig         = mkTag("sig")
	tStop        = mkTag("stop")
	tSystem      = mkTag("system")
	tTemperature = mkTag("temperature")
	tText        = mkTag("text")
	tTool        = mkTag("tool")
	tToolChoice  = mkTag("tool_choice")
	tTopK        = mkTag("top_k")
	tTopP        = mkTag("top_p")
	tValue       = mkTag("value")
	tAll         = mkTag("all")     // every turn, field by field (no last user turn)
	tHistory     = mkTag("history") // history's span
	tIndex       = mkTag("index")   // a nested unknown-members object's index
	tWalk        = mkTag("walk")    // historyEncoded's field-by-field form
	tToolSpan    = mkTag("Tools")   // tools' span (not "tool": tool_choice follows)
)

func (h *hasher) block(bl *wire.Block) {
	h.num(tBlock, uint64(bl.Type))
	h.str(tText, bl.Text)
	if bl.ID == "" && bl.Name == "" && len(bl.Data) == 0 && bl.Signature == "" && !bl.IsError && len(bl.Extra) == 0 {
		// Most blocks are text alone: the empty fields below, in one
		// append instead of fifteen.
		h.num(tEmptyTail, 0)
		return
	}
	h.str(tId, bl.ID)
	h.str(tName, bl.Name)
	h.raw(tData, bl.Data)
	h.str(tSig, bl.Signature)
	if bl.IsError {
		h.num(tError, 1)
	}
	h.raw(tExtra, bl.Extra)
}

// emptyBlockTail is what block writes after the text of a block whose other
// fields are all empty: each tag and a zero length (no error mark).
const emptyBlockTail = "id\x00name\x00data\x00sig\x00extra\x00"

// tEmptyTail and a zero length are emptyBlockTail.
var tEmptyTail = mkTag(strings.TrimSuffix(emptyBlockTail, "\x00"))

func (h *hasher) blocks(t tag, bs []wire.Block) {
	h.num(t, uint64(len(bs)))
	for i := range bs {
		h.block(&bs[i])
	}
}

// extra hashes the top-level unknown members but those in ignoredExtra, in
// key order (the last of duplicate keys wins, as encoding/json has it). A
// body that is not a JSON object is hashed whole.
//
// The host hands over valid JSON, so the members are found with jsonscan:
// encoding/json's reflection into a map cost ~50 µs a call inside wasm. An
// object with a key that is escaped or not plain ASCII (which encoding/json
// would unescape or repair) takes extraDecoded, so the bytes hashed are the
// same either way.
func (h *hasher) extra(raw []byte) {
	if i := jsonscan.SkipSpace(raw, 0); i >= len(raw) || raw[i] != '{' {
		h.extraDecoded(raw)
		return
	}
	members := h.members[:0]
	plain := true
	jsonscan.EachMember(raw, func(k, v []byte) {
		for _, c := range k {
			if c == '\\' || c >= utf8.RuneSelf {
				plain = false
			}
		}
		key := unsafe.String(unsafe.SliceData(k), len(k))
		if ignoredExtra(key) {
			return
		}
		for i := range members {
			if members[i].key == key {
				members[i].val = v
				return
			}
		}
		members = append(members, member{key, v})
	})
	if !plain {
		clear(members)
		h.members = members[:0]
		h.extraDecoded(raw)
		return
	}
	// Keys are unique by now, so any sort gives this order; slices'
	// does not allocate (sort.Slice's reflection did).
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for _, m := range members {
		h.str(tKey, m.key)
		h.raw(tValue, m.val)
	}
	clear(members) // no reference into this request is kept
	h.members = members[:0]
}

// extraDecoded is extra by way of encoding/json.
func (h *hasher) extraDecoded(raw []byte) {
	if len(raw) == 0 {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		h.raw(tExtra, raw)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !ignoredExtra(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.str(tKey, k)
		h.raw(tValue, m[k])
	}
}

// private reports whether text holds what tiered isolation keeps per agent:
// a wallet address or hash (0x + 40 or 64 hex digits), a masked personal
// value (L7's placeholders such as [EMAIL_1]), or a strategy marker.
func private(text string, strategyMarkers []string) bool {
	for i := 0; i+2 < len(text); i++ {
		if text[i] == '0' && (text[i+1] == 'x' || text[i+1] == 'X') {
			n := 0
			for j := i + 2; j < len(text) && isHex(text[j]); j++ {
				n++
			}
			if n >= 40 {
				return true
			}
		}
	}
	if hasPlaceholder(text) {
		return true
	}
	lower := strings.ToLower(text)
	for _, m := range strategyMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hasPlaceholder finds "[TAG_N]" with TAG in capitals and N digits.
func hasPlaceholder(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		j := i + 1
		if j >= len(s) || s[j] < 'A' || s[j] > 'Z' {
			continue
		}
		for j < len(s) && (s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_') {
			j++
		}
		if j >= len(s) || s[j-1] != '_' {
			continue
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j && k < len(s) && s[k] == ']' {
			return true
		}
	}
	return false
}
