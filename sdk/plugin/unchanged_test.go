//go:build !wasip1

package plugin

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// streamCall runs one on_stream call natively and decodes its result.
func streamCall(t *testing.T, in wire.LayerStream) wire.LayerStreamResult {
	t.Helper()
	var e wire.Encoder
	in.Encode(&e)
	out := Call(OpOnStream, e.Bytes())
	if out[0] == StatusError {
		t.Fatalf("on_stream failed: %s", out[1:])
	}
	var res wire.LayerStreamResult
	if err := res.Decode(out); err != nil {
		t.Fatal(err)
	}
	return res
}

func batch() []wire.Event {
	return []wire.Event{{Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockToolUse, Name: "f", Data: []byte("{}")}},
		{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "hello"},
		{Type: wire.EventError, Error: &wire.Error{Status: 502, Message: "cut"}}}
}

// A hook that hands in.Events back untouched has the SDK say "unchanged"
// (ABI v1.6) instead of encoding them — only to a host that reads it; one
// that edits them in place, or hands back fewer, has them encoded.
func TestStreamUnchanged(t *testing.T) {
	var edit func(evs []wire.Event) []wire.Event
	withEntries(t, Layer{Name: "s", Phases: wire.PhaseStream,
		OnStream: func(in *wire.LayerStream, res *wire.LayerStreamResult) error {
			res.Events = edit(in.Events)
			res.State = []byte("st")
			return nil
		}})
	for _, c := range []struct {
		name      string
		edit      func([]wire.Event) []wire.Event
		unchanged bool
		text      string
	}{
		{"untouched", func(evs []wire.Event) []wire.Event { return evs }, true, ""},
		{"edited in place", func(evs []wire.Event) []wire.Event {
			evs[1].Text = strings.ToUpper(evs[1].Text)
			return evs
		}, false, "HELLO"},
		{"a number edited in place", func(evs []wire.Event) []wire.Event {
			evs[1].Index = 3
			return evs
		}, false, "hello"},
		{"raw bytes edited in place", func(evs []wire.Event) []wire.Event {
			evs[0].Block.Data[0] = '['
			return evs
		}, false, "hello"},
		{"an error edited in place", func(evs []wire.Event) []wire.Event {
			evs[2].Error.Message = "changed"
			return evs
		}, false, "hello"},
		{"fewer", func(evs []wire.Event) []wire.Event { return evs[1:] }, false, "hello"},
		{"copied", func(evs []wire.Event) []wire.Event { return append([]wire.Event(nil), evs...) }, false, "hello"},
	} {
		edit = c.edit
		res := streamCall(t, wire.LayerStream{Events: batch(), UnchangedOK: true})
		if res.Unchanged != c.unchanged || string(res.State) != "st" {
			t.Errorf("%s: unchanged %v, state %q; want %v", c.name, res.Unchanged, res.State, c.unchanged)
		}
		if !c.unchanged && (len(res.Events) < 2 || res.Events[len(res.Events)-2].Text != c.text) {
			t.Errorf("%s: events %+v", c.name, res.Events)
		}
		// A host before v1.6 always gets the events.
		res = streamCall(t, wire.LayerStream{Events: batch()})
		if res.Unchanged || len(res.Events) == 0 {
			t.Errorf("%s: a v1.5 host got %+v", c.name, res)
		}
	}
}

// WatchStream is in the descriptor; it needs the response phase.
func TestWatchStreamDescriptor(t *testing.T) {
	noop := func(*wire.LayerResponse, *wire.LayerResponseResult) error { return nil }
	withEntries(t, Layer{Name: "w", Version: "1", Phases: wire.PhaseResponse | wire.PhaseStream, OnResponse: noop, WatchStream: true})
	var d wire.Descriptor
	if err := d.Decode(Call(OpDescribe, nil)); err != nil || d.Flags != wire.FlagWatchStream {
		t.Fatalf("descriptor %+v, %v", d, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("WatchStream without a response phase registered")
		}
	}()
	withEntries(t, Layer{Name: "x", Phases: wire.PhaseStream, WatchStream: true})
}
