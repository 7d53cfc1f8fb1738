// Command touch is a benchmark layer that reads every part of the request and
// writes the messages back with one character appended to the last text
// block: the heaviest shape a real layer has (decode everything, re-encode a
// part), used to measure the per-layer cost on a typical 4 KB agent request.
package main

import (
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "touch",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartAll,
		Writes:  wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			msgs := req.Request.Messages
			if n := len(msgs); n > 0 {
				if c := msgs[n-1].Content; len(c) > 0 {
					c[len(c)-1].Text += "."
				}
			}
			res.Patched = wire.PartMessages
			res.Request.Messages = msgs
			return nil
		},
	})
}

func main() {}
