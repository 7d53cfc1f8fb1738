//go:build !wasip1

package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestScoreDigitsAreStrconvs: the integer formatting of scores writes what
// strconv.AppendFloat(…, 'f', 3 or 4, 32) writes and reads back what
// ParseFloat(…, 32) reads, for every float32 within 8 ulps of a rounding
// boundary or a written value (where the two could differ), random
// scores, and the values a score should never be (which go to strconv).
func TestScoreDigitsAreStrconvs(t *testing.T) {
	check := func(f float32) {
		t.Helper()
		if got, want := string(appendScore4(nil, f)), strconv.FormatFloat(float64(f), 'f', 4, 32); got != want {
			t.Fatalf("appendScore4(%v) = %q, strconv %q", f, got, want)
		}
		if got, want := scoreText(f), strconv.FormatFloat(float64(f), 'f', 3, 32); got != want {
			t.Fatalf("scoreText(%v) = %q, strconv %q", f, got, want)
		}
		want, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'f', 4, 32), 32)
		if got := rounded4(f); math.Float32bits(got) != math.Float32bits(float32(want)) && !math.IsNaN(want) {
			t.Fatalf("rounded4(%v) = %v, strconv %v", f, got, want)
		}
	}
	// Every value m/20000 is a written value (m even) or a tie of 4
	// decimals (m odd), and covers those of 3 decimals.
	for m := 0; m <= 20000; m++ {
		f := float32(float64(m) / 20000)
		for range 8 {
			f = math.Nextafter32(f, -1)
		}
		for range 17 {
			check(f)
			f = math.Nextafter32(f, 2)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check(r.Float32())
	}
	for _, f := range []float32{0, 1, float32(math.Copysign(0, -1)), -0.25, 1.5, 1e-45, 0.03125, 0.0625,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		check(f)
	}
	// Every score the kv can hold reads back as ParseFloat reads it.
	for n := 0; n <= 10000; n++ {
		s := fmt.Sprintf("%d.%04d", n/10000, n%10000)
		want, _ := strconv.ParseFloat(s, 32)
		if got, ok := parseScore4(s); !ok || math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("parseScore4(%q) = %v %v, ParseFloat %v", s, got, ok, want)
		}
	}
	// Anything else is ParseFloat's.
	for _, s := range []string{"0.5", "1.00001", "1.0001", "2.0000", "0.12e4", " 0.1234", "x", ""} {
		want, err := strconv.ParseFloat(s, 32)
		got, ok := parseScore4(s)
		if ok != (err == nil) || (ok && got != float32(want)) {
			t.Errorf("parseScore4(%q) = %v %v, ParseFloat %v %v", s, got, ok, want, err)
		}
	}
}
