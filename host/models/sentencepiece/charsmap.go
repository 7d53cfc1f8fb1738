package sentencepiece

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// charsmap is SentencePiece's precompiled normalisation map (the
// "precompiled_charsmap" of a Precompiled normalizer, the same bytes as
// NormalizerSpec.precompiled_charsmap in spm.model). Its layout is
//
//	uint32 little-endian  trie size in bytes (a multiple of 4)
//	[]uint32 LE           a Darts-clone double-array trie over the UTF-8
//	                      bytes of the source sequences
//	bytes                 the replacements, each terminated by a NUL
//
// A trie leaf's value is the byte offset of its replacement in the last
// part. For nmt_nfkc (the default of spm_train, used by DeBERTa-v3, T5,
// ALBERT, XLM-R) the keys are every code point, and every canonically
// decomposed sequence, whose NFKC form differs, plus the NMT rules that map
// control characters and odd spaces.
type charsmap struct {
	units      []uint32
	normalized string
	// starts[b] says some key begins with byte b; for the other ASCII
	// bytes normalize copies without searching.
	starts [256]bool
}

func parseCharsmap(b []byte) (*charsmap, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap is %d bytes, too short for its header", len(b))
	}
	size := binary.LittleEndian.Uint32(b)
	if size == 0 || size%4 != 0 || uint64(size) > uint64(len(b)-4) {
		return nil, fmt.Errorf("precompiled_charsmap declares a %d-byte trie in %d bytes", size, len(b)-4)
	}
	units := make([]uint32, size/4)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(b[4+4*i:])
	}
	c := &charsmap{units: units, normalized: string(b[4+size:])}
	root := dartsOffset(units[0])
	for b := 1; b < 256; b++ {
		if pos := root ^ uint32(b); pos < uint32(len(units)) && dartsLabel(units[pos]) == uint32(b) {
			c.starts[b] = true
		}
	}
	return c, nil
}

// Darts-clone unit fields.
func dartsHasLeaf(u uint32) bool  { return u>>8&1 == 1 }
func dartsValue(u uint32) uint32  { return u & (1<<31 - 1) }
func dartsLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func dartsOffset(u uint32) uint32 { return u >> 10 << (u & (1 << 9) >> 6) }

// longest finds the longest key that is a prefix of s (SentencePiece's
// Normalizer::NormalizePrefix) and returns its length and replacement. A
// malformed trie never panics: an index outside it ends the search.
func (c *charsmap) longest(s string) (n int, repl string) {
	pos := dartsOffset(c.units[0])
	best := -1
	for i := 0; i < len(s); i++ {
		ch := uint32(s[i])
		if ch == 0 {
			break
		}
		pos ^= ch
		if pos >= uint32(len(c.units)) {
			break
		}
		u := c.units[pos]
		if dartsLabel(u) != ch {
			break
		}
		pos ^= dartsOffset(u)
		if dartsHasLeaf(u) {
			if pos >= uint32(len(c.units)) {
				break
			}
			n, best = i+1, int(dartsValue(c.units[pos]))
		}
	}
	if best < 0 || best > len(c.normalized) {
		return 0, ""
	}
	end := strings.IndexByte(c.normalized[best:], 0)
	if end < 0 {
		end = len(c.normalized) - best
	}
	return n, c.normalized[best : best+end]
}

// normalize rewrites s left to right: at each position the longest matching
// key is replaced; where none matches one character is copied (an invalid
// UTF-8 byte becomes U+FFFD), as SentencePiece does.
func (c *charsmap) normalize(s string) string {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); {
		if ch := s[i]; ch < utf8.RuneSelf && !c.starts[ch] {
			if changed {
				b.WriteByte(ch)
			}
			i++
			continue
		}
		if n, repl := c.longest(s[i:]); n > 0 {
			if !changed {
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
				changed = true
			}
			b.WriteString(repl)
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if !changed {
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
				changed = true
			}
			b.WriteRune(utf8.RuneError)
		} else if changed {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if !changed {
		return s
	}
	return b.String()
}
