package main

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The cache key is the SHA-256 (computed by the host) of a canonical byte
// string built from the request in one pass. Free text goes through
// normalizer.text, which canonicalizes whitespace and strips timestamps,
// UUIDs and ephemeral JSON fields inline; every run of ASCII whitespace or
// control characters becomes at most one space, so the separators below
// (control characters) can never come from content, and pieces that are kept
// verbatim (stop sequences, small binary payloads) are length-prefixed.
const (
	sepSection = 0x1d // between the model, system, messages, tools, params, extra
	sepMessage = 0x1e // between messages
	sepBlock   = 0x1c // between the blocks of a message or system prompt, and between tools
	sepField   = 0x1f // between the fields of a block
	// sepDigest starts a piece's 32-byte digest in place of its canonical
	// bytes (memo.go); a fixed length, so what follows is never read as
	// text.
	sepDigest = 0x1a
)

// keyVersion starts the canonical string; change it whenever the canonical
// form changes, so old entries stop matching instead of matching wrongly.
const keyVersion = "hashcache/5"

// smallRaw is the size up to which opaque payloads (images, documents,
// unknown blocks) are hashed inline; larger ones are replaced by their own
// SHA-256, so megabytes of base64 are hashed once and never scanned.
const smallRaw = 128

var (
	isSpace [256]bool // the space and the ASCII control characters (whitespace included)
	isDigit [256]bool
	isHex   [256]bool
)

func init() {
	for c := 0; c <= ' '; c++ {
		isSpace[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		isDigit[c], isHex[c] = true, true
	}
	for c := 'a'; c <= 'f'; c++ {
		isHex[c], isHex[c-'a'+'A'] = true, true
	}
}

// normalizer holds the compiled normalization rules.
type normalizer struct {
	stop       [256]bool // bytes that end the fast copy loop
	stripTS    bool
	stripUUID  bool
	fields     []string // ephemeral JSON field names
	fieldFirst [256]bool
}

func newNormalizer(stripTS, stripUUID bool, fields []string) *normalizer {
	n := &normalizer{stripTS: stripTS, stripUUID: stripUUID, fields: fields}
	n.stop = isSpace
	if stripTS || stripUUID {
		n.stop['-'] = true
	}
	for _, f := range fields {
		if f != "" {
			n.fieldFirst[f[0]] = true
			n.stop['"'] = true
		}
	}
	return n
}

// text appends s canonicalized: leading and trailing whitespace dropped,
// inner runs of whitespace and control characters collapsed to one space,
// timestamps, UUIDs and ephemeral fields removed.
//
// This is the per-request hot loop (every byte of the request passes through
// it, inside wasm), so the scan for the next byte that needs a decision reads
// eight bytes at a time (see next); ordinary text, lone spaces included, is
// copied in runs.
func (n *normalizer) text(dst []byte, s string) []byte {
	base := len(dst)
	i := 0
	for i < len(s) && isSpace[s[i]] {
		i++
	}
	space := false // a space is owed before the next kept byte
	run := i       // start of the current run of copied bytes in s
	for i < len(s) {
		j := n.next(s, i)
		if j > i {
			r := s[i:j]
			if r[0] == ' ' {
				// The run brings its own space; drop it after a space or at the start.
				if len(dst) == base || dst[len(dst)-1] == ' ' {
					r = r[1:]
				}
			} else if space && len(dst) > base && dst[len(dst)-1] != ' ' {
				dst = append(dst, ' ')
			}
			space = false
			dst = append(dst, r...)
		}
		if j == len(s) {
			break
		}
		c := s[j]
		switch {
		case isSpace[c]:
			space = true
			i, run = j+1, j+1
			continue
		case c == '-':
			if back, l := n.dash(s, j, run); l > 0 {
				dst = dst[:len(dst)-back]
				i, run = j+l, j+l
				space = space || trimSpace(&dst, base)
				continue
			}
		case c == '"':
			if l := n.field(s, j); l > 0 {
				i, run = j+l, j+l
				space = space || trimSpace(&dst, base)
				continue
			}
		}
		if space && len(dst) > base && dst[len(dst)-1] != ' ' {
			dst = append(dst, ' ')
		}
		space = false
		dst = append(dst, c)
		i, run = j+1, j+1
	}
	for len(dst) > base && dst[len(dst)-1] == ' ' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

// SWAR constants: per-byte masks over a little-endian uint64 (wasm and every
// platform Go runs tests on are little endian).
const (
	lo7  = 0x7f7f7f7f7f7f7f7f
	hi   = 0x8080808080808080
	ones = 0x0101010101010101
)

// eqMask sets the high bit of every byte of x equal to the byte in c
// (c = b*ones); exact, no carries between bytes.
func eqMask(x, c uint64) uint64 {
	y := x ^ c
	return ^(((y & lo7) + lo7) | y) & hi
}

// next returns the index of the first byte at or after i that needs a
// decision: a control character (whitespace other than a lone space
// included), a space followed by a space, a '-' after a hex digit (a
// timestamp or UUID may end there) or a '"' before the first byte of an
// ephemeral field's name (one may start there) when those rules are on;
// len(s) when there is none. Any other '-' or '"' is ordinary text: it
// stays in the run, since returning to text for it costs, inside wasm,
// more than the scan (a JSON tool result is mostly quotes).
func (n *normalizer) next(s string, i int) int {
	p := unsafe.Pointer(unsafe.StringData(s))
	dashes, quotes := n.stop['-'], n.stop['"']
	for i+8 <= len(s) {
		x := *(*uint64)(unsafe.Add(p, i))
		m := ^(((x & lo7) + 0x6060606060606060) | x) & hi // bytes < 0x20
		sp := eqMask(x, ' '*ones)
		m |= sp & (sp >> 8) // a space followed by a space
		if dashes {
			m |= eqMask(x, '-'*ones)
		}
		if quotes {
			m |= eqMask(x, '"'*ones)
		}
		for m != 0 {
			j := i + bits.TrailingZeros64(m)>>3
			if n.decides(s, j) {
				return j
			}
			m &= m - 1
		}
		if sp>>63 != 0 {
			i += 7 // the last byte is a space: see whether the next one is
		} else {
			i += 8
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < ' ' || (c == ' ' && i+1 < len(s) && s[i+1] == ' ') ||
			(c == '-' && dashes || c == '"' && quotes) && n.decides(s, i) {
			return i
		}
	}
	return i
}

// decides reports whether the byte at s[j], a control character, a space
// before a space, a '-' or a '"' the rules look at, needs text's decision:
// a '-' only after a hex digit (the end of a timestamp's year or a UUID's
// first group: dash finds nothing otherwise), a '"' only before the first
// byte of an ephemeral field's name (field finds nothing otherwise).
func (n *normalizer) decides(s string, j int) bool {
	switch s[j] {
	case '-':
		return j > 0 && isHex[s[j-1]]
	case '"':
		return j+1 < len(s) && n.fieldFirst[s[j+1]]
	}
	return true
}

// trimSpace drops a trailing space written by text (after base) and reports
// whether it did, so removing a token between two spaces leaves one.
func trimSpace(dst *[]byte, base int) bool {
	if d := *dst; len(d) > base && d[len(d)-1] == ' ' {
		*dst = d[:len(d)-1]
		return true
	}
	return false
}

// dash looks at the '-' at s[j] (bytes s[run:j] were just copied) for a
// timestamp (YYYY-MM-DD[T ]hh:mm:ss[.frac][Z|±hh[:]mm]) or a UUID
// (8-4-4-4-12 hex digits). It returns how many bytes before the dash
// belong to the match and how many bytes from the dash on, or 0, 0.
func (n *normalizer) dash(s string, j, run int) (back, l int) {
	if n.stripTS && j-4 >= run && digits(s, j-4, 4) {
		if l := timestampTail(s[j:]); l > 0 {
			return 4, l
		}
	}
	if n.stripUUID && j-8 >= run && hexes(s, j-8, 8) {
		t := s[j:]
		if len(t) >= 28 && t[5] == '-' && t[10] == '-' && t[15] == '-' &&
			hexes(t, 1, 4) && hexes(t, 6, 4) && hexes(t, 11, 4) && hexes(t, 16, 12) {
			return 8, 28
		}
	}
	return 0, 0
}

// timestampTail matches "-MM-DD[T ]hh:mm:ss[.frac][Z|±hh[:]mm]" at the start
// of t and returns its length, or 0.
func timestampTail(t string) int {
	if len(t) < 15 || t[3] != '-' || !digits(t, 1, 2) || !digits(t, 4, 2) ||
		(t[6] != 'T' && t[6] != ' ') || !digits(t, 7, 2) || t[9] != ':' ||
		!digits(t, 10, 2) || t[12] != ':' || !digits(t, 13, 2) {
		return 0
	}
	l := 15
	if l+1 < len(t) && t[l] == '.' && isDigit[t[l+1]] {
		l += 2
		for l < len(t) && isDigit[t[l]] {
			l++
		}
	}
	switch {
	case l < len(t) && t[l] == 'Z':
		l++
	case l+2 < len(t) && (t[l] == '+' || t[l] == '-') && digits(t, l+1, 2):
		k := l + 3
		if k < len(t) && t[k] == ':' {
			k++
		}
		if digits(t, k, 2) {
			l = k + 2
		}
	}
	return l
}

func digits(s string, at, n int) bool {
	if at < 0 || at+n > len(s) {
		return false
	}
	for i := at; i < at+n; i++ {
		if !isDigit[s[i]] {
			return false
		}
	}
	return true
}

func hexes(s string, at, n int) bool {
	if at < 0 || at+n > len(s) {
		return false
	}
	for i := at; i < at+n; i++ {
		if !isHex[s[i]] {
			return false
		}
	}
	return true
}

// field matches, at the '"' at s[j], an ephemeral JSON member such as
// `"traceId": "abc",` (string, number, true/false/null values; a trailing
// comma is part of the match) and returns its length, or 0.
func (n *normalizer) field(s string, j int) int {
	if j+1 >= len(s) || !n.fieldFirst[s[j+1]] {
		return 0
	}
	for _, f := range n.fields {
		k := j + 1 + len(f)
		if k >= len(s) || s[k] != '"' || s[j+1:k] != f {
			continue
		}
		k = skipWS(s, k+1)
		if k >= len(s) || s[k] != ':' {
			return 0
		}
		k = skipWS(s, k+1)
		v := jsonScalar(s, k)
		if v == 0 {
			return 0
		}
		k = skipWS(s, k+v)
		if k < len(s) && s[k] == ',' {
			k = skipWS(s, k+1)
		}
		return k - j
	}
	return 0
}

func skipWS(s string, k int) int {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r') {
		k++
	}
	return k
}

// jsonScalar returns the length of the JSON string, number or literal at
// s[k:], or 0.
func jsonScalar(s string, k int) int {
	if k >= len(s) {
		return 0
	}
	switch c := s[k]; {
	case c == '"':
		for i := k + 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i + 1 - k
			}
		}
		return 0
	case c == '-' || isDigit[c]:
		i := k + 1
		for i < len(s) && (isDigit[s[i]] || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' || s[i] == '-') {
			i++
		}
		return i - k
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s)-k >= len(lit) && s[k:k+len(lit)] == lit {
			return len(lit)
		}
	}
	return 0
}

// bstr views b as a string without copying (b is not modified while in use).
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// raw appends an opaque payload: inline and length-prefixed when small, else
// as "#" and its SHA-256 (computed by the host).
func raw(dst []byte, b []byte) []byte {
	if len(b) <= smallRaw {
		dst = strconv.AppendInt(dst, int64(len(b)), 10)
		dst = append(dst, ':')
		return append(dst, b...)
	}
	sum := plugin.SHA256(b)
	dst = append(dst, '#')
	return hex.AppendEncode(dst, sum[:])
}

// call is a tool_use seen earlier in the conversation, so its results can
// be named (tool ids are random per run and never part of the key).
type call struct {
	id, name string
	in       [2]int // its normalized input in keyBuilder.arena
}

// keyBuilder builds the canonical string of one request.
type keyBuilder struct {
	n       *normalizer
	buf     []byte
	calls   []call
	arena   []byte   // normalized tool_use inputs
	segs    [][2]int // scratch: block segments of a run being sorted
	scratch []byte
	in      []byte   // the input of the piece being looked up (memo.go)
	ignore  []string // extra members left out of the key
	tenant  string   // the request's tenant: the memo's partition (memo.go)

	// markers are the volatile markers looked for in the messages (nil:
	// ttl_static is off); volatile says one was found.
	markers  [][]byte
	volatile bool
}

// build returns the canonical string of req (valid until the next build).
func (k *keyBuilder) build(req *wire.Request) []byte {
	k.buf = append(k.buf[:0], keyVersion...)
	k.calls, k.arena = k.calls[:0], k.arena[:0]
	k.volatile = false
	k.buf = append(k.buf, sepSection)
	k.text(req.Model)

	k.buf = append(k.buf, sepSection, 'S')
	for i := range req.System {
		k.buf = append(k.buf, sepBlock)
		k.systemBlock(&req.System[i], i)
	}

	k.buf = append(k.buf, sepSection, 'M')
	k.messages(req.Messages)

	k.buf = append(k.buf, sepSection, 'T')
	k.toolsSection(req.Tools)
	k.buf = append(k.buf, sepField)
	k.text(bstr(req.ToolChoice))

	k.buf = append(k.buf, sepSection, 'P')
	k.params(&req.Params)

	k.buf = append(k.buf, sepSection, 'X')
	if len(req.Extra) > 0 {
		k.extra(req.Extra)
	}
	return k.buf
}

// extra appends the request's top-level members the canonical model does
// not name, but the ignored ones.
//
//go:noinline
func (k *keyBuilder) extra(extra []byte) {
	jsonscan.EachMember(extra, func(key, val []byte) {
		for _, ig := range k.ignore {
			if string(key) == ig {
				return
			}
		}
		k.buf = append(k.buf, sepBlock)
		k.text(bstr(key))
		k.buf = append(k.buf, sepField)
		k.text(bstr(val))
	})
}

// plainMessage appends a message's canonical bytes, normalizing it.
func (k *keyBuilder) plainMessage(m *wire.Message) {
	k.buf = append(k.buf, sepMessage)
	k.text(m.Role)
	if m.Name != "" {
		k.buf = append(k.buf, sepField, 'n')
		k.text(m.Name)
	}
	k.blocks(m.Content)
	k.nested(m.Extra)
}

// callOf returns the index in k.calls of the latest call with id, or -1.
func (k *keyBuilder) callOf(id string) int {
	for i := len(k.calls) - 1; i >= 0; i-- {
		if k.calls[i].id == id {
			return i
		}
	}
	return -1
}

// blocks appends a message's blocks. Runs of two or more tool_use blocks
// (parallel calls) and of tool_result blocks are sorted by their canonical
// form (tool name, then the call's parameters, then the content): their
// order carries no meaning, since results are matched to calls by id.
func (k *keyBuilder) blocks(bs []wire.Block) {
	for i := 0; i < len(bs); {
		t := bs[i].Type
		j := i + 1
		if t == wire.BlockToolUse || t == wire.BlockToolResult {
			for j < len(bs) && bs[j].Type == t {
				j++
			}
		}
		if j-i < 2 {
			k.buf = append(k.buf, sepBlock)
			k.block(&bs[i])
			i = j
			continue
		}
		start := len(k.buf)
		k.segs = k.segs[:0]
		for x := i; x < j; x++ {
			s := len(k.buf)
			k.buf = append(k.buf, sepBlock)
			k.block(&bs[x])
			k.segs = append(k.segs, [2]int{s, len(k.buf)})
		}
		region := k.buf[start:]
		slices.SortStableFunc(k.segs, func(a, b [2]int) int {
			return bytes.Compare(k.buf[a[0]:a[1]], k.buf[b[0]:b[1]])
		})
		k.scratch = k.scratch[:0]
		for _, s := range k.segs {
			k.scratch = append(k.scratch, k.buf[s[0]:s[1]]...)
		}
		copy(region, k.scratch)
		i = j
	}
}

func (k *keyBuilder) block(b *wire.Block) {
	switch b.Type {
	case wire.BlockText:
		k.buf = append(k.buf, 't')
		k.text(b.Text)
	case wire.BlockThinking:
		// The signature is opaque and tied to the text; the text is enough.
		k.buf = append(k.buf, 'k')
		k.text(b.Text)
	case wire.BlockToolUse:
		k.toolUse(b)
	case wire.BlockToolResult:
		k.toolResult(b)
	default:
		k.opaque(b)
	}
	if len(b.Extra) > 0 {
		k.nested(b.Extra)
	}
}

// toolUse appends a tool_use block and notes the call, so its results can
// be named. (block's cases are out of line: inside wasm every jump of a
// function is a dispatch through its one jump table, whose cost grows
// with the function's size.)
//
//go:noinline
func (k *keyBuilder) toolUse(b *wire.Block) {
	k.buf = append(k.buf, 'u')
	k.text(b.Name)
	k.buf = append(k.buf, sepField)
	s := len(k.buf)
	k.text(bstr(b.Data))
	a := len(k.arena)
	k.arena = append(k.arena, k.buf[s:]...)
	k.calls = append(k.calls, call{id: b.ID, name: b.Name, in: [2]int{a, len(k.arena)}})
}

// toolResult appends a tool_result block, named by the call it answers.
//
//go:noinline
func (k *keyBuilder) toolResult(b *wire.Block) {
	k.buf = append(k.buf, 'r')
	if i := k.callOf(b.ID); i >= 0 {
		k.text(k.calls[i].name)
		k.buf = append(k.buf, sepField)
		k.buf = append(k.buf, k.arena[k.calls[i].in[0]:k.calls[i].in[1]]...)
	}
	k.buf = append(k.buf, sepField)
	k.text(b.Text)
	if len(b.Data) > 0 {
		k.buf = append(k.buf, sepField)
		k.text(bstr(b.Data))
	}
	if b.IsError {
		k.buf = append(k.buf, sepField, 'E')
	}
}

// opaque appends an image, a document, redacted thinking or an unknown
// block.
//
//go:noinline
func (k *keyBuilder) opaque(b *wire.Block) {
	k.buf = append(k.buf, 'o')
	k.buf = strconv.AppendInt(k.buf, int64(b.Type), 10)
	k.buf = append(k.buf, sepField)
	k.buf = raw(k.buf, b.Data)
	if b.Text != "" {
		k.buf = append(k.buf, sepField)
		k.text(b.Text)
	}
}

// tools appends the tool definitions in name order: the order in which tools
// are offered does not change their meaning.
func (k *keyBuilder) tools(ts []wire.Tool) {
	sorted := true
	for i := 1; i < len(ts); i++ {
		if ts[i].Name < ts[i-1].Name {
			sorted = false
			break
		}
	}
	if !sorted {
		ts = slices.Clone(ts)
		slices.SortStableFunc(ts, func(a, b wire.Tool) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
	}
	for i := range ts {
		t := &ts[i]
		k.buf = append(k.buf, sepBlock)
		k.text(t.Name)
		k.buf = append(k.buf, sepField)
		k.text(t.Description)
		k.buf = append(k.buf, sepField)
		k.text(bstr(t.Schema))
		k.nested(t.Extra)
	}
}

// nested appends the members of a message, block or tool that the canonical
// model does not name (ABI v1.4 Extra: a document's citations, a tool's
// strict flag or defer_loading, a server tool's configuration). Any of them
// may change the answer, so they are part of the key; cache_control is the
// exception, as everywhere: a breakpoint moves from turn to turn and says
// nothing about the answer.
func (k *keyBuilder) nested(extra []byte) {
	if len(extra) == 0 {
		return
	}
	jsonscan.EachMember(extra, func(key, val []byte) {
		if string(key) == "cache_control" {
			return
		}
		k.buf = append(k.buf, sepField, 'x')
		k.text(bstr(key))
		k.buf = append(k.buf, sepField)
		k.text(bstr(val))
	})
}

// params appends the sampling and length parameters that change the answer.
func (k *keyBuilder) params(p *wire.Params) {
	b := k.buf
	if p.Set&wire.HasTemperature != 0 {
		b = append(b, 't')
		b = appendFloatBits(b, p.Temperature)
	}
	if p.Set&wire.HasTopP != 0 {
		b = append(b, sepField, 'p')
		b = appendFloatBits(b, p.TopP)
	}
	if p.Set&wire.HasTopK != 0 {
		b = append(b, sepField, 'k')
		b = strconv.AppendInt(b, p.TopK, 10)
	}
	if p.Set&wire.HasMaxTokens != 0 {
		b = append(b, sepField, 'm')
		b = strconv.AppendInt(b, p.MaxTokens, 10)
	}
	if p.Set&wire.HasSeed != 0 {
		b = append(b, sepField, 's')
		b = strconv.AppendInt(b, p.Seed, 10)
	}
	for _, s := range p.Stop {
		// Stop sequences are kept verbatim: their whitespace is their meaning.
		b = append(b, sepField, 'x')
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	k.buf = b
}

// appendFloatBits appends f's IEEE 754 bits as 16 hex digits: one string per
// value, as formatting it would give, without the shortest-decimal search
// (several µs inside wasm).
func appendFloatBits(b []byte, f float64) []byte {
	const digits = "0123456789abcdef"
	u := math.Float64bits(f)
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[u>>uint(shift)&0xf])
	}
	return b
}
