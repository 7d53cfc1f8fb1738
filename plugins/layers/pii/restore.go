package main

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Placeholders are "[TAG_N]": an opening bracket, an upper-case tag
// ([A-Z][A-Z0-9_]*), an underscore, a decimal number without leading zeros
// and a closing bracket, e.g. [EMAIL_1], [PHONE_2], [PRIVATE_KEY_1]. Models
// copy such tokens verbatim (they look like template slots), the characters
// need no escaping in JSON, and the masker never hands out one the input
// already contains (see detector.noteTaken), so restoring cannot rewrite
// what the user wrote.

// maxToken bounds a placeholder's length.
const maxToken = 64

// placeholderAt returns the end of the placeholder-shaped token starting at
// s[i] (which must be '['), or 0.
func placeholderAt(s string, i int) int {
	n := len(s)
	if i+4 >= n || s[i] != '[' || !isUpper(s[i+1]) {
		return 0
	}
	und := -1
	for j := i + 2; j < n && j-i < maxToken; j++ {
		c := s[j]
		switch {
		case c == ']':
			if und < 0 || und+1 == j || s[und+1] == '0' {
				return 0
			}
			for k := und + 1; k < j; k++ {
				if !isDigit(s[k]) {
					return 0
				}
			}
			return j + 1
		case c == '_':
			und = j
		case isUpper(c) || isDigit(c):
		default:
			return 0
		}
	}
	return 0
}

// mayBePlaceholder reports whether s (starting with '[') could be the start
// of a placeholder no longer than maxLen: a stream holds such a tail back
// until the next delta completes or rules it out.
func mayBePlaceholder(s string, maxLen int) bool {
	if len(s) == 0 || s[0] != '[' || len(s) >= maxLen {
		return false
	}
	if len(s) > 1 && !isUpper(s[1]) {
		return false
	}
	for j := 2; j < len(s); j++ {
		if c := s[j]; c != '_' && !isUpper(c) && !isDigit(c) {
			return false
		}
	}
	return true
}

// restore appends s to dst with every placeholder of m replaced by its
// original; in a JSON string context (tool-call arguments) the original is
// JSON-escaped. It returns the number of replacements.
func restore(dst []byte, s string, m *mapping, inJSON bool) ([]byte, int) {
	count, last, i := 0, 0, 0
	for {
		k := strings.IndexByte(s[i:], '[')
		if k < 0 {
			break
		}
		j := i + k
		if e := placeholderAt(s, j); e > 0 {
			if v, ok := m.lookup(s[j:e]); ok {
				dst = append(dst, s[last:j]...)
				if inJSON {
					dst = appendJSONEscaped(dst, v)
				} else {
					dst = append(dst, v...)
				}
				last, i = e, e
				count++
				continue
			}
		}
		i = j + 1
	}
	return append(dst, s[last:]...), count
}

// splitHold splits s into the part that can be emitted now and a tail that
// might be the beginning of a placeholder split across deltas.
func splitHold(s string, maxLen int) (emit, hold string) {
	from := max(0, len(s)-maxLen)
	if j := strings.LastIndexByte(s[from:], '['); j >= 0 && mayBePlaceholder(s[from+j:], maxLen) {
		return s[:from+j], s[from+j:]
	}
	return s, ""
}

// appendJSONEscaped appends s escaped for the inside of a JSON string.
func appendJSONEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		last = i + 1
	}
	return append(dst, s[last:]...)
}

// unescapeJSON decodes the inside of a JSON string. ok is false for an
// invalid escape (the caller leaves such a string alone).
func unescapeJSON(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := strings.IndexByte(s[i:], '\\')
			if j < 0 {
				return append(dst, s[i:]...), true
			}
			dst = append(dst, s[i:i+j]...)
			i += j
			continue
		}
		if i+1 >= len(s) {
			return dst, false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				return dst, false
			}
			i += 6
			if r >= 0xD800 && r < 0xDC00 {
				if lo, ok := hex4(s, i+2); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				} else {
					r = utf8.RuneError
				}
			} else if r >= 0xDC00 && r < 0xE000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, false
		}
		i += 2
	}
	return dst, true
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// jsonStrings calls fn with the content range of every string literal in
// the JSON text b (keys and values), and whether it contains escapes.
func jsonStrings(b []byte, fn func(start, end int, escaped bool)) {
	i := 0
	for i < len(b) {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return
		}
		st := i + k + 1
		j, esc := st, false
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				esc = true
				j++
			}
			j++
		}
		if j >= len(b) {
			return
		}
		fn(st, j, esc)
		i = j + 1
	}
}
