package guardrail

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Decoded views: obfuscations that hide an instruction from both the rules
// and the TF-IDF model, undone cheaply so the same rules can see through
// them. Each is bounded so a hostile input cannot make scoring expensive.

// decodeTags recovers text written in Unicode tag characters (U+E0020 to
// U+E007E mirror ASCII 0x20 to 0x7E and render as nothing): the "ASCII
// smuggling" technique. Emoji subdivision flags also use tag characters, but
// only lowercase letters and digits, so a decoded string counts only if it
// contains a space.
func decodeTags(text string) (string, bool) {
	// Every tag character is F3 A0 8x in UTF-8: a text without those two
	// bytes (any text of ASCII, Latin, CJK…) has none, and is not walked
	// rune by rune.
	if !strings.Contains(text, "\xf3\xa0") {
		return "", false
	}
	var b strings.Builder
	for _, r := range text {
		if r >= 0xE0020 && r <= 0xE007E {
			b.WriteByte(byte(r - 0xE0000))
		}
	}
	s := b.String()
	return s, len(s) >= 8 && strings.Contains(s, " ")
}

// base64Run is what decodeBase64Payloads looks for; base64Runs finds its
// matches without the regexp engine (a bounded repeat of 16 copies).
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)

func isBase64Byte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

// base64Runs returns the first n matches of base64Run in text, as
// base64Run.FindAllString(text, n) does: each maximal run of at least 16
// base64 bytes, with up to two '=' after it. The class is ASCII, so
// scanning bytes is scanning characters.
func base64Runs(text string, n int) []string {
	var out []string
	for i := 0; i < len(text) && len(out) < n; {
		if !isBase64Byte(text[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isBase64Byte(text[j]) {
			j++
		}
		if j-i >= 16 {
			for k := 0; k < 2 && j < len(text) && text[j] == '='; k++ {
				j++
			}
			out = append(out, text[i:j])
		}
		i = j
	}
	return out
}

const (
	maxBase64Candidates = 8
	maxBase64Len        = 8192
)

// decodeBase64Payloads returns the base64 runs in text that decode to
// readable text with at least two words. Hashes, addresses and identifiers
// also look like base64 but decode to binary, which the readability test
// rejects.
func decodeBase64Payloads(text string) []string {
	var out []string
	for _, m := range base64Runs(text, maxBase64Candidates) {
		if len(m) > maxBase64Len {
			continue
		}
		if s, ok := decodeBase64Text(m); ok {
			out = append(out, s)
		}
	}
	return out
}

// base64Encodings are the alphabets a run may be written in; a run that
// ends in '=' is padded, so only the padded ones can read it.
var (
	base64Encodings = []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}
	base64Padded    = base64Encodings[:2]
)

// decodeBase64Text returns what m decodes to in the first alphabet whose
// decoding is readable text. It decodes into a buffer on the stack (for
// runs up to 1 KiB) and copies only a readable result: most runs are
// identifiers, hashes and paths that decode to binary, and tool results
// are full of them.
func decodeBase64Text(m string) (string, bool) {
	encs := base64Encodings
	if strings.HasSuffix(m, "=") {
		encs = base64Padded
	}
	var stack [1024]byte
	buf := stack[:]
	if len(m) > len(buf) { // a decoding is never longer than its input
		buf = make([]byte, len(m))
	}
	src := unsafe.Slice(unsafe.StringData(m), len(m))
	for _, enc := range encs {
		n, err := enc.Decode(buf, src)
		if err != nil {
			continue
		}
		if readable(buf[:n]) {
			return string(buf[:n]), true
		}
	}
	return "", false
}

// readable reports whether data is UTF-8 text, at least 90% printable, with
// a space between words.
func readable(data []byte) bool {
	if len(data) < 8 || !utf8.Valid(data) {
		return false
	}
	if !bytes.Contains(bytes.TrimSpace(data), []byte(" ")) {
		return false
	}
	total, printable := 0, 0
	for _, r := range string(data) { // no copy: the compiler ranges over data
		total++
		if unicode.IsPrint(r) || r == '\n' || r == '\t' {
			printable++
		}
	}
	return printable*10 >= total*9
}

// rot13 rotates ASCII letters by 13. English run through it never matches
// the rules, so scanning the rotated text costs false positives nothing.
func rot13(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case 'A' <= r && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, text)
}

// rot13Words are common English words after ROT13 ("the", "and", "you",
// "your", "to", "of", "is", "ignore", "all", "instructions").
var rot13Words = map[string]bool{"gur": true, "naq": true, "lbh": true, "lbhe": true, "gb": true, "bs": true, "vf": true, "vtaber": true, "nyy": true, "vafgehpgvbaf": true}

// isROT13Word is rot13Words[w] as a switch: compared by length, then
// bytes, where the map hashed every word of the text.
func isROT13Word(w string) bool {
	switch w {
	case "gur", "naq", "lbh", "lbhe", "gb", "bs", "vf", "vtaber", "nyy", "vafgehpgvbaf":
		return true
	}
	return false
}

// looksROT13 reports whether text has at least two ROT13'd common words, so
// the ROT13 view is only scanned when it can contain English. A word is a
// maximal run of letters.
func looksROT13(text string) bool {
	n, start := 0, -1
	var buf [12]byte
	check := func(w string) {
		if len(w) > len(buf) {
			return
		}
		// Lowercase into buf (an ASCII word, the usual case) without
		// allocating; a word with other letters takes strings.ToLower.
		for i := 0; i < len(w); i++ {
			c := w[i]
			if c >= 0x80 {
				if isROT13Word(strings.ToLower(w)) {
					n++
				}
				return
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		if isROT13Word(string(buf[:len(w)])) {
			n++
		}
	}
	for i, r := range text {
		if unicode.IsLetter(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			check(text[start:i])
			start = -1
			if n >= 2 {
				return true
			}
		}
	}
	if start >= 0 {
		check(text[start:])
	}
	return n >= 2
}

// leetChars are the characters leet maps.
const leetChars = "013457@$"

// leet maps the leetspeak characters unleet undoes; others map to 0.
func leet(r rune) rune {
	switch r {
	case '0':
		return 'o'
	case '1':
		return 'i'
	case '3':
		return 'e'
	case '4':
		return 'a'
	case '5':
		return 's'
	case '7':
		return 't'
	case '@':
		return 'a'
	case '$':
		return 's'
	}
	return 0
}

// unleet undoes common leetspeak ("1gn0re prev10us 1nstruct10ns"). It
// reports false, and is not scanned, unless some word (a run of letters,
// digits, '@' and '$') mixes letters with leet characters, so ordinary
// numbers are left alone.
func unleet(text string) (string, bool) {
	// The leet characters are ASCII: a text with none of them (most
	// prose) has no word to undo, and is not walked rune by rune.
	if !strings.ContainsAny(text, leetChars) {
		return "", false
	}
	mixed, hasLetter, hasLeet := false, false, false
scan:
	for _, r := range text {
		switch {
		case leet(r) != 0:
			hasLeet = true
		case unicode.IsLetter(r):
			hasLetter = true
		case unicode.IsDigit(r):
		default: // the word ends
			hasLetter, hasLeet = false, false
			continue
		}
		if hasLetter && hasLeet {
			mixed = true
			break scan
		}
	}
	if !mixed {
		return "", false
	}
	return strings.Map(func(r rune) rune {
		if m := leet(r); m != 0 {
			return m
		}
		return r
	}, text), true
}
