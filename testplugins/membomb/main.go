// Command membomb is a misbehaving test layer: when the last user message
// contains "bomb" it allocates 1 MiB chunks without bound, writing to every
// page of each and keeping them all reachable, until the instance's linear
// memory hits the host's cap and the Go runtime in the guest dies of "out of
// memory" (a trap for the host). Any other request gets the layer's usual
// answer: no patch, and an annotation "membomb" holding the text it saw.
package main

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// hoard keeps every chunk reachable, so the guest's garbage collector cannot
// reclaim them.
var hoard [][]byte

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "membomb",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			text := lastUserText(req.Request.Messages)
			if strings.Contains(text, "bomb") {
				for {
					chunk := make([]byte, 1<<20)
					for i := 0; i < len(chunk); i += 4096 {
						chunk[i] = byte(i)
					}
					hoard = append(hoard, chunk)
				}
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "membomb", Value: text})
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
