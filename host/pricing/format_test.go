package pricing

import (
	"math"
	"testing"
)

func TestUSD(t *testing.T) {
	for m, want := range map[Micros]string{
		0: "0.000000", 1: "0.000001", 21563: "0.021563", 1_000_000: "1.000000",
		-1125: "-0.001125", 12_345_678_901: "12345.678901",
		math.MaxInt64: "9223372036854.775807", math.MinInt64: "-9223372036854.775808",
	} {
		if got := m.String(); got != want {
			t.Errorf("%d: %q, want %q", int64(m), got, want)
		}
		if m == math.MinInt64 || m == math.MaxInt64 {
			continue
		}
		back, err := ParseUSD(want)
		if err != nil || back != m {
			t.Errorf("ParseUSD(%q) = %d %v", want, back, err)
		}
	}
	for s, want := range map[string]Micros{"1": 1_000_000, "0.5": 500_000, "-2.25": -2_250_000, "0.000001": 1} {
		if got, err := ParseUSD(s); err != nil || got != want {
			t.Errorf("ParseUSD(%q) = %d %v", s, got, err)
		}
	}
	for _, s := range []string{"", ".5", "1.0000001", "1e3", "abc", "1.2.3", "--1", "99999999999999"} {
		if _, err := ParseUSD(s); err == nil {
			t.Errorf("ParseUSD(%q) accepted", s)
		}
	}
}

func TestBalanceWarning(t *testing.T) {
	if !BalanceWarning(999_999) || BalanceWarning(1_000_000) {
		t.Fatal("the warning is for a balance below $1.00")
	}
}

func TestTrailer(t *testing.T) {
	tr := Trailer{Figures: Figures{Charge: 21563, Savings: 21787}, Balance: 4_978_437, HasBalance: true, RemainingTokens: 98765, HasRemaining: true}
	got := string(tr.Append(nil))
	want := ": bardo cost=0.021563 savings=0.021787 balance=4.978437 remaining-tokens=98765\n\n"
	if got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
	sf, ok := ParseTrailer(got)
	if !ok || sf != (StreamFigures{Cost: "0.021563", Savings: "0.021787", Balance: "4.978437", RemainingTokens: "98765"}) {
		t.Fatalf("%+v %v", sf, ok)
	}
	d := Trailer{Figures: Figures{DirectKey: true, Cost: 10, Savings: 5}}
	if got := string(d.Append(nil)); got != ": bardo cost=direct savings=0.000005\n\n" {
		t.Fatalf("direct: %q", got)
	}
	if _, ok := ParseTrailer(": ping"); ok {
		t.Fatal("a foreign comment parsed as a trailer")
	}
	// A StreamUsage (any SSE reader) passes over the trailer.
	var su StreamUsage
	su.Write([]byte(openaiStream[:len(openaiStream)-len("data: [DONE]\n\n")]))
	su.Write(tr.Append(nil))
	su.Write([]byte("data: [DONE]\n\n"))
	if u, _ := su.Usage(); u != openaiWant {
		t.Fatalf("%+v", u)
	}
}
