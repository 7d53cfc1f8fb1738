// Command noop is a layer that takes part in every phase and changes nothing.
// It reads no request part, so calling it costs only the boundary crossing:
// benchmarks use it to measure the runtime's own overhead per layer.
package main

import (
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "noop",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		OnRequest: func(*wire.LayerRequest, *wire.LayerResult) error {
			return nil
		},
		OnResponse: func(*wire.LayerResponse, *wire.LayerResponseResult) error {
			return nil
		},
		OnStream: func(in *wire.LayerStream, res *wire.LayerStreamResult) error {
			res.Events = in.Events
			return nil
		},
	})
}

func main() {}
