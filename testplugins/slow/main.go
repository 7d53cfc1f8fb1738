// Command slow is a misbehaving test layer that takes its time:
//
//   - "slow <duration>" (e.g. "slow 300ms"): spins until the host clock
//     (plugin.Now) says the duration has passed. The loop calls the host on
//     every turn, so it is busy, not blocked.
//   - "sleep <duration>": calls time.Sleep in the guest, which in a WASI
//     reactor blocks inside the host's poll_oneoff.
//
// Its config may also make every instance slow to start: {"init": "50ms"}
// spins that long in Init (tests use it to tell instantiation time from call
// time).
//
// A duration that does not parse is a plugin error. Any other request gets the
// layer's usual answer: no patch, and an annotation "slow" holding the text it
// saw (also after a slow or sleep request completes).
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "slow",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		Init: func() error {
			var cfg struct {
				Init string `json:"init"`
			}
			if err := plugin.DecodeConfig(&cfg); err != nil || cfg.Init == "" {
				return err
			}
			d, err := time.ParseDuration(cfg.Init)
			if err != nil {
				return fmt.Errorf("init: %w", err)
			}
			spin(d)
			return nil
		},
		OnRequest: func(req *wire.LayerRequest, res *wire.LayerResult) error {
			text := lastUserText(req.Request.Messages)
			if d, ok, err := durationAfter(text, "slow"); err != nil {
				return err
			} else if ok {
				spin(d)
			}
			if d, ok, err := durationAfter(text, "sleep"); err != nil {
				return err
			} else if ok {
				time.Sleep(d)
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "slow", Value: text})
			return nil
		},
	})
}

// spin busy-waits for d by the host clock.
func spin(d time.Duration) {
	end := plugin.Now().Add(d)
	for plugin.Now().Before(end) {
	}
}

// durationAfter finds word in text and parses the duration that follows it.
func durationAfter(text, word string) (time.Duration, bool, error) {
	i := strings.Index(text, word+" ")
	if i < 0 {
		return 0, false, nil
	}
	f := strings.Fields(text[i+len(word)+1:])
	if len(f) == 0 {
		return 0, false, fmt.Errorf("%s: missing duration", word)
	}
	d, err := time.ParseDuration(f[0])
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", word, err)
	}
	return d, true, nil
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
