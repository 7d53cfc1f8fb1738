// Command leak is a misbehaving test layer with the most common memory bug:
// an in-guest "cache" without a bound. Every request's last user text is
// appended to a global slice and never dropped, so the instance's linear
// memory grows with the number of distinct requests until it hits the cap.
// Each call's answer is otherwise a well-behaved one (no patch, an
// annotation "leak" with the number of texts kept), so only the conformance
// kit's memory check (host/plugincheck) can tell.
package main

import (
	"strconv"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// seen keeps every text, with a copy of the request's messages' text as
// ballast (a few KB a call): what a cache keyed by prompt keeps.
var seen []string

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "leak",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			var all []byte
			for _, m := range req.Request.Messages {
				for _, b := range m.Content {
					all = append(all, b.Text...)
				}
			}
			seen = append(seen, string(all))
			res.Annotations = append(res.Annotations, wire.KV{Key: "leak", Value: strconv.Itoa(len(seen))})
			return nil
		},
	})
}

func main() {}
