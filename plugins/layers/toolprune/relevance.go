package main

// The relevance rule (README.md, "Relevance"): terms of the conversation are
// weighted by where they appear — the words the user wrote in the session's
// first prompt (stability "session") or in the last user message with words
// (stability "turn") 4, in the other user messages among the last
// recent_messages 2 ("turn" only), the system prompt 1 — and a task-type hint
// whose trigger word appears with weight w lends its boost words weight w-1.
// A tool scores, over its distinct terms, 2×weight for a term of its name
// and 1×weight for a term only in its description. Only what the user wrote
// counts: text blocks of user messages without the harness's injected spans
// (agent.go); tool results, assistant turns and reminders do not.
//
// Terms: ASCII letters lower-cased; words split on anything that is not a
// letter or digit (non-ASCII characters count as letters, except common
// Unicode punctuation and spaces, see sepLen) and at camelCase
// boundaries (fooBar, HTTPServer, v3Pool); stopwords and one-character words
// dropped, pure numbers dropped; a light plural stemmer (policies→policy,
// addresses→address, matches→match, prices→price).
//
// Inside wasm the costly part is turning tool definitions into terms, and an
// agent sends the same tools on every request: each instance keeps the terms
// of the tools it has seen (keyed by name, checked against the description)
// as ids into a vocabulary of tool-side terms. Conversation words that are
// not in the vocabulary cannot match any tool and are dropped after one map
// lookup.

import (
	"strings"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Weights by where a conversation term appears.
const (
	weightLastUser = 4
	weightRecent   = 2
	weightSystem   = 1
)

// Scan limits per text block, so a long paste costs a bounded amount: the
// tail of the user's words in a block (the latest ones), the head of the
// system prompt (where the agent's role is described). Tool names are
// looked for in the whole block.
const (
	scanUser   = 4096
	scanSystem = 4096
)

// Bounds of the per-instance caches; past them they are rebuilt.
const (
	maxVocab     = 1 << 16
	maxToolCache = 4096
	maxScans     = 8192
)

type toolTerms struct {
	name0 string // the tool's name
	desc  string
	name  []uint32 // distinct term ids of the name
	body  []uint32 // distinct term ids of the description, not in the name
	// key are the distinct term ids of the name's last "__" segment (an
	// MCP tool's own name): the user's words asking for the tool hold them all.
	key   []uint32
	ident bool // identLike(name): its exact appearance in text names the tool
	core  bool // in core_tools or always_keep (the configuration is fixed per instance)
}

type hint struct {
	when  []string // normalized trigger terms
	boost []string // normalized boost terms
	ids   []uint32 // the boost terms' ids
}

var (
	// vocab holds every term a conversation word can usefully match: the
	// terms of tool names and descriptions and the hints' trigger and boost
	// words. Ids start at 1.
	vocab     = map[string]uint32{}
	triggerOf [][]int32 // by term id: the hints it triggers
	hints     []hint
	toolCache = map[string]*toolTerms{}
	// lastTerms are the previous request's tools in order: an agent sends
	// the same list every turn, and comparing strings is cheaper inside
	// wasm than hashing them for the map.
	lastTerms []*toolTerms

	// blocks caches, by SHA-256 of a text block, what was found in it:
	// conversations are append-only, so most of a request's text was
	// analyzed for the previous one. Valid while the vocabulary does not
	// grow (blocksVocab); the tools a block asks for, while the tool list
	// is the same (toolsGen).
	blocks      = map[[32]byte]*blockInfo{}
	blocksVocab int
	toolsGen    uint32

	// Per-request conversation weights by term id, valid where stamp == gen,
	// and the scratch that makes a scan's ids distinct.
	weights  []uint8
	stamp    []uint32
	gen      uint32
	seen     []uint32
	seenScan uint32
	// mark[id] == markGen: the term is among the words of the block being
	// checked for the tools it asks for.
	mark    []uint32
	markGen uint32

	// Scratch reused by every request of the instance.
	tok          tokenizer
	termsScratch []*toolTerms
	scoreScratch []int
)

// setHints installs the hint table (from Init) and resets the caches.
func setHints(hs []hintConfig) {
	hints = hints[:0]
	for _, h := range hs {
		var d hint
		for _, w := range h.When {
			d.when = appendTerms(d.when, w)
		}
		for _, w := range h.Boost {
			d.boost = appendTerms(d.boost, w)
		}
		hints = append(hints, d)
	}
	resetCaches()
}

func appendTerms(dst []string, s string) []string {
	var t tokenizer
	t.reset(s, 0, len(s), true)
	for {
		term, ok := t.next()
		if !ok {
			return dst
		}
		dst = append(dst, string(term))
	}
}

// resetCaches empties the vocabulary and every cache, then interns the
// hints' words again.
func resetCaches() {
	clear(vocab)
	clear(toolCache)
	clear(lastTerms)
	lastTerms = lastTerms[:0]
	clear(blocks)
	clear(lastSystem)
	toolsGen++
	weights, stamp, gen = weights[:0], stamp[:0], 0
	seen, seenScan = seen[:0], 0
	mark, markGen = mark[:0], 0
	triggerOf = triggerOf[:0]
	for i := range hints {
		h := &hints[i]
		for _, w := range h.when {
			id := intern(w)
			for len(triggerOf) <= int(id) {
				triggerOf = append(triggerOf, nil)
			}
			if l := triggerOf[id]; len(l) == 0 || l[len(l)-1] != int32(i) {
				triggerOf[id] = append(l, int32(i))
			}
		}
	}
	for i := range hints {
		h := &hints[i]
		h.ids = h.ids[:0]
		for _, b := range h.boost {
			h.ids = append(h.ids, intern(b))
		}
	}
	blocksVocab = len(vocab)
}

func intern(term string) uint32 {
	if id, ok := vocab[term]; ok {
		return id
	}
	id := uint32(len(vocab) + 1)
	vocab[term] = id
	return id
}

func internBytes(term []byte) uint32 {
	if id, ok := vocab[string(term)]; ok { // no allocation for the lookup
		return id
	}
	return intern(string(term))
}

// termsOf returns the cached terms of a tool, computing them on first sight
// or when its description changed.
func termsOf(i int, t *wire.Tool) *toolTerms {
	if i < len(lastTerms) {
		if tt := lastTerms[i]; memo.EqualString(tt.name0, t.Name) && memo.EqualString(tt.desc, t.Description) {
			return tt
		}
	}
	if tt, ok := toolCache[t.Name]; ok && tt.desc == t.Description {
		return tt
	}
	tt := &toolTerms{name0: strings.Clone(t.Name), desc: strings.Clone(t.Description),
		ident: identLike(t.Name), core: isPinned(cfg.alwaysKeep, t.Name)}
	tok.reset(t.Name, 0, len(t.Name), true)
	for {
		term, ok := tok.next()
		if !ok {
			break
		}
		tt.name = addID(tt.name, internBytes(term))
	}
	seg := t.Name
	if i := strings.LastIndex(seg, "__"); i >= 0 {
		seg = seg[i+2:]
	}
	tok.reset(seg, 0, len(seg), true)
	for {
		term, ok := tok.next()
		if !ok {
			break
		}
		tt.key = addID(tt.key, internBytes(term))
	}
	tok.reset(t.Description, 0, len(t.Description), true)
	for {
		term, ok := tok.next()
		if !ok {
			break
		}
		id := internBytes(term)
		if !hasID(tt.name, id) {
			tt.body = addID(tt.body, id)
		}
	}
	toolCache[tt.name0] = tt
	return tt
}

func hasID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func addID(ids []uint32, id uint32) []uint32 {
	if hasID(ids, id) {
		return ids
	}
	return append(ids, id)
}

// scoreTools returns each tool's relevance to the conversation (valid until
// the next call). It also makes the vocabulary complete for the request and
// the tools' terms current, which needs and namedIn rely on.
func scoreTools(r *wire.Request, c *config) []int {
	// Reset before, never during, a request: ids must stay valid for all its tools.
	if len(vocab) > maxVocab || len(toolCache)+len(r.Tools) > maxToolCache {
		resetCaches()
	}
	terms := termsScratch[:0]
	same := len(lastTerms) == len(r.Tools)
	for i := range r.Tools {
		tt := termsOf(i, &r.Tools[i])
		same = same && lastTerms[i] == tt
		terms = append(terms, tt)
	}
	termsScratch = terms
	if !same {
		toolsGen++ // the tools a cached block asks for are by index
		lastTerms = append(lastTerms[:0], terms...)
	}
	// The vocabulary is complete for this request.
	if len(vocab) != blocksVocab || len(blocks) > maxScans {
		clear(blocks)
		clear(lastSystem)
		blocksVocab = len(vocab)
	}
	if n := len(vocab) + 1; len(weights) < n {
		weights = append(weights, make([]uint8, n-len(weights))...)
		stamp = append(stamp, make([]uint32, n-len(stamp))...)
		seen = append(seen, make([]uint32, n-len(seen))...)
		mark = append(mark, make([]uint32, n-len(mark))...)
	}
	gen++
	if gen == 0 { // wrapped: old stamps could collide
		clear(stamp)
		gen = 1
	}
	weighConversation(r, c)
	scores := scoreScratch[:0]
	for _, tt := range terms {
		s := 0
		for _, id := range tt.name {
			s += 2 * weightOf(id)
		}
		for _, id := range tt.body {
			s += weightOf(id)
		}
		scores = append(scores, s)
	}
	scoreScratch = scores
	return scores
}

func weightOf(id uint32) int {
	if stamp[id] != gen {
		return 0
	}
	return int(weights[id])
}

func raise(id uint32, w uint8) {
	if stamp[id] != gen {
		stamp[id], weights[id] = gen, w
	} else if w > weights[id] {
		weights[id] = w
	}
}

// firstPrompt returns the session's first prompt, msgs[from:to]: the first
// run of user messages (Codex sends its instructions, environment and prompt
// as three), across any system message among them, up to the first
// assistant turn. Every later request of the session repeats it unchanged,
// so what is decided from it stays decided.
func firstPrompt(msgs []wire.Message) (from, to int) {
	for from < len(msgs) && msgs[from].Role != "user" {
		from++
	}
	to = from
	for to < len(msgs) && msgs[to].Role != "assistant" {
		to++
	}
	return from, to
}

// lastWords returns the index of the last user message with words of the
// user's own in a text block, or -1.
func lastWords(msgs []wire.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		for j := range msgs[i].Content {
			if b := &msgs[i].Content[j]; b.Type == wire.BlockText && b.Text != "" && analyze(b.Text, false).words {
				return i
			}
		}
	}
	return -1
}

// weighConversation sets this request's weight of every vocabulary term the
// conversation mentions.
func weighConversation(r *wire.Request, c *config) {
	msgs := r.Messages
	for i := range r.System {
		if b := &r.System[i]; b.Type == wire.BlockText && b.Text != "" {
			weigh(analyzeSystem(i, b.Text).ids, weightSystem)
		}
	}
	if c.session {
		from, to := firstPrompt(msgs)
		weighUser(msgs[from:to], weightLastUser)
		return
	}
	last := lastWords(msgs)
	for i := max(0, len(msgs)-c.recent); i < len(msgs); i++ {
		if i != last {
			weighUser(msgs[i:i+1], weightRecent)
		}
	}
	if last >= 0 {
		weighUser(msgs[last:last+1], weightLastUser)
	}
}

// weighUser gives the user's words in msgs weight w.
func weighUser(msgs []wire.Message, w uint8) {
	for i := range msgs {
		if msgs[i].Role != "user" {
			continue
		}
		for j := range msgs[i].Content {
			if b := &msgs[i].Content[j]; b.Type == wire.BlockText && b.Text != "" {
				weigh(analyze(b.Text, false).ids, w)
			}
		}
	}
}

// weigh gives the terms ids weight w, and a hint's boost terms w-1 when one
// of them triggers it.
func weigh(ids []uint32, w uint8) {
	for _, id := range ids {
		raise(id, w)
		if w <= 1 || int(id) >= len(triggerOf) {
			continue
		}
		for _, h := range triggerOf[id] {
			for _, b := range hints[h].ids {
				raise(b, w-1)
			}
		}
	}
}

// blockInfo is what a text block holds for the layer.
type blockInfo struct {
	ids    []uint32 // distinct vocabulary ids of the user's words (the system prompt: of its head)
	words  bool     // the user wrote something in it (not only injected spans)
	system bool     // a system prompt block: only tool names written out count
	idents []string // identifier-like words anywhere in it, injected spans included
	// The indexes of the tools it names, and of those it asks for (nil:
	// not computed yet), valid while needsGen == toolsGen (needsOf).
	named, asked []int32
	needsGen     uint32
}

// lastSystem are the previous request's system blocks and what they hold:
// an agent's system prompt is long (9–90 KB) and the same on every turn, so
// comparing it with the last one is cheaper than hashing it.
var lastSystem []systemBlock

type systemBlock struct {
	text string
	bi   *blockInfo
}

// analyzeSystem is analyze for the i-th system block.
func analyzeSystem(i int, s string) *blockInfo {
	if i < len(lastSystem) && lastSystem[i].bi != nil && memo.EqualString(lastSystem[i].text, s) {
		return lastSystem[i].bi
	}
	bi := analyze(s, true)
	for len(lastSystem) <= i {
		lastSystem = append(lastSystem, systemBlock{})
	}
	lastSystem[i].text, lastSystem[i].bi = strings.Clone(s), bi
	return bi
}

// analyze returns what the text block s holds, from the cache when it can.
// A system block is read as the agent's instructions (its head), a message
// block as the user's words around the harness's injected spans.
func analyze(s string, system bool) *blockInfo {
	// The host hashes natively; the text is only read.
	key := plugin.SHA256(unsafe.Slice(unsafe.StringData(s), len(s)))
	if system {
		key[0] ^= 0xff
	}
	if bi, ok := blocks[key]; ok {
		return bi
	}
	bi := &blockInfo{system: system}
	if system {
		bi.ids = scanIDs(s, 0, min(len(s), scanSystem))
		bi.idents = appendIdents(nil, s)
	} else {
		user, injected := splitInjected(s)
		bi.ids = scanIDs(user, max(0, len(user)-scanUser), len(user))
		bi.words = strings.TrimSpace(user) != ""
		bi.idents = appendIdents(appendIdents(nil, user), injected)
	}
	blocks[key] = bi
	return bi
}

// needsOf returns the indexes of the tools the block bi asks for: a tool
// whose identifier-like name it writes out (the user's words or the
// harness's: "call ExitPlanMode"), and, with words, a tool all of whose
// name terms are among the user's own words ("search the web" for
// WebSearch, "create an issue" for mcp__github__create_issue). Words count
// only in a later turn: in the prompt a choice is made on, relevance weighs
// them against every other tool's.
func needsOf(bi *blockInfo, terms []*toolTerms, words bool) []int32 {
	if bi.needsGen != toolsGen {
		bi.named, bi.asked, bi.needsGen = namedIn(bi, terms, bi.named[:0]), nil, toolsGen
	}
	if !words || bi.system {
		return bi.named
	}
	if bi.asked != nil {
		return bi.asked
	}
	bi.asked = append([]int32{}, bi.named...)
	markGen++
	if markGen == 0 {
		clear(mark)
		markGen = 1
	}
	for _, id := range bi.ids {
		mark[id] = markGen
	}
	for i, tt := range terms {
		if len(tt.key) == 0 || hasInt(bi.named, int32(i)) {
			continue
		}
		all := true
		for _, id := range tt.key {
			if mark[id] != markGen {
				all = false
				break
			}
		}
		if all {
			bi.asked = append(bi.asked, int32(i))
		}
	}
	return bi.asked
}

// namedIn appends to dst the indexes of the tools with an identifier-like
// name that bi writes out.
func namedIn(bi *blockInfo, terms []*toolTerms, dst []int32) []int32 {
	if len(bi.idents) == 0 {
		return dst
	}
	for i, tt := range terms {
		if tt.ident && hasString(bi.idents, tt.name0) {
			dst = append(dst, int32(i))
		}
	}
	return dst
}

func hasInt(l []int32, x int32) bool {
	for _, y := range l {
		if y == x {
			return true
		}
	}
	return false
}

// markNeeds sets need[i] for every tool that a text block of a user message
// in msgs asks for (needsOf, with or without the user's words), or that a
// system message (Claude Code's mid-conversation instructions) names, and
// returns how many it set. Tool results do not ask: a file listing that
// names a tool is not a request for it.
func markNeeds(msgs []wire.Message, need []bool, words bool) int {
	n := 0
	for i := range msgs {
		role := msgs[i].Role
		if role != "user" && role != "system" {
			continue
		}
		for j := range msgs[i].Content {
			b := &msgs[i].Content[j]
			if b.Type != wire.BlockText || b.Text == "" {
				continue
			}
			for _, t := range needsOf(analyze(b.Text, role == "system"), termsScratch, words) {
				if !need[t] {
					need[t] = true
					n++
				}
			}
		}
	}
	return n
}

// markNamedInSystem sets need[i] for every tool with an identifier-like
// name that the system prompt writes out: the agent's own instructions rely
// on it.
func markNamedInSystem(r *wire.Request, need []bool) {
	for i := range r.System {
		if b := &r.System[i]; b.Type == wire.BlockText && b.Text != "" {
			for _, t := range needsOf(analyzeSystem(i, b.Text), termsScratch, false) {
				need[t] = true
			}
		}
	}
}

// scanIDs returns the distinct vocabulary ids of the terms in s[from:to]
// (from moved to a word boundary).
func scanIDs(s string, from, to int) []uint32 {
	from = wordBoundary(s, from, to)
	ids := []uint32{} // not nil: "nothing" is cached too
	if from >= to {
		return ids
	}
	seenScan++
	if seenScan == 0 {
		clear(seen)
		seenScan = 1
	}
	tok.reset(s, from, to, false)
	for {
		term, ok := tok.next()
		if !ok {
			break
		}
		id, ok := vocab[string(term)]
		if !ok || seen[id] == seenScan || tok.stop() {
			continue
		}
		seen[id] = seenScan
		ids = append(ids, id)
	}
	return ids
}

// tokenizer yields the terms of s[from:to] in a reused buffer. With filter,
// stopwords are dropped; without, the caller asks stop() for the words it
// keeps (conversation words only matter when they are in the vocabulary,
// which holds no stopword, so checking after the lookup is cheaper).
type tokenizer struct {
	s      string
	i, end int
	buf    []byte
	n      int // length of the last word before stemming
	filter bool
}

func (t *tokenizer) reset(s string, from, to int, filter bool) {
	t.s, t.i, t.end, t.filter = s, wordBoundary(s, from, to), to, filter
}

// wordBoundary moves from past a word it cuts, so a window does not start
// with half a word.
func wordBoundary(s string, from, to int) int {
	for from > 0 && from < to && sepLen(s, from-1, to) == 0 && sepLen(s, from, to) == 0 {
		from++
	}
	return from
}

// stop reports whether the last word is a stopword. Stemming only shortens
// a word, or turns the "ies" of a word of five letters or more into "yes";
// no such stopword ends in either, so the buffer still tells (a test checks).
func (t *tokenizer) stop() bool {
	_, ok := stopwords[string(t.buf[:t.n])]
	return ok
}

// sepLen is the length of the separator at s[i], or 0 when s[i] is part of
// a word: ASCII letters and digits, and any non-ASCII character except the
// punctuation of U+0080–U+00BF (no-break space, «, », °…) and U+2000–U+207F
// (typographic spaces, dashes, quotes, ellipsis), which LLM text is full of.
func sepLen(s string, i, end int) int {
	c := s[i]
	switch {
	case c < 0x80:
		if isUpper(c) || isLower(c) || isDigit(c) {
			return 0
		}
		return 1
	case c == 0xC2:
		return 2
	case c == 0xE2 && i+1 < end && (s[i+1] == 0x80 || s[i+1] == 0x81):
		return 3
	}
	return 0
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// next returns the next term; the slice is valid until the next call.
func (t *tokenizer) next() ([]byte, bool) {
	s := t.s
	for t.i < t.end {
		for t.i < t.end {
			n := sepLen(s, t.i, t.end)
			if n == 0 {
				break
			}
			t.i += n
		}
		if t.i >= t.end {
			break
		}
		start := t.i
		t.i++
		digits := isDigit(s[start])
		for t.i < t.end && sepLen(s, t.i, t.end) == 0 {
			c := s[t.i]
			if isUpper(c) {
				p := s[t.i-1]
				if isLower(p) || isDigit(p) || isUpper(p) && t.i+1 < t.end && isLower(s[t.i+1]) {
					break // camelCase boundary
				}
			}
			digits = digits && isDigit(c)
			t.i++
		}
		if t.i-start < 2 || digits {
			continue
		}
		b := t.buf[:0]
		for k := start; k < t.i; k++ {
			c := s[k]
			if isUpper(c) {
				c += 'a' - 'A'
			}
			b = append(b, c)
		}
		t.buf, t.n = b, len(b)
		if t.filter && t.stop() {
			continue
		}
		return stem(b), true
	}
	return nil, false
}

// stem removes a plural ending.
func stem(b []byte) []byte {
	n := len(b)
	switch {
	case n > 4 && string(b[n-3:]) == "ies":
		return append(b[:n-3], 'y')
	case n > 4 && string(b[n-4:]) == "sses":
		return b[:n-2]
	case n > 4 && (string(b[n-3:]) == "xes" || string(b[n-4:]) == "ches" || string(b[n-4:]) == "shes"):
		return b[:n-2]
	case n > 3 && b[n-1] == 's' && b[n-2] != 's' && b[n-2] != 'u' && b[n-2] != 'i':
		return b[:n-1]
	}
	return b
}

// stopwords are dropped before stemming: English function words, the
// politeness and filler of chat turns, and the words every tool description
// uses ("get", "returns", "specified") that say nothing about the task.
var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`
a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing done down during each
either else etc even ever every few for from further had has have having he her here hers
herself him himself his how however if in into is it its itself just least less let like
may me might more most much must my myself neither no nor not now of off often on once only
or other our ours ourselves out over own per please rather same shall she should since so
some such than that the their theirs them themselves then there these they this those
though through thus to too under until up upon us very via was we were what whatever when
where whether which while who whom whose why will with within without would yet you your
yours yourself yourselves ok okay hi hello hey thanks thank sure yes want wants need needs
help know tell give show let lets make makes go going get gets got set sets use uses used
using tool tools function functions call calls called return returns returned given specified
provided provide provides optional required result results input output
parameter parameters field fields object string number boolean array type default e.g i.e
`) {
		m[w] = struct{}{}
	}
	return m
}()

// defaultHints are the built-in task-type hints: when a trigger word appears
// in the conversation, tools whose name or description use a boost word gain
// relevance, so "what is ETH worth" finds get_token_price.
var defaultHints = []hintConfig{
	{When: []string{"price", "prices", "quote", "worth", "cost", "value", "valuation", "market", "chart", "ohlc", "candle", "ticker", "rate", "expensive", "cheap"},
		Boost: []string{"price", "quote", "market", "oracle", "ticker", "chart", "candle", "ohlc", "rate", "feed"}},
	{When: []string{"swap", "trade", "buy", "sell", "exchange", "convert", "slippage", "route", "dex"},
		Boost: []string{"swap", "trade", "order", "quote", "route", "dex", "exchange", "slippage", "aggregator"}},
	{When: []string{"balance", "balances", "portfolio", "holdings", "hold", "wallet", "funds", "net"},
		Boost: []string{"balance", "portfolio", "holding", "wallet", "account", "position", "asset"}},
	{When: []string{"borrow", "lend", "loan", "collateral", "liquidation", "liquidated", "health", "leverage", "debt", "repay"},
		Boost: []string{"borrow", "lend", "lending", "loan", "collateral", "liquidation", "health", "position", "debt", "repay", "reserve"}},
	{When: []string{"yield", "apy", "apr", "interest", "stake", "staking", "farm", "rewards", "vault"},
		Boost: []string{"yield", "apy", "apr", "rate", "stake", "staking", "reward", "vault", "farm", "pool"}},
	{When: []string{"liquidity", "pool", "lp", "range", "rebalance", "impermanent"},
		Boost: []string{"liquidity", "pool", "lp", "position", "range", "tick", "fee", "rebalance"}},
	{When: []string{"send", "transfer", "pay", "payment", "bridge"},
		Boost: []string{"transfer", "send", "payment", "bridge", "recipient"}},
	{When: []string{"gas", "fee", "fees", "transaction", "tx", "nonce", "confirm", "pending", "receipt"},
		Boost: []string{"gas", "fee", "transaction", "tx", "nonce", "receipt", "simulate", "estimate"}},
	{When: []string{"risk", "volatility", "volatile", "exposure", "drawdown"},
		Boost: []string{"risk", "volatility", "exposure", "health", "liquidation", "simulate"}},
	{When: []string{"search", "find", "lookup", "news", "research", "web"},
		Boost: []string{"search", "query", "find", "lookup", "news", "web", "browse"}},
	{When: []string{"file", "files", "read", "write", "edit", "code", "directory", "folder"},
		Boost: []string{"file", "read", "write", "edit", "directory", "path", "code"}},
	{When: []string{"email", "mail", "message", "notify", "alert", "slack"},
		Boost: []string{"email", "mail", "message", "notify", "notification", "alert", "send"}},
	{When: []string{"schedule", "meeting", "calendar", "remind", "reminder"},
		Boost: []string{"calendar", "event", "schedule", "meeting", "reminder"}},
}
