package sentencepiece

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's "added_tokens".
type addedToken struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// matcher finds added tokens in text the way HuggingFace's AddedVocabulary
// does: leftmost-longest, non-overlapping matches; a single_word token only
// matches between non-word characters; lstrip and rstrip make the match
// swallow the white space beside it.
type matcher struct {
	toks    []addedToken
	pattern []string
	first   [256][]int // token indices by the pattern's first byte, longest first
	any     bool
	// lead is the patterns' common first byte, or -1 when they differ;
	// with one ('[' for [CLS] [SEP] …) the scan jumps with IndexByte.
	lead int
}

func newMatcher(toks []addedToken, pattern func(addedToken) string) *matcher {
	m := &matcher{}
	for _, t := range toks {
		p := pattern(t)
		if p == "" {
			continue
		}
		m.toks = append(m.toks, t)
		m.pattern = append(m.pattern, p)
	}
	m.lead = -1
	for i, p := range m.pattern {
		m.first[p[0]] = append(m.first[p[0]], i)
		switch {
		case !m.any:
			m.lead = int(p[0])
		case m.lead != int(p[0]):
			m.lead = -1
		}
		m.any = true
	}
	for b := range m.first {
		slices.SortStableFunc(m.first[b], func(x, y int) int { return len(m.pattern[y]) - len(m.pattern[x]) })
	}
	return m
}

// part is a piece of text, or an added token (id >= 0) cut out of it.
type part struct {
	s     string
	id    int64
	start bool // s begins the input text
}

// split appends the parts of s to dst. atStart says s begins the input.
func (m *matcher) split(dst []part, s string, atStart bool) []part {
	if !m.any {
		return append(dst, part{s: s, id: -1, start: atStart})
	}
	done := 0 // bytes of s already emitted
	for i := 0; i < len(s); {
		if m.lead >= 0 {
			j := strings.IndexByte(s[i:], byte(m.lead))
			if j < 0 {
				break
			}
			i += j
		}
		k := m.at(s, i)
		if k < 0 {
			i++
			continue
		}
		t := m.toks[k]
		start, stop := i, i+len(m.pattern[k])
		i = stop
		if t.SingleWord && (endsWithWord(s[:start]) || startsWithWord(s[stop:])) {
			continue
		}
		if t.LStrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), done)
		}
		if t.RStrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
			i = stop
		}
		if done < start {
			dst = append(dst, part{s: s[done:start], id: -1, start: atStart && done == 0})
		}
		dst = append(dst, part{s: s[start:stop], id: t.ID})
		done = stop
	}
	if done < len(s) {
		dst = append(dst, part{s: s[done:], id: -1, start: atStart && done == 0})
	}
	return dst
}

// at returns the index of the longest token whose pattern starts s[i:], or -1.
func (m *matcher) at(s string, i int) int {
	for _, k := range m.first[s[i]] {
		if strings.HasPrefix(s[i:], m.pattern[k]) {
			return k
		}
	}
	return -1
}

func isWordChar(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' }

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWord(s string) bool {
	for _, r := range s {
		return isWordChar(r)
	}
	return false
}
