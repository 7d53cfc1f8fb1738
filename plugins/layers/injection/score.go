package main

import (
	"math"
	"strconv"
)

// A score is written with a fixed number of decimals twice a classified
// text (the kv's 4, read back for the memo) and once a request (the
// header's 3). Inside wasm strconv does that with multi-precision decimal
// arithmetic (AppendFloat with a precision and 'f' takes its slow path,
// ParseFloat its general one): ~1/6 of the layer's own time with one new
// text. A score is in [0, 1], and for it the same digits come from
// integers. TestScoreDigitsAreStrconvs checks them against strconv.

// fixed is f scaled by 10^decimals and rounded as strconv rounds it for
// 'f' (the exact value, ties to even), when f is a score: ok is false for
// NaN, a negative (or -0) value and one above 1, which strconv formats.
// The product is exact: a float32's 24-bit mantissa times at most 10^4
// (14 bits) fits a float64's 53.
func fixed(f float32, scale float64) (n int, ok bool) {
	x := float64(f) * scale
	if !(x >= 0 && x <= scale) || math.Signbit(x) {
		return 0, false
	}
	return int(math.RoundToEven(x)), true
}

// appendScore4 is strconv.AppendFloat(dst, float64(f), 'f', 4, 32), the
// kv's form of a score.
func appendScore4(dst []byte, f float32) []byte {
	n, ok := fixed(f, 1e4)
	if !ok {
		return strconv.AppendFloat(dst, float64(f), 'f', 4, 32)
	}
	return append(dst, byte('0'+n/10000), '.', byte('0'+n/1000%10), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

// parseScore4 is strconv.ParseFloat(s, 32) for a score the kv holds.
// "d.dddd" up to 1.0000 is n/10^4 in float32 division, which rounds the
// exact quotient to the nearest float32 (ties to even) as ParseFloat
// rounds the decimal; any other text goes to ParseFloat.
func parseScore4(s string) (float32, bool) {
	if n, ok := digits4(s); ok {
		return float32(n) / 1e4, true
	}
	f, err := strconv.ParseFloat(s, 32)
	return float32(f), err == nil
}

// digits4 reads "d.dddd" as d*10^4 + dddd, at most 10^4.
func digits4(s string) (int, bool) {
	if len(s) != 6 || s[1] != '.' {
		return 0, false
	}
	n := 0
	for i, c := range []byte(s) {
		if i == 1 {
			continue
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= 1e4
}

// rounded4 is the score the kv gives back for f: ParseFloat of its 4
// decimals, so a score reused from the memo or the kv is the same number.
func rounded4(f float32) float32 {
	if n, ok := fixed(f, 1e4); ok {
		return float32(n) / 1e4
	}
	v, _ := strconv.ParseFloat(string(appendScore4(nil, f)), 32)
	return float32(v)
}

// scoreTexts holds the score header's strings, 0.000 to 1.000, each made
// once: every request sends one, and inside wasm a string built is an
// allocation.
var scoreTexts [1001]string

// scoreText is the score as the header gives it, 3 decimals
// (strconv.FormatFloat(f, 'f', 3, 32)).
func scoreText(f float32) string {
	n, ok := fixed(f, 1e3)
	if !ok {
		return strconv.FormatFloat(float64(f), 'f', 3, 32)
	}
	if s := scoreTexts[n]; s != "" {
		return s
	}
	b := [5]byte{byte('0' + n/1000), '.', byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)}
	scoreTexts[n] = string(b[:])
	return scoreTexts[n]
}
