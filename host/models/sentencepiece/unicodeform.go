package sentencepiece

//go:generate python3 gen_unicode.py

import (
	"slices"
	"sort"
	"unicode/utf8"
)

type decomposition struct {
	r      rune
	canon  string // full canonical decomposition; "" = the code point itself
	compat string // full compatibility decomposition; "" = canon
}

type combiningClass struct {
	r   rune
	ccc uint8
}

type composition struct{ a, b, c rune }

// unicodeForm is a standalone NFC, NFD, NFKC or NFKD normalizer, the full
// Unicode algorithm (decomposition, canonical ordering, canonical
// composition with the composition exclusions) over tables generated from
// Python's unicodedata (unicode_tables.go; its Unicode version is
// unicodeVersion, so characters assigned later are left alone).
type unicodeForm struct {
	compat, compose bool
}

func newUnicodeForm(form string) normalizer {
	return unicodeForm{compat: form == "NFKC" || form == "NFKD", compose: form == "NFKC" || form == "NFC"}
}

func (u unicodeForm) normalize(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return s // every form leaves ASCII alone
	}
	rs := u.decompose(make([]rune, 0, len(s)), s)
	reorder(rs)
	if u.compose {
		rs = compose(rs)
	}
	return string(rs)
}

// Hangul syllable arithmetic (Unicode §3.12).
const (
	hangulS, hangulL, hangulV, hangulT = 0xAC00, 0x1100, 0x1161, 0x11A7
	hangulLCount, hangulVCount         = 19, 21
	hangulTCount                       = 28
	hangulNCount                       = hangulVCount * hangulTCount
	hangulSCount                       = hangulLCount * hangulNCount
)

func (u unicodeForm) decompose(dst []rune, s string) []rune {
	for _, r := range s {
		if r < 0xA0 {
			dst = append(dst, r)
			continue
		}
		if i := r - hangulS; i >= 0 && i < hangulSCount {
			dst = append(dst, hangulL+i/hangulNCount, hangulV+i%hangulNCount/hangulTCount)
			if t := i % hangulTCount; t != 0 {
				dst = append(dst, hangulT+t)
			}
			continue
		}
		k, ok := sort.Find(len(decompositions), func(k int) int { return int(r - decompositions[k].r) })
		if !ok {
			dst = append(dst, r)
			continue
		}
		d := decompositions[k]
		switch {
		case u.compat && d.compat != "":
			dst = appendRunes(dst, d.compat)
		case d.canon != "":
			dst = appendRunes(dst, d.canon)
		default:
			dst = append(dst, r)
		}
	}
	return dst
}

func appendRunes(dst []rune, s string) []rune {
	for _, r := range s {
		dst = append(dst, r)
	}
	return dst
}

func ccc(r rune) uint8 {
	if r < 0x300 {
		return 0
	}
	k, ok := sort.Find(len(combiningClasses), func(k int) int { return int(r - combiningClasses[k].r) })
	if !ok {
		return 0
	}
	return combiningClasses[k].ccc
}

// reorder puts each run of non-starters into canonical order: a stable sort
// by combining class.
func reorder(rs []rune) {
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(rs[i:j], func(a, b rune) int { return int(ccc(a)) - int(ccc(b)) })
		}
		i = j
	}
}

// composePair returns the primary composite of a and b.
func composePair(a, b rune) (rune, bool) {
	if l := a - hangulL; l >= 0 && l < hangulLCount {
		if v := b - hangulV; v >= 0 && v < hangulVCount {
			return hangulS + (l*hangulVCount+v)*hangulTCount, true
		}
		return 0, false
	}
	if s := a - hangulS; s >= 0 && s < hangulSCount && s%hangulTCount == 0 {
		if t := b - hangulT; t > 0 && t < hangulTCount {
			return a + t, true
		}
		return 0, false
	}
	k, ok := sort.Find(len(compositions), func(k int) int {
		if c := int(a - compositions[k].a); c != 0 {
			return c
		}
		return int(b - compositions[k].b)
	})
	if !ok {
		return 0, false
	}
	return compositions[k].c, true
}

// compose is canonical composition: each character that is not blocked
// from the last starter (no character between them has class 0 or a class
// at least its own) combines with it when they have a primary composite.
func compose(rs []rune) []rune {
	out := rs[:0]
	starter, last := -1, -1 // last: class of the latest character kept after the starter, -1 if none
	for _, r := range rs {
		c := int(ccc(r))
		if starter >= 0 && (last < 0 || last != 0 && last < c) {
			if comp, ok := composePair(out[starter], r); ok {
				out[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter, last = len(out), -1
		} else {
			last = c
		}
		out = append(out, r)
	}
	return out
}
