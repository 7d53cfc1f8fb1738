package guardrail

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Context-aware scoring. Agent traffic is full of text that looks like an
// injection to a bag-of-words model and to phrase rules without being one:
// code, CI configs, logs and diffs in tool results, and questions about
// attacks that quote them. Two adjustments, both documented in README.md:
//
//   - the model scores the prose of a text (proseView): fenced code blocks
//     are dropped, and a text that is mostly code, config or log lines
//     keeps only its prose lines (comments and messages, where an injection
//     in a file would be written). The rules still see the whole text.
//   - a rule match inside quotation marks, in a text that discusses attacks
//     ("why does 'ignore previous instructions' work?"), counts half
//     (quoted, discussesAttacks), unless the text also asks to act on it.

// quoted reports whether text[st:en] is quoted: it lies inside a pair of
// quotation marks of the same paragraph that hold little more than it (a
// phrase quoted in a question), not a long string that happens to be
// between quotes (a JSON value, a quoted e-mail).
func quoted(text string, st, en int) bool {
	const slack = 60 // bytes of the quotation that are not the match
	lo := max(0, st-slack)
	if k := strings.LastIndex(text[lo:st], "\n\n"); k >= 0 {
		lo += k + 2
	}
	hi := min(len(text), en+slack)
	if k := strings.Index(text[en:hi], "\n\n"); k >= 0 {
		hi = en + k
	}
	before, after := text[lo:st], text[en:hi]
	fits := func(open, close int) bool { return (st-lo-open)+close <= slack }
	for _, q := range [][2]string{{"“", "”"}, {"«", "»"}, {"「", "」"}, {"‘", "’"}, {`"`, `"`}, {"`", "`"}} {
		o := strings.LastIndex(before, q[0])
		if o < 0 || (q[0] != q[1] && strings.Contains(before[o:], q[1])) {
			continue
		}
		if q[0] == q[1] && strings.Count(text[max(0, st-300):st], q[0])%2 == 0 {
			continue // the quote before closes an earlier quotation
		}
		if q[0] == `"` && jsonValueAt(before, o) {
			continue // a JSON string is data, not a quotation
		}
		if c := strings.Index(after, q[1]); c >= 0 && fits(o, c) {
			return true
		}
	}
	// Single quotes double as apostrophes: an opening one follows a space
	// or bracket, a closing one precedes a non-letter.
	open := -1
	for i := len(before) - 1; i >= 0; i-- {
		if before[i] == '\'' && (i == 0 || strings.IndexByte(" \t\n([:", before[i-1]) >= 0) {
			open = i
			break
		}
	}
	if open < 0 {
		return false
	}
	for i := 0; i < len(after); i++ {
		if after[i] == '\'' {
			next, _ := utf8.DecodeRuneInString(after[i+1:])
			if (i+1 == len(after) || !unicode.IsLetter(next)) && fits(open, i) {
				return true
			}
		}
	}
	return false
}

// attackTopics are words of texts that talk about attacks rather than make
// one; followThrough are the words of one that quotes an attack and then
// asks to carry it out.
var (
	attackTopics = []string{"injection", "jailbreak", "attack", "red team", "red-team", "adversarial", "security",
		"defend", "defence", "defense", "mitigat", "guardrail", "classifier", "payload", "owasp", "malicious",
		"vulnerab", "exploit", "pentest", "phishing", "scam", "malware", "threat", "hacker",
		"why does", "what does", "how do", "how does", "what is", "explain", "is it safe", "someone could",
		"could write", "might write", "how should", "what should", "should it", "filter", "detect", "regex",
		"for example", "an example", "examples", "prevent", "protect"}
	followThrough = []string{"then do it", "and do it", "now do it", "then follow", "follow it", "obey it",
		"execute it", "do what it says", "comply with it", "act on it", "then do that", "and then do"}
)

// discussesAttacks reports whether folded (lowercased) text talks about
// attacks and does not ask to carry one out.
func discussesAttacks(folded string) bool {
	for _, w := range followThrough {
		if strings.Contains(folded, w) {
			return false
		}
	}
	for _, w := range attackTopics {
		if strings.Contains(folded, w) {
			return true
		}
	}
	return false
}

// layout is what proseView found in a text.
type layout struct {
	// view is the text the model scores: without fenced code blocks and
	// line-number prefixes and, when code is set, only the prose lines.
	view string
	// code is set when most lines are code, config, log or diff lines.
	code bool
	// codeLines are the byte ranges of text's code lines (when code is
	// set) and of its fenced blocks: a rule match starting there counts
	// half (see ScoreRules).
	codeLines [][2]int
}

// proseView splits text into prose and code lines (see layout).
func proseView(text string) layout {
	if !strings.Contains(text, "\n") {
		return layout{view: text}
	}
	var kept, proseLines []string
	var codeLines, fenced [][2]int
	prose, other := 0, 0
	inFence := false
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		ln := text[pos:end]
		span := [2]int{pos, end}
		pos = end + 1
		t := strings.TrimSpace(stripLineNumber(ln))
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence {
			fenced = append(fenced, span)
			continue
		}
		if t == "" {
			continue
		}
		kept = append(kept, t)
		switch p, kind := proseOf(t); kind {
		case lineProse:
			prose++
			proseLines = append(proseLines, p)
		case lineCode:
			other++
			codeLines = append(codeLines, span)
		}
	}
	if prose >= 2*other {
		return layout{view: strings.Join(kept, "\n"), codeLines: fenced}
	}
	return layout{view: strings.Join(proseLines, "\n"), code: true, codeLines: append(codeLines, fenced...)}
}

// jsonValueAt reports whether the quote at s[o] opens a JSON value or
// array element (a ':' , ',' or '[' before it).
func jsonValueAt(s string, o int) bool {
	i := o - 1
	for i >= 0 && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i--
	}
	return i >= 0 && (s[i] == ':' || s[i] == '[' || s[i] == ',')
}

// inRanges reports whether pos lies in one of the ranges.
func inRanges(pos int, rs [][2]int) bool {
	for _, r := range rs {
		if r[0] <= pos && pos < r[1] {
			return true
		}
	}
	return false
}

// stripLineNumber removes the line numbers agents' file readers prefix
// ("    12→", "  12\t", cat -n).
func stripLineNumber(ln string) string {
	i := 0
	for i < len(ln) && ln[i] == ' ' {
		i++
	}
	j := i
	for j < len(ln) && '0' <= ln[j] && ln[j] <= '9' {
		j++
	}
	if j == i {
		return ln
	}
	if strings.HasPrefix(ln[j:], "→") {
		return ln[j+len("→"):]
	}
	if j < len(ln) && ln[j] == '\t' {
		return ln[j+1:]
	}
	return ln
}

// Kinds of line.
const (
	lineShort = iota // a few plain words ("Thanks for reading."): counts for neither
	lineProse
	lineCode // code, config, log or diff syntax
)

// proseOf says what kind of line t is, and returns it without comment
// markers, list bullets, diff signs or a leading "key:" (YAML, logs).
func proseOf(t string) (string, int) {
	for _, p := range []string{"//", "/*", "*/", "<!--", "-->", "#", "--", ";", "*", ">", "+", "-", "•"} {
		t = strings.TrimSpace(strings.TrimPrefix(t, p))
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, "#"))
	keyed := false
	if k := strings.Index(t, ": "); k > 0 && k < 40 && !strings.ContainsAny(t[:k], " \t") {
		t, keyed = strings.TrimSpace(t[k+2:]), true
	}
	t = strings.Trim(t, `"'`)
	words, letters, digits, symbols, total := 0, 0, 0, 0, 0
	inWord := false
	for _, r := range t {
		if r == ' ' || r == '\t' {
			inWord = false
			continue
		}
		total++
		switch {
		case unicode.IsLetter(r):
			letters++
			if !inWord {
				words++
				inWord = true
			}
			continue
		case unicode.IsDigit(r):
			digits++
		case strings.ContainsRune("{}()[]=<>;$|&\\_/@", r):
			symbols++
		}
		if r != '\'' && r != '-' {
			inWord = false
		}
	}
	// Letters and digits (numbers, amounts, addresses) make up prose;
	// brackets, operators and path separators make up code.
	plain := total > 0 && (letters+digits)*100 >= total*85 && letters*2 >= total && symbols*100 <= total*5
	switch {
	case plain && words >= 4:
		return t, lineProse
	case plain && !keyed:
		return t, lineShort
	}
	return "", lineCode
}

// modelAloneCap bounds the model's score when no rule fired and the prose
// has none of the attack vocabulary: below the default threshold, so the
// model alone never flags. Measured on the agent traffic set (README.md):
// alone it flagged agents' reminders, READMEs and code comments at
// 0.8–0.99, while every attack in the set that it caught also used words
// the vocabulary lists.
const modelAloneCap = 0.45

// attackVocabulary is the wording injections are made of — addressing the
// model's instructions, rules or prompt, asking it to pretend, override or
// forget, to answer regardless. Seen in the prose (not in code), it lets the
// model's score count in full: the model then corroborates, and decides,
// with words that benign instructions rarely use.
var attackVocabulary = regexp.MustCompile(`(?i)\b(?:(?:your|ur)[ \t]+(?:instructions|rules|prompt|guidelines|directives|programming|restrictions|filters|guardrails|polic(?:y|ies)|configuration|creators?|developers?|operator|system message)` +
	`|(?:previous|prior|earlier|original|initial|hidden|secret|above)[ \t]+(?:instructions|prompt|directives)|(?:initial|hidden|secret)[ \t]+message` +
	`|regardless of|pretend|unfiltered|uncensored|unrestricted|jailbroken|verbatim|word for word|respond only|reply only|only respond|only reply|nothing else` +
	`|pay no attention|don'?t apply|do not apply|new persona|roleplay|role-play|in character|disregard|system message|no rules|no restrictions|no limits)\b`)

// vocabularyFilter is attackVocabulary's prefilter (prefilter.go).
var vocabularyFilter filter

// usesAttackVocabulary reports whether prose uses the attack vocabulary;
// fd is the prefilter literals in prose when known (nil: scanned here).
func usesAttackVocabulary(prose string, fd found) bool {
	if fd == nil {
		fd = scanText(prose)
	}
	return vocabularyFilter.pass(fd) && attackVocabulary.MatchString(prose)
}

// corroborated reports whether the model's score may count in full: the
// rules that fired outside quotation marks reach corroborationFloor (one
// weak rule such as "send … to <e-mail>", which users and documents say
// legitimately, is not enough), or the prose uses the attack vocabulary
// and is not a discussion quoting an attack (a quoted hit).
// The vocabulary is asked for last: it costs a scan of the prose.
func corroborated(hits []Hit, vocabulary func() bool) bool {
	quotedHit := false
	keep := float32(1)
	for _, h := range hits {
		if h.Quoted {
			quotedHit = true
			continue
		}
		keep *= 1 - h.Score
	}
	return 1-keep >= corroborationFloor || !quotedHit && vocabulary()
}

// corroborationFloor is the unquoted rule score at which the model's score
// counts in full.
const corroborationFloor = 0.4
