// Command sim is the simulated provider: it answers every request locally,
// deterministically, with a clearly labelled reply that quotes the last user
// message verbatim and reports realistic token usage. It lets `make run`
// answer on a machine with no upstream credentials, and lets tests observe
// end to end what layers that rewrite and restore text did.
package main

import (
	"hash/fnv"
	"strconv"

	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Prefix labels every simulated answer, so nobody mistakes it for a model's.
const Prefix = "[bardo sim] Simulated reply (no upstream model configured). You said: "

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:     "sim",
		Version:  "1.0.0",
		Reads:    wire.PartSystem | wire.PartMessages | wire.PartTools | wire.PartParams,
		Encode:   encode,
		Describe: describe,
	})
}

// describe: one free model, "sim", that takes any intent — so requests
// routed by intent (model "auto", X-Bardo-Subsystem) are answered on a
// machine with no upstream credentials. It claims the features the
// subsystems most often want, because it answers every request without
// refusing any of them; its replies say they are simulated.
func describe() (routing.ProviderDescription, error) {
	return routing.ProviderDescription{
		Params: routing.StyleGeneric,
		Models: []routing.ModelInfo{{
			ID:       "sim",
			Quality:  routing.Maximum,
			Features: routing.Features(routing.ToolUse, routing.VisibleThinking, routing.StructuredOutputs),
		}},
	}, nil
}

func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	said := adapter.LastUserText(&in.Request)
	text := Prefix + "\"" + said + "\""
	out := adapter.EstimateTokens(text)
	stop := wire.StopEndTurn
	if p := in.Request.Params; p.Set&wire.HasMaxTokens != 0 && p.MaxTokens > 0 && out > p.MaxTokens {
		// Honour max_tokens the way a model would: cut the answer and say so.
		text = text[:min(len(text), int(p.MaxTokens*4))]
		out, stop = p.MaxTokens, wire.StopMaxTokens
	}
	h := fnv.New64a()
	h.Write([]byte(in.Route.Model))
	h.Write([]byte{0})
	h.Write([]byte(said))
	res.Local = &wire.Response{
		ID:         "msg_sim_" + strconv.FormatUint(h.Sum64(), 16),
		Model:      in.Route.Model,
		Content:    []wire.Block{{Type: wire.BlockText, Text: text}},
		StopReason: stop,
		Usage:      wire.Usage{InputTokens: adapter.RequestTokens(&in.Request), OutputTokens: out},
	}
	return nil
}

func main() {}
