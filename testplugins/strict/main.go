// Command strict is a misbehaving test layer that validates too much: it
// reads the request's unknown top-level members (Extra) and rejects any
// request that has some, as a "strict schema" layer would. The gateway keeps
// such members and forwards them (clients newer than the gateway send
// them), so the layer breaks every such client. Any other request gets the
// layer's usual answer: no patch, an annotation "strict" with "ok".
package main

import (
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "strict",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartExtra,
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			if len(req.Request.Extra) > 0 && string(req.Request.Extra) != "{}" {
				res.Action = wire.ActionReject
				res.Error = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "strict: unknown request members"}
				return nil
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "strict", Value: "ok"})
			return nil
		},
	})
}

func main() {}
