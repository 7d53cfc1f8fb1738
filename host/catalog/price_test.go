package catalog

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestParsePrice(t *testing.T) {
	cases := []struct {
		in    string
		nanos int64
		err   error
	}{
		{"3", 3_000_000_000, nil},
		{"0.075", 75_000_000, nil},
		{"  2.80 ", 2_800_000_000, nil},
		{"+1", 1_000_000_000, nil},
		{"1.5e-1", 150_000_000, nil},
		{"15E2", 1_500_000_000_000, nil},
		{".5", 500_000_000, nil},
		{"5.", 5_000_000_000, nil},
		{"0", 0, nil},
		{"0.000", 0, nil},
		{"-0", 0, nil},
		{"0.000000001", 1, nil},
		{"0.0000000004", 0, nil}, // below the resolution: rounds to 0
		{"0.0000000005", 1, nil}, // half up
		{"0.0000000014999", 1, nil},
		{"123456789.123456789", 123456789123456789, nil},
		{"", 0, errNotDecimal},
		{"abc", 0, errNotDecimal},
		{"1.2.3", 0, errNotDecimal},
		{"1e", 0, errNotDecimal},
		{"1e999", 0, errNotDecimal},
		{"$3", 0, errNotDecimal},
		{"3 USD", 0, errNotDecimal},
		{"-1", 0, errNegative},
		{"-0.5", 0, errNegative},
		{"--5", 0, errNotDecimal},
		{"99999999999", 0, errTooLarge},
	}
	for _, c := range cases {
		p, err := ParsePrice(c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("ParsePrice(%q) error = %v, want %v", c.in, err, c.err)
			}
			if p.Known() {
				t.Errorf("ParsePrice(%q) known on error", c.in)
			}
			continue
		}
		if err != nil || !p.Known() || p.Nanos() != c.nanos {
			t.Errorf("ParsePrice(%q) = %d, %v; want %d", c.in, p.Nanos(), err, c.nanos)
		}
	}
}

// OpenRouter's per-token strings convert to per-Mtok exactly, by decimal
// shifting rather than floating-point multiplication.
func TestParsePerTokenPriceIsExact(t *testing.T) {
	cases := map[string]string{
		"0.000003":      "3",
		"0.000015":      "15",
		"0.00000015":    "0.15",
		"0.0000006":     "0.6",
		"0.000000075":   "0.075",
		"0.0000003":     "0.3",
		"0.00000375":    "3.75",
		"0.0000000001":  "0.0001",
		"0":             "0",
		"1.25e-6":       "1.25",
		"0.00002187500": "21.875",
	}
	for in, want := range cases {
		p, err := ParsePerTokenPrice(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePerTokenPrice(%q) = %s, %v; want %s", in, p, err, want)
		}
	}
}

func TestPriceBasics(t *testing.T) {
	var zero Price
	if zero.Known() || zero.String() != "unknown" || !math.IsNaN(zero.Float64()) || zero.Cost(1000) != 0 {
		t.Error("the zero Price must be unknown, never free")
	}
	free := PriceFromNanos(0)
	if !free.Known() || free.String() != "0" || free.Float64() != 0 || free.Cost(1000) != 0 {
		t.Error("free price")
	}
	p, _ := ParsePrice("0.075")
	if p.Float64() != 0.075 {
		t.Errorf("Float64 = %v", p.Float64())
	}
}

func TestPriceCost(t *testing.T) {
	mk := func(s string) Price {
		p, err := ParsePrice(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		price  string
		tokens int64
		nanos  int64
	}{
		{"3", 1000, 3_000_000},  // 1000 tokens at $3/M = $0.003
		{"15", 1_000_000, 15e9}, // a million tokens = the price
		{"0.075", 1, 75},        // one token at $0.075/M = 75 n$
		{"0.000000333", 3, 1},   // 0.000999 n$ rounds up to 1
		{"0.1", 0, 0},           // no tokens
		{"0.1", -5, 0},          // nonsense tokens
		{"0", 1 << 40, 0},       // free
		{"1000", 1 << 20, 1_048_576_000_000},
		{"1000", 1e10, 1e16}, // 10^22 intermediate: needs the 128-bit product
	}
	for _, c := range cases {
		if got := mk(c.price).Cost(c.tokens); got != c.nanos {
			t.Errorf("Cost(%s USD/M × %d) = %d n$, want %d", c.price, c.tokens, got, c.nanos)
		}
	}
	if got := PriceFromNanos(math.MaxInt64).Cost(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("overflow = %d, want saturation", got)
	}
}

func TestPriceJSON(t *testing.T) {
	type doc struct {
		A Price `json:"a"`
		B Price `json:"b"`
		C Price `json:"c"`
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"a":"0.075","b":2.8,"c":null}`), &d); err != nil {
		t.Fatal(err)
	}
	if d.A.String() != "0.075" || d.B.String() != "2.8" || d.C.Known() {
		t.Errorf("decoded %+v", d)
	}
	out, _ := json.Marshal(d)
	if string(out) != `{"a":"0.075","b":"2.8","c":null}` {
		t.Errorf("encoded %s", out)
	}
	if err := json.Unmarshal([]byte(`{"a":"-1"}`), &d); err == nil {
		t.Error("negative price accepted")
	}
	if err := json.Unmarshal([]byte(`{"a":true}`), &d); err == nil {
		t.Error("boolean price accepted")
	}
}
