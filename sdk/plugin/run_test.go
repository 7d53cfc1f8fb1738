//go:build !wasip1

package plugin

import (
	"encoding/binary"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// runInput is a run's input over entries 0..n-1 of body.
func runInput(n int, body []byte) []byte {
	in := make([]byte, runHead, runHead+4*n+len(body))
	binary.LittleEndian.PutUint32(in[4:], uint32(n))
	for i := range n {
		in = binary.LittleEndian.AppendUint32(in, uint32(i))
	}
	return append(in, body...)
}

// TestRunAllocs: once warm, a request run and an answer run allocate
// nothing of their own (the view each hook gets is the SDK's, kept from
// run to run, as a lone call's input is), and both run every entry.
func TestRunAllocs(t *testing.T) {
	withEntries(t, Layer{Name: "a", Phases: wire.PhaseRequest | wire.PhaseResponse, Reads: wire.PartAll,
		OnRequest:  func(*wire.LayerRequest, *wire.LayerResult) error { return nil },
		OnResponse: func(*wire.LayerResponse, *wire.LayerResponseResult) error { return nil }})
	RegisterLayer(Layer{Name: "b", Phases: wire.PhaseRequest | wire.PhaseResponse, Reads: wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			if len(req.Request.System) != 0 {
				t.Error("b saw the system prompt it does not read")
			}
			return nil
		},
		OnResponse: func(in *wire.LayerResponse, res *wire.LayerResponseResult) error {
			if in.Response.ID != "a1" {
				t.Errorf("b saw the answer %q", in.Response.ID)
			}
			return nil
		}})
	var e wire.Encoder
	answer := wire.LayerResponse{Meta: wire.Meta{RequestID: "r", Annotations: []wire.KV{{Key: "k", Value: "v"}}},
		Response: wire.Response{ID: "a1", Content: []wire.Block{{Type: wire.BlockText, Text: "fine"}}}}
	answer.Encode(&e)
	for _, c := range []struct {
		op Op
		in []byte
	}{{OpOnRequestRun, runInput(2, agentInput("hello"))}, {OpOnResponseRun, runInput(2, e.Bytes())}} {
		dispatch(c.op, append([]byte(nil), c.in...))
		allocs := testing.AllocsPerRun(50, func() {
			out := dispatch(c.op, append(in0[:0], c.in...))
			if out[0] == StatusError {
				t.Fatal(string(out[1:]))
			}
			if records := countRecords(out[1:]); records != 2 {
				t.Fatalf("op %d: %d records, want 2", c.op, records)
			}
		})
		if allocs != 0 {
			t.Errorf("op %d: %v allocations a run, want 0", c.op, allocs)
		}
	}
}

// in0 is the input buffer the runs write their slot into (a copy each).
var in0 = make([]byte, 0, 16<<10)

func countRecords(b []byte) int {
	n := 0
	for len(b) >= 13 {
		b = b[13+binary.LittleEndian.Uint32(b[9:]):]
		n++
	}
	return n
}
