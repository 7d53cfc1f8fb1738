package sentencepiece

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer splits normalized text into the words the model segments
// one at a time.
type preTokenizer interface {
	// split appends the words of s to dst; first says s begins the input
	// text (Metaspace's "first" prepend scheme needs to know).
	split(dst []string, s string, first bool) []string
}

func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch head.Type {
	case "Metaspace":
		return parseMetaspace(raw)
	case "Sequence":
		var v struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		var seq preSequence
		for i, r := range v.PreTokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer Sequence[%d]: %w", i, err)
			}
			if p != nil {
				seq = append(seq, p)
			}
		}
		if len(seq) == 1 {
			return seq[0], nil
		}
		return seq, nil
	case "Punctuation":
		var v struct {
			Behavior string `json:"behavior"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Punctuation: %w", err)
		}
		if v.Behavior != "" && v.Behavior != "Isolated" {
			return nil, fmt.Errorf("pre_tokenizer Punctuation: behavior %q is not implemented (only Isolated)", v.Behavior)
		}
		return punctuation{}, nil
	case "WhitespaceSplit":
		return whitespaceSplit{}, nil
	case "":
		return nil, fmt.Errorf("pre_tokenizer has no type")
	default:
		return nil, fmt.Errorf("pre_tokenizer type %q is not implemented (implemented: Metaspace, Sequence, Punctuation, WhitespaceSplit)", head.Type)
	}
}

// Metaspace prepend schemes.
const (
	prependAlways = iota
	prependFirst
	prependNever
)

// metaspace is HuggingFace's Metaspace pre-tokenizer: spaces become the
// replacement character (▁), one is prepended to text that does not start
// with it (always, or only for the start of the input, or never), and the
// text is split before every replacement character, which stays with the
// word after it ("a▁▁b" → "a", "▁", "▁b").
type metaspace struct {
	repl    string
	scheme  int
	doSplit bool
}

func parseMetaspace(raw json.RawMessage) (preTokenizer, error) {
	var v struct {
		Replacement    *string `json:"replacement"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
		PrependScheme  *string `json:"prepend_scheme"`
		Split          *bool   `json:"split"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("pre_tokenizer Metaspace: %w", err)
	}
	m := metaspace{repl: "▁", scheme: prependAlways, doSplit: v.Split == nil || *v.Split}
	if v.Replacement != nil {
		if utf8.RuneCountInString(*v.Replacement) != 1 {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: replacement %q is not one character", *v.Replacement)
		}
		m.repl = *v.Replacement
	}
	// Files written before prepend_scheme existed say add_prefix_space;
	// false there means never, whatever the scheme says.
	switch {
	case v.AddPrefixSpace != nil && !*v.AddPrefixSpace:
		m.scheme = prependNever
	case v.PrependScheme == nil:
	case *v.PrependScheme == "always":
	case *v.PrependScheme == "first":
		m.scheme = prependFirst
	case *v.PrependScheme == "never":
		m.scheme = prependNever
	default:
		return nil, fmt.Errorf("pre_tokenizer Metaspace: prepend_scheme %q is not always, first or never", *v.PrependScheme)
	}
	return m, nil
}

func (m metaspace) split(dst []string, s string, first bool) []string {
	if s == "" {
		return dst
	}
	prepend := (m.scheme == prependAlways || m.scheme == prependFirst && first) &&
		s[0] != ' ' && !strings.HasPrefix(s, m.repl)
	if spaces := strings.Count(s, " "); spaces > 0 || prepend {
		var b strings.Builder
		b.Grow(len(s) + spaces*(len(m.repl)-1) + len(m.repl))
		if prepend {
			b.WriteString(m.repl)
		}
		for {
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				break
			}
			b.WriteString(s[:i])
			b.WriteString(m.repl)
			s = s[i+1:]
		}
		b.WriteString(s)
		s = b.String()
	}
	if !m.doSplit {
		return append(dst, s)
	}
	for start := 0; ; {
		// The replacement's first byte never continues a UTF-8 sequence,
		// so searching from start+1 cannot match inside a character.
		i := strings.Index(s[start+1:], m.repl)
		if i < 0 {
			return append(dst, s[start:])
		}
		dst = append(dst, s[start:start+1+i])
		start += 1 + i
	}
}

type preSequence []preTokenizer

func (q preSequence) split(dst []string, s string, first bool) []string {
	cur := []string{s}
	for _, p := range q {
		var next []string
		for i, w := range cur {
			next = p.split(next, w, first && i == 0)
		}
		cur = next
	}
	return append(dst, cur...)
}

// punctuation isolates each punctuation character (ASCII punctuation or
// Unicode category P) as a word of its own.
type punctuation struct{}

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7F && !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}
	return unicode.IsPunct(r)
}

func (punctuation) split(dst []string, s string, _ bool) []string {
	start := 0
	for i, r := range s {
		if !isPunct(r) {
			continue
		}
		if start < i {
			dst = append(dst, s[start:i])
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		end := i + size
		dst = append(dst, s[i:end])
		start = end
	}
	if start < len(s) {
		dst = append(dst, s[start:])
	}
	return dst
}

// whitespaceSplit splits on white space, which is dropped.
type whitespaceSplit struct{}

func (whitespaceSplit) split(dst []string, s string, _ bool) []string {
	return append(dst, strings.FieldsFunc(s, unicode.IsSpace)...)
}
