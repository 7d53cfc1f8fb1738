//go:build !wasip1

package main

import (
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// refText and refNext are text and next as they were before next skipped
// ordinary stops.

// TestNextSkipsOrdinaryStops: next no longer stops at a '-' or '"' that
// cannot start a match; text must build, on any input, what it built when
// it stopped at every one (refText, the earlier scan, kept here).
func TestNextSkipsOrdinaryStops(t *testing.T) {
	pieces := []string{"a", "Z", "7", "f", "E", " ", "  ", "\n", "\t", "-", "--", `"`, `\"`, ":", ",", "{", "}",
		"2025-01-15T10:00:00Z", "2025-01-15 10:00:00.5+02:00", "123e4567-e89b-12d3-a456-426614174000", "DEADBEEF-e89b-12d3-a456-42661417400a",
		`"traceId"`, `"traceId": "x",`, `"requestId":42`, `"session_counter" : true ,`, "é", "\x00"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []*normalizer{newNormalizer(true, true, defaultFields), newNormalizer(true, false, nil),
		newNormalizer(false, false, []string{"t"}), newNormalizer(false, false, nil)} {
		for range 20000 {
			var b strings.Builder
			for range rng.IntN(24) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			in := b.String()
			if got, want := string(n.text(nil, in)), string(refText(n, nil, in)); got != want {
				t.Fatalf("text(%q) = %q, the earlier scan built %q", in, got, want)
			}
		}
	}
}

func refText(n *normalizer, dst []byte, s string) []byte {
	base := len(dst)
	i := 0
	for i < len(s) && isSpace[s[i]] {
		i++
	}
	space := false // a space is owed before the next kept byte
	run := i       // start of the current run of copied bytes in s
	for i < len(s) {
		j := refNext(n, s, i)
		if j > i {
			r := s[i:j]
			if r[0] == ' ' {
				// The run brings its own space; drop it after a space or at the start.
				if len(dst) == base || dst[len(dst)-1] == ' ' {
					r = r[1:]
				}
			} else if space && len(dst) > base && dst[len(dst)-1] != ' ' {
				dst = append(dst, ' ')
			}
			space = false
			dst = append(dst, r...)
		}
		if j == len(s) {
			break
		}
		c := s[j]
		switch {
		case isSpace[c]:
			space = true
			i, run = j+1, j+1
			continue
		case c == '-':
			if back, l := n.dash(s, j, run); l > 0 {
				dst = dst[:len(dst)-back]
				i, run = j+l, j+l
				space = space || trimSpace(&dst, base)
				continue
			}
		case c == '"':
			if l := n.field(s, j); l > 0 {
				i, run = j+l, j+l
				space = space || trimSpace(&dst, base)
				continue
			}
		}
		if space && len(dst) > base && dst[len(dst)-1] != ' ' {
			dst = append(dst, ' ')
		}
		space = false
		dst = append(dst, c)
		i, run = j+1, j+1
	}
	for len(dst) > base && dst[len(dst)-1] == ' ' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

func refNext(n *normalizer, s string, i int) int {
	p := unsafe.Pointer(unsafe.StringData(s))
	dashes, quotes := n.stop['-'], n.stop['"']
	for i+8 <= len(s) {
		x := *(*uint64)(unsafe.Add(p, i))
		m := ^(((x & lo7) + 0x6060606060606060) | x) & hi // bytes < 0x20
		sp := eqMask(x, ' '*ones)
		m |= sp & (sp >> 8) // a space followed by a space
		if dashes {
			m |= eqMask(x, '-'*ones)
		}
		if quotes {
			m |= eqMask(x, '"'*ones)
		}
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		if sp>>63 != 0 {
			i += 7 // the last byte is a space: see whether the next one is
		} else {
			i += 8
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < ' ' || (c == '-' && dashes) || (c == '"' && quotes) || (c == ' ' && i+1 < len(s) && s[i+1] == ' ') {
			return i
		}
	}
	return i
}
