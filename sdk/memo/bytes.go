package memo

import "unsafe"

// Memos keyed by exact bytes (a prefix, a run of messages) look an input up
// by a cheap hash and then compare it whole against the stored copy, so a
// hit is never another input's answer. Inside wasm the standard library's
// versions of both go a byte at a time (bytes.Equal, the map's string
// hash); these go eight bytes a step.

// Spread hashes b's length and a sample of its bytes (the first and last
// 32, and eight words between). It only spreads a table: a lookup must
// compare the whole input with Equal, since inputs that differ outside the
// sample share a hash. Hashing every byte inside wasm would cost as much as
// the comparison.
func Spread(b []byte) uint64 {
	n := len(b)
	h := uint64(n) * 0x9e3779b97f4a7c15
	if n < 64 {
		for i := 0; i < n; i++ {
			h = (h ^ uint64(b[i])) * 0x100000001b3
		}
		return h ^ h>>29
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	for i := 0; i < 32; i += 8 {
		h = mix(h, word(p, i))
		h = mix(h, word(p, n-8-i))
	}
	step := (n - 8) / 9
	for i := 1; i <= 8; i++ {
		h = mix(h, word(p, i*step))
	}
	return h ^ h>>29
}

// Equal reports whether a and b hold the same bytes, as bytes.Equal does,
// 32 bytes a step.
func Equal(a, b []byte) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	if n == 0 {
		return true
	}
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	i := 0
	for ; i+32 <= n; i += 32 {
		if (word(pa, i)^word(pb, i))|(word(pa, i+8)^word(pb, i+8))|(word(pa, i+16)^word(pb, i+16))|(word(pa, i+24)^word(pb, i+24)) != 0 {
			return false
		}
	}
	for ; i+8 <= n; i += 8 {
		if word(pa, i) != word(pb, i) {
			return false
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// word loads the eight bytes at p+i (unaligned loads are fine in wasm and
// on the hosts Go supports natively here).
func word(p unsafe.Pointer, i int) uint64 { return *(*uint64)(unsafe.Add(p, i)) }

func mix(h, x uint64) uint64 {
	h = (h ^ x) * 0xff51afd7ed558ccd
	return h ^ h>>32
}

// EqualString is a == b through Equal: inside wasm the runtime compares
// strings a byte at a time.
func EqualString(a, b string) bool {
	return Equal(unsafe.Slice(unsafe.StringData(a), len(a)), unsafe.Slice(unsafe.StringData(b), len(b)))
}
