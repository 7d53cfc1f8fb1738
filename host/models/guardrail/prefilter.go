package guardrail

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// Go's regexp runs an NFA or a backtracker whose cost grows with the
// pattern and the text, and the rule patterns are large (bounded gaps like
// {0,4} expand into copies), so running every rule on every text costs
// ~0.3 ms. Most texts contain few of the words a rule needs, though.
//
// A prefilter is a necessary condition derived mechanically from a
// pattern's syntax tree: a conjunction of clauses, each a set of literals of
// which every match must contain at least one ("ignore" or "disregard" …,
// and "instructions" or "prompts" …). A text is lowercased once and scanned
// once for every literal of every prefilter (an Aho–Corasick automaton), and
// a pattern runs only when each of its clauses has a literal in the text.
// The condition is necessary, so it never changes a result (rules_test.go
// checks that on every labelled text and by fuzzing, golden_test.go pins
// every result).

// clause is a set of literal ids, one of which must occur.
type clause []int32

// filter is a conjunction of clauses; an empty filter always passes.
type filter []clause

// found is the set of literal ids a scan saw in a text.
type found []uint64

func (f found) has(id int32) bool { return f[id>>6]&(1<<(id&63)) != 0 }

// pass reports whether every clause has a literal in fd.
func (f filter) pass(fd found) bool {
next:
	for _, c := range f {
		for _, id := range c {
			if fd.has(id) {
				continue next
			}
		}
		return false
	}
	return true
}

// literalTable collects the prefilters' literals while the rules compile;
// build then makes the automaton that finds them all in one pass.
type literalTable struct {
	ids  map[string]int32
	list []string
	ac   *automaton
}

var literals = &literalTable{ids: map[string]int32{}}

func (t *literalTable) id(s string) int32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	if t.ac != nil {
		panic("guardrail: literal added after the automaton was built")
	}
	id := int32(len(t.list))
	t.ids[s] = id
	t.list = append(t.list, s)
	return id
}

// filterOf turns clauses of literals into a filter, dropping clauses that
// cannot select (a literal shorter than two bytes occurs almost anywhere).
func (t *literalTable) filterOf(clauses [][]string) filter {
	var f filter
	for _, c := range clauses {
		if minLen(c) < 2 {
			continue
		}
		var ids clause
		for i, s := range c {
			// "ais" adds nothing to a clause that has "ai".
			if slices.ContainsFunc(c, func(o string) bool { return o != s && strings.Contains(s, o) }) ||
				slices.Index(c, s) < i {
				continue
			}
			ids = append(ids, t.id(s))
		}
		f = append(f, ids)
	}
	return f
}

// scan returns the literals that occur in folded (a foldString result).
func (t *literalTable) scan(folded string) found {
	fd := make(found, (len(t.list)+63)/64)
	t.ac.scan(folded, fd)
	return fd
}

// scanText folds text and scans it.
func scanText(text string) found { return literals.scan(foldString(text)) }

// patternFilter is the prefilter of an RE2 pattern (Perl syntax).
func patternFilter(pattern string) filter {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil // regexp.MustCompile reports the error
	}
	return literals.filterOf(require(re))
}

// require returns clauses of lowercased literals such that every match of
// re contains a literal of each clause.
func require(re *syntax.Regexp) [][]string {
	if set, ok := exact(re); ok {
		if slices.Contains(set, "") {
			return nil
		}
		return [][]string{set}
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return require(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return require(re.Sub[0])
		}
		return nil
	case syntax.OpConcat:
		// Every part is required. Consecutive parts that match a few
		// strings each are crossed into one clause: the parser factors
		// "summari[sz]ing|summari[sz]es" into pieces that alone say little.
		var all [][]string
		run := []string{""}
		flush := func() {
			if !slices.Contains(run, "") {
				all = append(all, run)
			}
			run = []string{""}
		}
		for _, sub := range re.Sub {
			set, ok := exact(sub)
			if ok && len(run)*len(set) > maxExact {
				flush()
			}
			if ok {
				run = cross(run, set)
				continue
			}
			flush()
			all = append(all, require(sub)...)
		}
		flush()
		return all
	case syntax.OpAlternate:
		// Any branch may match: one clause of each branch (its most
		// selective) goes into a clause of the alternation.
		var c []string
		for _, sub := range re.Sub {
			best := bestClause(require(sub))
			if best == nil {
				return nil
			}
			c = append(c, best...)
		}
		return [][]string{c}
	}
	return nil
}

// maxExact bounds the strings exact enumerates.
const maxExact = 64

// exact returns the lowercased strings re matches, when they are few (an
// empty-width assertion matches ""), or false.
func exact(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		// Lowercased whether or not the literal is case-insensitive: the
		// text is lowercased too, so the condition stays necessary.
		s := string(re.Rune)
		if !foldsToOne(s) {
			return nil, false
		}
		return []string{foldString(s)}, true
	case syntax.OpCharClass:
		var set []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 8 {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				s := string(r)
				if !foldsToOne(s) {
					return nil, false
				}
				if s = foldString(s); !slices.Contains(set, s) {
					set = append(set, s)
				}
			}
			if len(set) > 8 {
				return nil, false
			}
		}
		return set, len(set) > 0
	case syntax.OpCapture:
		return exact(re.Sub[0])
	case syntax.OpQuest:
		set, ok := exact(re.Sub[0])
		if !ok || slices.Contains(set, "") {
			return set, ok
		}
		return append(set, ""), true
	case syntax.OpAlternate:
		var set []string
		for _, sub := range re.Sub {
			s, ok := exact(sub)
			if !ok || len(set)+len(s) > maxExact {
				return nil, false
			}
			for _, x := range s {
				if !slices.Contains(set, x) {
					set = append(set, x)
				}
			}
		}
		return set, true
	case syntax.OpConcat:
		set := []string{""}
		for _, sub := range re.Sub {
			s, ok := exact(sub)
			if !ok || len(set)*len(s) > maxExact {
				return nil, false
			}
			set = cross(set, s)
		}
		return set, true
	}
	return nil, false
}

// cross returns every a+b.
func cross(as, bs []string) []string {
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			if s := a + b; !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// bestClause picks the most selective clause: the longest shortest
// literal, then the fewest literals.
func bestClause(cs [][]string) []string {
	var best []string
	for _, c := range cs {
		if best == nil {
			best = c
			continue
		}
		mc, mb := minLen(c), minLen(best)
		if mc > mb || mc == mb && len(c) < len(best) {
			best = c
		}
	}
	return best
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

// foldsToOne reports whether every character that (?i) matches for a rune
// of s folds, by foldString, to the same string as that rune: then a
// case-insensitive match in a text is a plain match in the folded text.
func foldsToOne(s string) bool {
	for _, r := range s {
		want := foldString(string(r))
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if foldString(string(f)) != want {
				return false
			}
		}
	}
	return true
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

// automaton is an Aho–Corasick automaton over bytes, as a full transition
// table on the byte classes the literals use: scanning costs one table
// lookup per byte of text, whatever the number of literals.
type automaton struct {
	class [256]uint8 // byte → class; 0 is every byte no literal has
	width int        // number of classes
	// next is the transition table, state*width + class → state; states
	// fit 15 bits (about 5,300 for the rule table), which halves the
	// table, and the top bit (hasOut) marks a state that ends a literal:
	// three bytes in four reach none, and skip the out lists' cache lines.
	next []uint16
	// The ids of the literals that end at state s are out[outAt[s]:outAt[s+1]].
	outAt []uint32
	out   []int32
}

func newAutomaton(lits []string) *automaton {
	a := &automaton{width: 1}
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			if a.class[l[i]] == 0 {
				a.class[l[i]] = uint8(a.width)
				a.width++
			}
		}
	}
	if a.width > 256 {
		panic("guardrail: too many byte classes")
	}
	// The trie; 0 in next means no edge (state 0, the root, is never a
	// child).
	next := make([]int32, a.width)
	output := [][]int32{nil}
	for id, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			k := int(s)*a.width + int(a.class[l[i]])
			if next[k] == 0 {
				next[k] = int32(len(output))
				next = append(next, make([]int32, a.width)...)
				output = append(output, nil)
			}
			s = next[k]
		}
		output[s] = append(output[s], int32(id))
	}
	if len(output) > 1<<15 {
		panic("guardrail: too many automaton states")
	}
	// Breadth first: a missing edge goes where the longest proper suffix's
	// edge goes, and a state outputs its suffix's literals too.
	fail := make([]int32, len(output))
	queue := []int32{}
	for c := 0; c < a.width; c++ {
		if t := next[c]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		output[s] = append(output[s], output[fail[s]]...)
		for c := 0; c < a.width; c++ {
			k := int(s)*a.width + c
			if t := next[k]; t != 0 {
				fail[t] = next[int(fail[s])*a.width+c]
				queue = append(queue, t)
			} else {
				next[k] = next[int(fail[s])*a.width+c]
			}
		}
	}
	a.next = make([]uint16, len(next))
	for i, t := range next {
		a.next[i] = uint16(t)
		if len(output[t]) > 0 {
			a.next[i] |= hasOut
		}
	}
	a.outAt = make([]uint32, len(output)+1)
	for s, ids := range output {
		a.out = append(a.out, ids...)
		a.outAt[s+1] = uint32(len(a.out))
	}
	return a
}

// hasOut marks a transition to a state that ends a literal (see next).
const hasOut = 1 << 15

// scan adds to fd the literals that occur in s.
func (a *automaton) scan(s string, fd found) {
	st := 0
	for i := 0; i < len(s); i++ {
		t := a.next[st*a.width+int(a.class[s[i]])]
		st = int(t &^ hasOut)
		if t&hasOut == 0 {
			continue
		}
		for _, id := range a.out[a.outAt[st]:a.outAt[st+1]] {
			fd[id>>6] |= 1 << (id & 63)
		}
	}
}

// oneLine reports whether no match of pattern can contain '\n', and
// whether it has no assertion about the text's own start or end (\A, \z,
// ^ and $ without (?m)), which a line would change: then matching it in
// each line alone finds what matching the whole text finds.
func oneLine(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	var ok func(re *syntax.Regexp) bool
	ok = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpBeginText, syntax.OpEndText, syntax.OpAnyChar:
			return false
		case syntax.OpLiteral:
			return !slices.Contains(re.Rune, '\n')
		case syntax.OpCharClass:
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
					return false
				}
			}
		}
		for _, sub := range re.Sub {
			if !ok(sub) {
				return false
			}
		}
		return true
	}
	return ok(re)
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
