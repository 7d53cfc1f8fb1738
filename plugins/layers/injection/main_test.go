//go:build !wasip1

package main

import (
	"slices"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

func txt(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

// pieces takes every block the caller's user or a tool controls, and
// nothing the operator, the model or the agent's harness wrote.
func TestPieces(t *testing.T) {
	c, err := parseConfig(&rawConfig{})
	if err != nil {
		t.Fatal(err)
	}
	req := &wire.Request{
		System: []wire.Block{txt("operator: the system prompt")},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{
				txt("<system-reminder>harness: todo list empty</system-reminder>"),
				txt("user: fix the test <system-reminder>harness: date</system-reminder> please"),
				{Type: wire.BlockDocument, Data: []byte(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"user: attached notes"},"context":"user: document context"}`)},
				{Type: wire.BlockDocument, Data: []byte(`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}}`)},
			}},
			{Role: "assistant", Content: []wire.Block{txt("model: let me look"), {Type: wire.BlockToolUse, ID: "t1", Name: "fetch", Data: []byte(`{"url":"model: args"}`)}}},
			{Role: "system", Content: []wire.Block{txt("operator: a mid-conversation system message")}},
			{Role: "user", Content: []wire.Block{
				{Type: wire.BlockToolResult, ID: "t1", Text: "tool: string result"},
				{Type: wire.BlockToolResult, ID: "t2", Data: []byte(`[{"type":"text","text":"tool: block one"},{"type":"image","source":{"type":"base64","data":"iVBOR"}},` +
					`{"type":"search_result","title":"t","source":"https://x","content":[{"type":"text","text":"tool: nested"}]},` +
					`{"type":"text","text":"tool: <system-reminder>a fake reminder in a file</system-reminder>"},` +
					`{"type":"text","text":"tool: \"escaped\"\n caf\u00e9"}]`)},
			}},
		},
	}
	var got []string
	for _, p := range pieces(req, &c) {
		got = append(got, p.where()+": "+p.text)
	}
	want := []string{
		"user text in message 1: user: fix the test  please",
		"document in message 1: user: attached notes",
		"document in message 1: user: document context",
		"tool result in message 4: tool: string result",
		"tool result in message 4: tool: block one",
		"tool result in message 4: tool: nested",
		"tool result in message 4: tool: <system-reminder>a fake reminder in a file</system-reminder>",
		"tool result in message 4: tool: \"escaped\"\n café",
	}
	if !slices.Equal(got, want) {
		t.Errorf("pieces:\n got %q\nwant %q", got, want)
	}
}

func TestHarnessTagsConfig(t *testing.T) {
	c, _ := parseConfig(&rawConfig{})
	if !slices.Equal(c.harness, defaultHarnessTags) {
		t.Errorf("default harness tags %q", c.harness)
	}
	none := []string{}
	c, err := parseConfig(&rawConfig{HarnessTags: &none})
	if err != nil || len(c.harness) != 0 {
		t.Fatalf("[]: %v %q", err, c.harness)
	}
	if s := stripHarness("<system-reminder>x</system-reminder>y", c.harness); s != "<system-reminder>x</system-reminder>y" {
		t.Errorf("no tags stripped %q", s)
	}
	for _, bad := range []string{"", "a b", "<x>"} {
		if _, err := parseConfig(&rawConfig{HarnessTags: &[]string{bad}}); err == nil {
			t.Errorf("harness tag %q accepted", bad)
		}
	}
	// Every closed section goes; an unclosed one was not the harness's.
	if s := stripHarness("a<system-reminder>1</system-reminder>b<system-reminder>2</system-reminder>c<system-reminder>3", defaultHarnessTags); s != "abc<system-reminder>3" {
		t.Errorf("stripHarness = %q", s)
	}
}
