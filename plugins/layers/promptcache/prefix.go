package main

import (
	"strconv"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// An agent sends the same stable prefix (model, tools, system prompt) on
// every turn, and this layer's request phase hashed it each time (a host
// SHA-256 over a few KB) and formatted its key and sizes (three allocations,
// each about a microsecond inside wasm). A prefix and what is derived from
// it are remembered by the exact prefix bytes, compared byte for byte: the
// sampled hash below only spreads the map. The memo is per instance and
// partitioned by tenant (the tenant is part of what is compared), so how
// long a request takes cannot tell one tenant another's prompt.

// prefixMemoBytes bounds the prefixes held; when full the memo starts over.
const prefixMemoBytes = 2 << 20

// prefix is what the request phase derives from a stable prefix.
type prefix struct {
	in         []byte   // the tenant (length-prefixed), the model's length, then the prefix hashed (a copy)
	sum        [32]byte // SHA-256 of the prefix
	key        string   // "p:" and the hex of sum's first 16 bytes (prefixKey)
	tokens     int64    // estimated tokens of the prefix without the model (bytes/4)
	tokensText string   // tokens, formatted
	bytesText  string   // the prefix's bytes without the model, formatted
}

var (
	prefixes     = map[uint64]*prefix{}
	prefixesSize int
	fresh        prefix // a prefix not remembered (too large to keep)
)

// prefixOf returns what is derived from the prefix buf[at:] (buf[:at] is
// the tenant, length-prefixed, and model's length); model is the length of the model and its separator,
// which the sizes leave out. The result is valid until the next call.
func prefixOf(buf []byte, at, model int) *prefix {
	h := hashBytes(buf)
	if p := prefixes[h]; p != nil && equalBytes(p.in, buf) {
		return p
	}
	size := int64(len(buf) - at - model)
	p := &prefix{sum: plugin.SHA256(buf[at:]), tokens: size / 4}
	p.key = prefixKey(p.sum[:16])
	p.tokensText = strconv.FormatInt(p.tokens, 10)
	p.bytesText = strconv.FormatInt(size, 10)
	if len(buf) > prefixMemoBytes/4 {
		fresh = *p
		return &fresh
	}
	if prefixesSize+len(buf) > prefixMemoBytes {
		clear(prefixes)
		prefixesSize = 0
	}
	p.in = append([]byte(nil), buf...)
	prefixes[h] = p
	prefixesSize += len(buf) + 256
	return p
}

// hashBytes hashes b's length and a sample of its bytes (the first and last
// 32, and eight words between): it only spreads the map, since a lookup
// compares the whole prefix, and hashing every byte inside wasm costs as much
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
