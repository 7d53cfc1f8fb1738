package main

import (
	"strings"
	"unicode"
)

// The guard. Within one context, a stored answer may serve a new question
// only when the two questions are the same question. An embedding cannot
// tell: averaged word vectors of questions that differ only in "-p 8080:80"
// and "-p 80:8080", "pytest" and "unittest", "$?" and "$!" score 1.0000
// (and a small transformer's pooled output is dominated by the shared
// words too). So the guard decides, on the questions' words:
//
//   - strict (the default): both questions normalise to the same sequence
//     of content words. Normalising forgets what never changes an answer —
//     case, punctuation, backticks, contractions ("what's" = "what is"),
//     polite and framing words ("please", "can you", "explain", "what is"),
//     plural endings, a fronted phrase ("In Go, how do I…" = "How do I… in
//     Go"), a few synonyms (delete/remove, compose/write, deposit/supply) —
//     and keeps everything else in order, so a number, a port mapping, an
//     identifier, an operator, a negation or a swapped pair of names blocks
//     the hit.
//   - rewording (allow_rewording, for a sentence encoder that can tell
//     paraphrases apart; never with tools): the content words may differ,
//     but the salient ones — numbers, symbols and code, names, negations,
//     opposites, units, question words — must be the same, in the same
//     order.

// qtoken is one normalised word of a question.
type qtoken struct {
	w       string
	salient bool
}

// fillers are dropped: words that frame a question without changing what
// it asks. Tense ("was", "did"), person ("my", "your") and modality
// ("should") are kept: they change answers.
var fillers = set("a", "an", "the", "please", "pls", "plz", "kindly", "can", "could", "would",
	"do", "does", "is", "are", "am", "be", "what", "explain", "describe", "define", "definition", "tell", "about",
	"mean", "meaning", "means", "overview", "give", "now", "just", "question", "also", "really", "actually",
	"basically", "us", "let")

// greetings are dropped only before the first content word ("Hi! Thanks,
// now …"): "print hello" is not "print".
var thanks = set("thanks", "thank", "thx")

var greetings = set("hi", "hey", "hello", "thanks", "thank", "thx", "ok", "okay", "so", "well", "hmm", "yo")

// framing are the pronouns that only frame a request after certain words
// ("can you", "tell me", "how do I", "thank you"); anywhere else they are
// what is asked about ("who are you?" is not "who am I?").
var framing = map[string]map[string]bool{
	"you": set("can", "could", "would", "will", "do", "did", "thank"),
	"u":   set("can", "could", "would", "will", "do", "did", "thank"),
	"me":  set("tell", "give", "show", "let", "send"),
	"i":   set("do", "can", "could", "should", "would", "may", "might", "shall", "will", "how"),
}

// synonyms map a word to the one it stands for in every context this
// cache sees (after plural endings are removed).
var synonyms = map[string]string{
	"delete": "remove", "erase": "remove", "display": "show", "view": "show", "see": "show",
	"biggest": "largest", "big": "large", "compose": "write", "kid": "child", "begin": "start",
	"deposit": "supply", "into": "to", "onto": "to", "find": "get", "using": "with",
}

// isWords take "'s" as "is" ("what's", "it's"); elsewhere it is a possessive.
var isWords = set("what", "that", "it", "there", "here", "who", "where", "how", "when", "why", "which", "he", "she")

// joined are contractions written without the apostrophe.
var joined = map[string][]string{
	"whats": {"what", "is"}, "dont": {"do", "not"}, "doesnt": {"does", "not"}, "didnt": {"did", "not"},
	"isnt": {"is", "not"}, "cant": {"can", "not"}, "cannot": {"can", "not"}, "arent": {"are", "not"},
	"shouldnt": {"should", "not"}, "wouldnt": {"would", "not"}, "couldnt": {"could", "not"},
	"hasnt": {"has", "not"}, "havent": {"have", "not"}, "wasnt": {"was", "not"}, "werent": {"were", "not"},
}

// frontable are the prepositions of a phrase a question may start with and
// end with alike ("In Go, how do I…?" = "How do I… in Go?").
var frontable = set("in", "on", "with", "using", "for", "at", "inside", "within", "via")

// Salient word classes (rewording mode): words that flip an answer when
// they differ, although their vectors are close.
var (
	negations = set("not", "no", "never", "without", "nor", "none", "nothing", "neither", "non")
	questions = set("how", "why", "when", "where", "who", "whom", "whose", "which")
	units     = set("second", "minute", "hour", "day", "week", "month", "year", "mile", "kilometer", "km", "meter",
		"feet", "foot", "yard", "inche", "inch", "pound", "ounce", "gram", "kg", "liter", "gallon", "quart", "gwei",
		"wei", "bp", "percent", "celsius", "fahrenheit", "kelvin", "byte", "kb", "mb", "gb", "tb", "millisecond",
		"microsecond", "nanosecond", "euro", "dollar", "cent")
	opposites = set("enable", "disable", "enabled", "disabled", "buy", "sell", "long", "short", "withdraw", "supply",
		"borrow", "lend", "stake", "unstake", "increase", "decrease", "add", "remove", "open", "close", "closed",
		"above", "below", "allow", "deny", "lock", "unlock", "true", "false", "bullish", "bearish", "max", "min",
		"maximum", "minimum", "higher", "lower", "before", "after", "mint", "burn", "wrap", "unwrap", "approve",
		"revoke", "accept", "reject", "start", "stop", "include", "exclude", "encrypt", "decrypt", "import",
		"export", "upgrade", "downgrade", "yes", "input", "output", "rise", "drop", "fall", "up", "down", "gain",
		"loss", "profit", "best", "worst", "first", "last", "read", "write", "push", "pull", "encode", "decode",
		"serialize", "deserialize", "upper", "left", "right", "in", "out", "on", "off", "pro", "con",
		"advantage", "disadvantage", "today", "yesterday", "tomorrow", "hot", "cold", "win", "lose", "less",
		"more", "greater", "smaller", "faster", "slower", "safe", "unsafe", "all", "half", "none", "any",
		"connect", "disconnect", "upload", "download", "install", "uninstall", "mount", "unmount", "hide",
		"unhide", "show", "pin", "unpin", "block", "unblock", "follow", "unfollow", "subscribe", "unsubscribe",
		"stage", "unstage", "zip", "unzip", "compress", "decompress", "archive", "unarchive", "freeze", "thaw")
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// normalize turns a question into its content words, in order.
func normalize(text string) []qtoken {
	text = strings.Map(func(r rune) rune {
		switch r {
		case '`', '\u201c', '\u201d':
			return '"'
		case '\u2018', '\u2019':
			return '\''
		}
		return r
	}, text)
	raw := unfront(strings.Fields(text))
	var out, all []qtoken
	last := ""      // the previous word, fillers included
	start := true   // capitals at a sentence start say nothing
	quoted := false // inside "…" or `…`: no word is framing
	closing := false
	for i, w := range raw {
		opens := strings.HasPrefix(w, `"`)
		quoted = quoted || opens
		literal := quoted
		if strings.HasSuffix(strings.TrimRight(w, ".,!?;:)"), `"`) && (!opens || len(strings.Trim(w, `".,!?;:)`)) > 0) {
			quoted = false
		}
		core := trimToken(w)
		if !hasAlnum(core) {
			// Punctuation ends a sentence; a symbol mid-text is an
			// operator ("what does ? do", "$?", "&&").
			if !prose(core, i == len(raw)-1) {
				out = append(out, qtoken{core, true})
			}
			start = start || strings.ContainsAny(core, ".?!")
			continue
		}
		salient := hasDigit(core) || hasSymbol(core) || strings.HasPrefix(core, "-") || isTicker(core) ||
			(!start && hasUpper(core))
		for _, lw := range expandContraction(strings.ToLower(core)) {
			all = append(all, qtoken{lw, true})
			prev := last
			last = lw
			if !literal && (fillers[lw] || framing[lw][prev] || (len(out) == 0 && greetings[lw])) {
				continue
			}
			lw = stem(lw)
			if s, ok := synonyms[lw]; ok {
				lw = s
			}
			out = append(out, qtoken{lw, literal || salient || negations[lw] || questions[lw] || units[lw] || opposites[lw]})
			closing = closing || !literal && thanks[lw]
		}
		start = strings.HasSuffix(w, ".") || strings.HasSuffix(w, "?") || strings.HasSuffix(w, "!") || strings.HasSuffix(w, ":")
	}
	// A closing "thanks" goes too.
	for closing && len(out) > 1 && thanks[out[len(out)-1].w] {
		out = out[:len(out)-1]
	}
	out = canonical(out)
	if len(out) == 0 {
		// Nothing but framing ("hi", "thanks!", "can you?"): every word
		// counts, or "hello" and "thank you" would be one question.
		return all
	}
	return out
}

// canonical rewrites the few question shapes that say one thing two ways:
// "way to X" and "how to X" are "how X"; a leading "of" (left by "what is
// the meaning of") goes; "difference between A and B" is the difference
// between B and A.
func canonical(ts []qtoken) []qtoken {
	if len(ts) > 1 && ts[0].w == "way" && ts[1].w == "to" {
		ts = append([]qtoken{{"how", true}}, ts[2:]...)
	}
	if len(ts) > 1 && ts[0].w == "how" && ts[1].w == "to" {
		ts = append(ts[:1:1], ts[2:]...)
	}
	if len(ts) > 1 && ts[0].w == "of" {
		ts = ts[1:]
	}
	for i := 1; i+3 < len(ts); i++ {
		if ts[i-1].w == "difference" && ts[i].w == "between" && ts[i+2].w == "and" && ts[i+1].w > ts[i+3].w {
			ts[i+1], ts[i+3] = ts[i+3], ts[i+1]
		}
	}
	return ts
}

// unfront moves a fronted phrase ("In Go," "On Base," "For a beginner,")
// to the end of the question.
func unfront(ws []string) []string {
	if len(ws) < 3 || !frontable[strings.ToLower(strings.Trim(ws[0], `("'`))] {
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

// trimToken strips the quotes and sentence punctuation around a word, but
// never a symbol that is all there is of it ("$?" stays "$?"; only double
// quotes, which backticks became, go from around it).
func trimToken(w string) string {
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

// prose reports a token of sentence punctuation only: commas, dashes and
// ellipses anywhere, and at the end of the text also question and
// exclamation marks, quotes and emoticons ("??", "!", ":)").
func prose(w string, last bool) bool {
	chars := ",;.-–—…"
	if last {
		chars += `?!:()"'`
	}
	for _, r := range w {
		if !strings.ContainsRune(chars, r) {
			return false
		}
	}
	return true
}

// expandContraction splits "doesn't", "what's", "whats", "cannot" into
// their words; a possessive "'s" is dropped.
func expandContraction(w string) []string {
	if ws, ok := joined[w]; ok {
		return ws
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
		return []string{base, "not"}
	}
	for suf, full := range map[string]string{"'s": "is", "'re": "are", "'m": "am", "'ll": "will", "'ve": "have", "'d": "would"} {
		if base, ok := strings.CutSuffix(w, suf); ok && base != "" {
			if suf == "'s" && !isWords[base] {
				return []string{base}
			}
			return []string{base, full}
		}
	}
	return []string{w}
}

// unstemmed end in "s" without being plurals.
var unstemmed = set("news", "series", "species", "physics", "mathematics", "politics", "economics", "always",
	"perhaps", "minus", "plus", "yes", "this", "has", "was", "does", "its", "his", "hers", "ours", "yours",
	"theirs", "whereas", "towards", "besides", "sometimes", "windows", "aws", "kubernetes", "less", "unless")

// stem removes a plural or third-person "s" from a plain word.
func stem(w string) string {
	if len(w) <= 3 || !isLetters(w) || unstemmed[w] {
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

// sameQuestion is the strict guard: the same content words in the same
// order.
func sameQuestion(a, b []qtoken) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].w != b[i].w {
			return false
		}
	}
	return true
}

// sameSalient is the rewording guard: the same salient words in the same
// order (other content words may differ).
func sameSalient(a, b []qtoken) bool {
	i, j := 0, 0
	for {
		for i < len(a) && !a[i].salient {
			i++
		}
		for j < len(b) && !b[j].salient {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i].w != b[j].w {
			return false
		}
		i++
		j++
	}
}

// contentText is what the cache embeds: the content words joined, so that
// re-asks of one question embed to one vector.
func contentText(ts []qtoken) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.w)
	}
	return b.String()
}

// isTicker reports an all-capitals word of two or more letters (ETH, USDC,
// BTC): a name even at the start of a sentence.
func isTicker(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			n++
		case c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return n >= 2
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func hasUpper(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

func hasAlnum(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// hasSymbol reports a character that marks code: anything but letters,
// digits, a hyphen and an apostrophe ("os.path.join", "8080:80", "*int").
func hasSymbol(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '\'' {
			return true
		}
	}
	return false
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
