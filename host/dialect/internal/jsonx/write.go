package jsonx

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal. Control characters, '"'
// and '\\' are escaped, as are U+2028 and U+2029; invalid UTF-8 becomes
// U+FFFD (as encoding/json does), so the output is always valid JSON.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if strSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendKey appends "key": (the key must not need escaping).
func AppendKey(dst []byte, key string) []byte {
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// ErrBadFloat is returned for NaN and infinities, which JSON cannot carry.
var ErrBadFloat = errors.New("NaN or infinite number")

// AppendFloat appends f the way encoding/json formats a float64.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, ErrBadFloat
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// AppendBool appends true or false.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// AppendCompact appends the valid JSON value v without insignificant
// whitespace (so it fits on one SSE data line). Values without any whitespace
// outside strings are copied as they are.
func AppendCompact(dst, v []byte) []byte {
	v = TrimWS(v)
	for i := 0; i < len(v); {
		c := v[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case '"':
			j, err := skipString(v, i)
			if err != nil {
				return append(dst, v[i:]...)
			}
			dst = append(dst, v[i:j]...)
			i = j
			continue
		}
		// copy a run of non-space, non-quote bytes
		j := i + 1
		for j < len(v) {
			d := v[j]
			if d == ' ' || d == '\t' || d == '\n' || d == '\r' || d == '"' {
				break
			}
			j++
		}
		dst = append(dst, v[i:j]...)
		i = j
	}
	return dst
}

// HasNewline reports whether v contains a CR or LF byte.
func HasNewline(v []byte) bool {
	for _, c := range v {
		if c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// ObjectBody returns the members of a valid JSON object without the braces
// and surrounding whitespace ("" for {}), for splicing into another object.
func ObjectBody(obj []byte) ([]byte, bool) {
	obj = TrimWS(obj)
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return nil, false
	}
	return TrimWS(obj[1 : len(obj)-1]), true
}

// AppendMembers appends ,"key":value for each member of the JSON object obj
// (validated here) for which skip returns false, for splicing an object's
// members into another object under construction. It returns an error when
// obj is not a valid JSON object; a nil or empty obj appends nothing.
func AppendMembers(dst, obj []byte, skip func(key []byte) bool) ([]byte, error) {
	if len(TrimWS(obj)) == 0 {
		return dst, nil
	}
	if err := Validate(obj); err != nil {
		return dst, err
	}
	if KindOf(obj) != Object {
		return dst, errors.New("not a JSON object")
	}
	err := ObjectEach(obj, func(key, val []byte) error {
		if skip != nil && skip(key) {
			return nil
		}
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		dst = append(dst, val...)
		return nil
	})
	return dst, err
}
