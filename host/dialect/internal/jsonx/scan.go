// Package jsonx holds the small, allocation-light JSON reader and writer the
// dialect codecs share.
//
// The reader works in two steps: [Validate] checks a whole document once
// (strict RFC 8259 grammar), then [ObjectEach], [ArrayEach] and [Skip] walk the
// validated bytes without re-validating them, handing out raw sub-slices. The
// walkers never panic on malformed input (they return [ErrSyntax]), but they
// only detect malformations that break the structure, so callers must validate
// first.
package jsonx

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error the reader returns for malformed JSON.
var ErrSyntax = errors.New("malformed JSON")

// SyntaxError reports where a document stops being valid JSON.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// MaxDepth bounds the nesting of arrays and objects [Validate] accepts.
const MaxDepth = 1000

// Validate reports whether data is exactly one JSON value, optionally
// surrounded by whitespace.
func Validate(data []byte) error {
	v := validator{data: data}
	i := skipWS(data, 0)
	i = v.value(i, 0)
	if v.err != nil {
		return v.err
	}
	i = skipWS(data, i)
	if i != len(data) {
		return &SyntaxError{Offset: i, Msg: "unexpected data after the top-level value"}
	}
	return nil
}

// Valid is Validate without the error.
func Valid(data []byte) bool { return Validate(data) == nil }

// ValidateStrict is Validate, plus what a request body must also be to mean
// one thing: strings are valid UTF-8 (a decoder would otherwise replace the
// bad bytes with U+FFFD, sending the upstream other text than the caller's)
// and no object has the same key twice (decoders that read members in turn
// would concatenate or override, each its own way). A duplicate's error
// names the key (*DuplicateKeyError).
func ValidateStrict(data []byte) error {
	v := validator{data: data, strict: true}
	i := skipWS(data, 0)
	i = v.value(i, 0)
	if v.err != nil {
		return v.err
	}
	i = skipWS(data, i)
	if i != len(data) {
		return &SyntaxError{Offset: i, Msg: "unexpected data after the top-level value"}
	}
	return nil
}

// DuplicateKeyError reports an object key that appears twice.
type DuplicateKeyError struct {
	Offset int
	Key    string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q at offset %d", e.Key, e.Offset)
}

// Unwrap returns ErrSyntax.
func (e *DuplicateKeyError) Unwrap() error { return ErrSyntax }

type validator struct {
	data   []byte
	err    error
	strict bool
	keys   [][]byte // strict: the keys of the objects being read, innermost last
}

func (v *validator) fail(i int, msg string) int {
	if v.err == nil {
		v.err = &SyntaxError{Offset: i, Msg: msg}
	}
	return len(v.data)
}

func (v *validator) value(i, depth int) int {
	d := v.data
	if i >= len(d) {
		return v.fail(i, "unexpected end of input")
	}
	switch c := d[i]; {
	case c == '"':
		return v.str(i)
	case c == '{':
		if depth >= MaxDepth {
			return v.fail(i, "nesting too deep")
		}
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == '}' {
			return i + 1
		}
		base := len(v.keys)
		if v.strict {
			defer func() { v.keys = v.keys[:base] }()
		}
		for {
			if i >= len(d) || d[i] != '"' {
				return v.fail(i, "expected a string key")
			}
			ks := i
			i = v.str(i)
			if v.err != nil {
				return i
			}
			if v.strict {
				if j := v.seen(base, d[ks+1:i-1]); j >= 0 {
					v.err = &DuplicateKeyError{Offset: ks, Key: KeyString(d[ks+1 : i-1])}
					return len(d)
				}
			}
			i = skipWS(d, i)
			if i >= len(d) || d[i] != ':' {
				return v.fail(i, "expected ':' after an object key")
			}
			i = skipWS(d, i+1)
			i = v.value(i, depth+1)
			if v.err != nil {
				return i
			}
			i = skipWS(d, i)
			if i >= len(d) {
				return v.fail(i, "unexpected end of input in an object")
			}
			if d[i] == '}' {
				return i + 1
			}
			if d[i] != ',' {
				return v.fail(i, "expected ',' or '}' in an object")
			}
			i = skipWS(d, i+1)
		}
	case c == '[':
		if depth >= MaxDepth {
			return v.fail(i, "nesting too deep")
		}
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1
		}
		for {
			i = v.value(i, depth+1)
			if v.err != nil {
				return i
			}
			i = skipWS(d, i)
			if i >= len(d) {
				return v.fail(i, "unexpected end of input in an array")
			}
			if d[i] == ']' {
				return i + 1
			}
			if d[i] != ',' {
				return v.fail(i, "expected ',' or ']' in an array")
			}
			i = skipWS(d, i+1)
		}
	case c == 't':
		return v.lit(i, "true")
	case c == 'f':
		return v.lit(i, "false")
	case c == 'n':
		return v.lit(i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return v.num(i)
	default:
		return v.fail(i, "unexpected character "+strconv.QuoteRune(rune(c)))
	}
}

func (v *validator) lit(i int, want string) int {
	if len(v.data)-i < len(want) || string(v.data[i:i+len(want)]) != want {
		return v.fail(i, "invalid literal")
	}
	return i + len(want)
}

func (v *validator) num(i int) int {
	d := v.data
	start := i
	if d[i] == '-' {
		i++
	}
	if i >= len(d) {
		return v.fail(start, "invalid number")
	}
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return v.fail(start, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return v.fail(start, "invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return v.fail(start, "invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	return i
}

// seen reports where key (raw, still escaped) is among the keys of the
// current object (from base on), -1 when it is new; it records new keys.
// Objects are small, so a scan beats a map; keys with escapes compare
// decoded.
func (v *validator) seen(base int, key []byte) int {
	for j, k := range v.keys[base:] {
		if bytes.Equal(k, key) || (bytes.IndexByte(k, '\\') >= 0 || bytes.IndexByte(key, '\\') >= 0) && KeyString(k) == KeyString(key) {
			return j
		}
	}
	v.keys = append(v.keys, key)
	return -1
}

// str validates the string starting at d[i] == '"' and returns the index after
// its closing quote.
func (v *validator) str(i int) int {
	d := v.data
	start := i
	i++
	for i < len(d) {
		c := d[i]
		if strSafe[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(d) {
				return v.fail(i, "unterminated escape")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(d)-i < 6 || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return v.fail(i, "invalid \\u escape")
				}
				i += 6
			default:
				return v.fail(i, "invalid escape")
			}
		case c >= 0x80:
			if !v.strict {
				i++
				continue
			}
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				return v.fail(i, "invalid UTF-8 in a string")
			}
			i += size
		default: // control character
			return v.fail(i, "control character in a string")
		}
	}
	return v.fail(start, "unterminated string")
}

// strSafe marks the ASCII bytes a string may contain without special
// handling (bytes from 0x80 on are checked as UTF-8 in strict mode).
var strSafe = func() (t [256]bool) {
	for i := range t {
		t[i] = i >= 0x20 && i < 0x80 && i != '"' && i != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func skipWS(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// TrimWS strips insignificant whitespace around a value.
func TrimWS(d []byte) []byte {
	i := skipWS(d, 0)
	j := len(d)
	for j > i {
		switch d[j-1] {
		case ' ', '\t', '\n', '\r':
			j--
			continue
		}
		break
	}
	return d[i:j]
}

func syntaxErr(i int, msg string) error { return &SyntaxError{Offset: i, Msg: msg} }

// Skip returns the index just after the value starting at d[i] (whitespace
// before it is skipped). It trusts d to be valid JSON but never reads out of
// bounds.
func Skip(d []byte, i int) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) {
		return i, syntaxErr(i, "unexpected end of input")
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				j, err := skipString(d, i)
				if err != nil {
					return j, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return i, syntaxErr(i, "unterminated container")
	default:
		start := i
		for i < len(d) {
			switch d[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r', ':', '"', '{', '[':
				if i == start {
					return i, syntaxErr(i, "unexpected character")
				}
				return i, nil
			}
			i++
		}
		if i == start {
			return i, syntaxErr(i, "unexpected end of input")
		}
		return i, nil
	}
}

// skipString returns the index after the string starting at d[i] == '"'.
func skipString(d []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			return len(d), syntaxErr(i, "unterminated string")
		}
		j += k
		// Count the backslashes before the quote: an odd number escapes it.
		n := 0
		for b := j - 1; b > i && d[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// ObjectEach calls fn for each member of the object obj (which may be
// surrounded by whitespace) in document order. key is the raw key without its
// quotes (still escaped; see [KeyString]); val is the raw value, trimmed.
func ObjectEach(obj []byte, fn func(key, val []byte) error) error {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return syntaxErr(i, "expected an object")
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return syntaxErr(i, "expected a string key")
		}
		ke, err := skipString(obj, i)
		if err != nil {
			return err
		}
		key := obj[i+1 : ke-1]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return syntaxErr(i, "expected ':'")
		}
		i = skipWS(obj, i+1)
		ve, err := Skip(obj, i)
		if err != nil {
			return err
		}
		if err := fn(key, obj[i:ve]); err != nil {
			return err
		}
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return syntaxErr(i, "unterminated object")
		}
		if obj[i] == '}' {
			return nil
		}
		if obj[i] != ',' {
			return syntaxErr(i, "expected ',' or '}'")
		}
		i = skipWS(obj, i+1)
	}
}

// ArrayEach calls fn for each element of the array arr in order.
func ArrayEach(arr []byte, fn func(i int, val []byte) error) error {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return syntaxErr(i, "expected an array")
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for n := 0; ; n++ {
		ve, err := Skip(arr, i)
		if err != nil {
			return err
		}
		if err := fn(n, arr[i:ve]); err != nil {
			return err
		}
		i = skipWS(arr, ve)
		if i >= len(arr) {
			return syntaxErr(i, "unterminated array")
		}
		if arr[i] == ']' {
			return nil
		}
		if arr[i] != ',' {
			return syntaxErr(i, "expected ',' or ']'")
		}
		i = skipWS(arr, i+1)
	}
}

// Kind classifies a raw, trimmed value.
type Kind uint8

// Value kinds.
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "a boolean"
	case Number:
		return "a number"
	case String:
		return "a string"
	case Array:
		return "an array"
	case Object:
		return "an object"
	}
	return "invalid"
}

// KindOf returns the kind of the raw value v (leading whitespace allowed).
func KindOf(v []byte) Kind {
	i := skipWS(v, 0)
	if i >= len(v) {
		return Invalid
	}
	switch c := v[i]; {
	case c == '"':
		return String
	case c == '{':
		return Object
	case c == '[':
		return Array
	case c == 't' || c == 'f':
		return Bool
	case c == 'n':
		return Null
	case c == '-' || (c >= '0' && c <= '9'):
		return Number
	}
	return Invalid
}

// IsNull reports whether v is the literal null.
func IsNull(v []byte) bool { return KindOf(v) == Null }

// Unquote decodes the raw JSON string v (with its quotes). Invalid UTF-8
// becomes U+FFFD, as with encoding/json.
func Unquote(v []byte) (string, error) {
	v = TrimWS(v)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", syntaxErr(0, "expected a string")
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if utf8.Valid(body) {
			return string(body), nil
		}
		return string(fixUTF8(body)), nil
	}
	b, err := unescape(make([]byte, 0, len(body)), body)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		b = fixUTF8(b)
	}
	return string(b), nil
}

// fixUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func fixUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// KeyString decodes a raw object key as handed out by [ObjectEach]. Keys
// without escapes are converted directly.
func KeyString(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key)
	}
	b, err := unescape(make([]byte, 0, len(key)), key)
	if err != nil {
		return string(key)
	}
	return string(b)
}

// KeyIs reports whether the raw key equals s; escaped keys are decoded first.
func KeyIs(key []byte, s string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == s
	}
	return KeyString(key) == s
}

// unescape appends the decoded contents of a JSON string body (no quotes).
// Invalid surrogates decode to U+FFFD, as encoding/json does.
func unescape(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := bytes.IndexByte(s[i:], '\\')
			if j < 0 {
				return append(dst, s[i:]...), nil
			}
			dst = append(dst, s[i:i+j]...)
			i += j
			continue
		}
		if i+1 >= len(s) {
			return dst, syntaxErr(i, "unterminated escape")
		}
		switch s[i+1] {
		case '"', '\\', '/':
			dst = append(dst, s[i+1])
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
				return dst, syntaxErr(i, "invalid \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2, ok2 = hex4(s, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, syntaxErr(i, "invalid escape")
		}
		i += 2
	}
	return dst, nil
}

func hex4(s []byte, i int) (rune, bool) {
	if len(s)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// ParseInt parses a raw JSON integer. Numbers with a fraction or exponent are
// accepted only when their value is integral (e.g. 1024.0, 1e3).
func ParseInt(v []byte) (int64, error) {
	v = TrimWS(v)
	if KindOf(v) != Number {
		return 0, errors.New("not a number")
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err == nil {
		return n, nil
	}
	f, ferr := strconv.ParseFloat(string(v), 64)
	if ferr != nil || f != float64(int64(f)) || f > 1<<62 || f < -(1<<62) {
		return 0, errors.New("not an integer")
	}
	return int64(f), nil
}

// ParseFloat parses a raw JSON number.
func ParseFloat(v []byte) (float64, error) {
	v = TrimWS(v)
	if KindOf(v) != Number {
		return 0, errors.New("not a number")
	}
	return strconv.ParseFloat(string(v), 64)
}

// ParseBool parses a raw JSON boolean.
func ParseBool(v []byte) (bool, error) {
	switch string(TrimWS(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("not a boolean")
}
