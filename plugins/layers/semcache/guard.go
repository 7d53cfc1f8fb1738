package main

import (
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// The guard. Within one context, a stored answer may serve a new question
// only when the two questions are the same question. An embedding cannot
// tell: averaged word vectors of questions that differ only in "-p 8080:80"
// and "-p 80:8080", "pytest" and "unittest", "$?" and "$!" score 1.0000
// (and a small transformer's pooled output is dominated by the shared
// words too). So the guard decides, on the questions' words:
//
//   - strict (the default): both questions normalise to the same sequence
//     of content words. Normalising forgets what never changes an answer —
//     case, punctuation, backticks, contractions ("what's" = "what is"),
//     polite and framing words ("please", "can you", "explain", "what is"),
//     plural endings, a fronted phrase ("In Go, how do I…" = "How do I… in
//     Go"), a few synonyms (delete/remove, compose/write, deposit/supply) —
//     and keeps everything else in order, so a number, a port mapping, an
//     identifier, an operator, a negation or a swapped pair of names blocks
//     the hit.
//   - rewording (allow_rewording, for a sentence encoder that can tell
//     paraphrases apart; never with tools): the content words may differ,
//     but the salient ones — numbers, symbols and code, names, negations,
//     opposites, units, question words — must be the same, in the same
//     order.

// qtoken is one normalised word of a question.
type qtoken struct {
	w       string
	salient bool
}

// fillers are dropped: words that frame a question without changing what
// it asks. Tense ("was", "did"), person ("my", "your") and modality
// ("should") are kept: they change answers.
var fillers = set("a", "an", "the", "please", "pls", "plz", "kindly", "can", "could", "would",
	"do", "does", "is", "are", "am", "be", "what", "explain", "describe", "define", "definition", "tell", "about",
	"mean", "meaning", "means", "overview", "give", "now", "just", "question", "also", "really", "actually",
	"basically", "us", "let")

// greetings are dropped only before the first content word ("Hi! Thanks,
// now …"): "print hello" is not "print".
var thanks = set("thanks", "thank", "thx")

var greetings = set("hi", "hey", "hello", "thanks", "thank", "thx", "ok", "okay", "so", "well", "hmm", "yo")

// framing are the pronouns that only frame a request after certain words
// ("can you", "tell me", "how do I", "thank you"); anywhere else they are
// what is asked about ("who are you?" is not "who am I?").
var framing = map[string]map[string]bool{
	"you": set("can", "could", "would", "will", "do", "did", "thank"),
	"u":   set("can", "could", "would", "will", "do", "did", "thank"),
	"me":  set("tell", "give", "show", "let", "send"),
	"i":   set("do", "can", "could", "should", "would", "may", "might", "shall", "will", "how"),
}

// synonyms map a word to the one it stands for in every context this
// cache sees (after plural endings are removed).
var synonyms = map[string]string{
	"delete": "remove", "erase": "remove", "display": "show", "view": "show", "see": "show",
	"biggest": "largest", "big": "large", "compose": "write", "kid": "child", "begin": "start",
	"deposit": "supply", "into": "to", "onto": "to", "find": "get", "using": "with",
}

// isWords take "'s" as "is" ("what's", "it's"); elsewhere it is a possessive.
var isWords = set("what", "that", "it", "there", "here", "who", "where", "how", "when", "why", "which", "he", "she")

// joined are contractions written without the apostrophe.
var joined = map[string][]string{
	"whats": {"what", "is"}, "dont": {"do", "not"}, "doesnt": {"does", "not"}, "didnt": {"did", "not"},
	"isnt": {"is", "not"}, "cant": {"can", "not"}, "cannot": {"can", "not"}, "arent": {"are", "not"},
	"shouldnt": {"should", "not"}, "wouldnt": {"would", "not"}, "couldnt": {"could", "not"},
	"hasnt": {"has", "not"}, "havent": {"have", "not"}, "wasnt": {"was", "not"}, "werent": {"were", "not"},
}

// frontable are the prepositions of a phrase a question may start with and
// end with alike ("In Go, how do I…?" = "How do I… in Go?").
var frontable = set("in", "on", "with", "using", "for", "at", "inside", "within", "via")

// Salient word classes (rewording mode): words that flip an answer when
// they differ, although their vectors are close.
var (
	negations = set("not", "no", "never", "without", "nor", "none", "nothing", "neither", "non")
	questions = set("how", "why", "when", "where", "who", "whom", "whose", "which")
	units     = set("second", "minute", "hour", "day", "week", "month", "year", "mile", "kilometer", "km", "meter",
		"feet", "foot", "yard", "inche", "inch", "pound", "ounce", "gram", "kg", "liter", "gallon", "quart", "gwei",
		"wei", "bp", "percent", "celsius", "fahrenheit", "kelvin", "byte", "kb", "mb", "gb", "tb", "millisecond",
		"microsecond", "nanosecond", "euro", "dollar", "cent")
	opposites = set("enable", "disable", "enabled", "disabled", "buy", "sell", "long", "short", "withdraw", "supply",
		"borrow", "lend", "stake", "unstake", "increase", "decrease", "add", "remove", "open", "close", "closed",
		"above", "below", "allow", "deny", "lock", "unlock", "true", "false", "bullish", "bearish", "max", "min",
		"maximum", "minimum", "higher", "lower", "before", "after", "mint", "burn", "wrap", "unwrap", "approve",
		"revoke", "accept", "reject", "start", "stop", "include", "exclude", "encrypt", "decrypt", "import",
		"export", "upgrade", "downgrade", "yes", "input", "output", "rise", "drop", "fall", "up", "down", "gain",
		"loss", "profit", "best", "worst", "first", "last", "read", "write", "push", "pull", "encode", "decode",
		"serialize", "deserialize", "upper", "left", "right", "in", "out", "on", "off", "pro", "con",
		"advantage", "disadvantage", "today", "yesterday", "tomorrow", "hot", "cold", "win", "lose", "less",
		"more", "greater", "smaller", "faster", "slower", "safe", "unsafe", "all", "half", "none", "any",
		"connect", "disconnect", "upload", "download", "install", "uninstall", "mount", "unmount", "hide",
		"unhide", "show", "pin", "unpin", "block", "unblock", "follow", "unfollow", "subscribe", "unsubscribe",
		"stage", "unstage", "zip", "unzip", "compress", "decompress", "archive", "unarchive", "freeze", "thaw")
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// wordClass is what the word lists above say of one word.
type wordClass uint16

const (
	wFiller wordClass = 1 << iota
	wGreeting
	wThanks
	wFraming // a key of framing
	wSynonym // a key of synonyms
	wNegation
	wQuestion
	wUnit
	wOpposite
	wJoined    // a key of joined
	wIsWord    // in isWords
	wUnstemmed // in unstemmed
	wFrontable // in frontable

	wSalient = wNegation | wQuestion | wUnit | wOpposite
)

// lexEntry is everything the word lists say of one word, so that
// normalize looks a word up once (inside wasm a Go map lookup — a string
// hash, a probe, a compare, four calls — costs about half a microsecond,
// and a question's words went through three to five of them each).
type lexEntry struct {
	key   string
	class wordClass
	// frames is a framing pronoun's bit; framedBy has the bit of every
	// pronoun this word frames when it comes just before it ("can" frames
	// "you" and "i"): framing[w][prev] is frames(w) & framedBy(prev).
	frames, framedBy uint8
	syn              string    // synonyms[key]
	synClass         wordClass // the class of syn
	joined           [2]string // joined[key]
}

// lexTable is the word lists as an open-addressing hash table keyed by
// FNV-1a, looked up with byte loops: no call but the lookup itself.
type lexTable struct {
	slots   []uint16   // index into entries; 0 = empty
	entries []lexEntry // entries[0] is the empty entry
	mask    uint32
}

// lexicon is every word list in one table.
var lexicon = buildLexicon()

func buildLexicon() *lexTable {
	t := &lexTable{entries: make([]lexEntry, 1, 512), slots: make([]uint16, 2048), mask: 2047}
	add := func(w string) *lexEntry {
		h := fnv(w)
		for {
			i := t.slots[h&t.mask]
			if i == 0 {
				t.entries = append(t.entries, lexEntry{key: w})
				t.slots[h&t.mask] = uint16(len(t.entries) - 1)
				return &t.entries[len(t.entries)-1]
			}
			if t.entries[i].key == w {
				return &t.entries[i]
			}
			h++
		}
	}
	for _, l := range []struct {
		words map[string]bool
		class wordClass
	}{
		{fillers, wFiller}, {greetings, wGreeting}, {thanks, wThanks}, {negations, wNegation},
		{questions, wQuestion}, {units, wUnit}, {opposites, wOpposite}, {isWords, wIsWord},
		{unstemmed, wUnstemmed}, {frontable, wFrontable},
	} {
		for w := range l.words {
			add(w).class |= l.class
		}
	}
	bit := uint8(1)
	for w, prevs := range framing {
		add(w).class |= wFraming
		add(w).frames = bit
		for p := range prevs {
			add(p).framedBy |= bit
		}
		bit <<= 1
	}
	for w, j := range joined {
		e := add(w)
		e.class |= wJoined
		e.joined = [2]string{j[0], j[1]}
	}
	for w, s := range synonyms {
		add(w).class |= wSynonym
		add(s)
	}
	// Every entry exists now (add appends, so pointers are taken last).
	for i := range t.entries {
		if e := &t.entries[i]; e.class&wSynonym != 0 {
			e.syn = synonyms[e.key]
			e.synClass = t.find(e.syn).class
		}
	}
	if len(t.entries) > len(t.slots)/2 {
		panic("semcache: lexicon table too full")
	}
	return t
}

// fnv is 32-bit FNV-1a.
func fnv(w string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(w); i++ {
		h ^= uint32(w[i])
		h *= 16777619
	}
	return h
}

// find returns w's entry, or the empty entry (no class) when no list has w.
func (t *lexTable) find(w string) *lexEntry {
	h := uint32(2166136261)
	for i := 0; i < len(w); i++ {
		h ^= uint32(w[i])
		h *= 16777619
	}
	return t.findHash(w, h)
}

// findHash is find given fnv(w) (asciiScan hashes a word as it checks it).
func (t *lexTable) findHash(w string, h uint32) *lexEntry {
	for {
		i := t.slots[h&t.mask]
		e := &t.entries[i]
		if i == 0 {
			return e
		}
		if k := e.key; len(k) == len(w) {
			j := 0
			for j < len(w) && k[j] == w[j] {
				j++
			}
			if j == len(w) {
				return e
			}
		}
		h++
	}
}

// normalize turns a question into its content words, in order.
//
// It runs on every request, inside wasm, where each call, map lookup and
// allocation costs several times its native price: the checks on a word
// are byte loops for ASCII (falling back to the unicode tables only for
// other text), a word is looked up once in lexicon's table, a capitalised
// ASCII word is lower-cased into a kept buffer, and the word slice is
// scratch kept from call to call. What it returns is the same as ever
// (testdata/golden.txt pins it; TestNormalizeMatchesReference checks it
// against the normaliser before the table).
func normalize(text string) []qtoken {
	var s normScratch // the result outlives the call: nothing shared
	return s.normalize(nil, text)
}

// normalizeTo is normalize into dst's storage when it is large enough; the
// result starts at dst's first element either way. Its words may point
// into a buffer the next normalizeTo call overwrites.
func normalizeTo(dst []qtoken, text string) []qtoken {
	return reqNorm.normalize(dst, text)
}

// normScratch is a normaliser's kept buffers: the question's fields and the
// bytes of the words it lower-cased or stemmed.
type normScratch struct {
	fields []string
	bytes  []byte
}

// reqNorm is the request phase's normaliser (an instance serves one call
// at a time).
var reqNorm normScratch

// maxKeptNormBytes: a larger lower-case buffer is let go after its call.
const maxKeptNormBytes = 64 << 10

// lower returns s with ASCII capitals lowered, in s's buffer.
func (s *normScratch) lower(w string) string {
	at := len(s.bytes)
	b := slices.Grow(s.bytes, len(w))[:at+len(w)]
	d := b[at:]
	for i := 0; i < len(w) && i < len(d); i++ {
		d[i] = lowerASCII[w[i]]
	}
	s.bytes = b
	return unsafe.String(unsafe.SliceData(d), len(d))
}

// stem is stem(w) for a word whose entry is e, built in s's buffer.
func (s *normScratch) stem(w string, e *lexEntry) string {
	if len(w) <= 3 || w[len(w)-1] != 's' || e.class&wUnstemmed != 0 || !isLetters(w) {
		return w
	}
	n := len(w)
	switch {
	case n > 4 && w[n-3:] == "ies":
		at := len(s.bytes)
		s.bytes = append(s.bytes, w[:n-3]...)
		s.bytes = append(s.bytes, 'y')
		return unsafe.String(unsafe.SliceData(s.bytes[at:]), n-2)
	case n >= 4 && w[n-4:] == "sses":
		return w[:n-2]
	case w[n-2] != 's' && w[n-2] != 'u' && w[n-2] != 'i':
		return w[:n-1]
	}
	return w
}

func (s *normScratch) normalize(dst []qtoken, text string) []qtoken {
	plain := plainASCII(text)
	if !plain {
		text = strings.Map(func(r rune) rune {
			switch r {
			case '`', '\u201c', '\u201d':
				return '"'
			case '\u2018', '\u2019':
				return '\''
			}
			return r
		}, text)
	}
	s.bytes = s.bytes[:0]
	fields := appendFields(s.fields[:0], text, plain)
	raw := unfront(fields)
	out := dst[:0]
	if cap(out) < len(raw)+1 {
		out = make([]qtoken, 0, len(raw)+1)
	}
	st := normState{s: s, out: out, last: &lexicon.entries[0], start: true}
	for i, w := range raw {
		st.field(w, i == len(raw)-1)
	}
	out = st.out
	// A closing "thanks" goes too.
	for st.closing && len(out) > 1 && lexicon.find(out[len(out)-1].w).class&wThanks != 0 {
		out = out[:len(out)-1]
	}
	out = canonical(out)
	if len(out) == 0 {
		// Nothing but framing ("hi", "thanks!", "can you?"): every word
		// counts, or "hello" and "thank you" would be one question.
		for _, w := range raw {
			core := trimToken(w)
			if !hasAlnum(core) {
				continue
			}
			ws, n := expandContraction(strings.ToLower(core))
			for _, lw := range ws[:n] {
				out = append(out, qtoken{lw, true})
			}
		}
	}
	clear(fields) // no reference into this request is kept
	s.fields = fields[:0]
	if cap(s.bytes) > maxKeptNormBytes {
		s.bytes = nil
	}
	return out
}

// normState is what normalize carries from word to word. Its steps are
// functions of their own, kept out of line: inside wasm every jump within
// a Go function goes through the function's one br_table, and the
// normaliser as one function of some hundred blocks cost ~40 % more than
// these three (staged, the 4 KB agent request's question).
type normState struct {
	s     *normScratch
	out   []qtoken
	last  *lexEntry // the previous word's entry, fillers included
	start bool      // capitals at a sentence start say nothing
	// quoted: inside "…" or `…`, no word is framing.
	quoted, closing bool
}

// field adds a field of the question (isLast: the last) to st.out.
//
//go:noinline
func (st *normState) field(w string, isLast bool) {
	opens := len(w) > 0 && w[0] == '"'
	quoted := st.quoted || opens
	literal := quoted
	if closesQuote(w) && (!opens || !onlyQuoteTrail(w)) {
		quoted = false
	}
	st.quoted = quoted
	core := w // most words have nothing to trim: no call
	if len(w) == 0 || punct[w[0]]&pLead != 0 || punct[w[len(w)-1]]&pTrail != 0 {
		core = trimToken(w)
	}
	f, h, apos, ascii := asciiScan(core)
	if !ascii {
		f = unicodeFacts(core)
	}
	if !f.alnum {
		// Punctuation ends a sentence; a symbol mid-text is an
		// operator ("what does ? do", "$?", "&&").
		if !prose(core, isLast) {
			st.out = append(st.out, qtoken{core, true})
		}
		st.start = st.start || strings.ContainsAny(core, ".?!")
		return
	}
	salient := f.digit || f.symbol || core[0] == '-' || f.ticker || (!st.start && f.upper)
	lower := core
	var e *lexEntry
	switch {
	case !ascii:
		lower = strings.ToLower(core)
		e, apos = lexicon.find(lower), hasApostrophe(lower)
	case f.upper:
		lower = st.s.lower(core)
		e = lexicon.findHash(lower, h) // h is of the lowered bytes
	default:
		e = lexicon.findHash(lower, h)
	}
	switch {
	case e.class&wJoined != 0:
		for _, lw := range e.joined {
			st.word(lw, lexicon.find(lw), literal, salient)
		}
	case apos:
		ws, n := expandApostrophe(lower)
		for _, lw := range ws[:n] {
			st.word(lw, lexicon.find(lw), literal, salient)
		}
	default:
		st.word(lower, e, literal, salient)
	}
	switch w[len(w)-1] {
	case '.', '?', '!', ':':
		st.start = true
	default:
		st.start = false
	}
}

// word adds a word (lw, whose entry is e) of a field to st.out, unless it
// is framing.
//
//go:noinline
func (st *normState) word(lw string, e *lexEntry, literal, salient bool) {
	prev := st.last
	st.last = e
	c := e.class
	if !literal && (c&wFiller != 0 || e.frames&prev.framedBy != 0 || (len(st.out) == 0 && c&wGreeting != 0)) {
		return
	}
	se := e
	// stem's first checks, here: most words end in another letter.
	if len(lw) > 3 && lw[len(lw)-1] == 's' && c&wUnstemmed == 0 {
		if s := st.s.stem(lw, e); len(s) != len(lw) { // stems are shorter
			se = lexicon.find(s)
			lw, c = s, se.class
		}
	}
	if c&wSynonym != 0 {
		lw, c = se.syn, se.synClass
	}
	st.out = append(st.out, qtoken{lw, literal || salient || c&wSalient != 0})
	st.closing = st.closing || !literal && c&wThanks != 0
}

// wordFacts are the checks normalize makes on a word.
type wordFacts struct {
	alnum, digit, symbol, upper, ticker bool
}

// asciiFacts makes the checks in one pass over an ASCII word (hasAlnum,
// hasDigit, hasSymbol, hasUpper, isTicker); false when s is not ASCII.
func asciiFacts(s string) (f wordFacts, ok bool) {
	caps, tickerOK := 0, true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return f, false
		case 'a' <= c && c <= 'z':
			f.alnum, tickerOK = true, false
		case 'A' <= c && c <= 'Z':
			f.alnum, f.upper = true, true
			caps++
		case '0' <= c && c <= '9':
			f.alnum, f.digit = true, true
		default:
			tickerOK = false
			if c != '-' && c != '\'' {
				f.symbol = true
			}
		}
	}
	f.ticker = tickerOK && caps >= 2
	return f, true
}

// asciiScan is asciiFacts and, in the same pass, fnv of the word with its
// ASCII capitals lowered (what lexTable.findHash takes) and whether it has
// an apostrophe. Inside wasm each pass over a word, each call and each
// branch taken (a Go function's jumps go through one br_table) costs more
// than the work it does on a word of a few letters, so the loop has none:
// each byte's class is a table read, or-ed together.
func asciiScan(s string) (f wordFacts, h uint32, apos, ok bool) {
	var acc uint8
	caps := 0
	h = 2166136261
	for i := 0; i < len(s); i++ {
		c := s[i]
		k := byteClass[c]
		acc |= k
		caps += int(k & bUpper) // bUpper is 1
		h = (h ^ uint32(lowerASCII[c])) * 16777619
	}
	if acc&bHigh != 0 {
		return f, h, false, false
	}
	f.alnum = acc&(bLower|bUpper|bDigit) != 0
	f.upper = acc&bUpper != 0
	f.digit = acc&bDigit != 0
	f.symbol = acc&bOther != 0
	f.ticker = acc&(bLower|bApos|bHyphen|bOther) == 0 && caps >= 2
	return f, h, acc&bApos != 0, true
}

// Byte classes (asciiScan): a word's facts are the or of its bytes'.
const (
	bUpper = 1 << iota
	bLower
	bDigit
	bApos
	bHyphen
	bOther // any other ASCII byte: a symbol
	bHigh  // not ASCII
)

var byteClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = bHigh
		case 'A' <= c && c <= 'Z':
			t[c] = bUpper
		case 'a' <= c && c <= 'z':
			t[c] = bLower
		case '0' <= c && c <= '9':
			t[c] = bDigit
		case c == '\'':
			t[c] = bApos
		case c == '-':
			t[c] = bHyphen
		default:
			t[c] = bOther
		}
	}
	return t
}()

// lowerASCII maps an ASCII capital to its small letter and every other
// byte to itself.
var lowerASCII = func() (t [256]byte) {
	for c := range t {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] += 'a' - 'A'
		}
	}
	return t
}()

// unicodeFacts makes the same checks on any word.
func unicodeFacts(s string) wordFacts {
	return wordFacts{alnum: hasAlnum(s), digit: hasDigit(s), symbol: hasSymbol(s), upper: hasUpper(s), ticker: isTicker(s)}
}

// plainASCII reports text of ASCII only, without backticks: what
// normalize's quote mapping leaves as it is (it rewrites backticks and
// curly quotes, and invalid UTF-8 to U+FFFD).
func plainASCII(s string) bool {
	// Eight bytes a step: a loop step inside wasm costs more than the
	// arithmetic (a byte of 0x80 or more sets its top bit; a backtick
	// is a zero byte once the word is xored with backticks).
	const lo, hi, ticks = 0x0101010101010101, 0x8080808080808080, 0x6060606060606060
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		v := x ^ ticks
		if x&hi != 0 || (v-lo)&^v&hi != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '`' {
			return false
		}
	}
	return true
}

// appendFields appends strings.Fields(s) to dst; ascii says s is known to
// be ASCII.
//
// Inside wasm a loop step (a jump through the function's br_table) costs
// more than the test it repeats, so an ASCII text is read eight bytes a
// step into a mask of its spaces, 64 bytes at a time, and each word is then
// found in two steps: its first byte that is not a space and its first
// space.
func appendFields(dst []string, s string, ascii bool) []string {
	if !ascii && !isASCII(s) {
		return append(dst, strings.Fields(s)...)
	}
	start := -1 // the word in progress, if any
	for base := 0; base < len(s); base += 64 {
		c := s[base:min(base+64, len(s))]
		var m uint64 // bit i: c[i] is a space (or past the end)
		i := 0
		for ; i+8 <= len(c); i += 8 {
			m |= (uint64(spaceBit[c[i]]) | uint64(spaceBit[c[i+1]])<<1 | uint64(spaceBit[c[i+2]])<<2 | uint64(spaceBit[c[i+3]])<<3 |
				uint64(spaceBit[c[i+4]])<<4 | uint64(spaceBit[c[i+5]])<<5 | uint64(spaceBit[c[i+6]])<<6 | uint64(spaceBit[c[i+7]])<<7) << i
		}
		for ; i < len(c); i++ {
			m |= uint64(spaceBit[c[i]]) << i
		}
		if len(c) < 64 {
			m |= ^uint64(0) << len(c)
		}
		for pos := 0; pos < 64; {
			if start < 0 {
				k := bits.TrailingZeros64(^(m >> pos)) // the next non-space
				if k >= 64-pos {
					break
				}
				pos += k
				start = base + pos
			}
			k := bits.TrailingZeros64(m >> pos) // the next space
			if k >= 64-pos {
				break // the word goes on in the next 64 bytes
			}
			pos += k
			dst = append(dst, s[start:base+pos])
			start = -1
		}
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

// spaceBit is 1 for the ASCII spaces (unicode.IsSpace's).
var spaceBit = func() (t [256]uint8) {
	for _, c := range []byte(" \t\n\v\f\r") {
		t[c] = 1
	}
	return t
}()

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Punctuation classes of a byte, for the word checks below (inside wasm a
// strings.IndexByte is two calls; a table read is none).
const (
	pLead  = 1 << iota // `"('`: trimmed from a word's front
	pTrail             // `".,!?;:')`: trimmed from a word's end
	pClose             // ".,!?;:)": may follow a closing quote
)

var punct = func() (t [256]uint8) {
	for _, c := range []byte(`"('`) {
		t[c] |= pLead
	}
	for _, c := range []byte(`".,!?;:')`) {
		t[c] |= pTrail
	}
	for _, c := range []byte(".,!?;:)") {
		t[c] |= pClose
	}
	return t
}()

// closesQuote: w ends in a double quote before any trailing
// ".,!?;:)" (strings.TrimRight(w, ".,!?;:)") ends in '"').
func closesQuote(w string) bool {
	j := len(w)
	for j > 0 && punct[w[j-1]]&pClose != 0 {
		j--
	}
	return j > 0 && w[j-1] == '"'
}

// onlyQuoteTrail: w is all quotes and sentence punctuation
// (strings.Trim(w, `".,!?;:)`) is empty).
func onlyQuoteTrail(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c != '"' && punct[c]&pClose == 0 {
			return false
		}
	}
	return true
}

// canonical rewrites the few question shapes that say one thing two ways:
// "way to X" and "how to X" are "how X"; a leading "of" (left by "what is
// the meaning of") goes; "difference between A and B" is the difference
// between B and A.
func canonical(ts []qtoken) []qtoken {
	// In place, so that the slice still starts where normalizeTo's dst
	// does.
	if len(ts) > 1 && ts[0].w == "way" && ts[1].w == "to" {
		ts[0] = qtoken{"how", true}
		ts = append(ts[:1], ts[2:]...)
	}
	if len(ts) > 1 && ts[0].w == "how" && ts[1].w == "to" {
		ts = append(ts[:1], ts[2:]...)
	}
	if len(ts) > 1 && ts[0].w == "of" {
		ts = append(ts[:0], ts[1:]...)
	}
	for i := 1; i+3 < len(ts); i++ {
		if ts[i-1].w == "difference" && ts[i].w == "between" && ts[i+2].w == "and" && ts[i+1].w > ts[i+3].w {
			ts[i+1], ts[i+3] = ts[i+3], ts[i+1]
		}
	}
	return ts
}

// unfront moves a fronted phrase ("In Go," "On Base," "For a beginner,")
// to the end of the question.
func unfront(ws []string) []string {
	if len(ws) < 3 {
		return ws
	}
	w := ws[0]
	if len(w) > 0 && (punct[w[0]]&pLead != 0 || punct[w[len(w)-1]]&pLead != 0) { // `("'`
		w = strings.Trim(w, `("'`)
	}
	if !isFrontable(w) {
		return ws
	}
	for k := 1; k < len(ws)-1 && k <= 6; k++ {
		if !strings.HasSuffix(ws[k], ",") {
			continue
		}
		out := make([]string, 0, len(ws))
		out = append(out, ws[k+1:]...)
		out = append(out, strings.ToLower(ws[0]))
		out = append(out, ws[1:k]...)
		return append(out, strings.TrimSuffix(ws[k], ","))
	}
	return ws
}

// isFrontable is frontable[strings.ToLower(w)], without allocating for
// the capitalised word a question starts with.
func isFrontable(w string) bool {
	var b [8]byte
	if len(w) > len(b) || !isASCII(w) {
		return lexicon.find(strings.ToLower(w)).class&wFrontable != 0
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return lexicon.find(unsafe.String(&b[0], len(w))).class&wFrontable != 0
}

// trimToken strips the quotes and sentence punctuation around a word, but
// never a symbol that is all there is of it ("$?" stays "$?"; only double
// quotes, which backticks became, go from around it).
func trimToken(w string) string {
	if len(w) > 0 && punct[w[0]]&pLead == 0 && punct[w[len(w)-1]]&pTrail == 0 {
		return w // nothing to strip: most words
	}
	i, j := 0, len(w) // strings.Trim(w, `"`), unless that leaves nothing
	for i < j && w[i] == '"' {
		i++
	}
	for j > i && w[j-1] == '"' {
		j--
	}
	if i < j {
		w = w[i:j]
	}
	for len(w) > 1 && punct[w[0]]&pLead != 0 && hasAlnum(w[1:]) {
		w = w[1:]
	}
	for len(w) > 1 && punct[w[len(w)-1]]&pTrail != 0 && hasAlnum(w[:len(w)-1]) {
		w = w[:len(w)-1]
	}
	return w
}

// prose reports a token of sentence punctuation only: commas, dashes and
// ellipses anywhere, and at the end of the text also question and
// exclamation marks, quotes and emoticons ("??", "!", ":)").
func prose(w string, last bool) bool {
	for _, r := range w {
		switch r {
		case ',', ';', '.', '-', '–', '—', '…':
		case '?', '!', ':', '(', ')', '"', '\'':
			if !last {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// expandContraction splits "doesn't", "what's", "whats", "cannot" into
// their words (the first n of ws); a possessive "'s" is dropped.
func expandContraction(w string) (ws [2]string, n int) {
	if e := lexicon.find(w); e.class&wJoined != 0 {
		return e.joined, 2
	}
	if hasApostrophe(w) {
		return expandApostrophe(w)
	}
	return [2]string{w}, 1
}

func hasApostrophe(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] == '\'' {
			return true
		}
	}
	return false
}

// expandApostrophe is expandContraction for a word with an apostrophe
// (no joined form has one).
func expandApostrophe(w string) (ws [2]string, n int) {
	if base, ok := strings.CutSuffix(w, "n't"); ok {
		switch base {
		case "ca":
			base = "can"
		case "wo":
			base = "will"
		case "sha":
			base = "shall"
		}
		return [2]string{base, "not"}, 2
	}
	// No word ends in two of these, so their order does not matter.
	for _, c := range contractions {
		if base, ok := strings.CutSuffix(w, c.suffix); ok && base != "" {
			if c.suffix == "'s" && lexicon.find(base).class&wIsWord == 0 {
				return [2]string{base}, 1
			}
			return [2]string{base, c.full}, 2
		}
	}
	return [2]string{w}, 1
}

// contractions are the endings expandContraction expands.
var contractions = [...]struct{ suffix, full string }{
	{"'s", "is"}, {"'re", "are"}, {"'m", "am"}, {"'ll", "will"}, {"'ve", "have"}, {"'d", "would"},
}

// unstemmed end in "s" without being plurals.
var unstemmed = set("news", "series", "species", "physics", "mathematics", "politics", "economics", "always",
	"perhaps", "minus", "plus", "yes", "this", "has", "was", "does", "its", "his", "hers", "ours", "yours",
	"theirs", "whereas", "towards", "besides", "sometimes", "windows", "aws", "kubernetes", "less", "unless")

// sameQuestion is the strict guard: the same content words in the same
// order.
func sameQuestion(a, b []qtoken) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].w != b[i].w {
			return false
		}
	}
	return true
}

// sameSalient is the rewording guard: the same salient words in the same
// order (other content words may differ).
func sameSalient(a, b []qtoken) bool {
	i, j := 0, 0
	for {
		for i < len(a) && !a[i].salient {
			i++
		}
		for j < len(b) && !b[j].salient {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i].w != b[j].w {
			return false
		}
		i++
		j++
	}
}

// contentText is what the cache embeds: the content words joined, so that
// re-asks of one question embed to one vector.
func contentText(ts []qtoken) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.w)
	}
	return b.String()
}

// isTicker reports an all-capitals word of two or more letters (ETH, USDC,
// BTC): a name even at the start of a sentence.
func isTicker(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			n++
		case c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return n >= 2
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			return true
		}
	}
	return false
}

// The predicates below decide ASCII bytes themselves (as the unicode
// tables would) and hand the rest of a non-ASCII word to the tables.

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if unicode.IsUpper(r) {
					return true
				}
			}
			return false
		}
		if 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

func hasAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					return true
				}
			}
			return false
		}
		if asciiAlnum(c) {
			return true
		}
	}
	return false
}

// hasSymbol reports a character that marks code: anything but letters,
// digits, a hyphen and an apostrophe ("os.path.join", "8080:80", "*int").
func hasSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '\'' {
					return true
				}
			}
			return false
		}
		if !asciiAlnum(c) && c != '-' && c != '\'' {
			return true
		}
	}
	return false
}

func asciiAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
