// Command loop is a misbehaving test layer: when the last user message
// contains "loop" it logs "loop: spinning forever" and then spins forever in a
// loop with no call and no allocation, the worst case for the host (compiled
// guest code has no preemption point).
// Any other request gets the layer's usual answer: no patch, and an annotation
// "loop" holding the text it saw.
package main

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// spins is a global so that the loop has an observable effect and cannot be
// optimised away.
//
//lint:ignore U1000 written by the loop so the compiler cannot drop it; never read on purpose
var spins uint64

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "loop",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			text := lastUserText(req.Request.Messages)
			if strings.Contains(text, "loop") {
				// Tell the host (and a test waiting for it) that the loop starts.
				plugin.Log(plugin.LevelInfo, "loop: spinning forever")
				for {
					spins++
				}
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "loop", Value: text})
			return nil
		},
	})
}

func lastUserText(msgs []wire.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			if msgs[i].Content[j].Type == wire.BlockText {
				return msgs[i].Content[j].Text
			}
		}
	}
	return ""
}

func main() {}
