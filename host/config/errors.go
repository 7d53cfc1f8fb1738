package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration file.
type Problem struct {
	File string // file name as given to Load or Parse
	Line int    // 1-based line, 0 when unknown
	Key  string // dotted key path such as "layer[1].on_error"; "" for syntax errors
	Msg  string
}

// String formats the problem as "file:line: key: message", leaving out the
// line or key when unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// ValidationError is returned by Load and Parse when the file cannot be
// used. It lists every problem found, in line order, not just the first.
// TOML syntax errors are reported the same way, as a single problem with an
// empty Key.
type ValidationError struct {
	Problems []Problem
}

// Error returns one problem per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
