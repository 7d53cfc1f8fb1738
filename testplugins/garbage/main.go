// Command garbage is a misbehaving test layer that answers with results the
// host must not trust. The SDK always encodes a well-formed wire message, so
// the garbage is in the content:
//
//   - "garbage": patches the model, a part it did not declare in Writes (it
//     declares only messages). The SDK refuses to encode that and the call
//     fails with a plugin error (StatusError), not a trap.
//   - "badheaders": adds response headers that do not start with X-Bardo-
//     (Set-Cookie, Content-Length, ...) next to one that does; the host must
//     drop all but X-Bardo-Garbage.
//   - "badaction": returns an action code that does not exist (200); the host
//     must refuse the result.
//
// Any other request gets the layer's usual answer: no patch, and an annotation
// "garbage" holding the text it saw.
package main

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "garbage",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		Writes:  wire.PartMessages,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			text := lastUserText(req.Request.Messages)
			switch {
			case strings.Contains(text, "garbage"):
				res.Patched = wire.PartModel | wire.PartMessages
				res.Request.Model = "not-yours-to-change"
				res.Request.Messages = req.Request.Messages
			case strings.Contains(text, "badheaders"):
				res.Headers = append(res.Headers,
					wire.KV{Key: "Set-Cookie", Value: "session=stolen"},
					wire.KV{Key: "Content-Length", Value: "0"},
					wire.KV{Key: "x-bardo", Value: "no dash suffix"},
					wire.KV{Key: "X-Bardo-Garbage", Value: "kept"},
				)
			case strings.Contains(text, "badaction"):
				res.Action = 200
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "garbage", Value: text})
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
