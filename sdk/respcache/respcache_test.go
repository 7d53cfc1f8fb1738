package respcache

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

func answer(text string, out int64) wire.Response {
	return wire.Response{ID: "msg_1", Model: "m", StopReason: wire.StopEndTurn,
		Content: []wire.Block{{Type: wire.BlockText, Text: text}},
		Usage:   wire.Usage{InputTokens: 7, OutputTokens: out, CacheReadTokens: 2}}
}

func TestEntryRoundTrip(t *testing.T) {
	var e wire.Encoder
	r := answer("hello there", 3)
	r.Content = append(r.Content, wire.Block{Type: wire.BlockRedactedThinking, Data: []byte(`"opaque"`)})
	got, ms, err := DecodeEntry(EncodeEntry(&e, &r, 12345))
	if err != nil || ms != 12345 || got.Content[0].Text != "hello there" || string(got.Content[1].Data) != `"opaque"` || got.Usage != r.Usage {
		t.Fatalf("%+v %d %v", got, ms, err)
	}
	for _, bad := range []string{"", "RC1", "XX1" + strings.Repeat("\x00", 20), "RC1" + strconv.Itoa(12345678)} {
		if _, _, err := DecodeEntry([]byte(bad)); err == nil {
			t.Errorf("decoded %q", bad)
		}
	}
}

func TestStorable(t *testing.T) {
	long := answer("a long enough answer", 12)
	short := answer("ok", 2)
	tool := answer("calling", 20)
	tool.StopReason = wire.StopToolUse
	toolBlock := answer("x", 20)
	toolBlock.Content = append(toolBlock.Content, wire.Block{Type: wire.BlockToolUse, Name: "f"})
	noUsage := answer(strings.Repeat("word ", 20), 0) // 100 bytes ≈ 25 tokens
	empty := wire.Response{StopReason: wire.StopEndTurn}
	refusal := answer("I can't help with that request at all", 12)
	refusal.StopReason = wire.StopRefusal
	for _, c := range []struct {
		name string
		r    wire.Response
		want bool
	}{
		{"long", long, true}, {"short", short, false}, {"tool stop", tool, false},
		{"tool block", toolBlock, false}, {"no usage, estimated", noUsage, true},
		{"empty", empty, false}, {"refusal", refusal, false},
	} {
		if got := Storable(&c.r, DefaultMinTokens); got != c.want {
			t.Errorf("%s: Storable = %v, want %v", c.name, got, c.want)
		}
	}
}

func events(text string) []wire.Event {
	evs := []wire.Event{
		{Type: wire.EventMessageStart, ID: "msg_9", Model: "m", Usage: wire.Usage{InputTokens: 5}},
		{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockText}},
	}
	for _, w := range strings.SplitAfter(text, " ") {
		evs = append(evs, wire.Event{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: w})
	}
	return append(evs,
		wire.Event{Type: wire.EventBlockStop, Index: 0},
		wire.Event{Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn, Usage: wire.Usage{OutputTokens: 11}},
		wire.Event{Type: wire.EventMessageStop})
}

func TestStreamCollectInBatches(t *testing.T) {
	evs := events("the quick brown fox jumps over the lazy dog")
	st := StartStream([]byte("key-1"), 90*time.Second)
	for i := 0; i < len(evs); i += 3 {
		var ok bool
		st, ok = Collect(st, evs[i:min(i+3, len(evs))], 1<<20)
		if !ok {
			t.Fatal("collection stopped")
		}
	}
	key, ttl, resp, ok := Finish(st)
	if !ok || string(key) != "key-1" || ttl != 90*time.Second {
		t.Fatalf("Finish = %q %v %v", key, ttl, ok)
	}
	if resp.Content[0].Text != "the quick brown fox jumps over the lazy dog" || resp.StopReason != wire.StopEndTurn ||
		resp.Usage.InputTokens != 5 || resp.Usage.OutputTokens != 11 || resp.ID != "msg_9" {
		t.Fatalf("rebuilt %+v", resp)
	}
}

func TestStreamSkips(t *testing.T) {
	st := StartStream([]byte("k"), time.Second)
	if _, ok := Collect(st, []wire.Event{{Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockToolUse}}}, 1<<20); ok {
		t.Error("a tool call was collected")
	}
	if _, ok := Collect(st, []wire.Event{{Type: wire.EventError}}, 1<<20); ok {
		t.Error("an error was collected")
	}
	if _, ok := Collect(st, events(strings.Repeat("x ", 200)), 64); ok {
		t.Error("a stream beyond maxBytes was collected")
	}
	// A stream that never reached message_stop is not complete.
	evs := events("cut short here")
	st2, _ := Collect(StartStream([]byte("k"), time.Second), evs[:len(evs)-1], 1<<20)
	if _, _, _, ok := Finish(st2); ok {
		t.Error("an unfinished stream was rebuilt")
	}
	if _, _, _, ok := Finish(Skip()); ok {
		t.Error("Finish accepted a skip state")
	}
}

func FuzzFinish(f *testing.F) {
	st, _ := Collect(StartStream([]byte("k"), time.Second), events("a b c"), 1<<20)
	f.Add(st)
	f.Add([]byte("C"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Finish(b) // must not panic on any state
	})
}
