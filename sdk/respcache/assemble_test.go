package respcache

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// The Assembler rebuilds a streamed answer — tool calls included, which
// a cache would not keep but a watching layer may want — and refuses one
// that broke off, carried an error or outgrew its bound.
func TestAssembler(t *testing.T) {
	stream := [][]wire.Event{
		{{Type: wire.EventMessageStart, ID: "msg_1", Model: "m", Usage: wire.Usage{InputTokens: 9}},
			{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockText}},
			{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "hel"}},
		{{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "lo"}, {Type: wire.EventPing},
			{Type: wire.EventBlockStart, Index: 1, Block: wire.Block{Type: wire.BlockToolUse, ID: "t1", Name: "f"}},
			{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaInputJSON, Text: `{"a":`},
			{Type: wire.EventDelta, Index: 1, Delta: wire.DeltaInputJSON, Text: `1}`}},
		{{Type: wire.EventMessageDelta, StopReason: wire.StopToolUse, Usage: wire.Usage{OutputTokens: 5}}, {Type: wire.EventMessageStop}},
	}
	var a Assembler
	for _, b := range stream {
		a.Add(b)
	}
	r, ok := a.Response()
	if !ok || r.ID != "msg_1" || len(r.Content) != 2 || r.Content[0].Text != "hello" || string(r.Content[1].Data) != `{"a":1}` ||
		r.Content[1].Name != "f" || r.StopReason != wire.StopToolUse || r.Usage.InputTokens != 9 || r.Usage.OutputTokens != 5 {
		t.Fatalf("%v %+v", ok, r)
	}

	for name, mut := range map[string]func(*Assembler){
		"no message_stop": func(a *Assembler) { a.Add(stream[0]); a.Add(stream[1]) },
		"an error event": func(a *Assembler) {
			a.Add(stream[0])
			a.Add([]wire.Event{{Type: wire.EventError, Error: &wire.Error{Message: "x"}}})
			a.Add(stream[2])
		},
		"over its bound": func(a *Assembler) {
			a.Max = 64
			a.Add(stream[0])
			a.Add([]wire.Event{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: strings.Repeat("x", 100)}})
			a.Add(stream[2])
		},
	} {
		var a Assembler
		mut(&a)
		if _, ok := a.Response(); ok {
			t.Errorf("%s: assembled as complete", name)
		}
	}
}
