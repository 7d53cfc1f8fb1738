package main

import (
	"encoding/hex"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugin"
)

// An agent resends its conversation's prefix (model, system prompt, tool
// names, first user message) every turn, and the request phase hashed it
// each time: a host SHA-256 over a few KB and its hex. The hex is
// remembered by the exact bytes hashed, with the tenant before them,
// compared byte for byte (memo.Spread only spreads the map), so
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
	h := memo.Spread(b)
	if e := prefixes[h]; e != nil && memo.Equal(e.in, b) {
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
