package main

// What an agent's request says, as opposed to what its harness injected:
// Claude Code wraps its context (CLAUDE.md, todo and plan-mode nudges, the
// date) in <system-reminder> blocks inside the user's message — 6.6 KB
// beside a 38-byte prompt — and Codex sends AGENTS.md and the environment as
// tagged user messages. Relevance is taken on the rest, the words the user
// wrote (README.md, "Agents").

import "strings"

// defaultCoreTools are the tools the agents the gateway is built for cannot
// work without (their file, shell and planning tools), never removed.
// Exact, case-sensitive names: "Read" is Claude Code's, "read" opencode's.
var defaultCoreTools = []string{
	// Claude Code
	"Task", "Agent", "Bash", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write", "TodoWrite",
	// opencode
	"bash", "read", "edit", "write", "glob", "grep", "list", "patch", "todowrite", "todoread", "task",
	// Codex
	"shell", "apply_patch", "update_plan",
}

// defaultStripTags are the tags whose <tag>…</tag> spans an agent harness
// injects into user messages; their text is not what the user wrote.
var defaultStripTags = []string{
	// Claude Code
	"system-reminder", "command-name", "command-message",
	"local-command-stdout", "local-command-stderr", "local-command-caveat",
	"bash-stdout", "bash-stderr", "user-prompt-submit-hook",
	"ide_selection", "ide_opened_file",
	// Codex
	"environment_context", "user_instructions", "INSTRUCTIONS",
	// Cline, Roo Code
	"environment_details",
}

// stripTags and closeTags ("</tag>") are the configured tags (Init).
var stripTags, closeTags []string

func setStripTags(tags []string) {
	stripTags = append(stripTags[:0], tags...)
	closeTags = closeTags[:0]
	for _, t := range tags {
		closeTags = append(closeTags, "</"+t+">")
	}
}

// splitInjected splits s into the text the user wrote — s without the
// <tag …>…</tag> spans of the strip tags — and those spans. An opening tag
// without its closing one runs to the end of s. Without any, user is s.
func splitInjected(s string) (user, injected string) {
	if len(stripTags) == 0 || strings.IndexByte(s, '<') < 0 {
		return s, ""
	}
	var u, in strings.Builder
	i := 0 // start of the user text not yet copied
	for j := 0; j < len(s); {
		k := strings.IndexByte(s[j:], '<')
		if k < 0 {
			break
		}
		j += k
		t, n := openTag(s[j:])
		if n == 0 {
			j++
			continue
		}
		stop := len(s)
		if e := strings.Index(s[j+n:], closeTags[t]); e >= 0 {
			stop = j + n + e + len(closeTags[t])
		}
		u.WriteString(s[i:j])
		u.WriteByte('\n') // the span separated words; keep them apart
		in.WriteString(s[j:stop])
		in.WriteByte('\n')
		i, j = stop, stop
	}
	if in.Len() == 0 {
		return s, ""
	}
	u.WriteString(s[i:])
	return u.String(), in.String()
}

// openTag reports which strip tag s starts with ("<tag>" or "<tag attr…>")
// and the opening tag's length, 0 when none.
func openTag(s string) (int, int) {
	for t, tag := range stripTags {
		if len(s) < len(tag)+2 || s[1:1+len(tag)] != tag {
			continue
		}
		switch s[1+len(tag)] {
		case '>':
			return t, len(tag) + 2
		case ' ', '\t', '\n', '\r':
			if e := strings.IndexByte(s, '>'); e > 0 {
				return t, e + 1
			}
		}
	}
	return 0, 0
}

// identLike reports whether a tool name cannot be an ordinary word, so its
// exact appearance in text names the tool: at least four characters of
// [A-Za-z0-9_-], a letter, and an underscore, hyphen, digit or inner capital
// after a lower-case letter (get_position, WebFetch, mcp__github__get_issue;
// not Read, calculate, HTTP).
func identLike(w string) bool {
	if len(w) < 4 {
		return false
	}
	letter, mark, lower := false, false, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case isLower(c):
			letter, lower = true, true
		case isUpper(c):
			letter = true
			mark = mark || lower // an inner capital after a lower-case letter
		case isDigit(c) || c == '_' || c == '-':
			mark = true
		default:
			return false
		}
	}
	return letter && mark
}

func isIdentByte(c byte) bool {
	return isLower(c) || isUpper(c) || isDigit(c) || c == '_' || c == '-'
}

// appendIdents appends the distinct identifier-like words of s to dst.
func appendIdents(dst []string, s string) []string {
	for i := 0; i < len(s); {
		if !isIdentByte(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isIdentByte(s[j]) {
			j++
		}
		if w := s[i:j]; identLike(w) && !hasString(dst, w) {
			dst = append(dst, strings.Clone(w))
		}
		i = j
	}
	return dst
}

func hasString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
