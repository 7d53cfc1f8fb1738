package memo

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestEqualIsBytesEqual: Equal agrees with bytes.Equal on every length
// around its 8- and 32-byte steps, with one byte changed anywhere.
func TestEqualIsBytesEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 200; n++ {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		b := append([]byte(nil), a...)
		if !Equal(a, b) {
			t.Fatalf("len %d: equal copies differ", n)
		}
		for i := 0; i < n; i++ {
			b[i] ^= 1 << (i % 8)
			if Equal(a, b) || Equal(b, a) {
				t.Fatalf("len %d: a change at %d was not seen", n, i)
			}
			b[i] = a[i]
		}
		if n > 0 && (Equal(a, a[:n-1]) != bytes.Equal(a, a[:n-1])) {
			t.Fatalf("len %d: a shorter slice compared equal", n)
		}
	}
	if !Equal(nil, []byte{}) {
		t.Fatal("nil and empty differ")
	}
	if !EqualString("", "") || EqualString("tool_a", "tool_b") || !EqualString(strings.Repeat("x", 70), strings.Repeat("x", 70)) {
		t.Fatal("EqualString is not ==")
	}
}

// TestSpreadSamples: equal inputs share a spread (it is a function of the
// bytes), and lengths are told apart; inputs that differ only outside the
// sample may collide, which is why a lookup compares with Equal.
func TestSpreadSamples(t *testing.T) {
	a := bytes.Repeat([]byte("the system prompt "), 40)
	if Spread(a) != Spread(append([]byte(nil), a...)) {
		t.Fatal("equal inputs spread apart")
	}
	if Spread(a) == Spread(a[:len(a)-1]) {
		t.Fatal("lengths not told apart")
	}
	b := append([]byte(nil), a...)
	b[0] ^= 1
	if Spread(a) == Spread(b) {
		t.Fatal("the first byte is not sampled")
	}
	short := []byte("short")
	if Spread(short) == Spread([]byte("shorT")) {
		t.Fatal("a short input is not hashed whole")
	}
}
