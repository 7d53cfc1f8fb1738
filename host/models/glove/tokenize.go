package glove

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tokenizer mirrors how the GloVe 6B corpus (Wikipedia + Gigaword,
// Stanford tokenizer, lowercased) spelled words, restricted to what the wink
// vocabulary kept:
//
//   - text is lowercased, and typographic apostrophes (’ ‘) count as ';
//   - a word is a run of letters and digits, which may contain single
//     hyphens and apostrophes between such characters ("well-known",
//     "don't"); everything else (punctuation, symbols, spaces) separates
//     words and is dropped — the vocabulary's punctuation entries are never
//     produced, since a sentence's meaning is in its words;
//   - a hyphenated word the vocabulary knows stays whole ("e-mail",
//     "long-term"); otherwise its parts are looked up one by one;
//   - English clitics, which the corpus split off and wink did not keep, are
//     expanded to the words they stand for: n't → not (can't → can not,
//     won't → will not), 're → are, 'll → will, 've → have, 'm → am,
//     'd → would; 's is dropped (possessive or "is", a stop word either way).
//     Keeping "not" matters: it is the one clitic that flips meaning.
//     Other apostrophes split the word ("o'neill" → "o", "neill").
//
// Words the vocabulary does not know are dropped (see Embedder for what an
// all-unknown text embeds to).

// words splits text into normalised candidate words (before the vocabulary
// decides about hyphenated ones).
func words(text string, emit func(w string)) {
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := strings.Trim(b.String(), "-'")
		b.Reset()
		if w != "" {
			emit(w)
		}
	}
	prevJoin := false // the previous rune was a hyphen or apostrophe inside a word
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(unicode.ToLower(r))
			prevJoin = false
		case r == '-' || r == '\'' || r == '’' || r == '‘' || r == '‐' || r == '‑':
			// A joiner only inside a word, and never two in a row
			// ("a--b" and "rock''n" are two words).
			if b.Len() == 0 || prevJoin {
				flush()
				prevJoin = false
				continue
			}
			if r == '-' || r == '‐' || r == '‑' {
				b.WriteByte('-')
			} else {
				b.WriteByte('\'')
			}
			prevJoin = true
		default:
			flush()
			prevJoin = false
		}
	}
	flush()
}

// clitics maps the part after an apostrophe to the word it stands for; ""
// drops it.
var clitics = map[string]string{
	"s":  "",
	"re": "are",
	"ll": "will",
	"ve": "have",
	"m":  "am",
	"d":  "would",
}

// notStems fixes the stems English bends before n't.
var notStems = map[string]string{
	"ca":  "can",
	"wo":  "will",
	"sha": "shall",
	"ai":  "is",
}

// expand turns one candidate word into vocabulary lookups: clitics first,
// then hyphens.
func expand(w string, known func(string) bool, emit func(string)) {
	if strings.Contains(w, "'") {
		if stem, ok := strings.CutSuffix(w, "n't"); ok && stem != "" && !strings.Contains(stem, "'") {
			if s, ok := notStems[stem]; ok {
				stem = s
			}
			expand(stem, known, emit)
			emit("not")
			return
		}
		if i := strings.LastIndexByte(w, '\''); i > 0 {
			if repl, ok := clitics[w[i+1:]]; ok {
				expand(w[:i], known, emit)
				if repl != "" {
					emit(repl)
				}
				return
			}
		}
		for part := range strings.SplitSeq(w, "'") {
			if part != "" {
				expand(part, known, emit)
			}
		}
		return
	}
	if strings.Contains(w, "-") && !known(w) {
		for part := range strings.SplitSeq(w, "-") {
			if part != "" {
				emit(part)
			}
		}
		return
	}
	emit(w)
}

// tokenize returns the words of text as the vocabulary would look them up,
// unknown ones included; known(w) decides whether a hyphenated word stays
// whole. Vocab.Tokens exposes it for tests and debugging.
func tokenize(text string, known func(string) bool) []string {
	var out []string
	words(text, func(w string) { expand(w, known, func(t string) { out = append(out, t) }) })
	return out
}

// producible reports whether the tokenizer can ever emit w: lowercase
// letters and digits with single inner hyphens. The converter keeps only
// such words, so no vocabulary slot goes to punctuation or to spellings the
// tokenizer never produces.
func producible(w string) bool {
	if w == "" {
		return false
	}
	var got []string
	words(w, func(x string) { got = append(got, x) })
	return len(got) == 1 && got[0] == w && !strings.Contains(w, "'")
}
