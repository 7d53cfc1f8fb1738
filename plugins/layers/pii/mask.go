package main

import (
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// segment is one piece of user-controlled text: a text block, a tool
// result's text, or one string literal inside a block's JSON (tool_use
// input, tool_result structured content).
type segment struct {
	text    string
	blk     *wire.Block
	data    bool // a string inside blk.Data; rs:re is its content in the raw JSON
	rs, re  int
	escaped bool   // the raw content has escapes: text is its decoded form
	system  bool   // a system prompt block
	latest  bool   // in the newest user message: only there does "block" block
	member  string // the JSON member name of a data string, for context
	s0, s1  int    // its spans in masker.spans
}

// masker holds one request's masking work; an instance serves one call at a
// time, so it is reused to keep allocations down.
type masker struct {
	det    detector
	segs   []segment
	spans  []span
	custom []segSpan
	keys   map[string]string // tag "\x00" value → placeholder
	next   map[string]int    // tag → last number handed out
	taken  map[string]bool
	m      mapping
	buf    []byte
	dec    []byte
	tenant string // the request's tenant (a copy): the memo's partition (memo.go)
	seed   uint64 // tenantSeed(tenant): starts its hashes in the text memo
	seeded bool   // seed is tenantSeed(tenant), kept while the tenant is the same

	masked, redacted int
	blocked          []int // entity ids with action block that were found

	// The turns before the newest user message (history.go): skip of them
	// are known clean and not collected; segs[histFrom:histTo] are the
	// others', and histDirty says the scan found something in them.
	latest, skip     int
	histFrom, histTo int
	histDirty        bool
	skipSystem       bool // the system prompt is known clean: not collected
	sysDirty         bool // the scan found something in the system prompt
}

type segSpan struct {
	seg int
	sp  span
}

func (k *masker) reset() {
	k.segs = k.segs[:0]
	k.spans = k.spans[:0]
	k.custom = k.custom[:0]
	k.det.taken = k.det.taken[:0]
	if k.keys == nil {
		k.keys, k.next = map[string]string{}, map[string]int{}
	}
	// Only a masking request fills them; a call costs inside wasm.
	if len(k.keys) > 0 || len(k.next) > 0 {
		clear(k.keys)
		clear(k.next)
	}
	k.taken = nil
	k.m.reset()
	k.masked, k.redacted = 0, 0
	k.blocked = k.blocked[:0]
	k.latest, k.skip, k.histFrom, k.histTo, k.histDirty = -1, 0, 0, 0, false
	k.skipSystem, k.sysDirty = false, false
}

// remember keeps the clean turns before the newest user message, and the
// system prompt when clean, unless the run they came from covers them.
func (k *masker) remember(req *wire.Request) {
	if k.histDirty || (k.skip >= k.latest && (k.skipSystem || k.sysDirty)) {
		return
	}
	rememberTurns(req, k.tenant, k.latest, k.skipSystem || !k.sysDirty)
}

// latestUser is the index of the newest user message, -1 when none.
func latestUser(req *wire.Request) int {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return i
		}
	}
	return -1
}

// blobLimit: a JSON string longer than this without any whitespace is taken
// for an encoded blob (base64 image or file data) and not scanned.
const blobLimit = 1024

// collect gathers the segments of a request, in request order (system,
// then messages), which is the order placeholders are numbered in.
func (k *masker) collect(req *wire.Request) {
	for i := range req.System {
		if k.skipSystem {
			break
		}
		b := &req.System[i]
		if b.Type != wire.BlockText {
			continue
		}
		if cfg.maskSystem {
			if b.Text != "" {
				k.segs = append(k.segs, segment{text: b.Text, blk: b, system: true})
			}
		} else {
			t0 := len(k.det.taken)
			k.noteTakenIn(b.Text)
			k.sysDirty = k.sysDirty || len(k.det.taken) > t0
		}
	}
	latest := latestUser(req)
	k.latest = latest
	skip := min(k.skip, max(latest, 0))
	k.histFrom, k.histTo = len(k.segs), len(k.segs)
	for i := skip; i < len(req.Messages); i++ {
		from := len(k.segs)
		if i == latest {
			k.histTo = from
		}
		for j := range req.Messages[i].Content {
			b := &req.Messages[i].Content[j]
			switch b.Type {
			case wire.BlockText:
				k.addText(b)
			case wire.BlockToolResult:
				if b.Text != "" {
					k.addText(b)
				}
				k.addJSON(b)
			case wire.BlockToolUse:
				k.addJSON(b)
			}
		}
		if i == latest {
			for s := from; s < len(k.segs); s++ {
				k.segs[s].latest = true
			}
		}
	}
}

func (k *masker) addText(b *wire.Block) {
	if b.Text != "" {
		k.segs = append(k.segs, segment{text: b.Text, blk: b})
	}
}

func (k *masker) addJSON(b *wire.Block) {
	if len(b.Data) == 0 {
		return
	}
	jsonStrings(b.Data, func(st, en int, esc bool) {
		raw := b.Data[st:en]
		if en-st < 3 || en-st > blobLimit && indexSpace(raw) < 0 {
			return
		}
		// A view, not a copy: the segment lives for this call, and the
		// memo copies what it keeps (memo.go).
		text := unsafe.String(&raw[0], len(raw))
		if esc {
			var ok bool
			if k.dec, ok = unescapeJSON(k.dec[:0], text); !ok {
				return
			}
			text = string(k.dec)
		}
		k.segs = append(k.segs, segment{text: text, blk: b, data: true, rs: st, re: en, escaped: esc, member: jsonMember(b.Data, st)})
	})
}

func indexSpace(b []byte) int {
	for i, c := range b {
		if cls[c]&cSpace != 0 {
			return i
		}
	}
	return -1
}

// noteTakenIn records the placeholder-shaped tokens of a text that is not
// masked (the system prompt with mask_system = false).
func (k *masker) noteTakenIn(s string) {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '[')
		if j < 0 {
			return
		}
		k.det.noteTaken(s, i+j)
		i += j + 1
	}
}

// findCustom runs the configured extra patterns over every segment with one
// host call: the segments are joined with NUL bytes and matches that cross
// one are dropped.
func (k *masker) findCustom() {
	if customSet == nil || len(k.segs) == 0 {
		return
	}
	var sb strings.Builder
	starts := make([]int, len(k.segs))
	for i := range k.segs {
		if i > 0 {
			sb.WriteByte(0)
		}
		starts[i] = sb.Len()
		sb.WriteString(k.segs[i].text)
	}
	for _, mt := range customSet.FindAll(sb.String()) {
		if mt.End <= mt.Start {
			continue
		}
		si := sort.SearchInts(starts, mt.Start+1) - 1
		if si < 0 || mt.End > starts[si]+len(k.segs[si].text) {
			continue
		}
		ent := nBuiltin + mt.Pattern
		if ent >= len(entities) || entities[ent].action == actOff {
			continue
		}
		k.custom = append(k.custom, segSpan{si, span{mt.Start - starts[si], mt.End - starts[si], ent}})
	}
	sort.SliceStable(k.custom, func(a, b int) bool { return k.custom[a].seg < k.custom[b].seg })
}

// detect finds every entity in every segment.
func (k *masker) detect() {
	if customSet != nil {
		k.findCustom()
	}
	c := 0
	for i := range k.segs {
		sg := &k.segs[i]
		sg.s0 = len(k.spans)
		sg.s1 = sg.s0
		// Short segments with no byte the scan stops at hold nothing it
		// finds (memo.go): most JSON member names, short values and
		// replies. Tested here, they cost no call.
		if len(sg.text) >= mnemonicMinLen || !noAnchor(sg.text) {
			t0 := len(k.det.taken)
			if sg.latest && k.skip > 0 {
				// The newest turn of a conversation clean so far: the next
				// request's kept run will cover it if it is clean
				// (history.go), so it is scanned, not remembered; were it
				// not clean, the next request scans it once and
				// remembers it then.
				k.det.member = sg.member
				k.spans = k.det.scan(sg.text, k.spans)
			} else {
				k.scanSegment(sg.text, sg.member)
			}
			if len(k.spans) > sg.s0 || len(k.det.taken) > t0 {
				if sg.system {
					k.sysDirty = true
				} else if i >= k.histFrom && i < k.histTo {
					k.histDirty = true
				}
			}
		}
		for c < len(k.custom) && k.custom[c].seg == i {
			k.spans = append(k.spans, k.custom[c].sp)
			c++
		}
		if len(k.spans) == sg.s0 {
			continue
		}
		kept := sortSpans(k.spans[sg.s0:], actionOf)
		k.spans = k.spans[:sg.s0+len(kept)]
		sg.s1 = len(k.spans)
		// Only the newest user message can block: a value in the system
		// prompt or an earlier turn is masked instead. The earlier turn was
		// either refused when it was new or let through by an older policy,
		// and refusing it again on every later turn would end the
		// conversation for good; masked, it still never goes upstream.
		for _, sp := range kept {
			if sg.latest && entities[sp.ent].action == actBlock && !containsInt(k.blocked, sp.ent) {
				k.blocked = append(k.blocked, sp.ent)
			}
		}
	}
	if len(k.det.taken) > 0 {
		k.taken = make(map[string]bool, len(k.det.taken))
		for _, t := range k.det.taken {
			k.taken[t] = true
		}
	}
}

func actionOf(ent int) int { return entities[ent].action }

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// replacement returns what a span's value becomes: a placeholder (the same
// for the same value everywhere in the request) or a redaction marker.
func (k *masker) replacement(sp span, text string) string {
	e := &entities[sp.ent]
	if e.action == actRedact {
		k.redacted++
		return "[REDACTED_" + e.tag + "]"
	}
	k.masked++
	val := text[sp.start:sp.end]
	key := e.tag + "\x00" + val
	if ph, ok := k.keys[key]; ok {
		return ph
	}
	n := k.next[e.tag]
	var ph string
	for {
		n++
		ph = "[" + e.tag + "_" + strconv.Itoa(n) + "]"
		if !k.taken[ph] {
			break
		}
	}
	k.next[e.tag] = n
	k.keys[key] = ph
	k.m.add(ph, val)
	return ph
}

func (k *masker) render(dst []byte, text string, sp []span) []byte {
	last := 0
	for _, x := range sp {
		dst = append(dst, text[last:x.start]...)
		dst = append(dst, k.replacement(x, text)...)
		last = x.end
	}
	return append(dst, text[last:]...)
}

// rewrite replaces the detected values in the request's blocks and reports
// whether the system prompt changed.
func (k *masker) rewrite() (systemChanged bool) {
	var (
		curBlk  *wire.Block
		newData []byte
		lastRaw int
	)
	finish := func() {
		if curBlk != nil {
			newData = append(newData, curBlk.Data[lastRaw:]...)
			curBlk.Data = newData
			curBlk, newData = nil, nil
		}
	}
	for i := range k.segs {
		sg := &k.segs[i]
		if sg.s0 == sg.s1 {
			continue
		}
		sp := k.spans[sg.s0:sg.s1]
		if !sg.data {
			k.buf = k.render(k.buf[:0], sg.text, sp)
			sg.blk.Text = string(k.buf)
			if sg.system {
				systemChanged = true
			}
			continue
		}
		if curBlk != sg.blk {
			finish()
			curBlk, lastRaw = sg.blk, 0
			newData = make([]byte, 0, len(sg.blk.Data)+64)
		}
		newData = append(newData, curBlk.Data[lastRaw:sg.rs]...)
		if sg.escaped {
			k.buf = k.render(k.buf[:0], sg.text, sp)
			newData = appendJSONEscaped(newData, string(k.buf))
		} else {
			newData = k.render(newData, sg.text, sp)
		}
		lastRaw = sg.re
	}
	finish()
	return systemChanged
}

// blockMessage names the entity kinds that blocked a request — never the
// values.
func blockMessage(ents []int) string {
	var sb strings.Builder
	sb.WriteString("request blocked by the PII policy: it contains ")
	for i, e := range ents {
		switch {
		case i == 0:
		case i == len(ents)-1:
			sb.WriteString(" and ")
		default:
			sb.WriteString(", ")
		}
		sb.WriteString(entities[e].label)
		sb.WriteString(" (" + entities[e].name + ")")
	}
	sb.WriteString("; remove it and retry")
	return sb.String()
}

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	// The answer phases only restore masked values: with no mapping they
	// have nothing to do (respond.go).
	res.SkipAnswer = true
	k := &work
	k.reset()
	if !k.seeded || req.Meta.Tenant != k.tenant {
		// A copy: the input is the call's, and the next call writes over it.
		k.tenant = strings.Clone(req.Meta.Tenant)
		k.seed, k.seeded = tenantSeed(k.tenant), true
	}
	k.skip, k.skipSystem = cleanTurns(&req.Request, k.tenant, latestUser(&req.Request))
	k.collect(&req.Request)
	if len(k.segs) == 0 {
		k.remember(&req.Request)
		return nil
	}
	k.detect()
	k.remember(&req.Request)
	if len(k.blocked) > 0 {
		plugin.CounterAdd("pii_blocked_total", 1)
		res.Action = wire.ActionReject
		res.Error = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: blockMessage(k.blocked)}
		return nil
	}
	if len(k.spans) == 0 {
		return nil
	}
	systemChanged := k.rewrite()
	if len(k.m.ph) > 0 {
		sealed, key, err := seal(&k.m)
		if err == nil {
			err = plugin.KVPut(kvKey(req.Meta.RequestID), sealed, cfg.mappingTTL)
		}
		if err != nil {
			// Fail closed: the request must not go on unmasked, and masked
			// without a mapping the answer could not be restored.
			plugin.Log(plugin.LevelError, "pii: storing the placeholder mapping failed: "+err.Error())
			res.Action = wire.ActionReject
			res.Error = &wire.Error{Status: 503, Kind: wire.ErrInternal, Retryable: true,
				Message: "the PII layer could not store its placeholder mapping; the request was not sent upstream"}
			return nil
		}
		res.Annotations = append(res.Annotations, wire.KV{Key: annKey, Value: key})
		res.SkipAnswer = false
	}
	res.Patched = wire.PartMessages
	res.Request.Messages = req.Request.Messages
	if systemChanged {
		res.Patched |= wire.PartSystem
		res.Request.System = req.Request.System
	}
	res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-PII",
		Value: strconv.Itoa(k.masked) + " masked, " + strconv.Itoa(k.redacted) + " redacted"})
	if k.masked > 0 {
		plugin.CounterAdd("pii_masked_total", float64(k.masked))
	}
	if k.redacted > 0 {
		plugin.CounterAdd("pii_redacted_total", float64(k.redacted))
	}
	return nil
}
