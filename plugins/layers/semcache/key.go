package main

import (
	"sort"
	"strings"

	"github.com/bardoinference/bardo/sdk/wire"
)

// cacheText is the text the cache embeds, as the spec builds it: the system
// prompt, a separator, and the last two user messages (most recent first).
// Only text blocks count; tool results are never part of a semantic key (a
// request whose last turn is a tool result is not looked up at all).
func cacheText(r *wire.Request) string {
	var b strings.Builder
	for _, bl := range r.System {
		if bl.Type == wire.BlockText {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		}
	}
	b.WriteString("---\n")
	n := 0
	for i := len(r.Messages) - 1; i >= 0 && n < 2; i-- {
		m := &r.Messages[i]
		if m.Role != "user" {
			continue
		}
		wrote := false
		for _, bl := range m.Content {
			if bl.Type == wire.BlockText {
				b.WriteString(bl.Text)
				wrote = true
			}
		}
		if wrote {
			b.WriteByte('\n')
			n++
		}
	}
	return b.String()
}

// lookupable reports whether a request may be answered from the semantic
// cache: it has a user question at its end, not a tool result an agent loop
// is waiting on.
func lookupable(r *wire.Request) bool {
	if len(r.Messages) == 0 {
		return false
	}
	last := &r.Messages[len(r.Messages)-1]
	if last.Role != "user" {
		return false
	}
	hasText := false
	for _, bl := range last.Content {
		switch bl.Type {
		case wire.BlockToolResult:
			return false
		case wire.BlockText:
			hasText = hasText || strings.TrimSpace(bl.Text) != ""
		}
	}
	return hasText
}

// The guard. Embeddings of "supply USDC to Morpho" and "supply USDC to Aave"
// are nearly identical — an average of word vectors, or a transformer's
// pooled output, is dominated by the shared words — yet one answer is wrong
// for the other. So a hit needs, besides the similarity, agreement on the
// words that flip an answer when they differ ("salient" words):
//
//   - numbers (amounts, percentages, leverage, chain ids): "100" vs "1000";
//   - capitalised words and tickers past a sentence's first word: protocols,
//     tokens, chains, people ("Morpho" vs "Aave", "Base" vs "Arbitrum");
//   - 0x addresses and hashes;
//   - negations ("not", "never", "don't", …);
//   - the members of opposite pairs ("enable"/"disable", "buy"/"sell",
//     "long"/"short", …), because their vectors are close by construction.
//
// The check is symmetric and case-blind: every word salient in either text
// must be present in both or in neither ("What is the capital of France?"
// agrees with "what's the capital city of france?": "france" is in both).
// It makes the cache stricter, never looser: texts that agree still need the
// similarity threshold.

var negations = map[string]bool{
	"not": true, "no": true, "never": true, "don't": true, "dont": true, "doesn't": true, "isn't": true,
	"aren't": true, "won't": true, "can't": true, "cannot": true, "without": true, "shouldn't": true,
	"didn't": true, "wasn't": true, "nor": true, "none": true,
}

// opposites are words whose antonym is close in embedding space; a word
// listed alone ("out", "underperformed") flips meaning against its absence.
var opposites = map[string]bool{}

// units change an answer's scale: days vs weeks, miles vs kilometers.
var units = map[string]bool{}

func init() {
	for _, pair := range [][]string{
		{"enable", "disable"}, {"enabled", "disabled"}, {"buy", "sell"}, {"long", "short"},
		{"deposit", "withdraw"}, {"supply", "borrow"}, {"lend", "borrow"}, {"stake", "unstake"},
		{"increase", "decrease"}, {"add", "remove"}, {"open", "close"}, {"above", "below"},
		{"allow", "deny"}, {"lock", "unlock"}, {"true", "false"}, {"out"},
		{"bullish", "bearish"}, {"max", "min"}, {"maximum", "minimum"}, {"higher", "lower"},
		{"before", "after"}, {"mint", "burn"}, {"wrap", "unwrap"},
		{"approve", "revoke"}, {"accept", "reject"}, {"start", "stop"}, {"include", "exclude"},
		{"encrypt", "decrypt"}, {"import", "export"}, {"upgrade", "downgrade"}, {"bridge", "swap"},
		{"yes", "no"}, {"input", "output"},
		{"rise", "drop", "fall", "rose", "fell", "dropped", "risen", "fallen", "pump", "dump"},
		{"gain", "loss", "profit", "gains", "losses"},
		{"outperform", "underperform", "outperformed", "underperformed", "outperforming", "underperforming"},
		{"boiling", "freezing"}, {"keep", "discard"}, {"count", "delete", "insert", "update", "select"},
		{"ascending", "descending"}, {"time", "space"}, {"best", "worst"}, {"cheapest", "priciest", "expensive"},
		{"fastest", "slowest"}, {"oldest", "newest"}, {"first", "last"}, {"inflow", "outflow", "inflows", "outflows"},
		{"call", "put"}, {"maker", "taker"}, {"bid", "ask"}, {"sender", "receiver"}, {"source", "destination"},
		{"pass", "fail"}, {"valid", "invalid"}, {"success", "failure"}, {"public", "private"},
		{"read", "write"}, {"push", "pull"}, {"merge", "rebase"}, {"encode", "decode"},
		{"serialize", "deserialize"}, {"upper", "lower"}, {"left", "right"},
		{"today", "yesterday", "tomorrow"}, {"morning", "evening", "night", "afternoon"},
		{"hot", "cold"}, {"win", "lose"},
	} {
		for _, w := range pair {
			opposites[w] = true
		}
	}
	for _, u := range []string{"second", "seconds", "minute", "minutes", "hour", "hours", "day", "days",
		"week", "weeks", "month", "months", "year", "years", "mile", "miles", "kilometer", "kilometers",
		"km", "meter", "meters", "feet", "foot", "pound", "pounds", "kg", "gram", "grams", "gwei", "wei",
		"bps", "percent", "celsius", "fahrenheit", "bytes", "kb", "mb", "gb"} {
		units[u] = true
	}
}

// directions mark the role of the word after them: "from Aave to Morpho"
// and "from Morpho to Aave" hold the same words, but not the same request.
var directions = map[string]string{"from": "from", "to": "to", "into": "to", "onto": "to", "via": "via"}

// fillers are skipped between a direction and its object ("to an integer").
var fillers = map[string]bool{"a": true, "an": true, "the": true, "my": true, "your": true, "our": true, "their": true, "its": true}

// wordSet is a text's lower-cased words and the subset that is salient.
type wordSet struct {
	words   map[string]bool
	salient []string
}

// words splits text into its lower-cased words and its salient ones. The
// role of a word after a direction ("from", "to", "into") is salient too,
// as "to:morpho".
func words(text string) wordSet {
	ws := wordSet{words: map[string]bool{}}
	start := true // at a sentence start, capitalisation means nothing
	role := ""    // the direction the next content word is the object of
	for _, w := range strings.Fields(text) {
		core := strings.TrimFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '\'' || r == '.' || r == '%' || r >= 0x80)
		})
		core = strings.Trim(core, ".'")
		lower := strings.ToLower(core)
		if core != "" {
			ws.words[lower] = true
			if hasDigit(core) || negations[lower] || opposites[lower] || units[lower] ||
				(!start && hasUpper(core)) || isTicker(core) {
				ws.salient = append(ws.salient, lower)
			}
			switch d, isDir := directions[lower]; {
			case isDir:
				role = d
			case role != "" && !fillers[lower]:
				tagged := role + ":" + lower
				ws.words[tagged] = true
				ws.salient = append(ws.salient, tagged)
				role = ""
			}
		}
		start = strings.HasSuffix(w, ".") || strings.HasSuffix(w, "?") || strings.HasSuffix(w, "!") ||
			strings.HasSuffix(w, ":") || w == "---"
		if start || strings.HasSuffix(w, ",") {
			role = ""
		}
	}
	sort.Strings(ws.salient)
	ws.salient = dedupe(ws.salient)
	return ws
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

// agree reports whether a and b agree on every salient word of either.
func agree(a, b wordSet) bool {
	for _, w := range a.salient {
		if !b.words[w] {
			return false
		}
	}
	for _, w := range b.salient {
		if !a.words[w] {
			return false
		}
	}
	return true
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, w := range s {
		if i == 0 || w != s[i-1] {
			out = append(out, w)
		}
	}
	return out
}

// toolNames is the request's tool set, sorted: an answer given with one set
// of tools is not an answer for another.
func toolNames(r *wire.Request) string {
	names := make([]string, len(r.Tools))
	for i := range r.Tools {
		names[i] = r.Tools[i].Name
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// private reports whether text holds what tiered isolation keeps per agent:
// a wallet address or hash (0x + 40 or 64 hex digits), a masked personal
// value (L7's placeholders such as [EMAIL_1]), or a strategy marker.
func private(text string, strategyMarkers []string) bool {
	for i := 0; i+2 < len(text); i++ {
		if text[i] == '0' && (text[i+1] == 'x' || text[i+1] == 'X') {
			n := 0
			for j := i + 2; j < len(text) && isHex(text[j]); j++ {
				n++
			}
			if n >= 40 {
				return true
			}
		}
	}
	if hasPlaceholder(text) {
		return true
	}
	lower := strings.ToLower(text)
	for _, m := range strategyMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// hasPlaceholder finds "[TAG_N]" with TAG in capitals and N digits.
func hasPlaceholder(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		j := i + 1
		if j >= len(s) || s[j] < 'A' || s[j] > 'Z' {
			continue
		}
		for j < len(s) && (s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_') {
			j++
		}
		if j >= len(s) || s[j-1] != '_' {
			continue
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j && k < len(s) && s[k] == ']' {
			return true
		}
	}
	return false
}
