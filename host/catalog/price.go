package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Price is a token price in US dollars per million tokens (USD/Mtok), held
// as an exact fixed-point integer of 10^-9 USD/Mtok (10^-15 USD a token).
//
// Why not float64: prices are money. They arrive as decimal text (TOML
// strings, OpenRouter's per-token strings such as "0.000000075", Venice's
// JSON numbers) and are summed into bills; binary floating point cannot hold
// 0.1 or 0.075 exactly, so conversions and sums drift, and a per-token
// price multiplied by 10^6 comes back as 0.07500000000000001. Decimal
// strings would be exact but must be parsed again on every use. A scaled
// integer is exact for every price a provider publishes (OpenRouter's
// smallest per-token quanta are 10^-10 USD, i.e. 10^-4 USD/Mtok), compares
// and adds in one instruction, and its range (±9.2 × 10^9 USD/Mtok) is
// ample. Float64 is offered for scoring only.
//
// The zero Price is unknown, not free: a model whose price was never given
// must not look like the cheapest. A free model has a known price of 0.
type Price struct {
	nanos int64 // 10^-9 USD per million tokens
	known bool
}

// nanosPerUSD is the fixed-point scale: 9 decimal places of USD/Mtok.
const nanosPerUSD = 1_000_000_000

// Unknown is the zero Price.
var Unknown = Price{}

// PriceFromNanos returns the known price of n × 10^-9 USD per million
// tokens.
func PriceFromNanos(n int64) Price { return Price{nanos: n, known: true} }

// ParsePrice parses a decimal price in USD per million tokens: "3",
// "0.075", "1.5e-1". It is exact to 9 decimal places (rounded half up
// beyond) and rejects negative values, empty strings and garbage.
func ParsePrice(s string) (Price, error) {
	n, err := parseScaled(s, 9)
	if err != nil {
		return Unknown, err
	}
	return PriceFromNanos(n), nil
}

// ParsePerTokenPrice parses a decimal price in USD per token (OpenRouter's
// unit, e.g. "0.000003") into USD per million tokens, exactly.
func ParsePerTokenPrice(s string) (Price, error) {
	n, err := parseScaled(s, 9+6)
	if err != nil {
		return Unknown, err
	}
	return PriceFromNanos(n), nil
}

var (
	errNotDecimal = errors.New("not a decimal number")
	errNegative   = errors.New("negative")
	errTooLarge   = errors.New("too large")
)

// parseScaled parses the non-negative decimal s (digits, an optional
// fraction and an optional exponent) and returns s × 10^shift as an integer,
// rounded half up. Up to 18 significant digits are kept.
func parseScaled(s string, shift int) (int64, error) {
	s = strings.TrimSpace(s)
	orig := s
	if s == "" {
		return 0, fmt.Errorf("%w: empty", errNotDecimal)
	}
	switch s[0] {
	case '-':
		n, err := parseScaled(s[1:], shift)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", orig, errNotDecimal)
		}
		if n != 0 {
			return 0, fmt.Errorf("%q: %w", orig, errNegative)
		}
		return 0, nil // "-0"
	case '+':
		s = s[1:]
	}
	var mant uint64
	exp, digits, dot := 0, 0, false
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			if mant < 1e17 {
				mant = mant*10 + uint64(c-'0')
				if dot {
					exp--
				}
			} else if !dot {
				exp++ // a dropped integer digit still scales
			}
			continue
		case c == '.' && !dot:
			dot = true
			continue
		}
		break
	}
	if digits == 0 {
		return 0, fmt.Errorf("%q: %w", orig, errNotDecimal)
	}
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return 0, fmt.Errorf("%q: %w", orig, errNotDecimal)
		}
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e < -400 || e > 400 {
			return 0, fmt.Errorf("%q: %w", orig, errNotDecimal)
		}
		exp += e
	}
	e := exp + shift
	if mant == 0 {
		return 0, nil
	}
	for ; e > 0; e-- {
		if mant > math.MaxInt64/10 {
			return 0, fmt.Errorf("%q: %w", orig, errTooLarge)
		}
		mant *= 10
	}
	if e < 0 {
		if e < -19 {
			return 0, nil // below 10^-19 of a unit: rounds to zero
		}
		div := uint64(1)
		for ; e < 0; e++ {
			div *= 10
		}
		q, r := mant/div, mant%div
		if r >= div-r { // r ≥ div/2 without overflow: half up
			q++
		}
		mant = q
	}
	if mant > math.MaxInt64 {
		return 0, fmt.Errorf("%q: %w", orig, errTooLarge)
	}
	return int64(mant), nil
}

// Known reports whether the price was given (a free model's is, at 0).
func (p Price) Known() bool { return p.known }

// Nanos returns the price in 10^-9 USD per million tokens (0 when unknown).
func (p Price) Nanos() int64 { return p.nanos }

// Float64 returns the price in USD per million tokens, for scoring and
// display; NaN when unknown. Never bill with it.
func (p Price) Float64() float64 {
	if !p.known {
		return math.NaN()
	}
	return float64(p.nanos) / nanosPerUSD
}

// String returns the price as a plain decimal in USD per million tokens
// ("0.075", "3", "0"), or "unknown".
func (p Price) String() string {
	if !p.known {
		return "unknown"
	}
	ip, fp := p.nanos/nanosPerUSD, p.nanos%nanosPerUSD
	if fp == 0 {
		return strconv.FormatInt(ip, 10)
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", fp), "0")
	return strconv.FormatInt(ip, 10) + "." + frac
}

// Cost returns what tokens tokens cost at this price, in 10^-9 USD
// (nano-dollars), rounded up so a bill is never short; 0 for an unknown
// price or no tokens, math.MaxInt64 on overflow.
func (p Price) Cost(tokens int64) int64 {
	if !p.known || tokens <= 0 || p.nanos <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(tokens), uint64(p.nanos))
	const perM = 1_000_000
	if hi >= perM {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, perM)
	if r > 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// MarshalJSON encodes a known price as a decimal string ("0.075": exact in
// every JSON reader) and an unknown one as null.
func (p Price) MarshalJSON() ([]byte, error) {
	if !p.known {
		return []byte("null"), nil
	}
	return []byte(`"` + p.String() + `"`), nil
}

// UnmarshalJSON accepts a decimal string, a JSON number or null (unknown).
func (p *Price) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*p = Unknown
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("price: %w", err)
		}
	}
	v, err := ParsePrice(s)
	if err != nil {
		return fmt.Errorf("price: %w", err)
	}
	*p = v
	return nil
}
