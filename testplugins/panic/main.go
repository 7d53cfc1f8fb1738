// Command panic is a misbehaving test layer: when the last user message
// contains "panic" it panics with the message "boom", which the Go runtime in
// the guest turns into a message on stderr and an exit (a trap for the host).
// Any other request gets the layer's usual answer: no patch, and an annotation
// "panic" holding the text it saw, so tests can check each good call's output.
package main

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "panic",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			text := lastUserText(req.Request.Messages)
			if strings.Contains(text, "panic") {
				panic("boom")
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "panic", Value: text})
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
