package main

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// The normaliser as it was before issue 14's lexicon table (dfa2545 and
// 1950725): the reference the table-driven one must match word for word
// (TestNormalizeMatchesReference).

func normalizeToRef(dst []qtoken, text string) []qtoken {
	if !plainASCII(text) {
		text = strings.Map(func(r rune) rune {
			switch r {
			case '`', '\u201c', '\u201d':
				return '"'
			case '\u2018', '\u2019':
				return '\''
			}
			return r
		}, text)
	}
	fields := appendFieldsRef(nil, text)
	raw := unfrontRef(fields)
	out := dst[:0]
	if cap(out) < len(raw)+1 {
		out = make([]qtoken, 0, len(raw)+1)
	}
	last := ""      // the previous word, fillers included
	start := true   // capitals at a sentence start say nothing
	quoted := false // inside "…" or `…`: no word is framing
	closing := false
	for i, w := range raw {
		opens := len(w) > 0 && w[0] == '"'
		quoted = quoted || opens
		literal := quoted
		if closesQuoteRef(w) && (!opens || !onlyQuoteTrailRef(w)) {
			quoted = false
		}
		core := trimTokenRef(w)
		f, ascii := asciiFacts(core)
		if !ascii {
			f = unicodeFacts(core)
		}
		if !f.alnum {
			// Punctuation ends a sentence; a symbol mid-text is an
			// operator ("what does ? do", "$?", "&&").
			if !prose(core, i == len(raw)-1) {
				out = append(out, qtoken{core, true})
			}
			start = start || strings.ContainsAny(core, ".?!")
			continue
		}
		salient := f.digit || f.symbol || core[0] == '-' || f.ticker || (!start && f.upper)
		lower := core
		if f.upper || !ascii {
			lower = strings.ToLower(core)
		}
		ws, n := expandContractionRef(lower)
		for _, lw := range ws[:n] {
			prev := last
			last = lw
			c := lexiconRef[lw]
			if !literal && (c&wFiller != 0 || c&wFraming != 0 && framing[lw][prev] || (len(out) == 0 && c&wGreeting != 0)) {
				continue
			}
			if st := stemRef(lw); st != lw {
				lw, c = st, lexiconRef[st]
			}
			if c&wSynonym != 0 {
				lw = synonyms[lw]
				c = lexiconRef[lw]
			}
			out = append(out, qtoken{lw, literal || salient || c&wSalient != 0})
			closing = closing || !literal && c&wThanks != 0
		}
		switch w[len(w)-1] {
		case '.', '?', '!', ':':
			start = true
		default:
			start = false
		}
	}
	// A closing "thanks" goes too.
	for closing && len(out) > 1 && thanks[out[len(out)-1].w] {
		out = out[:len(out)-1]
	}
	out = canonicalRef(out)
	if len(out) == 0 {
		// Nothing but framing ("hi", "thanks!", "can you?"): every word
		// counts, or "hello" and "thank you" would be one question.
		for _, w := range raw {
			core := trimTokenRef(w)
			if !hasAlnum(core) {
				continue
			}
			ws, n := expandContractionRef(strings.ToLower(core))
			for _, lw := range ws[:n] {
				out = append(out, qtoken{lw, true})
			}
		}
	}
	clear(fields) // no reference into this request is kept
	_ = fields
	return out
}

func unfrontRef(ws []string) []string {
	if len(ws) < 3 || !isFrontableRef(strings.Trim(ws[0], `("'`)) {
		return ws
	}
	for k := 1; k < len(ws)-1 && k <= 6; k++ {
		if !strings.HasSuffix(ws[k], ",") {
			continue
		}
		out := make([]string, 0, len(ws))
		out = append(out, ws[k+1:]...)
		out = append(out, strings.ToLower(ws[0]))
		out = append(out, ws[1:k]...)
		return append(out, strings.TrimSuffix(ws[k], ","))
	}
	return ws
}

func isFrontableRef(w string) bool {
	var b [8]byte
	if len(w) > len(b) || !isASCII(w) {
		return frontable[strings.ToLower(w)]
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return frontable[string(b[:len(w)])]
}

func trimTokenRef(w string) string {
	if len(w) > 0 && strings.IndexByte(`"('`, w[0]) < 0 && strings.IndexByte(`".,!?;:')`, w[len(w)-1]) < 0 {
		return w // nothing to strip: most words
	}
	if t := strings.Trim(w, `"`); t != "" {
		w = t
	}
	for len(w) > 1 && strings.IndexByte(`("'`, w[0]) >= 0 && hasAlnum(w[1:]) {
		w = w[1:]
	}
	for len(w) > 1 && strings.IndexByte(`.,!?;:"')`, w[len(w)-1]) >= 0 && hasAlnum(w[:len(w)-1]) {
		w = w[:len(w)-1]
	}
	return w
}

func closesQuoteRef(w string) bool {
	j := len(w)
	for j > 0 && strings.IndexByte(".,!?;:)", w[j-1]) >= 0 {
		j--
	}
	return j > 0 && w[j-1] == '"'
}

func onlyQuoteTrailRef(w string) bool {
	for i := 0; i < len(w); i++ {
		if strings.IndexByte(`".,!?;:)`, w[i]) < 0 {
			return false
		}
	}
	return true
}

func expandContractionRef(w string) (ws [2]string, n int) {
	// Every joined form ends in "t" or "s"; every other form has an
	// apostrophe.
	if last := w[len(w)-1]; last != 't' && last != 's' && strings.IndexByte(w, '\'') < 0 {
		return [2]string{w}, 1
	}
	if j, ok := joined[w]; ok {
		return [2]string{j[0], j[1]}, 2
	}
	if base, ok := strings.CutSuffix(w, "n't"); ok {
		switch base {
		case "ca":
			base = "can"
		case "wo":
			base = "will"
		case "sha":
			base = "shall"
		}
		return [2]string{base, "not"}, 2
	}
	// No word ends in two of these, so their order does not matter.
	for _, c := range contractions {
		if base, ok := strings.CutSuffix(w, c.suffix); ok && base != "" {
			if c.suffix == "'s" && !isWords[base] {
				return [2]string{base}, 1
			}
			return [2]string{base, c.full}, 2
		}
	}
	return [2]string{w}, 1
}

func stemRef(w string) string {
	if len(w) <= 3 || w[len(w)-1] != 's' || !isLetters(w) || unstemmed[w] {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") &&
		!strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

func canonicalRef(ts []qtoken) []qtoken {
	// In place, so that the slice still starts where normalizeTo's dst
	// does.
	if len(ts) > 1 && ts[0].w == "way" && ts[1].w == "to" {
		ts[0] = qtoken{"how", true}
		ts = append(ts[:1], ts[2:]...)
	}
	if len(ts) > 1 && ts[0].w == "how" && ts[1].w == "to" {
		ts = append(ts[:1], ts[2:]...)
	}
	if len(ts) > 1 && ts[0].w == "of" {
		ts = append(ts[:0], ts[1:]...)
	}
	for i := 1; i+3 < len(ts); i++ {
		if ts[i-1].w == "difference" && ts[i].w == "between" && ts[i+2].w == "and" && ts[i+1].w > ts[i+3].w {
			ts[i+1], ts[i+3] = ts[i+3], ts[i+1]
		}
	}
	return ts
}

func appendFieldsRef(dst []string, s string) []string {
	if !isASCII(s) {
		return append(dst, strings.Fields(s)...)
	}
	i := 0
	for i < len(s) {
		for i < len(s) && asciiSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !asciiSpace(s[j]) {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j])
		}
		i = j
	}
	return dst
}

var lexiconRef = func() map[string]wordClass {
	m := map[string]wordClass{}
	for _, l := range []struct {
		words map[string]bool
		class wordClass
	}{
		{fillers, wFiller}, {greetings, wGreeting}, {thanks, wThanks}, {negations, wNegation},
		{questions, wQuestion}, {units, wUnit}, {opposites, wOpposite},
	} {
		for w := range l.words {
			m[w] |= l.class
		}
	}
	for w := range framing {
		m[w] |= wFraming
	}
	for w := range synonyms {
		m[w] |= wSynonym
	}
	return m
}()

// TestNormalizeMatchesReference: the table-driven normaliser returns what
// the map-driven one did, word for word and salience for salience, on the
// golden questions and on random questions built from every listed word
// with capitals, quotes, contractions, plurals and punctuation around them.
func TestNormalizeMatchesReference(t *testing.T) {
	qs := goldenQuestions(t)
	var words []string
	for _, l := range []map[string]bool{fillers, greetings, thanks, negations, questions, units, opposites, isWords, unstemmed, frontable} {
		for w := range l {
			words = append(words, w)
		}
	}
	for w, ps := range framing {
		words = append(words, w)
		for p := range ps {
			words = append(words, p)
		}
	}
	for w, s := range synonyms {
		words = append(words, w, s)
	}
	for w := range joined {
		words = append(words, w)
	}
	words = append(words, "stories", "classes", "bus", "axis", "glass", "ties", "go", "ETH", "USDC", "x86",
		"-p", "8080:80", "$?", "&&", "don't", "can't", "won't", "it's", "John's", "we're", "I'm", "you'll",
		"they've", "she'd", "naïve", "Ünï", "İstanbul", "“smart”", "‘q’", "`code`", "…", "—", ":)", "??")
	sort.Strings(words)
	rng := rand.New(rand.NewPCG(7, 11))
	decorate := []func(string) string{
		func(w string) string { return w },
		strings.ToUpper,
		func(w string) string { return strings.ToUpper(w[:1]) + w[1:] },
		func(w string) string { return w + "," },
		func(w string) string { return w + "." },
		func(w string) string { return w + "?" },
		func(w string) string { return `"` + w },
		func(w string) string { return w + `"` },
		func(w string) string { return "(" + w + ")" },
		func(w string) string { return w + "s" },
		func(w string) string { return w + "'s" },
		func(w string) string { return w + "n't" },
		func(w string) string { return "'" + w + "'" },
		func(w string) string { return "`" + w + "`" },
	}
	for range 20000 {
		n := 1 + rng.IntN(9)
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(" \t\n"[rng.IntN(3)])
			}
			w := words[rng.IntN(len(words))]
			if w != "" {
				w = decorate[rng.IntN(len(decorate))](w)
			}
			b.WriteString(w)
		}
		qs = append(qs, b.String())
	}
	for _, q := range qs {
		got, want := normalize(q), normalizeToRef(nil, q)
		if tokensString(got) != tokensString(want) {
			t.Fatalf("normalize(%q) = %q, the reference %q", q, tokensString(got), tokensString(want))
		}
		// The request path's scratch gives the same.
		if got := normalizeTo(make([]qtoken, 0, 2), q); tokensString(got) != tokensString(want) {
			t.Fatalf("normalizeTo(%q) = %q, the reference %q", q, tokensString(got), tokensString(want))
		}
	}
}

// FuzzNormalizeMatchesReference: any text normalises as the reference does.
func FuzzNormalizeMatchesReference(f *testing.F) {
	for _, q := range []string{"In Go, how do I read a file?", "what's the `$?` of \"it\"", "Hi! Thanks, can you list the stories?", "ΣΊΣΥΦΟΣ isn't 0x12"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if got, want := normalize(q), normalizeToRef(nil, q); tokensString(got) != tokensString(want) {
			t.Fatalf("normalize(%q) = %q, the reference %q", q, tokensString(got), tokensString(want))
		}
	})
}

// asciiSpace is unicode.IsSpace for an ASCII byte.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
