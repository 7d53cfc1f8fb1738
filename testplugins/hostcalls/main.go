// Command hostcalls is a well-behaved layer that exercises every ABI v1 host
// function, so the native host, the edge JS host and the test harness can all be
// checked against the same plugin.
//
// On each request it:
//   - reads its config ({"suffix": "..."}) once at Init,
//   - counts requests per tenant in kv ("count"), with a TTL,
//   - appends the suffix and the count to the last user text block,
//   - deletes kv key "count" when the text asks it to ("reset"),
//   - logs, reads the clock and bumps a counter metric,
//   - adds an X-Bardo-Hostcalls header with the count.
package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

type config struct {
	Suffix string `json:"suffix"`
}

var cfg config

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "hostcalls",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		Writes:  wire.PartMessages,
		Init: func() error {
			cfg = config{Suffix: " [hostcalls]"}
			return plugin.DecodeConfig(&cfg)
		},
		OnRequest: onRequest,
	})
}

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	if plugin.Now().Before(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) {
		plugin.Log(plugin.LevelWarn, "host clock looks wrong")
	}
	msgs := req.Request.Messages
	last := lastUserText(msgs)
	if last == nil {
		return nil
	}
	if strings.Contains(last.Text, "reset") {
		if err := plugin.KVDelete("count"); err != nil {
			return err
		}
	}
	n := 0
	if v, ok := plugin.KVGet("count"); ok {
		n, _ = strconv.Atoi(string(v))
	}
	n++
	if err := plugin.KVPut("count", []byte(strconv.Itoa(n)), time.Hour); err != nil {
		return err
	}
	last.Text += cfg.Suffix + " #" + strconv.Itoa(n)
	plugin.CounterAdd("hostcalls_requests_total", 1)
	plugin.Logf(plugin.LevelDebug, "tenant %q request %d", req.Meta.Tenant, n)

	res.Patched = wire.PartMessages
	res.Request.Messages = msgs
	res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-Hostcalls", Value: strconv.Itoa(n)})
	return nil
}

func lastUserText(msgs []wire.Message) *wire.Block {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			if msgs[i].Content[j].Type == wire.BlockText {
				return &msgs[i].Content[j]
			}
		}
	}
	return nil
}

func main() {}
