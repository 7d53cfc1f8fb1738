package main

import "github.com/bardoinference/bardo/sdk/memo"

// Normalizing every byte of an agent's resent context inside wasm was most
// of this layer's request phase (~0.3 ms on an 85 KB Claude Code request).
// The normalized form of a text depends on the text alone (and the
// configuration, fixed for an instance's life), so for a long text it is
// remembered (sdk/memo: per instance, per tenant, keyed by the host's
// SHA-256): the canonical string, and so the key, is byte for byte what
// normalizing would build.

const (
	// memoMinLen: shorter texts are normalized, not hashed; a host call and
	// a map lookup cost about as much as normalizing a few hundred bytes.
	memoMinLen = 512
	// memoMaxBytes bounds the normalized bytes held; when full the memo
	// starts over.
	memoMaxBytes = 4 << 20
)

var memoized = memo.Table[[]byte]{Max: memoMaxBytes}

// text appends s normalized to the canonical string.
func (k *keyBuilder) text(s string) {
	if len(s) < memoMinLen {
		k.buf = k.n.text(k.buf, s)
		return
	}
	key := memo.KeyOf(k.tenant, "", s)
	if v, ok := memoized.Get(key); ok {
		k.buf = append(k.buf, v...)
		return
	}
	at := len(k.buf)
	k.buf = k.n.text(k.buf, s)
	memoized.Put(key, append([]byte(nil), k.buf[at:]...), len(k.buf)-at)
}
