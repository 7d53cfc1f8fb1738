// Package wordpiece implements BERT's tokenizer: the "basic" pre-tokenizer
// (clean control characters, split on whitespace, lower-case and strip accents
// for uncased vocabularies, split punctuation, isolate CJK ideographs) followed
// by greedy longest-match-first WordPiece with "##" continuation pieces.
//
// It reproduces HuggingFace's BertTokenizer (do_lower_case, tokenize_chinese_chars,
// strip_accents following do_lower_case) closely enough that ids match for the
// texts a gateway sees; the known differences are that lower-casing uses Go's
// simple per-rune case mapping (Python's str.lower uses the full mapping, which
// differs for a handful of characters such as U+0130) and that Go's Unicode
// tables (15.0) are one version newer than the accent table (Python 14.0).
package wordpiece

//go:generate sh -c "python3 gen_accents.py && gofmt -w accents_table.go"

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Special tokens every BERT vocabulary defines.
const (
	UnknownToken  = "[UNK]"
	ClassifyToken = "[CLS]"
	SeparateToken = "[SEP]"
	PaddingToken  = "[PAD]"
)

// MaxCharsPerWord is the longest word (in characters, after basic
// tokenization) that WordPiece tries to split; longer words become [UNK], as in
// BERT, which bounds the quadratic greedy search.
const MaxCharsPerWord = 100

// Options configures a Tokenizer.
type Options struct {
	// Cased keeps case and accents. The zero value (uncased) lower-cases and
	// strips accents, which is what bert-base-uncased and nomic-embed-text
	// expect.
	Cased bool
}

// Tokenizer holds a WordPiece vocabulary. It is immutable after loading and
// safe for concurrent use.
type Tokenizer struct {
	// words holds word-initial pieces; cont holds continuation pieces keyed
	// without their "##" prefix, so a lookup never has to build a string.
	words, cont map[string]int32
	tokens      []string
	// maxWordBytes/maxContBytes bound the greedy search: no piece longer than
	// the longest vocabulary entry can match.
	maxWordBytes, maxContBytes int
	cased                      bool
	unk, cls, sep, pad         int64
}

// Load reads a vocabulary file with one token per line; a token's id is its
// zero-based line number.
func Load(path string, opts Options) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: open vocabulary: %w", err)
	}
	defer f.Close()
	t, err := Read(f, opts)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: %s: %w", path, err)
	}
	return t, nil
}

// Read parses a vocabulary (one token per line, id = line number) from r.
func Read(r io.Reader, opts Options) (*Tokenizer, error) {
	var tokens []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		// Tolerate CRLF files; BERT's loader strips only "\n", but no real
		// vocabulary has a token ending in "\r".
		tokens = append(tokens, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read vocabulary: %w", err)
	}
	return New(tokens, opts)
}

// New builds a Tokenizer from tokens, where tokens[i] has id i. Duplicate
// tokens keep their last id, as BERT's loader does. The vocabulary must define
// [UNK], [CLS], [SEP] and [PAD].
func New(tokens []string, opts Options) (*Tokenizer, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("empty vocabulary")
	}
	if len(tokens) > 1<<31-1 {
		return nil, fmt.Errorf("vocabulary too large (%d tokens)", len(tokens))
	}
	t := &Tokenizer{
		words:  make(map[string]int32, len(tokens)),
		cont:   make(map[string]int32, len(tokens)/4),
		tokens: append([]string(nil), tokens...),
		cased:  opts.Cased,
	}
	for i, tok := range tokens {
		if rest, ok := strings.CutPrefix(tok, "##"); ok && rest != "" {
			t.cont[rest] = int32(i)
			t.maxContBytes = max(t.maxContBytes, len(rest))
			continue
		}
		t.words[tok] = int32(i)
		t.maxWordBytes = max(t.maxWordBytes, len(tok))
	}
	for _, sp := range []struct {
		name string
		dst  *int64
	}{{UnknownToken, &t.unk}, {ClassifyToken, &t.cls}, {SeparateToken, &t.sep}, {PaddingToken, &t.pad}} {
		id, ok := t.words[sp.name]
		if !ok {
			return nil, fmt.Errorf("vocabulary has no %s token", sp.name)
		}
		*sp.dst = int64(id)
	}
	return t, nil
}

// VocabSize is the number of ids (lines in the vocabulary).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// PadID is the id of [PAD], used to fill a batch's shorter sequences.
func (t *Tokenizer) PadID() int64 { return t.pad }

// ID returns the id of a vocabulary token (continuation pieces carry "##").
func (t *Tokenizer) ID(token string) (int64, bool) {
	if rest, ok := strings.CutPrefix(token, "##"); ok && rest != "" {
		id, ok := t.cont[rest]
		return int64(id), ok
	}
	id, ok := t.words[token]
	return int64(id), ok
}

// Token returns the vocabulary entry for id, or "" when id is out of range.
func (t *Tokenizer) Token(id int64) string {
	if id < 0 || id >= int64(len(t.tokens)) {
		return ""
	}
	return t.tokens[id]
}

// Encoding is a model-ready token sequence. The three slices have equal length.
// There is no padding: batching pads to the batch's longest sequence.
type Encoding struct {
	IDs           []int64
	AttentionMask []int64
	TypeIDs       []int64
}

// Len is the number of tokens, [CLS] and [SEP] included.
func (e Encoding) Len() int { return len(e.IDs) }

// Tokenize splits text into WordPiece tokens without special tokens.
func (t *Tokenizer) Tokenize(text string) []string {
	ids := t.appendIDs(nil, text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tokens[id]
	}
	return out
}

// Encode tokenizes text as [CLS] tokens [SEP] (type ids all 0, mask all 1).
// When maxLen > 0 the word pieces are truncated so the whole sequence is at
// most maxLen long; a maxLen of 1 is raised to 2 because [CLS] and [SEP] are
// always present. maxLen <= 0 means no limit.
func (t *Tokenizer) Encode(text string, maxLen int) Encoding {
	if maxLen > 0 && maxLen < 2 {
		maxLen = 2
	}
	ids := t.appendIDs(make([]int64, 1, 64), text)
	ids[0] = t.cls
	if maxLen > 0 && len(ids) > maxLen-1 {
		ids = ids[:maxLen-1]
	}
	ids = append(ids, t.sep)
	return Encoding{IDs: ids, AttentionMask: ones(len(ids)), TypeIDs: make([]int64, len(ids))}
}

// EncodePair tokenizes a sentence pair as [CLS] a [SEP] b [SEP], with type id
// 0 for the first segment (and its [SEP]) and 1 for the second. When maxLen > 0
// the longer segment loses its last piece until the total fits (BERT's
// "longest first" truncation); a maxLen below 3 is raised to 3.
func (t *Tokenizer) EncodePair(a, b string, maxLen int) Encoding {
	if maxLen > 0 && maxLen < 3 {
		maxLen = 3
	}
	first := t.appendIDs(nil, a)
	second := t.appendIDs(nil, b)
	if maxLen > 0 {
		for len(first)+len(second)+3 > maxLen {
			if len(first) > len(second) {
				first = first[:len(first)-1]
			} else {
				second = second[:len(second)-1]
			}
		}
	}
	n := len(first) + len(second) + 3
	e := Encoding{IDs: make([]int64, 0, n), AttentionMask: ones(n), TypeIDs: make([]int64, n)}
	e.IDs = append(e.IDs, t.cls)
	e.IDs = append(e.IDs, first...)
	e.IDs = append(e.IDs, t.sep)
	e.IDs = append(e.IDs, second...)
	e.IDs = append(e.IDs, t.sep)
	for i := len(first) + 2; i < n; i++ {
		e.TypeIDs[i] = 1
	}
	return e
}

func ones(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// appendIDs runs basic tokenization and WordPiece over text, appending ids.
func (t *Tokenizer) appendIDs(dst []int64, text string) []int64 {
	w := wordBuilder{t: t, dst: dst}
	for _, r := range text {
		if r < utf8.RuneSelf {
			// ASCII fast path: most prompts are ASCII, and the Unicode table
			// lookups below dominate otherwise.
			switch c := asciiClass[r]; c {
			case asciiDrop:
			case asciiSpace:
				w.flush()
			case asciiPunct:
				w.flush()
				w.dst = t.wordPiece(w.dst, []byte{byte(r)}, 1)
			default:
				if c == asciiUpper && !t.cased {
					r += 'a' - 'A'
				}
				w.word = append(w.word, byte(r))
				w.runes++
			}
			continue
		}
		switch {
		case r == 0 || r == utf8.RuneError || isControl(r):
			continue
		case unicode.IsSpace(r):
			w.flush()
			continue
		case t.cased:
			w.add(r)
			continue
		}
		r = unicode.ToLower(r)
		// No code point below U+00C0 has a canonical decomposition.
		if s, ok := stripped[r]; r >= 0xC0 && ok {
			for _, d := range s {
				w.add(d)
			}
			continue
		}
		if r >= hangulBase && r < hangulBase+hangulCount {
			jamo, n := decomposeHangul(r)
			for _, d := range jamo[:n] {
				w.add(d)
			}
			continue
		}
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		w.add(r)
	}
	w.flush()
	return w.dst
}

// ASCII character classes for the fast path in appendIDs.
const (
	asciiWord  = iota // letters (lower case), digits
	asciiUpper        // A-Z
	asciiDrop         // controls other than tab, LF, CR
	asciiSpace        // space, tab, LF, CR
	asciiPunct        // every other printable character (BERT's punctuation)
)

var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for r := range c {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			c[r] = asciiSpace
		case isControl(rune(r)) || r == 0:
			c[r] = asciiDrop
		case isPunctuation(rune(r)):
			c[r] = asciiPunct
		case r >= 'A' && r <= 'Z':
			c[r] = asciiUpper
		default:
			c[r] = asciiWord
		}
	}
	return c
}()

// wordBuilder accumulates one normalised word at a time and hands finished
// words to WordPiece.
type wordBuilder struct {
	t     *Tokenizer
	dst   []int64
	word  []byte // the current word as UTF-8
	runes int    // characters in word
}

// add appends a normalised character to the current word or, for punctuation
// and CJK ideographs, ends the word and emits the character as a word of its
// own.
func (w *wordBuilder) add(r rune) {
	if isPunctuation(r) || isCJK(r) {
		w.flush()
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		w.dst = w.t.wordPiece(w.dst, buf[:n], 1)
		return
	}
	w.word = utf8.AppendRune(w.word, r)
	w.runes++
}

func (w *wordBuilder) flush() {
	if len(w.word) > 0 {
		w.dst = w.t.wordPiece(w.dst, w.word, w.runes)
		w.word, w.runes = w.word[:0], 0
	}
}

// wordPiece appends the greedy longest-match-first split of word, or [UNK]
// when the word is too long or some part of it matches no piece.
func (t *Tokenizer) wordPiece(dst []int64, word []byte, runes int) []int64 {
	if runes > MaxCharsPerWord {
		return append(dst, t.unk)
	}
	mark := len(dst)
	for start := 0; start < len(word); {
		table, limit := t.words, t.maxWordBytes
		if start > 0 {
			table, limit = t.cont, t.maxContBytes
		}
		end := min(len(word), start+limit)
		for end > start && !utf8.RuneStart(safeByte(word, end)) {
			end--
		}
		matched := false
		for end > start {
			if id, ok := table[string(word[start:end])]; ok {
				dst = append(dst, int64(id))
				matched = true
				break
			}
			_, size := utf8.DecodeLastRune(word[start:end])
			end -= size
		}
		if !matched {
			return append(dst[:mark], t.unk)
		}
		start = end
	}
	return dst
}

// safeByte returns word[i], or a rune-start byte at the end of the slice.
func safeByte(word []byte, i int) byte {
	if i >= len(word) {
		return 0
	}
	return word[i]
}

// isControl reports characters BERT deletes: Unicode "other" categories (and
// unassigned code points), except the whitespace controls tab, LF and CR.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	// Python's unicodedata.category returns "Cn" for unassigned code points.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isPunctuation follows BERT: all non-alphanumeric ASCII (so "$", "^", "`" split
// even though Unicode calls them symbols) plus every Unicode punctuation
// category.
func isPunctuation(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return r > 127 && unicode.IsPunct(r)
}

// isCJK reports the CJK Unified Ideographs blocks BERT isolates as words (not
// Hangul, Hiragana or Katakana, which are written with spaces or handled by
// WordPiece).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// Hangul syllables decompose algorithmically (Unicode 3.12) into conjoining
// jamo, none of which is a nonspacing mark, so NFD keeps them all.
const (
	hangulBase  = 0xAC00
	hangulCount = 11172
	jamoLBase   = 0x1100
	jamoVBase   = 0x1161
	jamoTBase   = 0x11A7
	jamoVCount  = 21
	jamoTCount  = 28
)

func decomposeHangul(r rune) (jamo [3]rune, n int) {
	s := r - hangulBase
	jamo[0] = jamoLBase + s/(jamoVCount*jamoTCount)
	jamo[1] = jamoVBase + (s%(jamoVCount*jamoTCount))/jamoTCount
	if t := s % jamoTCount; t != 0 {
		jamo[2] = jamoTBase + t
		return jamo, 3
	}
	return jamo, 2
}
