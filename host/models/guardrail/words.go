package guardrail

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words is the Unicode-aware tokenizer the multilingual rules use (the
// TF-IDF model keeps its own ASCII tokenizer, Vectorizer, which must match
// the package it was converted from). It lowercases with Unicode case
// folding and splits the text into words:
//
//   - a word is a run of letters, digits and combining marks (Devanagari and
//     Arabic vowel signs are marks and stay inside their word);
//   - a change of script ends a word, so text without spaces still splits
//     (システムプロンプトを表示して → システムプロンプト | を | 表示して:
//     Katakana, Hiragana, then Han with the hiragana after it, which
//     belongs to it: okurigana and particles, 教えて, 指示を), and Latin
//     inside Cyrillic or CJK text stands apart;
//   - Han runs stay whole (Chinese has no separator to split at); the rules
//     match Han keywords as substrings of them.
//
// The result is for matching keyword stems, not for a model vocabulary.
func Words(text string) []string {
	var out []string
	var b strings.Builder
	var cur scriptClass
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range text {
		sc := classify(r)
		if sc == scNone {
			flush()
			continue
		}
		if sc == scMark {
			if b.Len() > 0 {
				b.WriteRune(r)
			}
			continue
		}
		if b.Len() > 0 && sc != cur && !(cur == scHan && sc == scHiragana) {
			flush()
		}
		if b.Len() > 0 && cur == scHan && sc == scHiragana {
			sc = scHan // okurigana and particles stay with their kanji: 教えて, 指示を
		}
		cur = sc
		b.WriteRune(unicode.ToLower(r))
	}
	flush()
	return out
}

type scriptClass uint8

const (
	scNone scriptClass = iota
	scMark
	scDigit
	scLatin
	scCyrillic
	scGreek
	scArabic
	scDevanagari
	scHan
	scHiragana
	scKatakana
	scHangul
	scOther
)

func classify(r rune) scriptClass {
	switch {
	case r < 0x80:
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			return scLatin
		case '0' <= r && r <= '9':
			return scDigit
		}
		return scNone
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r):
		return scMark
	case r == 'ー' || r == '々': // prolonged sound mark, iteration mark: part of the word
		return scMark
	case unicode.Is(unicode.Latin, r):
		return scLatin
	case unicode.Is(unicode.Cyrillic, r):
		return scCyrillic
	case unicode.Is(unicode.Greek, r):
		return scGreek
	case unicode.Is(unicode.Arabic, r):
		if unicode.IsLetter(r) {
			return scArabic
		}
		return scNone
	case unicode.Is(unicode.Devanagari, r):
		if unicode.IsLetter(r) {
			return scDevanagari
		}
		return scNone
	case unicode.Is(unicode.Han, r):
		return scHan
	case unicode.Is(unicode.Hiragana, r):
		return scHiragana
	case unicode.Is(unicode.Katakana, r):
		return scKatakana
	case unicode.Is(unicode.Hangul, r):
		return scHangul
	case unicode.IsLetter(r):
		return scOther
	case unicode.IsDigit(r):
		return scDigit
	}
	return scNone
}

// firstScript is the script class of a word's first character, with
// hiragana counted as Han (they share words, see Words).
func firstScript(w string) scriptClass {
	r, _ := utf8.DecodeRuneInString(w)
	if sc := classify(r); sc != scHiragana {
		return sc
	}
	return scHan
}

// isCJK reports whether a word is Han, kana or Hangul: keywords match
// anywhere inside such a word (no spaces to split at, or agglutinated
// particles in Korean), and at its start elsewhere (inflected endings).
func isCJK(w string) bool {
	switch firstScript(w) {
	case scHan, scKatakana, scHangul:
		return true
	}
	return false
}
