package main

import (
	"math/bits"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// The BIP-39 English wordlist: 2048 words of 3–8 lower-case letters whose
// first four letters are unique. A word is looked up by numbering its first
// four letters (prefixBit): one bit per possible prefix says whether a word
// has it, and the rank of that bit (the set bits before it, from a table of
// per-64-bit counts plus a popcount) is the position of that word in
// bip39ByPrefix. Then the word is compared in full. No hashing, no probing:
// inside wasm every operation counts.

const prefixSpace = 27 * 27 * 27 * 27 // 26 letters and "no fourth letter"

var (
	bip39Words    []string
	bip39Bits     [prefixSpace/64 + 1]uint64
	bip39Rank     [prefixSpace/64 + 1]uint16 // set bits before each uint64
	bip39ByPrefix [2048]uint16               // word index, in prefixBit order
)

func initWordlist() {
	if bip39Words != nil {
		return
	}
	bip39Words = strings.Fields(bip39English)
	for _, w := range bip39Words {
		b := prefixBit(w)
		bip39Bits[b>>6] |= 1 << (b & 63)
	}
	r := 0
	for i, x := range bip39Bits {
		bip39Rank[i] = uint16(r)
		r += bits.OnesCount64(x)
	}
	for i, w := range bip39Words {
		b := prefixBit(w)
		bip39ByPrefix[prefixRank(b)] = uint16(i)
	}
}

// prefixBit numbers the first four letters of w (which must be ASCII
// letters, any case; 26 stands for "no fourth letter").
func prefixBit(w string) uint32 {
	l3 := uint32(26)
	if len(w) > 3 {
		l3 = uint32(w[3]|0x20) - 'a'
	}
	return ((uint32(w[0]|0x20)-'a')*27+uint32(w[1]|0x20)-'a')*27*27 + (uint32(w[2]|0x20)-'a')*27 + l3
}

// hasPrefix reports whether a word starts with the prefix numbered b.
func hasPrefix(b uint32) bool { return bip39Bits[b>>6]&(1<<(b&63)) != 0 }

func prefixRank(b uint32) int {
	return int(bip39Rank[b>>6]) + bits.OnesCount64(bip39Bits[b>>6]&(1<<(b&63)-1))
}

// lookupLetters returns the wordlist index of w, which must be 3–8 ASCII
// letters (any case), or -1.
func lookupLetters(w string) int {
	b := prefixBit(w)
	if !hasPrefix(b) {
		return -1 // the common case in prose: one bit test
	}
	i := bip39ByPrefix[prefixRank(b)]
	cand := bip39Words[i]
	if len(cand) != len(w) {
		return -1
	}
	for j := 4; j < len(w); j++ {
		if w[j]|0x20 != cand[j] {
			return -1
		}
	}
	return int(i)
}

// bip39Index returns the wordlist index of w (any string), or -1.
func bip39Index(w string) int {
	if len(w) < 3 || len(w) > 8 {
		return -1
	}
	for i := 0; i < len(w); i++ {
		if cls[w[i]]&cAlpha == 0 {
			return -1
		}
	}
	return lookupLetters(w)
}

// validMnemonic checks the BIP-39 checksum of a 12/15/18/21/24-word
// sequence: the entropy's SHA-256 starts with the checksum bits the last
// word carries.
func validMnemonic(idx []int) bool {
	n := len(idx)
	if n%3 != 0 || n < 12 || n > 24 {
		return false
	}
	bits := n * 11
	cs := bits / 33
	entBytes := (bits - cs) / 8
	buf := make([]byte, (bits+7)/8)
	for i, v := range idx {
		for b := 0; b < 11; b++ {
			if v&(1<<(10-b)) != 0 {
				pos := i*11 + b
				buf[pos/8] |= 0x80 >> (pos % 8)
			}
		}
	}
	sum := plugin.SHA256(buf[:entBytes])
	want := sum[0] >> (8 - cs)
	got := buf[entBytes] >> (8 - cs)
	return want == got
}
