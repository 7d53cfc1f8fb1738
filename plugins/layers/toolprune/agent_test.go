//go:build !wasip1

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

func TestSplitInjected(t *testing.T) {
	setStripTags(defaultStripTags)
	for _, tc := range []struct{ in, user, injected string }{
		{"plain text, no tags", "plain text, no tags", ""},
		{"a < b and <b>bold</b>", "a < b and <b>bold</b>", ""},
		{"<system-reminder>\nuse WebSearch\n</system-reminder>fix it", "\nfix it", "<system-reminder>\nuse WebSearch\n</system-reminder>\n"},
		{"before<system-reminder>x</system-reminder>middle<system-reminder>y</system-reminder>after",
			"before\nmiddle\nafter", "<system-reminder>x</system-reminder>\n<system-reminder>y</system-reminder>\n"},
		// Attributes, and an unclosed tag running to the end.
		{`ask <ide_selection path="a.go">func f()</ide_selection> now <system-reminder>never closed`,
			"ask \n now \n", `<ide_selection path="a.go">func f()</ide_selection>` + "\n<system-reminder>never closed\n"},
		// A tag name that only starts like a strip tag is the user's.
		{"<system-reminders>mine</system-reminders>", "<system-reminders>mine</system-reminders>", ""},
		// Codex's instructions and environment.
		{"<user_instructions>\nAGENTS.md\n</user_instructions>", "\n", "<user_instructions>\nAGENTS.md\n</user_instructions>\n"},
		{"<command-name>/init</command-name>\n<command-message>init is analyzing</command-message>\n<command-args>the web module</command-args>",
			"\n\n\n\n<command-args>the web module</command-args>", "<command-name>/init</command-name>\n<command-message>init is analyzing</command-message>\n"},
	} {
		user, injected := splitInjected(tc.in)
		if user != tc.user || injected != tc.injected {
			t.Errorf("%q:\nuser %q, want %q\ninjected %q, want %q", tc.in, user, tc.user, injected, tc.injected)
		}
	}
	setStripTags(nil)
	if u, in := splitInjected("<system-reminder>x</system-reminder>"); u != "<system-reminder>x</system-reminder>" || in != "" {
		t.Fatalf("strip_tags = []: %q %q", u, in)
	}
	setStripTags(defaultStripTags)
}

func TestIdentLike(t *testing.T) {
	for name, want := range map[string]bool{
		"get_position": true, "WebFetch": true, "mcp__github__create_issue": true, "resolve-library-id": true,
		"v3Pool": true, "erc20": true, "TodoWrite": true,
		"Read": false, "Bash": false, "calculate": false, "HTTP": false, "README": false, "a_b": false, "1234": false,
		"with space": false, "get.position": false,
	} {
		if identLike(name) != want {
			t.Errorf("identLike(%q) = %v", name, !want)
		}
	}
	got := appendIdents(nil, "Use the `WebFetch` tool, then WebFetch again; (get_position) and Read.")
	if !slices.Equal(got, []string{"WebFetch", "get_position"}) {
		t.Fatalf("appendIdents: %v", got)
	}
}

// claudeCodeFirst is Claude Code's first request of a session for prompt:
// its system prompt, 24 tools, and the prompt between the CLAUDE.md context
// and the todo reminder, as the client sends them.
func claudeCodeFirst(t *testing.T, prompt string) wire.LayerRequest {
	s := loadSession(t)
	first := s.Steps[0]
	content := []wire.Block{
		{Type: wire.BlockText, Text: first.RemindersBefore[0]},
		{Type: wire.BlockText, Text: prompt},
		{Type: wire.BlockText, Text: first.RemindersAfter[0]},
	}
	return wire.LayerRequest{
		Meta: wire.Meta{RequestID: "r", Tenant: "t", Dialect: wire.DialectAnthropic, Model: "claude-sonnet-4-5"},
		Request: wire.Request{
			Model:    "claude-sonnet-4-5",
			System:   []wire.Block{{Type: wire.BlockText, Text: s.System}},
			Tools:    claudeCodeTools(t),
			Messages: []wire.Message{{Role: "user", Content: content}},
		},
	}
}

// "Edit the file config.toml and write the changes" keeps Edit and Write:
// as core tools, and on relevance alone once the reminders (4 KB beside a
// 48-byte prompt) no longer count.
func TestClaudeCodeEditKeepsEditAndWrite(t *testing.T) {
	const prompt = "Edit the file config.toml and write the changes"
	req := claudeCodeFirst(t, prompt)
	for _, config := range []string{
		`{}`,
		`{"core_tools": [], "keep_system_named": false}`, // relevance alone
		`{"core_tools": [], "keep_system_named": false, "stability": "turn"}`,
	} {
		h := plugintest.New(t, config)
		res := h.OnRequest(req)
		kept := names(res.Request.Tools)
		if res.Patched != wire.PartTools {
			t.Fatalf("%s: not pruned (%s)", config, header(res.Headers, HeaderReason))
		}
		for _, w := range []string{"Edit", "Write"} {
			if !slices.Contains(kept, w) {
				t.Errorf("%s: %s removed; kept %v", config, w, kept)
			}
		}
		pruned := strings.Split(header(res.Headers, HeaderPruned), ",")
		if slices.Contains(pruned, "Edit") || slices.Contains(pruned, "Write") {
			t.Errorf("%s: listed as pruned: %v", config, pruned)
		}
		if len(pruned)+len(kept) != 24 {
			t.Errorf("%s: pruned %v + kept %v", config, pruned, kept)
		}
		t.Logf("%s: kept %v", config, kept)
	}
	// The same prompt with other words picks other tools: the reminders no
	// longer decide.
	h := plugintest.New(t, `{"core_tools": [], "keep_system_named": false}`)
	kept := names(h.OnRequest(claudeCodeFirst(t, "Search the web for the go-toml v2 release notes and fetch the page")).Request.Tools)
	for _, w := range []string{"WebSearch", "WebFetch"} {
		if !slices.Contains(kept, w) {
			t.Errorf("web prompt: %s removed; kept %v", w, kept)
		}
	}
}

// A later turn that asks for a removed tool in so many words, or names it,
// changes the session's tools once: with grow = "all" (the default) all the
// tools come back for the rest of the session; with "add" the asked-for
// tool is added, one change per ask.
func TestSessionGrowsOnlyWhenAsked(t *testing.T) {
	tools := claudeCodeTools(t)
	s := loadSession(t)
	base := sessionRequests(t, s, tools)
	first := replay(t, `{}`, base[:1]).lists[0]
	if slices.Contains(first, "WebSearch") || slices.Contains(first, "mcp__github__create_issue") {
		t.Fatalf("the test needs WebSearch and create_issue removed: %v", first)
	}
	s.Steps = append(s.Steps,
		sessionStep{User: "search the web for how go-toml v2 merges inline tables"},
		sessionStep{Call: "WebFetch", Input: []byte(`{"url":"https://github.com/pelletier/go-toml","prompt":"inline tables"}`), Result: "Inline tables are decoded as maps."},
		sessionStep{Say: "go-toml v2 decodes inline tables as maps; merging is up to us."},
		sessionStep{User: "ok, thanks", RemindersBefore: []string{"<system-reminder>\nPlan mode is active. When you are done, call ExitPlanMode.\n</system-reminder>"}},
		sessionStep{User: "create an issue for the inline table merge"},
		sessionStep{Call: "Bash", Input: []byte(`{"command":"git status"}`), Result: "clean"},
	)
	reqs := sessionRequests(t, s, tools)
	n := len(base)
	for _, mode := range []string{"all", "add"} {
		st := replay(t, `{"grow": "`+mode+`"}`, reqs)
		st.log(t, "grow = "+mode+", two asks")
		for i := 0; i < n; i++ {
			if !slices.Equal(st.lists[i], first) || st.reasons[i] != reasonSession {
				t.Fatalf("%s: turn %d: %v (%s)", mode, i, st.lists[i], st.reasons[i])
			}
		}
		web, plan, issue := st.lists[n], st.lists[n+2], st.lists[n+3]
		if mode == "all" {
			for i := n; i < len(reqs); i++ {
				if len(st.lists[i]) != len(tools) || st.reasons[i] != reasonRestored {
					t.Fatalf("all: turn %d: %d tools (%s)", i, len(st.lists[i]), st.reasons[i])
				}
			}
			if st.changes != 1 {
				t.Fatalf("all: %d changes, want 1", st.changes)
			}
			continue
		}
		if !slices.Contains(web, "WebSearch") || len(web) != len(first)+1 || st.reasons[n] != reasonGrown {
			t.Fatalf("add: asked for a web search: %v (%s)", web, st.reasons[n])
		}
		if !slices.Equal(st.lists[n+1], web) || !slices.Equal(plan, web) {
			t.Fatalf("add: the grown list changed: %v, %v", st.lists[n+1], plan)
		}
		if !slices.Contains(issue, "mcp__github__create_issue") || !slices.Equal(st.lists[n+4], issue) {
			t.Fatalf("add: create an issue: %v, then %v", issue, st.lists[n+4])
		}
		if st.changes != 2 {
			t.Fatalf("add: %d changes, want 2 (the two asks)", st.changes)
		}
	}
}

// A tool named in a later reminder (the harness's instruction) is added.
func TestReminderNamingRemovedTool(t *testing.T) {
	req := claudeCodeFirst(t, "explain cmd/tomlcfg/diff.go")
	h := plugintest.New(t, `{"grow": "add"}`)
	first := names(h.OnRequest(req).Request.Tools)
	if slices.Contains(first, "KillShell") {
		t.Fatalf("the test needs KillShell removed: %v", first)
	}
	req.Request.Messages = append(req.Request.Messages,
		wire.Message{Role: "assistant", Content: text("It prints a diff.")},
		wire.Message{Role: "user", Content: []wire.Block{
			{Type: wire.BlockText, Text: "<system-reminder>\nA background shell is still running; stop it with KillShell.\n</system-reminder>"},
			{Type: wire.BlockText, Text: "thanks"}}})
	res := h.OnRequest(req)
	if kept := names(res.Request.Tools); !slices.Contains(kept, "KillShell") || header(res.Headers, HeaderReason) != reasonGrown {
		t.Fatalf("kept %v (%s)", kept, header(res.Headers, HeaderReason))
	}
	// So is a tool a mid-conversation system message names; its words
	// are not the user's and ask for nothing.
	saved := req.Request.Messages[2]
	req.Request.Messages[2] = wire.Message{Role: "system", Content: text("Use KillShell to stop the background shell, then search the web.")}
	res = h.OnRequest(req)
	if kept := names(res.Request.Tools); !slices.Contains(kept, "KillShell") || slices.Contains(kept, "WebSearch") {
		t.Fatalf("system message: kept %v", kept)
	}
	req.Request.Messages[2] = saved
	// A tool result naming it is not a request for it.
	req.Request.Messages[2].Content = []wire.Block{{Type: wire.BlockToolResult, ID: "x", Text: "grep: KillShell appears in tools.go"}}
	if kept := names(h.OnRequest(req).Request.Tools); !slices.Equal(kept, first) {
		t.Fatalf("tool result: %v", kept)
	}
}

// Codex sends its instructions and environment as tagged user messages
// before the prompt; the prompt alone decides, and its core tools stay.
func TestCodexShape(t *testing.T) {
	tools := []wire.Tool{{Name: "shell", Description: "Runs a shell command and returns its output."}, {Name: "apply_patch", Description: "Use this tool to edit files."}, {Name: "update_plan", Description: "Updates the task plan."}}
	tools = append(tools, catalog(t)[:30]...)
	req := wire.LayerRequest{Request: wire.Request{Tools: tools, Messages: []wire.Message{
		{Role: "user", Content: text("<user_instructions>\nAlways quote prices and balances, check swaps, estimate gas, stake and bridge carefully.\n</user_instructions>")},
		{Role: "user", Content: text("<environment_context>\n  <cwd>/home/dev/defi</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>")},
		{Role: "user", Content: text("What is the funding rate on the ETH perp?")},
	}}}
	h := plugintest.New(t, `{"max_tools": 6}`)
	res := h.OnRequest(req)
	kept := names(res.Request.Tools)
	for _, w := range []string{"shell", "apply_patch", "update_plan", "get_funding_rates"} {
		if !slices.Contains(kept, w) {
			t.Errorf("%s removed: %v", w, kept)
		}
	}
	for _, w := range []string{"swap_tokens", "estimate_gas", "stake_eth", "bridge_tokens"} {
		if slices.Contains(kept, w) {
			t.Errorf("%s kept from the instructions: %v", w, kept)
		}
	}
}

// Removing less than min_saved_tokens is not worth a decision: the request
// goes as it came, and says why.
func TestSmallSavingPasses(t *testing.T) {
	h := plugintest.New(t, `{"threshold": 2, "max_tools": 2, "min_saved_tokens": 100000}`)
	res := h.OnRequest(agentRequest(catalog(t)[:10], "swap"))
	if res.Patched != 0 || header(res.Headers, HeaderReason) != reasonSmall || header(res.Headers, HeaderTools) != "10/10" {
		t.Fatalf("patched %b, headers %v", res.Patched, res.Headers)
	}
}

func TestPrunedList(t *testing.T) {
	tools := make([]wire.Tool, 200)
	keep := make([]bool, 200)
	for i := range tools {
		tools[i].Name = "tool_number_" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		keep[i] = i%50 == 0
	}
	got := prunedList(tools, keep)
	if len(got) > maxPrunedHeader+20 || !strings.HasSuffix(got, " more") || strings.Contains(got, "tool_number_a,") {
		t.Fatalf("%d bytes: …%s", len(got), got[max(0, len(got)-60):])
	}
	listed := strings.Count(got, ",") // the names, and "+N more"
	var more int
	for _, c := range got[strings.LastIndexByte(got, '+')+1 : len(got)-len(" more")] {
		more = 10*more + int(c-'0')
	}
	if listed+more != 196 {
		t.Fatalf("%d listed + %d more != 196", listed, more)
	}
	// A name a header cannot carry is counted, not written.
	tools[1].Name = "bad\nname"
	if got := prunedList(tools[:3], []bool{true, false, false}); got != "+2 more" {
		t.Fatalf("%q", got)
	}
}
