package main

import (
	"strconv"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugin"
)

// An agent sends the same stable prefix (model, tools, system prompt) on
// every turn, and this layer's request phase hashed it each time (a host
// SHA-256 over a few KB) and formatted its key and sizes (three allocations,
// each about a microsecond inside wasm). A prefix and what is derived from
// it are remembered by the exact prefix bytes, compared byte for byte: the
// sampled hash (memo.Spread) only spreads the map. The memo is per instance and
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
	fresh        prefix  // a prefix not remembered (too large to keep)
	lastPrefix   *prefix // the one the instance's previous request found or remembered
)

// prefixOf returns what is derived from the prefix buf[at:] (buf[:at] is
// the tenant, length-prefixed, and model's length); model is the length of the model and its separator,
// which the sizes leave out. The result is valid until the next call.
func prefixOf(buf []byte, at, model int) *prefix {
	// An agent resends its prefix every turn: the instance's previous one
	// is compared first, and the sampled hash and the map's lookup are
	// only paid when it differs.
	if p := lastPrefix; p != nil && memo.Equal(p.in, buf) {
		return p
	}
	h := memo.Spread(buf)
	if p := prefixes[h]; p != nil && memo.Equal(p.in, buf) {
		lastPrefix = p
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
	lastPrefix = p
	prefixesSize += len(buf) + 256
	return p
}
