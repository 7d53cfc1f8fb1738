package config

import (
	"strconv"
	"strings"
)

// locate returns the 1-based line on which each key of a TOML document is
// defined, keyed by the same path names used in Problem.Key: segments joined
// by '.', array-of-tables and array elements written with an index
// ("layer[1].on_error", "layer[0].phases[2]"), and segments that are not bare
// keys quoted ("layer[0].config.\"a.b\"").
//
// BurntSushi/toml v1.6.0 keeps key positions private (and, for arrays of
// tables, only the last element's), so this is a small scanner of its own.
// It runs only on documents the real parser has accepted and is used only
// to decorate error messages: on anything it does not understand it skips
// to the next line rather than fail.
func locate(src string) map[string]int {
	l := &locator{src: src, line: 1, pos: map[string]int{}, aot: map[string]int{}}
	defer func() {
		// Positions are a convenience; never let a scanner bug turn a
		// config problem into a crash.
		_ = recover()
	}()
	l.document()
	return l.pos
}

type locator struct {
	src  string
	i    int
	line int
	pos  map[string]int // path -> line of first definition
	aot  map[string]int // path of an array of tables -> number of elements so far
}

func (l *locator) eof() bool { return l.i >= len(l.src) }

func (l *locator) peek() byte {
	if l.i < len(l.src) {
		return l.src[l.i]
	}
	return 0
}

func (l *locator) hasPrefix(s string) bool { return strings.HasPrefix(l.src[l.i:], s) }

func (l *locator) advance() {
	if l.i < len(l.src) {
		if l.src[l.i] == '\n' {
			l.line++
		}
		l.i++
	}
}

func (l *locator) record(path string, line int) {
	if _, ok := l.pos[path]; !ok {
		l.pos[path] = line
	}
}

// skipSpace skips blanks on the current line.
func (l *locator) skipSpace() {
	for !l.eof() && (l.peek() == ' ' || l.peek() == '\t') {
		l.i++
	}
}

// skipComment skips a comment up to (not including) the newline.
func (l *locator) skipComment() {
	if l.peek() == '#' {
		for !l.eof() && l.peek() != '\n' {
			l.i++
		}
	}
}

// skipAll skips blanks, newlines and comments.
func (l *locator) skipAll() {
	for !l.eof() {
		switch l.peek() {
		case ' ', '\t', '\r', '\n':
			l.advance()
		case '#':
			l.skipComment()
		default:
			return
		}
	}
}

// skipLine skips to the start of the next line.
func (l *locator) skipLine() {
	for !l.eof() && l.peek() != '\n' {
		l.advance()
	}
	l.advance()
}

func (l *locator) document() {
	var table string // current table path
	for {
		l.skipAll()
		if l.eof() {
			return
		}
		start := l.i
		if l.peek() == '[' {
			table = l.header()
		} else {
			l.keyValue(table)
		}
		if l.i == start { // no progress: give up on this line
			l.skipLine()
		}
	}
}

// header parses "[a.b]" or "[[a.b]]" and returns the resolved table path.
func (l *locator) header() string {
	line := l.line
	array := l.hasPrefix("[[")
	if array {
		l.i += 2
	} else {
		l.i++
	}
	keys := l.key()
	if len(keys) == 0 {
		l.skipLine()
		return ""
	}
	path := ""
	for n, k := range keys {
		p := joinKey(path, k)
		last := n == len(keys)-1
		switch {
		case last && array:
			idx := l.aot[p]
			l.aot[p] = idx + 1
			l.record(p, line)
			p = indexKey(p, idx)
		case !last:
			if cnt, ok := l.aot[p]; ok && cnt > 0 {
				p = indexKey(p, cnt-1)
			}
		}
		l.record(p, line)
		path = p
	}
	l.skipLine()
	return path
}

// keyValue parses "a.b = value" inside table.
func (l *locator) keyValue(table string) {
	line := l.line
	keys := l.key()
	if len(keys) == 0 {
		l.skipLine()
		return
	}
	path := table
	for _, k := range keys {
		path = joinKey(path, k)
		l.record(path, line)
	}
	l.skipSpace()
	if l.peek() != '=' {
		l.skipLine()
		return
	}
	l.i++
	l.skipSpace()
	l.value(path)
}

// key parses a possibly dotted key and returns its unquoted segments.
func (l *locator) key() []string {
	var segs []string
	for {
		l.skipSpace()
		seg, ok := l.keySegment()
		if !ok {
			return segs
		}
		segs = append(segs, seg)
		l.skipSpace()
		if l.peek() != '.' {
			return segs
		}
		l.i++
	}
}

func (l *locator) keySegment() (string, bool) {
	switch c := l.peek(); {
	case c == '"':
		raw := l.basicString()
		if s, err := strconv.Unquote(raw); err == nil {
			return s, true
		}
		return strings.Trim(raw, `"`), true
	case c == '\'':
		raw := l.literalString()
		return strings.Trim(raw, `'`), true
	case isBare(c):
		start := l.i
		for !l.eof() && isBare(l.peek()) {
			l.i++
		}
		return l.src[start:l.i], true
	}
	return "", false
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips one value, recording the keys of inline tables and the
// elements of arrays under path.
func (l *locator) value(path string) {
	switch {
	case l.hasPrefix(`"""`):
		l.multiline(`"""`, true)
	case l.hasPrefix(`'''`):
		l.multiline(`'''`, false)
	case l.peek() == '"':
		l.basicString()
	case l.peek() == '\'':
		l.literalString()
	case l.peek() == '[':
		l.array(path)
	case l.peek() == '{':
		l.inlineTable(path)
	default:
		for !l.eof() {
			switch l.peek() {
			case ',', ']', '}', '\n', '\r', '#':
				return
			}
			l.i++
		}
	}
}

func (l *locator) array(path string) {
	l.i++ // '['
	for idx := 0; ; idx++ {
		l.skipAll()
		if l.eof() || l.peek() == ']' {
			l.advance()
			return
		}
		elem := indexKey(path, idx)
		l.record(elem, l.line)
		start := l.i
		l.value(elem)
		l.skipAll()
		switch l.peek() {
		case ',':
			l.i++
		case ']':
			l.i++
			return
		default:
			if l.i == start {
				l.advance()
			}
		}
	}
}

func (l *locator) inlineTable(path string) {
	l.i++ // '{'
	for {
		l.skipAll()
		if l.eof() || l.peek() == '}' {
			l.advance()
			return
		}
		line := l.line
		keys := l.key()
		if len(keys) == 0 {
			l.advance()
			continue
		}
		p := path
		for _, k := range keys {
			p = joinKey(p, k)
			l.record(p, line)
		}
		l.skipSpace()
		if l.peek() == '=' {
			l.i++
			l.skipAll()
			l.value(p)
		}
		l.skipAll()
		switch l.peek() {
		case ',':
			l.i++
		case '}':
			l.i++
			return
		}
	}
}

// basicString consumes a "..." string and returns it with its quotes.
func (l *locator) basicString() string {
	start := l.i
	l.i++
	for !l.eof() {
		switch l.peek() {
		case '\\':
			l.i += 2
			continue
		case '"':
			l.i++
			return l.src[start:l.i]
		case '\n':
			return l.src[start:l.i]
		}
		l.i++
	}
	return l.src[start:]
}

// literalString consumes a '...' string and returns it with its quotes.
func (l *locator) literalString() string {
	start := l.i
	l.i++
	for !l.eof() {
		switch l.peek() {
		case '\'':
			l.i++
			return l.src[start:l.i]
		case '\n':
			return l.src[start:l.i]
		}
		l.i++
	}
	return l.src[start:]
}

func (l *locator) multiline(delim string, escapes bool) {
	l.i += len(delim)
	for !l.eof() {
		if escapes && l.peek() == '\\' {
			l.advance()
			l.advance()
			continue
		}
		if l.hasPrefix(delim) {
			l.i += len(delim)
			// Up to two quotes may directly precede the closing delimiter.
			for n := 0; n < 2 && l.peek() == delim[0]; n++ {
				l.i++
			}
			return
		}
		l.advance()
	}
}

// joinKey appends one key segment to a path, quoting it if it is not bare.
func joinKey(path, seg string) string {
	q := seg
	if seg == "" || strings.IndexFunc(seg, func(r rune) bool { return r > 0x7f || !isBare(byte(r)) }) >= 0 {
		q = strconv.Quote(seg)
	}
	if path == "" {
		return q
	}
	return path + "." + q
}

// indexKey appends an array index to a path.
func indexKey(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// parentKey returns the path one level up ("a.b[2]" -> "a.b", "a.b" -> "a"),
// or "" at the top.
func parentKey(path string) string {
	cut := -1
	inQuote := false
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && (c == '.' || c == '['):
			cut = i
		}
	}
	if cut < 0 {
		return ""
	}
	return path[:cut]
}
