package guardrail

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
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
	var b strings.Builder
	for _, r := range text {
		if r >= 0xE0020 && r <= 0xE007E {
			b.WriteByte(byte(r - 0xE0000))
		}
	}
	s := b.String()
	return s, len(s) >= 8 && strings.Contains(s, " ")
}

var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)

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
	for _, m := range base64Run.FindAllString(text, maxBase64Candidates) {
		if len(m) > maxBase64Len {
			continue
		}
		if s, ok := decodeBase64Text(m); ok {
			out = append(out, s)
		}
	}
	return out
}

func decodeBase64Text(m string) (string, bool) {
	encs := []*base64.Encoding{base64.StdEncoding, base64.URLEncoding}
	if !strings.HasSuffix(m, "=") {
		encs = append(encs, base64.RawStdEncoding, base64.RawURLEncoding)
	}
	for _, enc := range encs {
		data, err := enc.DecodeString(m)
		if err != nil {
			continue
		}
		if readable(data) {
			return string(data), true
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
	s := string(data)
	if !strings.Contains(strings.TrimSpace(s), " ") {
		return false
	}
	total, printable := 0, 0
	for _, r := range s {
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

// looksROT13 reports whether text has at least two ROT13'd common words, so
// the ROT13 view is only scanned when it can contain English.
func looksROT13(text string) bool {
	n := 0
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) <= 12 && rot13Words[strings.ToLower(w)] {
			n++
			if n >= 2 {
				return true
			}
		}
	}
	return false
}

var leetMap = map[rune]rune{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's'}

// unleet undoes common leetspeak ("1gn0re prev10us 1nstruct10ns"). It
// reports false, and is not scanned, unless some word mixes letters with
// leet digits, so ordinary numbers are left alone.
func unleet(text string) (string, bool) {
	mixed := false
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '@' && r != '$' }) {
		hasLetter, hasLeet := false, false
		for _, r := range w {
			if _, ok := leetMap[r]; ok {
				hasLeet = true
			} else if unicode.IsLetter(r) {
				hasLetter = true
			}
		}
		if hasLetter && hasLeet {
			mixed = true
			break
		}
	}
	if !mixed {
		return "", false
	}
	return strings.Map(func(r rune) rune {
		if m, ok := leetMap[r]; ok {
			return m
		}
		return r
	}, text), true
}
