package guardrail

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// Go's regexp runs an NFA whose cost grows with the pattern, and the rule
// patterns are large (bounded gaps like {0,4} expand into copies), so
// running every rule on every text costs ~0.3 ms. Most texts contain none of
// the words a rule needs, though. needles computes, from a pattern's syntax
// tree, a set of literals of which every match must contain at least one;
// a rule is only run when the folded text contains one of them. This is a
// necessary condition derived mechanically, so it never changes a result
// (rules_test.go checks that on every labelled text and by fuzzing).

// needles returns literals (lowercased) at least one of which occurs in
// every match of re, or nil if no such set was found.
func needles(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		// Lowercased whether or not the literal is case-insensitive: the
		// text is lowercased too, so the condition stays necessary.
		return []string{foldString(string(re.Rune))}
	case syntax.OpCapture:
		return needles(re.Sub[0])
	case syntax.OpPlus:
		return needles(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return needles(re.Sub[0])
		}
		return nil
	case syntax.OpConcat:
		// Every part is required: use the most selective part that has
		// needles (longest shortest needle, then fewest needles).
		var best []string
		for _, sub := range re.Sub {
			n := needles(sub)
			if n != nil && better(n, best) {
				best = n
			}
		}
		return best
	case syntax.OpAlternate:
		// Any branch may match: every branch needs needles.
		var all []string
		for _, sub := range re.Sub {
			n := needles(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		return all
	}
	return nil
}

func better(a, b []string) bool {
	if b == nil {
		return true
	}
	ma, mb := minLen(a), minLen(b)
	if ma != mb {
		return ma > mb
	}
	return len(a) < len(b)
}

func minLen(ns []string) int {
	m := -1
	for _, n := range ns {
		if m < 0 || len(n) < m {
			m = len(n)
		}
	}
	return m
}

// foldString maps text so that any case-insensitive match of an ASCII
// literal in the original is a plain substring match here: Unicode
// lowercasing, plus U+017F LONG S, which Go's (?i) matches as "s" but which
// is already lowercase. (U+212A KELVIN SIGN, matched as "k", lowercases to
// "k".)
func foldString(s string) string {
	s = strings.ToLower(s)
	if strings.ContainsRune(s, 'ſ') {
		s = strings.Map(func(r rune) rune {
			if r == 'ſ' {
				return 's'
			}
			return unicode.ToLower(r)
		}, s)
	}
	return s
}

// compileNeedles returns the rule's needles, dropping the prefilter (nil)
// when a needle is too short to be selective.
func compileNeedles(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil // regexp.MustCompile reports the error
	}
	ns := needles(re)
	if minLen(ns) < 2 {
		return nil
	}
	return ns
}

// mayMatch reports whether folded (the text after foldString) contains one
// of the needles; no needles means the rule always runs.
func mayMatch(folded string, ns []string) bool {
	if ns == nil {
		return true
	}
	for _, n := range ns {
		if strings.Contains(folded, n) {
			return true
		}
	}
	return false
}

// splitAlternatives splits a pattern at its top-level "|" (outside groups
// and character classes, not escaped).
func splitAlternatives(pattern string) []string {
	var parts []string
	depth, inClass, start := 0, false, 0
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\':
			i++ // skip the escaped byte
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				i++ // "[]...]": a leading ] is literal
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			parts = append(parts, pattern[start:i])
			start = i + 1
		}
	}
	return append(parts, pattern[start:])
}
