package main

import (
	"math/bits"
	"slices"
	"strings"
	"unsafe"
)

// The built-in detector is one hand-written pass over the text, in the guest.
//
// Why not the host's native regex set: Go's regexp (which the native host
// runs) has no literal to skip to for patterns such as `[0-9][0-9 -]{11,}`
// or `[a-z]+@…`, so it steps its NFA over every byte: measured at
// 280–720 µs per pattern on 16 KB of prose, i.e. several milliseconds for
// the nine entity kinds — far over this layer's 200 µs budget.
//
// Inside wasm every operation and, even more, every call is dear (Go's
// wasm code runs about ten times slower than native here). So the scan
// reads eight bytes at a time and looks only at the bytes an entity must
// contain (digits, ':', '@'), drops with a few inline tests the digit groups
// of ordinary prose that cannot start one, and parses and validates (Luhn,
// mod-97, SSN ranges, octets, wordlist) only the rest. Mnemonics, made of
// plain words, are found by probing (see probeMnemonics). The unaligned
// 8-byte loads assume a little-endian machine, as wasm is. Configured extra
// patterns do go to the host's regex set (see mask.go).

// Built-in entity kinds; the index is the entity id.
const (
	kEmail = iota
	kPhone
	kCard
	kIBAN
	kIPv4
	kIPv6
	kSSN
	kPrivKey
	kMnemonic
	kHex64 // a 64-hex value that is neither clearly a key nor a hash (hexctx.go)
	nBuiltin
)

// Character classes.
const (
	cDigit = 1 << iota
	cUpper
	cLower
	cHex   // [0-9A-Fa-f]
	cSpace // ' ', \t, \n, \r
	cLocal // e-mail local part: [A-Za-z0-9._%+-]
	cWord  // [A-Za-z0-9_]

	cAlpha = cUpper | cLower
	cAlnum = cAlpha | cDigit
)

var cls = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] |= cDigit | cHex | cLocal | cWord
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] |= cUpper | cLocal | cWord
		t[c+'a'-'A'] |= cLower | cLocal | cWord
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= cHex
		t[c-'a'+'A'] |= cHex
	}
	for _, c := range " \t\n\r" {
		t[c] |= cSpace
	}
	for _, c := range "._%+-" {
		t[c] |= cLocal
	}
	t['_'] |= cWord
	return
}()

func isDigit(c byte) bool { return cls[c]&cDigit != 0 }
func isUpper(c byte) bool { return cls[c]&cUpper != 0 }
func isHex(c byte) bool   { return cls[c]&cHex != 0 }
func isWord(c byte) bool  { return cls[c]&cWord != 0 }

// span is one detected value: s[start:end] is entity ent.
type span struct {
	start, end int
	ent        int
}

// wspan is a word of a possible mnemonic.
type wspan struct{ start, end int }

// detector finds the built-in entities. It keeps scratch buffers: an
// instance serves one call at a time.
type detector struct {
	on       [nBuiltin]bool // kinds to look for
	checksum bool           // mnemonics must carry a valid BIP-39 checksum
	member   string         // the JSON member name of the segment scanned ("" for text)

	run   []wspan // scratch: a run of wordlist words
	idx   []int   // their wordlist indexes
	taken []string
}

// scan appends the built-in entities found in s to out, in text order
// (mnemonics after the rest; the caller sorts and resolves overlaps). It also
// records the placeholder-shaped tokens s already contains (see noteTaken).
//
// Every entity but a mnemonic contains an anchor byte: a digit, '@' or ':'
// (a 64-hex-digit key without a digit has odds of 1e-27). The scan skips to
// the next anchor eight bytes at a time, then looks behind it for the start
// of its token and parses from there. Mnemonics are found by probing.
func (d *detector) scan(s string, out []span) []span {
	n := len(s)
	floor := 0 // end of the last span: look-behind stops there
	base := unsafe.Pointer(unsafe.StringData(s))
	i := 0 // everything before i is dealt with
	for w := 0; w < n; w += 8 {
		// The anchors among the eight bytes at w, as the top bit of each
		// byte of m (inline: a call costs more than this inside wasm).
		var m uint64
		if w+8 <= n {
			x := *(*uint64)(unsafe.Add(base, w))
			// Bytes in (0x2f, 0x3b) — digits and ':' — exactly (bit
			// twiddling hacks' hasbetween), or equal to '@' or '['.
			t := x & (ones * 127)
			m = (ones*(127+0x3b) - t) & ^x & (t + ones*(127-0x2f)) & high
			y := x ^ (ones * '@')
			m |= (y - ones) & ^y & high
			y = x ^ (ones * '[')
			m |= (y - ones) & ^y & high
			if m == 0 {
				continue
			}
			if dm := between(x, 0x2f, 0x3a); dm != 0 && w > 0 && w+10 <= n {
				// Digits: can an entity start here at all? Every digit
				// entity has, next to a digit, a separator and another
				// digit ("1.2", "555-", "4111 1"), a '+' or '(' before
				// it, a letter beside it (hex, IBAN, "0x"), or a long
				// digit run (which reaches this word's last byte). A word
				// with none of these (the "125,000" and "20%" of prose)
				// is dropped in a few operations.
				x0 := *(*uint64)(unsafe.Add(base, w-1))
				x2 := *(*uint64)(unsafe.Add(base, w+1))
				x3 := *(*uint64)(unsafe.Add(base, w+2))
				sep2 := eqb(x2, '.') | eqb(x2, '-') | eqb(x2, ' ')
				p := dm & sep2 & (between(x3, 0x2f, 0x3a) | eqb(x3, '('))
				p |= (eqb(x0, '+') | eqb(x0, '(') | letters(x0)) & dm
				p |= (eqb(x, '+') | eqb(x, '(') | letters(x)) & between(x2, 0x2f, 0x3a)
				p |= dm & letters(x2)
				p |= dm & (0x80 << 56)
				if p == 0 {
					m &^= dm
				}
			}
		} else {
			for j := w; j < n; j++ {
				if c := s[j]; c >= '0' && c <= ':' || c == '@' || c == '[' {
					m |= 0x80 << (8 * (j - w))
				}
			}
		}
		i, floor, w, out = d.anchors(s, w, m, i, floor, out)
	}
	if d.on[kMnemonic] && n >= mnemonicMinLen {
		out = d.probeMnemonics(s, out)
	}
	return out
}

// anchors handles the anchors of the word at w (m flags them, see scan)
// from i on; it returns where scanning goes on, the new floor, the word
// the scan's loop goes on after (w, or before the word holding i when it
// jumped past w's) and out. It is out of line: inside wasm every jump of
// a function is a dispatch through its one br_table, whose cost grows
// with the function's size, and most words of a text have no anchor.
//
//go:noinline
func (d *detector) anchors(s string, w int, m uint64, i, floor int, out []span) (int, int, int, []span) {
	n := len(s)
	for m != 0 {
		a := w + bits.TrailingZeros64(m)>>3
		m &= m - 1
		if a < i {
			continue
		}
		c := s[a]
		if c > ':' && c != '@' && c != '[' {
			continue // a false positive of the zero-byte test
		}
		i = a + 1
		switch {
		case c <= '9':
			// Quick reject, inline, of the numbers of prose ("125,000",
			// "20%", "1.84", "2024-03-18", "18 at"): the digit run and
			// the group after it rule out every entity. The rest goes
			// to atDigit (calls are dear inside wasm).
			if a == 0 || cls[s[a-1]]&cWord == 0 && s[a-1] != '+' && s[a-1] != '(' {
				e := a + 1
				for e < n && isDigit(s[e]) {
					e++
				}
				L := e - a
				var c1 byte
				if e < n {
					c1 = s[e]
				}
				// g2: digits in the group after c1; dots: dots in
				// the run of digits and dots (IPv4 needs three, a
				// dotted US number two).
				g2, f := 0, e+1
				for f < n && g2 < 4 && isDigit(s[f]) {
					f++
					g2++
				}
				plausible := L >= 13 || cls[c1]&cAlpha != 0
				switch c1 {
				case '.':
					if L <= 3 && g2 > 0 {
						dots := 1
						for f < n && f-a < 16 && (isDigit(s[f]) || s[f] == '.') {
							if s[f] == '.' {
								dots++
							}
							f++
						}
						plausible = plausible || dots >= 2
					}
				case '-', ' ':
					plausible = plausible || L >= 3 && (g2 >= 3 || g2 == 2 && L == 3 && c1 == '-') ||
						L == 1 && c == '1' && (g2 == 3 || f == e+1 && f < n && s[f] == '(')
				case ':':
					plausible = plausible || L <= 4 && e+1 < n && (isHex(s[e+1]) || s[e+1] == ':')
				}
				if !plausible {
					i = e
					break
				}
			}
			i, floor, out = d.atDigit(s, a, floor, out)
		case c == '@':
			if !d.on[kEmail] {
				continue
			}
			if st, e := emailAt(s, a, floor); e > 0 {
				out = append(out, span{st, e, kEmail})
				i, floor = e, e
			}
		case c == ':':
			if !d.on[kIPv6] {
				continue
			}
			t := a
			for t > floor && a-t < 4 && isHex(s[t-1]) {
				t--
			}
			if t > 0 && (isWord(s[t-1]) || s[t-1] == ':' || s[t-1] == '.') {
				continue
			}
			if t == a && (a+1 >= n || s[a+1] != ':') {
				continue
			}
			if e := parseIPv6(s, t); e > 0 {
				out = append(out, span{t, e, kIPv6})
				i, floor = e, e
			}
		case c == '[':
			d.noteTaken(s, a)
		}
		if i >= w+8 {
			// Jumped past this word: go on from the word holding i.
			w = i&^7 - 8
			break
		}
		m &^= 1<<(8*(i-w)) - 1 // anchors inside what was just consumed
	}
	return i, floor, w, out
}

// noAnchor reports whether s holds none of the bytes scan stops at: then
// only a mnemonic could be in it, and a text shorter than mnemonicMinLen
// holds nothing scan finds.
func noAnchor(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= ':' || c == '@' || c == '[' {
			return false
		}
	}
	return true
}

// atDigit handles an anchor digit at s[a]; it returns where scanning goes
// on, the new floor and out.
func (d *detector) atDigit(s string, a, floor int, out []span) (int, int, []span) {
	t := a
	for t > floor && a-t < 80 && cls[s[t-1]]&cAlnum != 0 {
		t--
	}
	if t > floor && cls[s[t-1]]&cAlnum != 0 || t > 0 && s[t-1] == '_' {
		return skipWord(s, a), floor, out // inside a long token or an identifier
	}
	if e, kind := d.atDigitToken(s, t, floor); e > 0 {
		if kind == kPrivKey {
			switch hexContext(s, t, e, d.member) {
			case hexHash:
				return e, floor, out // a transaction or block hash: not a secret
			case hexUnclear:
				kind = kHex64
			}
			if !d.on[kind] {
				return e, floor, out
			}
		}
		st := t
		if kind == kPhone && t > floor && (s[t-1] == '+' || s[t-1] == '(') && phoneStartsBefore(s, t) {
			st = t - 1
		}
		return e, e, append(out, span{st, e, kind})
	}
	return skipChain(s, skipWord(s, a)), floor, out
}

// skipChain skips the digit groups that follow a number through '.' or '-'
// ("1.84", "2024-03-18"): no entity starts right after those (IPv4, SSN,
// phone and card numbers refuse them as a previous byte), unless the group
// goes on as a hex or IPv6 token, which is left to the scan.
func skipChain(s string, e int) int {
	n := len(s)
	for e+1 < n && (s[e] == '.' || s[e] == '-') && isDigit(s[e+1]) {
		f := e + 1
		for f < n && isDigit(s[f]) {
			f++
		}
		if f < n && (cls[s[f]]&cWord != 0 || s[f] == ':') {
			return e
		}
		e = f
	}
	return e
}

// phoneStartsBefore reports whether the phone number at token t starts with
// the '+' or '(' just before it.
func phoneStartsBefore(s string, t int) bool {
	if s[t-1] == '+' {
		return t-1 == 0 || !isWord(s[t-2]) && s[t-2] != '+'
	}
	return t-1 == 0 || !isWord(s[t-2])
}

// atDigitToken tries every entity that can start at token t (which holds a
// digit): a '+' or '(' phone prefix just before it, then atTokenStart.
func (d *detector) atDigitToken(s string, t, floor int) (int, int) {
	if d.on[kPhone] && t > floor {
		switch s[t-1] {
		case '+':
			if phoneStartsBefore(s, t) {
				if e := parseIntlPhone(s, t-1); e > 0 {
					return e, kPhone
				}
			}
		case '(':
			if phoneStartsBefore(s, t) {
				if e := parseParenPhone(s, t-1); e > 0 {
					return e, kPhone
				}
			}
		}
	}
	return d.atTokenStart(s, t)
}

const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// SWAR byte tests: the top bit of each byte of the result says whether that
// byte of x passes. between is exact (bit twiddling hacks' hasbetween, for
// lo < byte < hi ≤ 128); eqb may also flag a byte just above a true match,
// which callers tolerate (it only makes them look closer).
func between(x uint64, lo, hi uint64) uint64 {
	t := x & (ones * 127)
	return (ones*(127+hi) - t) & ^x & (t + ones*(127-lo)) & high
}

func eqb(x uint64, c byte) uint64 {
	y := x ^ (ones * uint64(c))
	return (y - ones) & ^y & high
}

// letters flags ASCII letters.
func letters(x uint64) uint64 { return between(x|ones*0x20, 0x60, 0x7b) }

// atTokenStart tries the entities that start with a letter or digit at a
// token start (the previous byte is not a word character). A digit token is
// first sorted by the length of its digit run and the byte after it, so the
// common numbers of prose ("125,000", "1.84", "2024-03-18", "20%") cost a
// few comparisons.
func (d *detector) atTokenStart(s string, i int) (int, int) {
	n := len(s)
	c := s[i]
	if isDigit(c) {
		L := 1
		for i+L < n && L < 20 && isDigit(s[i+L]) {
			L++
		}
		var c1 byte
		if i+L < n {
			c1 = s[i+L]
		}
		usLead := L == 3 || L == 1 && c == '1' // a NANP area code, or "1-"
		switch {
		case c1 == '.':
			if L <= 3 && d.on[kIPv4] {
				if e := parseIPv4(s, i); e > 0 {
					return e, kIPv4
				}
			}
			if usLead && d.on[kPhone] {
				if e := parseUSPhone(s, i); e > 0 {
					return e, kPhone
				}
			}
			return 0, 0
		case c1 == '-' || c1 == ' ':
			if L == 3 && c1 == '-' && d.on[kSSN] {
				if e := parseSSN(s, i); e > 0 {
					return e, kSSN
				}
			}
			if usLead && d.on[kPhone] {
				if e := parseUSPhone(s, i); e > 0 {
					return e, kPhone
				}
			}
			if L >= 3 && d.on[kCard] {
				if e := parseCard(s, i); e > 0 {
					return e, kCard
				}
			}
			return 0, 0
		case c1 == ':':
			if L <= 4 && d.on[kIPv6] && (i == 0 || s[i-1] != ':' && s[i-1] != '.') {
				if e := parseIPv6(s, i); e > 0 {
					return e, kIPv6
				}
			}
			return 0, 0
		case isHex(c1) || c1|0x20 == 'x':
			// a hex token: the key and IPv6 checks below
		default:
			if L >= 13 && L <= 19 && d.on[kCard] {
				if e := parseCard(s, i); e > 0 {
					return e, kCard
				}
			}
			return 0, 0
		}
	}
	h := hexRun(s, i, 65)
	if d.on[kPrivKey] || d.on[kHex64] {
		if c == '0' && i+2 < n && s[i+1]|0x20 == 'x' {
			if hexRun(s, i+2, 65) == 64 && (i+66 == n || !isWord(s[i+66])) {
				return i + 66, kPrivKey
			}
		}
		if h == 64 && (i+64 == n || !isWord(s[i+64])) && !allDigits(s[i:i+64]) {
			return i + 64, kPrivKey
		}
	}
	if d.on[kIPv6] && h >= 1 && h <= 4 && i+h < n && s[i+h] == ':' && (i == 0 || s[i-1] != ':' && s[i-1] != '.') {
		if e := parseIPv6(s, i); e > 0 {
			return e, kIPv6
		}
	}
	if d.on[kIBAN] && isUpper(c) && i+3 < n && isUpper(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
		if e := parseIBAN(s, i); e > 0 {
			return e, kIBAN
		}
	}
	return 0, 0
}

func skipWord(s string, i int) int {
	for i < len(s) && isWord(s[i]) {
		i++
	}
	return i
}

// hexRun returns the number of hex digits at s[i:], counting at most limit.
func hexRun(s string, i, limit int) int {
	j := i
	for j < len(s) && j-i < limit && isHex(s[j]) {
		j++
	}
	return j - i
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// digitsAt reports whether s[i:i+k] are k decimal digits.
func digitsAt(s string, i, k int) bool {
	if i < 0 || i+k > len(s) {
		return false
	}
	for j := i; j < i+k; j++ {
		if !isDigit(s[j]) {
			return false
		}
	}
	return true
}

// endsCleanly reports whether a numeric entity may end at e: not followed by
// a word character, nor by a separator and another digit.
func endsCleanly(s string, e int) bool {
	if e >= len(s) {
		return true
	}
	c := s[e]
	if isWord(c) {
		return false
	}
	if (c == '-' || c == '.') && e+1 < len(s) && isDigit(s[e+1]) {
		return false
	}
	return true
}

// emailAt matches the e-mail address around the '@' at s[at]: a local part
// of [A-Za-z0-9._%+-] (at most 64 bytes, not starting or ending with a dot,
// not reaching back before floor), and a domain of labels of [A-Za-z0-9-]
// joined by single dots ending in an alphabetic label of two letters or
// more. It returns (0, 0) when there is none.
func emailAt(s string, at, floor int) (int, int) {
	n := len(s)
	st := at
	for st > floor && cls[s[st-1]]&cLocal != 0 && at-st < 64 {
		st--
	}
	for st < at && s[st] == '.' {
		st++
	}
	if st == at || s[at-1] == '.' {
		return 0, 0
	}
	p, lastDot := at+1, -1
	for p < n {
		c := s[p]
		if cls[c]&cAlnum != 0 || c == '-' {
			p++
		} else if c == '.' && p > at+1 && s[p-1] != '.' && p+1 < n && cls[s[p+1]]&cAlnum != 0 {
			lastDot = p
			p++
		} else {
			break
		}
	}
	if lastDot < 0 || p-lastDot-1 < 2 {
		return 0, 0
	}
	for j := lastDot + 1; j < p; j++ {
		if cls[s[j]]&cAlpha == 0 {
			return 0, 0
		}
	}
	return st, p
}

// parseIPv4 matches a dotted quad with octets 0–255, no leading zeros.
func parseIPv4(s string, i int) int {
	if i > 0 && s[i-1] == '.' {
		return 0
	}
	p := parseQuad(s, i)
	if p == 0 || !endsCleanly(s, p) {
		return 0
	}
	return p
}

func parseQuad(s string, i int) int {
	p := i
	for part := 0; part < 4; part++ {
		if part > 0 {
			if p >= len(s) || s[p] != '.' {
				return 0
			}
			p++
		}
		st, v := p, 0
		for p < len(s) && p-st < 3 && isDigit(s[p]) {
			v = v*10 + int(s[p]-'0')
			p++
		}
		if p == st || v > 255 || (p-st > 1 && s[st] == '0') || (p < len(s) && isDigit(s[p])) {
			return 0
		}
	}
	return p
}

// parseIPv6 matches an IPv6 address: eight groups, or fewer with one "::"
// (at least two groups then, so "a::b" counts but "::" and "x::1" style
// fragments of C++ or Rust paths mostly do not), optionally ending in a
// dotted quad.
func parseIPv6(s string, i int) int {
	n := len(s)
	p, groups, dbl := i, 0, false
	if strings.HasPrefix(s[p:], "::") {
		dbl, p = true, p+2
	}
	for groups < 8 {
		if groups <= 6 && (groups > 0 || dbl) {
			if e := parseQuad(s, p); e > 0 {
				groups, p = groups+2, e
				break
			}
		}
		h := hexRun(s, p, 5)
		if h == 0 {
			if !dbl {
				return 0
			}
			break // the address ends with "::"
		}
		if h > 4 {
			return 0
		}
		p += h
		groups++
		if p+1 < n && s[p] == ':' && s[p+1] == ':' {
			if dbl {
				break
			}
			dbl, p = true, p+2
			continue
		}
		if p+1 < n && s[p] == ':' && isHex(s[p+1]) {
			p++
			continue
		}
		break
	}
	if dbl && (groups < 2 || groups > 7) || !dbl && groups != 8 {
		return 0
	}
	if p < n && (isWord(s[p]) || s[p] == ':') {
		return 0
	}
	return p
}

// parseSSN matches a US social security number, AAA-GG-SSSS, outside the
// ranges never issued: area 000, 666 and 900–999, group 00, serial 0000.
func parseSSN(s string, i int) int {
	if i+11 > len(s) || i > 0 && s[i-1] == '-' {
		return 0
	}
	if !digitsAt(s, i, 3) || s[i+3] != '-' || !digitsAt(s, i+4, 2) || s[i+6] != '-' || !digitsAt(s, i+7, 4) {
		return 0
	}
	area := atoi(s[i : i+3])
	if area == 0 || area == 666 || area >= 900 || atoi(s[i+4:i+6]) == 0 || atoi(s[i+7:i+11]) == 0 {
		return 0
	}
	if !endsCleanly(s, i+11) {
		return 0
	}
	return i + 11
}

func atoi(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		v = v*10 + int(s[i]-'0')
	}
	return v
}

func isPhoneSep(c byte) bool { return c == '-' || c == '.' || c == ' ' }

// parseUSPhone matches NANP numbers written with separators: 555-123-4567,
// 555.123.4567, 555 123 4567, with an optional leading "1-"/"1 "/"1.", and
// "1 (555) 123-4567". Bare ten-digit runs are not matched (too many other
// numbers look like them).
func parseUSPhone(s string, i int) int {
	if i > 0 && (s[i-1] == '-' || s[i-1] == '.') {
		return 0
	}
	if s[i] == '1' && i+1 < len(s) && isPhoneSep(s[i+1]) {
		if e := usBody(s, i+2, s[i+1]); e > 0 {
			return e
		}
		if s[i+1] == ' ' && i+2 < len(s) && s[i+2] == '(' {
			if e := parseParenPhone(s, i+2); e > 0 {
				return e
			}
		}
	}
	return usBody(s, i, 0)
}

// usBody matches AAA S EEE S NNNN with the same separator twice (want, if
// set), area code and exchange starting with 2–9.
func usBody(s string, p int, want byte) int {
	if p+12 > len(s) || !digitsAt(s, p, 3) || s[p] < '2' {
		return 0
	}
	sep := s[p+3]
	if !isPhoneSep(sep) || want != 0 && sep != want {
		return 0
	}
	if !digitsAt(s, p+4, 3) || s[p+4] < '2' || s[p+7] != sep || !digitsAt(s, p+8, 4) {
		return 0
	}
	if !endsCleanly(s, p+12) {
		return 0
	}
	return p + 12
}

// parseParenPhone matches (AAA) EEE-NNNN, (AAA)EEE-NNNN and the like.
func parseParenPhone(s string, i int) int {
	p := i
	if p+13 > len(s) || s[p] != '(' || !digitsAt(s, p+1, 3) || s[p+1] < '2' || s[p+4] != ')' {
		return 0
	}
	p += 5
	if s[p] == ' ' {
		p++
	}
	if !digitsAt(s, p, 3) || s[p] < '2' || p+8 > len(s) || !isPhoneSep(s[p+3]) || !digitsAt(s, p+4, 4) {
		return 0
	}
	if !endsCleanly(s, p+8) {
		return 0
	}
	return p + 8
}

// parseIntlPhone matches an international number: '+', a country code not
// starting with 0, then digit groups separated by single spaces, dashes or
// dots, or parenthesised ("+44 (20) 7946 0958"); 8 to 15 digits in all
// (E.164 allows at most 15).
func parseIntlPhone(s string, i int) int {
	n := len(s)
	p := i + 1
	if p >= n || s[p] < '1' || s[p] > '9' {
		return 0
	}
	digits, end := 0, 0
	for {
		paren := false
		if p < n && s[p] == '(' {
			q := p + 1
			for q < n && isDigit(s[q]) {
				q++
			}
			if q == p+1 || q-p-1 > 4 || q >= n || s[q] != ')' {
				break
			}
			digits += q - p - 1
			p, end, paren = q+1, q+1, true
		} else {
			st := p
			for p < n && isDigit(s[p]) {
				p++
			}
			if p == st {
				break
			}
			digits += p - st
			end = p
		}
		if digits > 15 {
			return 0
		}
		if p+1 < n && isPhoneSep(s[p]) && (isDigit(s[p+1]) || s[p+1] == '(') {
			p++
			continue
		}
		if p < n && (s[p] == '(' || paren && isDigit(s[p])) {
			continue
		}
		break
	}
	if digits < 8 || end < n && isWord(s[end]) {
		return 0
	}
	return end
}

// parseCard matches 13–19 digits, optionally in groups of three or more
// separated by single spaces or dashes, starting with 2–6 (the issuer
// ranges of Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay and
// Maestro), that pass the Luhn check. Long runs back off to a group boundary.
func parseCard(s string, i int) int {
	n := len(s)
	if s[i] < '2' || s[i] > '6' || i > 0 && (s[i-1] == '-' || s[i-1] == '.') {
		return 0
	}
	var ends [20]int
	var counts [20]int
	k, p, digits := 0, i, 0
	for k < len(ends) {
		st := p
		for p < n && isDigit(s[p]) {
			p++
		}
		g := p - st
		digits += g
		if digits > 19 || k > 0 && g < 3 {
			break
		}
		ends[k], counts[k] = p, digits
		k++
		if g >= 3 && p+1 < n && (s[p] == ' ' || s[p] == '-') && isDigit(s[p+1]) {
			p++
			continue
		}
		break
	}
	for j := k - 1; j >= 0; j-- {
		if counts[j] < 13 {
			break
		}
		e := ends[j]
		if e < n && isWord(s[e]) {
			continue
		}
		if luhn(s[i:e]) {
			return e
		}
	}
	return 0
}

// luhn checks the Luhn checksum of the digits in s (other bytes skipped).
func luhn(s string) bool {
	sum, dbl := 0, false
	for j := len(s) - 1; j >= 0; j-- {
		c := s[j]
		if !isDigit(c) {
			continue
		}
		v := int(c - '0')
		if dbl {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		dbl = !dbl
	}
	return sum%10 == 0
}

// ibanLengths holds the IBAN length of each country (SWIFT IBAN registry),
// indexed by the two letters of the country code.
var ibanLengths = func() (t [26 * 26]uint8) {
	for _, e := range strings.Fields(`AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22
		CY28 CZ24 DE22 DJ27 DK18 DO28 EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28
		HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24
		ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24
		SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20 YE30
		GF27 GP27 MQ27 RE27 PF27 TF27 YT27 NC27 PM27 WF27`) {
		t[int(e[0]-'A')*26+int(e[1]-'A')] = uint8(atoi(e[2:]))
	}
	return
}()

// parseIBAN matches an IBAN of its country's length, electronic
// (DE89370400440532013000) or printed in groups of four
// (DE89 3704 0044 0532 0130 00), whose mod-97 check equals 1.
func parseIBAN(s string, i int) int {
	if i > 0 && isWord(s[i-1]) {
		return 0
	}
	L := int(ibanLengths[int(s[i]-'A')*26+int(s[i+1]-'A')])
	if L == 0 {
		return 0
	}
	var buf [34]byte
	k, p, n := 0, i, len(s)
	for k < L && p < n {
		c := s[p]
		if isDigit(c) || isUpper(c) {
			buf[k] = c
			k++
			p++
			continue
		}
		if c == ' ' && k > 0 && k%4 == 0 && p+1 < n && (isDigit(s[p+1]) || isUpper(s[p+1])) {
			p++
			continue
		}
		break
	}
	if k != L || p < n && isWord(s[p]) {
		return 0
	}
	rem := 0
	for j := 0; j < L; j++ {
		c := buf[(j+4)%L]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	if rem != 1 {
		return 0
	}
	return p
}

// numbering matches a list number between mnemonic words ("1." "12)" "3:")
// followed by whitespace; it returns the end, or 0.
func numbering(s string, i int) int {
	j := i
	for j < len(s) && j-i < 3 && isDigit(s[j]) {
		j++
	}
	if j == i || j-i > 2 || j+1 >= len(s) || (s[j] != '.' && s[j] != ')' && s[j] != ':') || cls[s[j+1]]&cSpace == 0 {
		return 0
	}
	return j + 1
}

// Mnemonics. A mnemonic is a run of twelve or more consecutive words from
// the BIP-39 list, separated by whitespace, commas and list numbers ("1."
// "2)"), so it spans at least 47 bytes (twelve 3-letter words, eleven
// separators). Probing every 47th byte therefore lands inside any mnemonic:
// the probe takes the word there (or the next one), and only when that word
// is in the list does it expand to the whole run of list words around it.
// Prose costs one lookup per probe and a few more where a probe hits a
// common word that happens to be in the list.

const (
	// mnemonicMinLen is the shortest mnemonic: twelve 3-letter words and
	// eleven separators.
	mnemonicMinLen = 47
	probeStride    = mnemonicMinLen
)

// sepForward skips the separators after position p; it returns where the
// next word starts, or -1.
func sepForward(s string, p int) int {
	n := len(s)
	for p < n {
		c := s[p]
		switch {
		case cls[c]&cSpace != 0 || c == ',':
			p++
			continue
		case isDigit(c):
			if e := numbering(s, p); e > 0 && !isWord(s[p-1]) {
				p = e
				continue
			}
		case cls[c]&cAlpha != 0:
			return p
		}
		return -1
	}
	return -1
}

// sepBackward skips the separators before position p (a word start); it
// returns where the previous word ends, or -1.
func sepBackward(s string, p int) int {
	for p > 0 {
		c := s[p-1]
		switch {
		case cls[c]&cSpace != 0 || c == ',':
			p--
			continue
		case c == '.' || c == ')' || c == ':':
			if p < len(s) && cls[s[p]]&cSpace != 0 {
				q := p - 1
				dg := q
				for dg > 0 && q-dg < 2 && isDigit(s[dg-1]) {
					dg--
				}
				if dg < q && (dg == 0 || !isWord(s[dg-1])) {
					p = dg
					continue
				}
			}
		case cls[c]&cAlpha != 0:
			return p
		}
		return -1
	}
	return -1
}

func (d *detector) probeMnemonics(s string, out []span) []span {
	n := len(s)
	for q := 0; q < n; q += probeStride {
		ws := q
		if cls[s[q]]&cAlpha != 0 {
			for ws > 0 && q-ws < 8 && cls[s[ws-1]]&cAlpha != 0 {
				ws--
			}
		} else {
			for ws < n && cls[s[ws]]&cAlpha == 0 {
				ws++
			}
			if ws >= n {
				break
			}
		}
		we := ws + 1
		for we < n && we-ws <= 8 && cls[s[we]]&cAlpha != 0 {
			we++
		}
		// One loop visits the probe word, then the words before it, then
		// the words after it, while they are wordlist words. Everything
		// is inline: a call costs more than a lookup inside wasm.
		const (
			probe = iota
			back
			fwd
		)
		phase, b, e := probe, ws, we
		first, last, count := ws, we, 0
		for {
			ok := e-b >= 3 && e-b <= 8 && (b == 0 || !isWord(s[b-1])) && (e == n || !isWord(s[e]))
			if ok {
				ok = lookupLetters(s[b:e]) >= 0
			}
			if ok {
				count++
				first, last = min(first, b), max(last, e)
			} else if phase == probe {
				break
			}
			// The next word to look at.
			if ok && phase != fwd {
				phase = back
				p := b
				for p > 0 && (cls[s[p-1]]&cSpace != 0 || s[p-1] == ',') {
					p--
				}
				if p > 0 && cls[s[p-1]]&cAlpha == 0 {
					p = sepBackward(s, b) // list numbers: the general case
				}
				if p > 0 {
					e, b = p, p
					for b > 0 && e-b <= 8 && cls[s[b-1]]&cAlpha != 0 {
						b--
					}
					continue
				}
			}
			if phase == fwd && !ok {
				break
			}
			phase = fwd
			p := last
			for p < n && (cls[s[p]]&cSpace != 0 || s[p] == ',') {
				p++
			}
			if p < n && cls[s[p]]&cAlpha == 0 {
				p = sepForward(s, last)
			}
			if p < 0 || p >= n {
				break
			}
			b, e = p, p
			for e < n && e-b <= 8 && cls[s[e]]&cAlpha != 0 {
				e++
			}
		}
		if count == 0 {
			q = max(q, ws-probeStride+1)
			continue
		}
		if count >= 12 {
			if d.checksum {
				out = d.checksummed(s, first, last, out)
			} else {
				out = append(out, span{first, last, kMnemonic})
			}
		}
		q = max(q, last-probeStride+1) // the next probe lands after this run
	}
	return out
}

// checksummed appends the windows of the run of wordlist words s[first:last]
// that are valid BIP-39 mnemonics, longest first, without overlaps.
func (d *detector) checksummed(s string, first, last int, out []span) []span {
	r, idx := d.run[:0], d.idx[:0]
	for b, e := first, first; b < last; {
		for e < last && cls[s[e]]&cAlpha != 0 {
			e++
		}
		r, idx = append(r, wspan{b, e}), append(idx, bip39Index(s[b:e]))
		if b = sepForward(s, e); b < 0 {
			break
		}
		e = b
	}
	d.run, d.idx = r, idx
	used := make([]bool, len(r))
	for _, L := range [...]int{24, 21, 18, 15, 12} {
		for off := 0; off+L <= len(r); off++ {
			if slices.Contains(used[off:off+L], true) || !validMnemonic(idx[off:off+L]) {
				continue
			}
			for j := off; j < off+L; j++ {
				used[j] = true
			}
			out = append(out, span{r[off].start, r[off+L-1].end, kMnemonic})
		}
	}
	return out
}

// noteTaken records a placeholder-shaped token ("[EMAIL_3]") found in the
// input, so masking never hands out a placeholder the user already wrote:
// restoring must not turn the user's own text into someone's data.
func (d *detector) noteTaken(s string, i int) {
	if e := placeholderAt(s, i); e > 0 {
		d.taken = append(d.taken, s[i:e])
	}
}

// sortSpans orders spans by start and resolves overlaps: the more severe
// action wins (block, redact, mask), then the longer span.
func sortSpans(sp []span, action func(ent int) int) []span {
	if len(sp) < 2 {
		return sp
	}
	sorted := true
	for i := 1; i < len(sp); i++ {
		if sp[i].start < sp[i-1].start {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(sp, func(a, b span) int { return a.start - b.start })
	}
	overlap := false
	for i := 1; i < len(sp); i++ {
		if sp[i].start < sp[i-1].end {
			overlap = true
			break
		}
	}
	if !overlap {
		return sp
	}
	pri := slices.Clone(sp)
	slices.SortStableFunc(pri, func(a, b span) int {
		if x, y := action(a.ent), action(b.ent); x != y {
			return y - x
		}
		if x, y := a.end-a.start, b.end-b.start; x != y {
			return y - x
		}
		return a.start - b.start
	})
	kept := sp[:0]
	for _, c := range pri {
		ok := true
		for _, k := range kept {
			if c.start < k.end && k.start < c.end {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, c)
		}
	}
	slices.SortFunc(kept, func(a, b span) int { return a.start - b.start })
	return kept
}
