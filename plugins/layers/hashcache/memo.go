package main

import (
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// An agent resends its system prompt, tools and whole conversation on every
// turn, and normalizing every byte of it inside wasm was most of this
// layer's request phase (~0.3 ms on an 85 KB Claude Code request). The
// normalized form of a text depends on the text alone (and the
// configuration, fixed for an instance's life), so for a long text it is
// remembered, keyed by the host's native SHA-256 of the text: the canonical
// string, and so the key, is byte for byte what normalizing would build.
//
// The memo lives in the instance's memory (each instance of the pool keeps
// its own) and is partitioned by tenant, so how long a request takes cannot
// tell one tenant whether another sent a text.

const (
	// memoMinLen: shorter texts are normalized, not hashed; a host call and
	// a map lookup cost about as much as normalizing a few hundred bytes.
	memoMinLen = 512
	// memoMaxBytes bounds the normalized bytes held; when full the memo
	// starts over.
	memoMaxBytes = 4 << 20
)

type memoKey struct {
	tenant string
	sum    [32]byte
}

var (
	memo      = map[memoKey][]byte{}
	memoBytes int
	memoHits  int // texts answered from the memo (tests read it)
)

// text appends s normalized to the canonical string.
func (k *keyBuilder) text(s string) {
	if len(s) < memoMinLen {
		k.buf = k.n.text(k.buf, s)
		return
	}
	key := memoKey{tenant: k.tenant, sum: plugin.SHA256(unsafe.Slice(unsafe.StringData(s), len(s)))}
	if v, ok := memo[key]; ok {
		memoHits++
		k.buf = append(k.buf, v...)
		return
	}
	at := len(k.buf)
	k.buf = k.n.text(k.buf, s)
	if memoBytes+len(k.buf)-at > memoMaxBytes {
		clear(memo)
		memoBytes = 0
	}
	memo[key] = append([]byte(nil), k.buf[at:]...)
	memoBytes += len(k.buf) - at
}
