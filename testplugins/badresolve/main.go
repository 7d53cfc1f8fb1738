// Command badresolve is a test provider whose resolve() misbehaves as its
// config says, to show that such a provider does not serve the intent and
// the walk goes on to the next provider (host/pipeline/describe.go,
// resolveInPlugin). Its calls are OpenAI-compatible, so when it does serve
// (mode "ok") the fake upstream answers it.
//
// [provider.config] mode:
//
//	ok       the standard answer, unchanged (the control: it serves)
//	panic    panics inside resolve (a trap; the instance is discarded)
//	nomodel  answers a resolution without a model
//	nan      answers a NaN cost (the host refuses the answer)
//	slow     sleeps 400 ms, past the host's 250 ms resolve budget
//	none     answers "none" although the standard found a model (a veto)
package main

import (
	"fmt"
	"math"
	"time"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
)

var (
	mode string
	ep   = openaicompat.Defaults().MustEndpoint()
)

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:    "badresolve",
		Version: "1.0.0",
		Init: func() error {
			var c struct {
				Mode string `json:"mode"`
			}
			if err := plugin.DecodeConfigStrict(&c); err != nil {
				return err
			}
			switch c.Mode {
			case "ok", "panic", "nomodel", "nan", "slow", "none":
			default:
				return fmt.Errorf("badresolve: unknown mode %q", c.Mode)
			}
			mode = c.Mode
			return nil
		},
		Encode:   ep.Encode,
		Decode:   openaicompat.Decode,
		Describe: func() (routing.ProviderDescription, error) { return routing.ProviderDescription{}, nil },
		Resolve:  resolve,
	})
}

func resolve(_ *routing.Intent, standard *routing.Resolution) (routing.Resolution, bool) {
	if standard == nil {
		return routing.Resolution{}, false
	}
	r := *standard
	switch mode {
	case "panic":
		panic("badresolve: boom")
	case "nomodel":
		r.Model = ""
	case "nan":
		r.EstimatedCostUSD = math.NaN()
	case "slow":
		time.Sleep(400 * time.Millisecond)
	case "none":
		return routing.Resolution{}, false
	}
	return r, true
}

func main() {}
