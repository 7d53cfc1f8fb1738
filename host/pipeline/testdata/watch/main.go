// Command watch is a module of four stream-phase layers for the answer
// phases' tests (ABI v1.6):
//
//   - "watch" only watches (WatchStream): it keeps the text and stop
//     reason of every answer its on_response sees under the kv key
//     "answer"; its on_stream fails, so a host that calls it is seen;
//   - "keep" hands every batch back untouched;
//   - "upper" upper-cases text deltas in place and hands in.Events back,
//     which is a change;
//   - "skip" has nothing to do with any answer (SkipAnswer); its answer
//     phases fail if called.
package main

import (
	"errors"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func main() {}

var errCalled = errors.New("called although it should not be")

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:      "watch",
		Version:   "1.0.0",
		Phases:    wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		OnRequest: func(*wire.LayerRequest, *wire.LayerResult) error { return nil },
		OnResponse: func(in *wire.LayerResponse, res *wire.LayerResponseResult) error {
			var b strings.Builder
			for _, c := range in.Response.Content {
				b.WriteString(c.Text)
			}
			b.WriteString("|" + in.Response.StopReason)
			// Ignored for a streamed answer: it has gone out.
			res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-Watched", Value: "1"})
			return plugin.KVPut("answer", []byte(b.String()), 0)
		},
		OnStream:    func(*wire.LayerStream, *wire.LayerStreamResult) error { return errCalled },
		WatchStream: true,
	})
	plugin.RegisterLayer(plugin.Layer{
		Name:    "keep",
		Version: "1.0.0",
		Phases:  wire.PhaseStream,
		OnStream: func(in *wire.LayerStream, res *wire.LayerStreamResult) error {
			res.Events = in.Events
			return nil
		},
	})
	plugin.RegisterLayer(plugin.Layer{
		Name:    "upper",
		Version: "1.0.0",
		Phases:  wire.PhaseStream,
		OnStream: func(in *wire.LayerStream, res *wire.LayerStreamResult) error {
			for i := range in.Events {
				if in.Events[i].Type == wire.EventDelta {
					in.Events[i].Text = strings.ToUpper(in.Events[i].Text)
				}
			}
			res.Events = in.Events
			return nil
		},
	})
	plugin.RegisterLayer(plugin.Layer{
		Name:    "skip",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		OnRequest: func(_ *wire.LayerRequest, res *wire.LayerResult) error {
			res.SkipAnswer = true
			return nil
		},
		OnResponse: func(*wire.LayerResponse, *wire.LayerResponseResult) error { return errCalled },
		OnStream:   func(*wire.LayerStream, *wire.LayerStreamResult) error { return errCalled },
	})
}
