package routing

import (
	"github.com/bardoinference/bardo/sdk/jsonscan"
	route "github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Task is the kind of work a plain client's request looks like.
type Task uint8

// Tasks, in the order InferTask tries them.
const (
	TaskChat      Task = iota // conversation, the default
	TaskCode                  // code generation, editing, debugging
	TaskSummarize             // condense given text
	TaskAnalysis              // compare, evaluate, explain why
)

var taskNames = [...]string{"chat", "code", "summarize", "analysis"}

// taskSubsystems are the intents' subsystem names, built once.
var taskSubsystems = [...]string{"task:chat", "task:code", "task:summarize", "task:analysis"}

// String returns the task's name.
func (t Task) String() string {
	if int(t) < len(taskNames) {
		return taskNames[t]
	}
	return "unknown"
}

// taskSpecs are the intents of the inferred tasks (the subsystem table's
// counterpart for plain clients; cost sensitivity comes from the key tier).
// Code is an agent loop over tools that must not fail on a weak model;
// analysis wants reasoning; summaries and chat are cheap work.
var taskSpecs = [...]struct {
	quality route.Quality
	prefer  route.FeatureSet
	latency int64
}{
	TaskChat:      {route.Low, route.Features(route.PromptCaching), 10_000},
	TaskCode:      {route.High, route.Features(route.ToolUse, route.InterleavedThinking, route.PromptCaching), 30_000},
	TaskSummarize: {route.Low, route.Features(route.LongContext, route.PromptCaching), 30_000},
	TaskAnalysis:  {route.High, route.Features(route.Reasoning, route.Citations), 60_000},
}

// TaskIntent returns the intent of an inferred task (subsystem
// "task:<name>") at the given cost sensitivity.
func TaskIntent(t Task, costSensitivity float64) route.Intent {
	s := taskSpecs[t]
	return route.Intent{
		Subsystem:       taskSubsystems[t],
		Quality:         s.quality,
		Prefer:          s.prefer,
		MaxLatencyMs:    s.latency,
		CostSensitivity: costSensitivity,
	}
}

// maxScan bounds how much of the last user message InferTask reads: the
// head of a message says what it is; a pasted file adds nothing but time.
const maxScan = 8 << 10

// codingTools are tool names coding agents send (Claude Code, Cursor,
// Cline, Aider's tool mode): one of them makes the request code work.
var codingTools = [...]string{
	"bash", "edit", "multiedit", "write", "read", "glob", "grep", "notebookedit",
	"edit_file", "read_file", "write_file", "apply_patch", "run_terminal_cmd", "run_command",
	"codebase_search", "grep_search", "file_search", "str_replace_based_edit_tool", "execute_command",
	"replace_in_file", "write_to_file", "list_files", "search_files",
}

// Keyword cues, matched case-insensitively as substrings.
var (
	codeCues = [...]string{"```", "func ", "def ", "class ", "import ", "#include", "const ", "return ",
		"traceback", "stack trace", "exception", "compile", "refactor", "unit test", "debug", "function",
		"regex", "sql", ".go", ".py", ".ts", ".js", ".rs", ".java", ".cpp"}
	summarizeCues = [...]string{"summar", "tl;dr", "tldr", "condense", "key points", "recap", "in a nutshell", "shorten"}
	analysisCues  = [...]string{"analy", "compare", "evaluate", "assess", "trade-off", "tradeoff", "pros and cons",
		"explain why", "root cause", "implications", "risk", "strategy", "should i", "which is better", "critique"}
)

// InferTask classifies a plain client's request by a cheap, documented
// heuristic (no model, no allocation, bounded to maxScan bytes):
//
//   - code: a coding tool is offered (Bash, Edit, read_file, ...), or the
//     last user message has a code cue (a ``` fence, "def ", "traceback",
//     a source file extension, ...);
//   - summarize: it asks to summarize/condense ("summar", "tl;dr", ...);
//   - analysis: it asks to compare, evaluate, assess, explain why, ...;
//   - chat: anything else, and a nil request.
//
// The first that matches wins, in that order: a request to summarize code
// is code work.
func InferTask(req *wire.Request) Task {
	if req == nil {
		return TaskChat
	}
	for i := range req.Tools {
		for _, name := range codingTools {
			if equalFold(req.Tools[i].Name, name) {
				return TaskCode
			}
		}
	}
	text := lastUserText(req)
	switch {
	case containsAny(text, codeCues[:]):
		return TaskCode
	case containsAny(text, summarizeCues[:]):
		return TaskSummarize
	case containsAny(text, analysisCues[:]):
		return TaskAnalysis
	}
	return TaskChat
}

// lastUserText returns the text of the last user message (its first text
// block with content), cut to maxScan bytes.
func lastUserText(req *wire.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := &req.Messages[i]
		if m.Role != "user" {
			continue
		}
		for j := range m.Content {
			if b := &m.Content[j]; b.Type == wire.BlockText && b.Text != "" {
				if len(b.Text) > maxScan {
					return b.Text[:maxScan]
				}
				return b.Text
			}
		}
	}
	return ""
}

// ShapeRequires returns what the request cannot be served without: tools
// (offered, or tool blocks in the history) need tool_use; images need
// vision.
func ShapeRequires(req *wire.Request) route.FeatureSet {
	var fs route.FeatureSet
	if len(req.Tools) > 0 {
		fs = fs.With(route.ToolUse)
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Content {
			switch req.Messages[i].Content[j].Type {
			case wire.BlockImage:
				fs = fs.With(route.Vision)
			case wire.BlockToolUse, wire.BlockToolResult:
				fs = fs.With(route.ToolUse)
			}
		}
	}
	return fs
}

// ShapePrefers returns what the request asks for that a model can provide
// natively but the gateway can also approximate: a response_format JSON
// schema (prompt-guided or via a tool otherwise) prefers
// structured_outputs; an Anthropic thinking or OpenAI reasoning parameter
// prefers a reasoning model.
func ShapePrefers(req *wire.Request) route.FeatureSet {
	var fs route.FeatureSet
	jsonscan.EachMember(req.Extra, func(k, v []byte) {
		switch string(k) {
		case "response_format":
			if containsAny(string(v), []string{`"json_schema"`}) {
				fs = fs.With(route.StructuredOutputs)
			}
		case "thinking", "reasoning_effort", "reasoning":
			fs = fs.With(route.Reasoning)
		}
	})
	return fs
}

// Output-size estimate bounds: max_tokens is an upper bound that agents set
// generously (32k is common), so the estimate takes at most this much.
const maxOutputEstimate = 4096

// EstimateTokens estimates a request's input and output tokens for the
// resolver's cost estimate, at about four bytes of text per token (0
// output when max_tokens is unset: the resolver's default applies).
func EstimateTokens(req *wire.Request) (input, output int64) {
	n := 0
	for i := range req.System {
		n += len(req.System[i].Text)
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Content {
			b := &req.Messages[i].Content[j]
			n += len(b.Text) + len(b.Data)
		}
		n += 16 // role and framing
	}
	for i := range req.Tools {
		n += len(req.Tools[i].Name) + len(req.Tools[i].Description) + len(req.Tools[i].Schema)
	}
	input = int64(n/4) + 1
	if req.Params.Set&wire.HasMaxTokens != 0 && req.Params.MaxTokens > 0 {
		output = min(req.Params.MaxTokens, maxOutputEstimate)
	}
	return input, output
}

// containsAny reports whether s contains one of the lower-case cues,
// ignoring ASCII case, without allocating.
func containsAny(s string, cues []string) bool {
	for _, c := range cues {
		if indexFold(s, c) >= 0 {
			return true
		}
	}
	return false
}

// indexFold is strings.Index for a lower-case ASCII needle, ignoring the
// haystack's ASCII case.
func indexFold(s, needle string) int {
	n := len(needle)
	if n == 0 {
		return 0
	}
	first := needle[0]
	for i := 0; i+n <= len(s); i++ {
		if lower(s[i]) != first {
			continue
		}
		j := 1
		for j < n && lower(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return i
		}
	}
	return -1
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares a name with a lower-case ASCII one, ignoring case.
func equalFold(s, lowerName string) bool {
	if len(s) != len(lowerName) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != lowerName[i] {
			return false
		}
	}
	return true
}
