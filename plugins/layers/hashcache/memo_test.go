//go:build !wasip1

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestMemoSameKey: a request whose pieces were normalized before (the
// agent's next turn) gets, from the memo, the canonical string normalizing
// builds — timestamps, UUIDs, ephemeral fields and whitespace handled the
// same — and another tenant's turn is normalized afresh.
func TestMemoSameKey(t *testing.T) {
	plugintest.New(t, `{}`)
	filler := strings.Repeat("Keep the answer short  and\tcite the file you changed. ", 12)
	req := wire.Request{
		Model:  "m",
		System: []wire.Block{{Type: wire.BlockText, Text: "  " + filler + " at 2025-01-01T10:00:00Z for 123e4567-e89b-12d3-a456-426614174000\n"}},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: filler}}},
			{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "read",
				Data: []byte(`{"traceId":"abc","path":"` + filler + `"}`)}}},
			{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "c1", Text: filler + " -- done"}}},
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "Now fix it."}}},
		},
		Tools: []wire.Tool{{Name: "read", Description: filler + "!", Schema: []byte(`{"type":"object","description":"` + filler + `"}`)}},
	}
	build := func(tenant string) (string, int) {
		hits := pieces.hits
		keys.tenant = tenant
		return string(keys.build(&req)), pieces.hits - hits
	}
	pieces.reset()
	fresh, hits := build("t1")
	if hits != 0 {
		t.Fatalf("first build: %d memo hits", hits)
	}
	if strings.Contains(fresh, "2025-01-01") || strings.Contains(fresh, "123e4567") || strings.Contains(fresh, "abc") || strings.Contains(fresh, "  ") {
		t.Fatalf("not normalized: %q", fresh)
	}
	again, hits := build("t1")
	if hits != 5 {
		t.Fatalf("next turn: %d memo hits, want 5: the system block, the 3 long messages, the tools", hits)
	}
	if again != fresh {
		t.Fatalf("from the memo:\n%q\nwant\n%q", again, fresh)
	}
	if other, hits := build("t2"); hits != 0 || other != fresh {
		t.Fatalf("another tenant: %d memo hits, same string %v", hits, other == fresh)
	}
}

// Whatever the memo holds, the canonical string is the one normalizing
// builds: a message is reused only with its tool results answering the same
// calls, tools only in the same order, and nothing across tenants.
func TestMemoMatchesFresh(t *testing.T) {
	plugintest.New(t, `{}`)
	var reqs []wire.Request
	for _, v := range []struct {
		ids          [2]string
		stamp, order string
	}{
		{[2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", ""},
		{[2]string{"toolu_X", "toolu_Y"}, "2025-06-02T08:30:12.5Z", "reversed"},
		{[2]string{"call_2", "call_1"}, "2025-06-01T12:00:00Z", ""},
	} {
		reqs = append(reqs, toolConversation(v.ids, v.stamp, v.order))
	}
	// The same result message answering a call with other input, or no call.
	r := toolConversation([2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", "")
	r.Messages[1].Content[0].Data = []byte(`{"asset":"BTC"}`)
	reqs = append(reqs, r)
	r = toolConversation([2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", "")
	r.Messages[1].Content[0].Name = "get_balance"
	reqs = append(reqs, r)
	r = toolConversation([2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", "")
	r.Messages[1].Content[0].ID = "call_9"
	reqs = append(reqs, r)
	r = baseRequest()
	r.Tools[0], r.Tools[1] = r.Tools[1], r.Tools[0]
	reqs = append(reqs, r)
	r = baseRequest()
	r.Tools[1].Extra = []byte(`{"strict":true}`)
	reqs = append(reqs, r)
	r = baseRequest()
	r.System = append(r.System, text("Second block."), wire.Block{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"x"}`)})
	reqs = append(reqs, r)
	r = baseRequest()
	r.Messages[0].Content[0].IsError = true
	reqs = append(reqs, r)

	// Padded so that the conversation is looked up in runs of one message
	// (60), of two (20: the results answer calls of the run before) and
	// of all three (7: the results answer calls of their own run).
	for _, n := range []int{60, 20, 7} {
		pad := strings.Repeat("and so on ", n)
		padded := make([]wire.Request, len(reqs))
		for i, r := range reqs {
			r.Messages = slices.Clone(r.Messages)
			for j := range r.Messages {
				m := &r.Messages[j]
				m.Content = slices.Clone(m.Content)
				for b := range m.Content {
					blk := &m.Content[b]
					switch blk.Type {
					case wire.BlockToolUse:
						blk.Data = append(append([]byte(nil), blk.Data[:len(blk.Data)-1]...), `,"note":"`+pad+`"}`...)
					default:
						blk.Text += pad
					}
				}
			}
			padded[i] = r
		}
		fresh := make([]string, len(padded))
		for i := range padded {
			pieces.reset()
			keys.tenant = "t"
			fresh[i] = string(keys.build(&padded[i]))
		}
		pieces.reset()
		for round := range 3 {
			for j := range padded {
				i := (j*7 + round) % len(padded)
				for _, tenant := range []string{"t", "u"} {
					keys.tenant = tenant
					if got := string(keys.build(&padded[i])); got != fresh[i] {
						t.Fatalf("pad %d, round %d, request %d, tenant %s: from the memo\n%q\nwant\n%q", n, round, i, tenant, got, fresh[i])
					}
				}
			}
		}
		if pieces.hits == 0 {
			t.Fatalf("pad %d: the memo was never used", n)
		}
	}
}

// Two inputs under one hash: the lookup compares the input, so the other
// is a miss, never the first one's piece; and so does the slot's last
// piece, tried first.
func TestMemoCollisionIsAMiss(t *testing.T) {
	var p pieceMemo
	p.put(memo.Spread([]byte("Mtwo")), &piece{in: []byte("Mone"), sum: [32]byte{1}})
	if e, _ := p.get(memoSlots, []byte("Mtwo")); e != nil {
		t.Fatal("another input under the same hash got its piece")
	}
	p.put(memo.Spread([]byte("Mone")), &piece{in: []byte("Mone"), sum: [32]byte{1}})
	if e, _ := p.get(slotRuns, []byte("Mone")); e == nil || e.sum[0] != 1 {
		t.Fatal("the input itself missed")
	}
	// The slot now holds Mone's piece: another tenant's input, or another
	// text, at that slot is looked up, not given it.
	if p.last[slotRuns] == nil {
		t.Fatal("the slot did not remember the piece found")
	}
	if e, _ := p.get(slotRuns, []byte("Mon")); e != nil {
		t.Fatal("the slot's piece answered another input")
	}
	if e, _ := p.get(slotRuns, []byte("Mone")); e == nil {
		t.Fatal("the slot's piece missed its own input")
	}
}

// Long pieces (memoMinBytes and up) stand in the canonical string as their
// digest: they are normalized all the same (whitespace, timestamps, UUIDs
// and ephemeral fields do not change the key, a word does), and a
// volatile marker inside one still decides the TTL.
func TestLongPieces(t *testing.T) {
	h := plugintest.New(t, `{"ttl":"300s","ttl_static":"3600s"}`)
	filler := strings.Repeat("Keep the answer short and cite the file you changed. ", 12)
	with := func(system, msg string) wire.Request {
		r := baseRequest()
		r.System[0].Text = system
		r.Messages[0].Content[0].Text = msg
		return r
	}
	base := keyOf(t, h, with(filler+" at 2025-01-01T10:00:00Z", filler+` {"traceId":"a"} ok`))
	for name, r := range map[string]wire.Request{
		"whitespace, timestamp, ephemeral field": with("  "+strings.ReplaceAll(filler, " ", "\n ")+" at 2026-02-02T11:11:11Z", filler+`  {"traceId":"b"} ok`),
	} {
		if keyOf(t, h, r) != base {
			t.Errorf("%s: key changed", name)
		}
	}
	for name, r := range map[string]wire.Request{
		"system word":  with(strings.Replace(filler, "short", "long", 1)+" at 2025-01-01T10:00:00Z", filler+` {"traceId":"a"} ok`),
		"message word": with(filler+" at 2025-01-01T10:00:00Z", strings.Replace(filler, "file", "files", 1)+` {"traceId":"a"} ok`),
	} {
		if keyOf(t, h, r) == base {
			t.Errorf("%s: same key", name)
		}
	}
	ttl := func(msg string) string {
		return annotation(h.OnRequest(wire.LayerRequest{Request: with(filler, msg)}).Annotations, AnnotationTTL)
	}
	for range 2 { // normalized, then from the memo
		if got := ttl(filler + " What is the price now?"); got != "300000" {
			t.Errorf("a marker in a long message: ttl %s", got)
		}
		if got := ttl(filler + " Explain it."); got != "3600000" {
			t.Errorf("a long static message: ttl %s", got)
		}
	}
}
