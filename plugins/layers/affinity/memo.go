package main

import (
	"encoding/hex"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// An agent resends its conversation's prefix (model, system prompt, tool
// names, first user message) every turn, and the request phase hashed it
// each time: a host SHA-256 over a few KB and its hex. The hex is
// remembered by the exact bytes hashed, with the tenant before them,
// compared byte for byte (the sampled hash below only spreads the map), so
// how long a request takes cannot tell one tenant another's prompt. The
// memo is per instance; when full it starts over.

// prefixMemoBytes bounds the prefixes held.
const prefixMemoBytes = 1 << 20

type prefixEntry struct {
	in  []byte   // the tenant (length-prefixed) and the bytes hashed (a copy)
	hex [32]byte // hex of the first 16 bytes of the SHA-256 of in[at:]
}

var (
	prefixes     = map[uint64]*prefixEntry{}
	prefixesSize int
	fresh        prefixEntry // a prefix too large to remember
)

// prefixOf returns the hex of the hash of b[at:] (b[:at] is the tenant,
// length-prefixed). It is valid until the next call.
func prefixOf(b []byte, at int) *[32]byte {
	h := hashBytes(b)
	if e := prefixes[h]; e != nil && equalBytes(e.in, b) {
		return &e.hex
	}
	sum := plugin.SHA256(b[at:])
	if len(b) > prefixMemoBytes/4 {
		hex.Encode(fresh.hex[:], sum[:16])
		return &fresh.hex
	}
	if prefixesSize+len(b) > prefixMemoBytes {
		clear(prefixes)
		prefixesSize = 0
	}
	e := &prefixEntry{in: append([]byte(nil), b...)}
	hex.Encode(e.hex[:], sum[:16])
	prefixes[h] = e
	prefixesSize += len(b) + 128
	return &e.hex
}

// hashBytes hashes b's length and a sample of its bytes (the first and last
// 32, and eight words between): it only spreads the map, since a lookup
// compares the whole input, and hashing every byte inside wasm costs as much
// as the comparison.
func hashBytes(b []byte) uint64 {
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
		h = mix(h, w(p, i))
		h = mix(h, w(p, n-8-i))
	}
	step := (n - 8) / 9
	for i := 1; i <= 8; i++ {
		h = mix(h, w(p, i*step))
	}
	return h ^ h>>29
}

// equalBytes is bytes.Equal 32 bytes a step: inside wasm bytes.Equal goes
// a byte at a time.
func equalBytes(a, b []byte) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	i := 0
	for ; i+32 <= n; i += 32 {
		if (w(pa, i)^w(pb, i))|(w(pa, i+8)^w(pb, i+8))|(w(pa, i+16)^w(pb, i+16))|(w(pa, i+24)^w(pb, i+24)) != 0 {
			return false
		}
	}
	for ; i+8 <= n; i += 8 {
		if w(pa, i) != w(pb, i) {
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

// w loads the eight bytes at p+i.
func w(p unsafe.Pointer, i int) uint64 { return *(*uint64)(unsafe.Add(p, i)) }

func mix(h, x uint64) uint64 {
	h = (h ^ x) * 0xff51afd7ed558ccd
	return h ^ h>>32
}
