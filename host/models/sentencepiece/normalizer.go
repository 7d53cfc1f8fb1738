package sentencepiece

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalizer rewrites a segment of input text before pre-tokenization, as
// a HuggingFace tokenizers normalizer does. README.md lists which normalizer
// types are implemented and how closely.
type normalizer interface {
	normalize(s string) string
}

// parseNormalizer reads tokenizer.json's "normalizer" (null means none).
func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch head.Type {
	case "Sequence":
		var v struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		var seq normSequence
		for i, r := range v.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "Precompiled":
		var v struct {
			Charsmap *string `json:"precompiled_charsmap"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Precompiled: %w", err)
		}
		if v.Charsmap == nil || *v.Charsmap == "" {
			return nil, nil // no map: the identity
		}
		b, err := base64.StdEncoding.DecodeString(*v.Charsmap)
		if err != nil {
			return nil, fmt.Errorf("normalizer Precompiled: precompiled_charsmap is not base64: %w", err)
		}
		cm, err := parseCharsmap(b)
		if err != nil {
			return nil, fmt.Errorf("normalizer Precompiled: %w", err)
		}
		return cm, nil
	case "Replace":
		var v struct {
			Pattern struct {
				String *string `json:"String"`
				Regex  *string `json:"Regex"`
			} `json:"pattern"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		if v.Content == nil {
			return nil, fmt.Errorf("normalizer Replace: no content")
		}
		return newReplace(v.Pattern.String, v.Pattern.Regex, *v.Content)
	case "Strip":
		v := struct {
			Left  *bool `json:"strip_left"`
			Right *bool `json:"strip_right"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		// HuggingFace's defaults are true for both.
		return normStrip{left: v.Left == nil || *v.Left, right: v.Right == nil || *v.Right}, nil
	case "Lowercase":
		return normLowercase{}, nil
	case "Prepend":
		var v struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Prepend: %w", err)
		}
		return normPrepend(v.Prepend), nil
	case "Nmt":
		return normNmt{}, nil
	case "StripAccents":
		return normStripAccents{}, nil
	case "NFKC", "NFKD", "NFC", "NFD":
		return newUnicodeForm(head.Type), nil
	case "":
		return nil, fmt.Errorf("normalizer has no type")
	default:
		return nil, fmt.Errorf("normalizer type %q is not implemented (implemented: Sequence, Precompiled, Replace, Strip, Lowercase, Prepend, Nmt, StripAccents, NFKC, NFKD, NFC, NFD)", head.Type)
	}
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

type normSequence []normalizer

func (q normSequence) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// normReplace is HuggingFace's Replace: every non-overlapping match of a
// literal string or a regular expression becomes content. Regular
// expressions are compiled with Go's RE2 syntax, which covers what the
// SentencePiece converters write (" {2,}"); a pattern RE2 rejects (Oniguruma
// look-around, backreferences) is a load error.
type normReplace struct {
	literal string
	re      *regexp.Regexp
	content string
	// collapse is the fast path for the pattern " {2,}" with content " ",
	// the whitespace collapsing of every SentencePiece conversion.
	collapse bool
}

func newReplace(lit, re *string, content string) (normalizer, error) {
	switch {
	case lit != nil && re != nil:
		return nil, fmt.Errorf("normalizer Replace: pattern has both String and Regex")
	case lit != nil:
		if *lit == "" {
			return nil, fmt.Errorf("normalizer Replace: empty String pattern")
		}
		return normReplace{literal: *lit, content: content}, nil
	case re != nil:
		rx, err := regexp.Compile(*re)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: Regex %q is not supported by Go's RE2 syntax: %w", *re, err)
		}
		return normReplace{re: rx, content: content, collapse: *re == " {2,}" && content == " "}, nil
	default:
		return nil, fmt.Errorf("normalizer Replace: pattern needs String or Regex")
	}
}

func (r normReplace) normalize(s string) string {
	switch {
	case r.collapse:
		return collapseSpaces(s)
	case r.re != nil:
		return r.re.ReplaceAllLiteralString(s, r.content)
	default:
		return strings.ReplaceAll(s, r.literal, r.content)
	}
}

// collapseSpaces replaces each run of two or more ASCII spaces with one.
func collapseSpaces(s string) string {
	i := strings.Index(s, "  ")
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i+1]...)
	prevSpace := true
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		if c == ' ' && prevSpace {
			continue
		}
		prevSpace = c == ' '
		b = append(b, c)
	}
	return string(b)
}

// normStrip removes leading and/or trailing white space (Unicode
// White_Space, as Rust's char::is_whitespace).
type normStrip struct{ left, right bool }

func (n normStrip) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

// normLowercase maps each character to its lower case, one character at a
// time like Rust's char::to_lowercase: U+0130 (İ) becomes "i̇" (its
// unconditional SpecialCasing mapping) and there is no final-sigma rule.
type normLowercase struct{}

func (normLowercase) normalize(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.ToLower(s)
	}
	return strings.ToLower(strings.ReplaceAll(s, "İ", "i\u0307"))
}

// normPrepend puts a string before non-empty text.
type normPrepend string

func (p normPrepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

// normNmt is HuggingFace's Nmt normalizer: ASCII control characters other
// than tab, line feed, form feed and carriage return are removed, and those
// four plus a few invisible or separator characters become a space.
type normNmt struct{}

func (normNmt) normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x01 && r <= 0x08, r == 0x0B, r >= 0x0E && r <= 0x1F, r == 0x7F, r == 0x8F, r == 0x9F:
			return -1
		case r == 0x09, r == 0x0A, r == 0x0C, r == 0x0D, r == 0x1680, r >= 0x200B && r <= 0x200F,
			r == 0x2028, r == 0x2029, r == 0x2581, r == 0xFEFF, r == 0xFFFD:
			return ' '
		}
		return r
	}, s)
}

// normStripAccents removes combining marks (general category M), which
// strips accents from text that an NFD or NFKD step decomposed first.
type normStripAccents struct{}

func (normStripAccents) normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// toValidUTF8 replaces each byte that is not part of valid UTF-8 with
// U+FFFD, one replacement per byte as SentencePiece does.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}
