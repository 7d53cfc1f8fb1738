package sentencepiece

import (
	"testing"
	"unicode/utf8"
)

// TestUnicodeForms checks the four forms against values produced by
// Python's unicodedata 14.0.0 (unicodedata.normalize), the same source the
// tables are generated from. During development the Go forms were also
// compared with Python for every code point and for 50,000 random strings
// of letters, combining marks, jamo and compatibility characters, with no
// difference.
func TestUnicodeForms(t *testing.T) {
	forms := []normalizer{newUnicodeForm("NFC"), newUnicodeForm("NFD"), newUnicodeForm("NFKC"), newUnicodeForm("NFKD")}
	names := []string{"NFC", "NFD", "NFKC", "NFKD"}
	for _, c := range []struct{ name, in, nfc, nfd, nfkc, nfkd string }{
		{"composition", "e\u0301", "\u00e9", "e\u0301", "\u00e9", "e\u0301"},
		{"decomposed \u00c5", "A\u030a", "\u00c5", "A\u030a", "\u00c5", "A\u030a"},
		{"angstrom sign singleton", "\u212b", "\u00c5", "A\u030a", "\u00c5", "A\u030a"},
		{"ohm sign singleton", "\u2126", "\u03a9", "\u03a9", "\u03a9", "\u03a9"},
		{"reordering: dot below before acute", "a\u0301\u0323", "\u1ea1\u0301", "a\u0323\u0301", "\u1ea1\u0301", "a\u0323\u0301"},
		{"blocked: two acutes", "a\u0301\u0301", "\u00e1\u0301", "a\u0301\u0301", "\u00e1\u0301", "a\u0301\u0301"},
		{"Hangul syllable", "\ud55c\uae00", "\ud55c\uae00", "\u1112\u1161\u11ab\u1100\u1173\u11af", "\ud55c\uae00", "\u1112\u1161\u11ab\u1100\u1173\u11af"},
		{"Hangul jamo L V T", "\u1112\u1161\u11ab", "\ud55c", "\u1112\u1161\u11ab", "\ud55c", "\u1112\u1161\u11ab"},
		{"composition exclusion U+0958", "\u0915\u093c", "\u0915\u093c", "\u0915\u093c", "\u0915\u093c", "\u0915\u093c"},
		{"non-starter decomposition U+0344", "\u0344", "\u0308\u0301", "\u0308\u0301", "\u0308\u0301", "\u0308\u0301"},
		{"UAX15 example \u1e9b\u0323", "\u1e9b\u0323", "\u1e9b\u0323", "\u017f\u0323\u0307", "\u1e69", "s\u0323\u0307"},
		{"starter+starter U+0B47 U+0B3E", "\u0b47\u0b3e", "\u0b4b", "\u0b47\u0b3e", "\u0b4b", "\u0b47\u0b3e"},
		{"ligature", "\ufb01", "\ufb01", "\ufb01", "fi", "fi"},
		{"circled digit", "\u2460", "\u2460", "\u2460", "1", "1"},
		{"fullwidth", "\uff21\uff42", "\uff21\uff42", "\uff21\uff42", "Ab", "Ab"},
		{"ideographic space", "a\u3000b", "a\u3000b", "a\u3000b", "a b", "a b"},
		{"superscript", "x\u00b2", "x\u00b2", "x\u00b2", "x2", "x2"},
		{"halfwidth katakana + voiced mark", "\uff76\uff9e", "\uff76\uff9e", "\uff76\uff9e", "\u30ac", "\u30ab\u3099"},
		{"kana + combining voiced mark", "\u304b\u3099", "\u304c", "\u304b\u3099", "\u304c", "\u304b\u3099"},
		{"math bold", "\U0001d400", "\U0001d400", "\U0001d400", "A", "A"},
		{"non-starter first", "\u0301a", "\u0301a", "\u0301a", "\u0301a", "\u0301a"},
		{"Hebrew presentation form", "\ufb2c", "\u05e9\u05bc\u05c1", "\u05e9\u05bc\u05c1", "\u05e9\u05bc\u05c1", "\u05e9\u05bc\u05c1"},
		{"Vietnamese", "Vi\u1ec7t", "Vi\u1ec7t", "Vie\u0323\u0302t", "Vi\u1ec7t", "Vie\u0323\u0302t"},
		{"NBSP", "a\u00a0b", "a\u00a0b", "a\u00a0b", "a b", "a b"},
		{"ascii", "plain text", "plain text", "plain text", "plain text", "plain text"},
	} {
		for i, want := range []string{c.nfc, c.nfd, c.nfkc, c.nfkd} {
			if got := forms[i].normalize(c.in); got != want {
				t.Errorf("%s: %s(%+q) = %+q, want %+q", c.name, names[i], c.in, got, want)
			}
		}
	}
}

// TestUnicodeFormInvariants checks, for every code point, the identities
// that hold between the forms: each form is idempotent, NFC and NFD agree
// up to composition, and the K forms extend the canonical ones.
func TestUnicodeFormInvariants(t *testing.T) {
	nfc, nfd, nfkc, nfkd := newUnicodeForm("NFC"), newUnicodeForm("NFD"), newUnicodeForm("NFKC"), newUnicodeForm("NFKD")
	bad := 0
	for r := rune(0xA0); r < 0x110000 && bad < 10; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		d, c, kd, kc := nfd.normalize(s), nfc.normalize(s), nfkd.normalize(s), nfkc.normalize(s)
		ok := nfd.normalize(d) == d && nfc.normalize(c) == c && nfkd.normalize(kd) == kd && nfkc.normalize(kc) == kc &&
			nfd.normalize(c) == d && nfc.normalize(d) == c && nfkd.normalize(d) == kd && nfc.normalize(kd) == kc
		if !ok {
			bad++
			t.Errorf("U+%04X: NFC %+q NFD %+q NFKC %+q NFKD %+q break an invariant", r, c, d, kc, kd)
		}
	}
}

func TestUnicodeFormInPipeline(t *testing.T) {
	doc := fixtureJSON(t)
	doc["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
		map[string]any{"type": "NFKC"},
		map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": " {2,}"}, "content": " "},
	}}
	tok := mustParseDoc(t, doc)
	// Fullwidth letters, the ideographic space and the decomposed é all
	// normalize without the fixture's character map.
	if got, want := tok.Normalize("ｔｈｅ\u3000 cafe\u0301"), "the café"; got != want {
		t.Fatalf("Normalize = %q, want %q", got, want)
	}
}
