// Command bundle is a module of two layers (ABI v1.5): "tag" and "count".
// Each keeps its own state in its own variables, reads its own config and
// writes a header, so a test can see that one instance serves both without
// their configs, kv spaces or state mixing.
package main

import (
	"strconv"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func main() {}

type config struct {
	Label string `json:"label"`
}

var (
	tagCfg, countCfg config
	tagCalls         int
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:   "tag",
		Phases: wire.PhaseRequest,
		Init:   func() error { return plugin.DecodeConfig(&tagCfg) },
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			tagCalls++
			res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-Tag", Value: tagCfg.Label + ":" + strconv.Itoa(tagCalls)})
			return nil
		},
	})
	plugin.RegisterLayer(plugin.Layer{
		Name:   "count",
		Phases: wire.PhaseRequest,
		Init:   func() error { return plugin.DecodeConfig(&countCfg) },
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			n := 0
			if v, ok := plugin.KVGet("n"); ok {
				n, _ = strconv.Atoi(string(v))
			}
			n++
			if err := plugin.KVPut("n", []byte(strconv.Itoa(n)), 0); err != nil {
				return err
			}
			res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-Count", Value: countCfg.Label + ":" + strconv.Itoa(n)})
			return nil
		},
	})
}
