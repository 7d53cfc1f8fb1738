package guardrail

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Vectorizer turns text into the sparse term counts the TF-IDF graph takes:
// the vocabulary ids of the n-grams the text contains and how often each
// occurs. It reproduces llm_guardrail's tfidf.js (the package's own scorer),
// not scikit-learn's CountVectorizer the weights were trained with:
//
//   - lowercase as JavaScript's String.prototype.toLowerCase does;
//   - tokens are the matches of /\b\w\w+\b/g. JavaScript's \w and \b (no u
//     flag) are ASCII-only, exactly like Go's regexp, so a token is a maximal
//     run of at least two [a-z0-9_] characters and every other character
//     (accented letters, CJK, emoji) separates tokens. scikit-learn's Python
//     regex is Unicode-aware, which is why 3 of the 20000 injection-model
//     n-grams ("für", "façade", "möchte") can never match, in JS or here;
//   - n-grams for n in ngram_range, tokens joined by one space, counted.
//
// Only two non-ASCII code points lowercase into ASCII word characters, and
// both are handled as JS does: U+212A KELVIN SIGN becomes "k", and U+0130
// (capital I with dot) becomes "i" followed by U+0307, a non-word character,
// so it ends the token. Invalid UTF-8 bytes separate tokens (JS would see
// U+FFFD after decoding).
//
// A Vectorizer is immutable after construction and safe for concurrent use.
type Vectorizer struct {
	vocab      map[string]int32
	minN, maxN int
	// words holds every token of the vocabulary: its id as a unigram (-1
	// when it is not one) and whether it starts or ends a bigram. A text's
	// token is looked up once, and a bigram only when its first token
	// starts one and its second ends one: most of a text's bigrams are not
	// in the vocabulary, and on a request's trip through the gateway each
	// lookup is a few cache misses.
	words map[string]word
}

type word struct {
	id         int32
	head, tail bool
}

// NewVectorizer returns a Vectorizer over vocab (n-gram → feature id) for
// n-grams of minN..maxN tokens.
func NewVectorizer(vocab map[string]int32, minN, maxN int) (*Vectorizer, error) {
	if minN < 1 || maxN < minN {
		return nil, fmt.Errorf("guardrail: bad ngram_range [%d, %d]", minN, maxN)
	}
	words := make(map[string]word, len(vocab))
	get := func(t string) word {
		if w, ok := words[t]; ok {
			return w
		}
		return word{id: -1}
	}
	for term, id := range vocab {
		switch f := strings.Split(term, " "); len(f) {
		case 1:
			w := get(term)
			w.id = id
			words[term] = w
		case 2:
			h := get(f[0])
			h.head = true
			words[f[0]] = h
			t := get(f[1]) // after the head's: f[0] may be f[1]
			t.tail = true
			words[f[1]] = t
		}
	}
	return &Vectorizer{vocab: vocab, minN: minN, maxN: maxN, words: words}, nil
}

// VocabSize is the number of n-grams the vocabulary holds.
func (v *Vectorizer) VocabSize() int { return len(v.vocab) }

// Tokenize returns the text's tokens, lowercased, in order.
func (v *Vectorizer) Tokenize(text string) []string {
	norm := projectASCII(text)
	return strings.Fields(norm)
}

// Terms returns the vocabulary ids of the n-grams in text, ascending and
// unique, with their occurrence counts. N-grams outside the vocabulary are
// dropped, as tfidf.js drops them. Both slices are empty when nothing in the
// text is in the vocabulary.
func (v *Vectorizer) Terms(text string) (ids []int64, counts []float32) {
	sc := termScratches.Get().(*termScratch)
	defer termScratches.Put(sc)
	return v.appendTerms(sc, text, nil, nil)
}

// termScratch is a text's working memory in appendTerms: its projection,
// its tokens (views of it), their vocabulary entries and every n-gram
// occurrence's id. Pooled: a classified text costs no allocation for
// them, and on the gateway's busy heap each one counts.
type termScratch struct {
	norm []byte
	toks []string
	info []word
	seen []int64
	buf  []byte
}

var termScratches = sync.Pool{New: func() any { return new(termScratch) }}

// appendTerms appends Terms(text) to ids and counts (made, with room for
// the text's terms, when nil), working in sc.
func (v *Vectorizer) appendTerms(sc *termScratch, text string, ids []int64, counts []float32) ([]int64, []float32) {
	sc.norm = appendProjectASCII(sc.norm[:0], text)
	// projectASCII separates tokens by one space and starts with none:
	// its fields are what Tokenize's strings.Fields returns.
	toks := sc.toks[:0]
	for rest := sc.norm; len(rest) > 0; {
		k := bytes.IndexByte(rest, ' ')
		if k < 0 {
			k = len(rest)
		}
		if k > 0 {
			toks = append(toks, unsafe.String(&rest[0], k))
		}
		rest = rest[min(k+1, len(rest)):]
	}
	// Every occurrence's id, then sorted and counted by runs: no map to
	// build for a text's few dozen n-grams.
	seen, buf := sc.seen[:0], sc.buf[:0]
	info := slices.Grow(sc.info[:0], len(toks))[:len(toks)]
	for i, t := range toks {
		w, ok := v.words[t]
		if !ok {
			w.id = -1
		}
		info[i] = w
	}
	for n := v.minN; n <= v.maxN; n++ {
		for i := 0; i+n <= len(toks); i++ {
			switch n {
			case 1:
				if id := info[i].id; id >= 0 {
					seen = append(seen, int64(id))
				}
				continue
			case 2:
				if !info[i].head || !info[i+1].tail {
					continue // no bigram of the vocabulary
				}
			}
			buf = buf[:0]
			for j := i; j < i+n; j++ {
				if j > i {
					buf = append(buf, ' ')
				}
				buf = append(buf, toks[j]...)
			}
			// The map index with string(buf) does not allocate.
			if id, ok := v.vocab[string(buf)]; ok {
				seen = append(seen, int64(id))
			}
		}
	}
	slices.Sort(seen)
	if ids == nil {
		ids = make([]int64, 0, len(seen))
		counts = make([]float32, 0, len(seen))
	}
	for i, id := range seen {
		if i > 0 && id == seen[i-1] {
			counts[len(counts)-1]++
			continue
		}
		ids = append(ids, id)
		counts = append(counts, 1)
	}
	clear(toks) // views of norm, which the next text overwrites
	sc.toks, sc.info, sc.seen, sc.buf = toks[:0], info[:0], seen[:0], buf[:0]
	return ids, counts
}

// projectASCII lowercases text the way JavaScript does and replaces every
// character that is not an ASCII word character after lowercasing with a
// space, dropping single-character runs, so the tokens are its fields.
func projectASCII(text string) string {
	return string(appendProjectASCII(make([]byte, 0, len(text)+1), text))
}

// appendProjectASCII appends projectASCII(text) to out.
func appendProjectASCII(out []byte, text string) []byte {
	base := len(out)
	runStart := base // index in out where the current run of word bytes began
	endRun := func() {
		if len(out)-runStart == 1 { // \w\w+ needs two characters
			out = out[:runStart]
		}
		if len(out) > base && out[len(out)-1] != ' ' {
			out = append(out, ' ')
		}
		runStart = len(out)
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
				out = append(out, c)
			case 'A' <= c && c <= 'Z':
				out = append(out, c+('a'-'A'))
			default:
				endRun()
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch r {
		case '\u212A': // KELVIN SIGN lowercases to ASCII k in JS and Go alike.
			out = append(out, 'k')
		case '\u0130': // JS: "İ".toLowerCase() === "i\u0307"; U+0307 is not \w.
			out = append(out, 'i')
			endRun()
		default:
			endRun()
		}
	}
	endRun()
	return out
}
