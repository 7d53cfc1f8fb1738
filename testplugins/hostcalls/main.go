// Command hostcalls is a well-behaved layer that exercises every ABI v1 host
// function, so the native host, the edge JS host and the test harness can all be
// checked against the same plugin.
//
// On each request it:
//   - reads its config ({"suffix": "..."}) once at Init,
//   - counts requests per tenant in kv ("count"), with a TTL,
//   - appends the suffix and the count to the last user text block,
//   - deletes kv key "count" when the text asks it to ("reset"),
//   - panics (a trap) when the text says "trap!",
//   - logs, reads the clock and bumps a counter metric,
//   - adds an X-Bardo-Hostcalls header with the count,
//   - counts requests across tenants in the shared kv ("X-Bardo-Hostcalls-Shared"),
//   - hashes the text with the host's SHA-256 ("X-Bardo-Hostcalls-Hash", 8 hex digits),
//   - counts matches of a host regex set for digits and e-mail addresses
//     ("X-Bardo-Hostcalls-Matches": "<digits>,<emails>").
package main

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

type config struct {
	Suffix string `json:"suffix"`
}

var (
	cfg      config
	patterns *plugin.RegexSet
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "hostcalls",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		Writes:  wire.PartMessages,
		Init: func() error {
			cfg = config{Suffix: " [hostcalls]"}
			var err error
			if patterns, err = plugin.CompileRegexSet([]string{`[0-9]+`, `[a-z]+@[a-z]+\.[a-z]+`}); err != nil {
				return err
			}
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
	if strings.Contains(last.Text, "trap!") {
		// Lets hosts' tests make a well-behaved plugin trap on demand.
		panic("hostcalls: trap requested")
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
	shared := 0
	if v, ok := plugin.KVGetShared("count"); ok {
		shared, _ = strconv.Atoi(string(v))
	}
	shared++
	if err := plugin.KVPutShared("count", []byte(strconv.Itoa(shared)), time.Hour); err != nil {
		return err
	}
	sum := plugin.SHA256([]byte(last.Text))
	var counts [2]int
	for _, m := range patterns.FindAll(last.Text) {
		counts[m.Pattern]++
	}
	res.Headers = append(res.Headers,
		wire.KV{Key: "X-Bardo-Hostcalls-Shared", Value: strconv.Itoa(shared)},
		wire.KV{Key: "X-Bardo-Hostcalls-Hash", Value: hex.EncodeToString(sum[:4])},
		wire.KV{Key: "X-Bardo-Hostcalls-Matches", Value: strconv.Itoa(counts[0]) + "," + strconv.Itoa(counts[1])})

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
