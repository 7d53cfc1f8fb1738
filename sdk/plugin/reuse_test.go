//go:build !wasip1

package plugin

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

func withEntries(t *testing.T, l Layer) {
	t.Helper()
	saved, savedL, savedP := entries, layer, provider
	t.Cleanup(func() { entries, layer, provider = saved, savedL, savedP })
	entries, layer, provider = nil, nil, nil
	RegisterLayer(l)
}

func agentInput(last string) []byte {
	text := func(s string) []wire.Block { return []wire.Block{{Type: wire.BlockText, Text: s}} }
	in := wire.LayerRequest{
		Meta: wire.Meta{RequestID: "req_1", Tenant: "t", Model: "m", Annotations: []wire.KV{{Key: "k", Value: "v"}}},
		Request: wire.Request{
			Model:  "m",
			System: text(strings.Repeat("You are careful. ", 100)),
			Tools:  []wire.Tool{{Name: "get_price", Schema: []byte(`{"type":"object"}`)}},
			Messages: []wire.Message{
				{Role: "user", Content: text("What is my position?")},
				{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "get_price", Data: []byte(`{}`)}}},
				{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "c1", Text: "42"}}},
				{Role: "user", Content: text(last)},
			},
		},
	}
	var e wire.Encoder
	in.Encode(&e)
	return append([]byte(nil), e.Bytes()...)
}

// TestDispatchAllocs: once warm, a request-phase call decodes its input,
// runs the hook and encodes the result without allocating — the input
// structs, their slices and the result are the SDK's, reused call after
// call (before, a call made 13 allocations for the decode and its structs).
func TestDispatchAllocs(t *testing.T) {
	withEntries(t, Layer{Name: "l", Phases: wire.PhaseRequest, Reads: wire.PartAll, Writes: wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			// A typical hook: read the last turn, annotate, add headers,
			// patch a part.
			last := req.Request.Messages[len(req.Request.Messages)-1]
			res.Annotations = append(res.Annotations, wire.KV{Key: "l.seen", Value: last.Role})
			res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-L", Value: "pass"}, wire.KV{Key: "X-Bardo-L-Role", Value: last.Role})
			res.Action = wire.ActionContinue
			res.Patched = wire.PartMessages
			res.Request.Messages = req.Request.Messages
			if last.Role != "user" {
				res.Action = wire.ActionReject
			}
			return nil
		}})
	in := agentInput("hello")
	dispatch(OpOnRequest, in)
	allocs := testing.AllocsPerRun(50, func() {
		out := dispatch(OpOnRequest, in)
		if out[0] == StatusError {
			t.Fatal(string(out[1:]))
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a call, want 0", allocs)
	}
}

// TestInputIsTheCalls: what a call decodes is overwritten once the call is
// over (in wasm the buffer and the arena serve the next call; natively Call
// scribbles over them), so a plugin that keeps a view instead of a copy
// finds out in its own tests. The copy a plugin makes stays intact.
func TestInputIsTheCalls(t *testing.T) {
	var kept, copied string
	var keptMsgs []wire.Message
	withEntries(t, Layer{Name: "l", Phases: wire.PhaseRequest, Reads: wire.PartAll,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			last := req.Request.Messages[len(req.Request.Messages)-1].Content[0].Text
			if kept == "" {
				kept, copied, keptMsgs = last, strings.Clone(last), req.Request.Messages
			}
			return nil
		}})
	if out := Call(OpOnRequest, agentInput("the first question")); out[0] == StatusError {
		t.Fatal(string(out[1:]))
	}
	if copied != "the first question" || kept == copied {
		t.Fatalf("after the call: kept %q, copied %q: the kept view should read the scribbled buffer", kept, copied)
	}
	if out := Call(OpOnRequest, agentInput("a second question, longer")); out[0] == StatusError {
		t.Fatal(string(out[1:]))
	}
	if keptMsgs[0].Role == "user" && keptMsgs[0].Content[0].Text == "What is my position?" {
		t.Fatal("the first call's messages survived the second call: the arena was not reused")
	}
	if copied != "the first question" {
		t.Fatalf("the copy changed: %q", copied)
	}
}
