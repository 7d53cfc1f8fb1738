//go:build !wasip1

package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// memoRequest is an agent turn whose long segments (system prompt, an
// earlier turn, a tool call's argument) carry values to mask, a
// placeholder-shaped token the caller wrote and a 64-hex value whose
// context is its JSON member name; last is the new turn.
func memoRequest(last string) wire.Request {
	filler := strings.Repeat("Keep the answer short and cite the file you changed. ", 12)
	key := strings.Repeat("ab12", 16)
	return wire.Request{
		System: []wire.Block{text(filler + "Escalations go to ops@corp.example; the user wrote [EMAIL_1] once.")},
		Messages: []wire.Message{
			userMsg(text(filler + "Call me on " + phone + " or mail " + email + ".")),
			{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "sign",
				Data: []byte(`{"private_key":"` + key + `","note":"` + filler + `"}`)}}},
			userMsg(wire.Block{Type: wire.BlockToolResult, ID: "c1", Text: filler + "signed from 10.20.30.40"}),
			userMsg(text(last)),
		},
	}
}

// TestMemoSameDecisions: a request whose long segments were scanned before
// (the agent's next turn) is masked exactly as when they were new, its
// placeholders numbered around the caller's own, from the memo; another
// tenant's instance state is never used, and a changed segment is scanned
// again.
func TestMemoSameDecisions(t *testing.T) {
	memoized.Reset()
	h := plugintest.New(t, `{}`)
	run := func(tenant, id, last string) (wire.LayerResult, int) {
		t.Helper()
		hits := memoized.Hits
		m := meta(id)
		m.Tenant = tenant
		res := h.OnRequest(wire.LayerRequest{Meta: m, Request: memoRequest(last)})
		return res, memoized.Hits - hits
	}
	first, hits := run("t1", "req_1", "Now fix the test.")
	if hits != 0 {
		t.Fatalf("first request: %d memo hits", hits)
	}
	if first.Action != wire.ActionContinue || first.Patched != wire.PartSystem|wire.PartMessages {
		t.Fatalf("action %d patched %b", first.Action, first.Patched)
	}
	sys := first.Request.System[0].Text
	if !strings.Contains(sys, "[EMAIL_2]") || strings.Contains(sys, "ops@corp.example") || !strings.Contains(sys, "[EMAIL_1] once") {
		t.Fatalf("system: %q", sys)
	}
	again, hits := run("t1", "req_2", "Now fix the test.")
	if hits != 4 {
		t.Fatalf("the next turn: %d memo hits, want the 4 long segments", hits)
	}
	if !reflect.DeepEqual(again.Request, first.Request) || !reflect.DeepEqual(again.Headers, first.Headers) {
		t.Fatalf("from the memo:\n%+v\nwant\n%+v", again.Request, first.Request)
	}
	if _, hits := run("t2", "req_3", "Now fix the test."); hits != 0 {
		t.Fatalf("another tenant: %d memo hits", hits)
	}
	// One segment changed: it is scanned, the other three come from the memo.
	req := memoRequest("Now fix the test.")
	req.Messages[0].Content[0].Text += " Or bob@example.org."
	hits = memoized.Hits
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_4"), Request: req})
	if memoized.Hits-hits != 3 || !strings.Contains(res.Request.Messages[0].Content[0].Text, "Or [EMAIL_4].") {
		t.Fatalf("%d hits; %q", memoized.Hits-hits, res.Request.Messages[0].Content[0].Text)
	}
	// A value that blocks in the newest turn still blocks from the memo.
	mnemonic := "legal winner thank year wave sausage worth useful legal winner thank yellow"
	long := strings.Repeat("Keep the answer short and cite the file you changed. ", 12) + mnemonic
	for _, id := range []string{"req_5", "req_6"} {
		if res, _ := run("t1", id, long); res.Action != wire.ActionReject || res.Error == nil || res.Error.Status != 400 {
			t.Fatalf("%s: action %d error %+v", id, res.Action, res.Error)
		}
	}
}
