// Command run is a module of three request-phase layers for the tests of
// request runs (ABI v1.7, bardo_on_request_run). Each counts its calls in
// its own kv and reports what it saw in a header, so a test can compare a
// run with the layers called one by one:
//
//   - "first" reads the system prompt and messages; it notes the last text as an
//     annotation, fails when the text says "fail", and, when it says
//     "edit", edits its input in place and patches the messages (as pii
//     does), so the layers after it must see the patched request;
//   - "patch" reads the model and messages and writes the model: on
//     "patch" it appends "+p" to it;
//   - "last" reads the model and messages (not the system prompt): its
//     header is the model, the text, the system blocks and annotations it
//     saw; on "trap" it panics (the guest traps), on "spin" it loops
//     until the host stops it.
package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func main() {}

var spins int

func text(r *wire.Request) string {
	if len(r.Messages) == 0 || len(r.Messages[len(r.Messages)-1].Content) == 0 {
		return ""
	}
	m := r.Messages[len(r.Messages)-1]
	return m.Content[len(m.Content)-1].Text
}

// count adds one to the layer's kv counter and returns it.
func count() string {
	n := 0
	if v, ok := plugin.KVGet("calls"); ok {
		n, _ = strconv.Atoi(string(v))
	}
	n++
	_ = plugin.KVPut("calls", []byte(strconv.Itoa(n)), 0)
	return strconv.Itoa(n)
}

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:   "first",
		Phases: wire.PhaseRequest,
		Reads:  wire.PartSystem | wire.PartMessages, // so a run carries the system prompt
		Writes: wire.PartMessages,
		OnRequest: func(in *wire.LayerRequest, res *wire.LayerResult) error {
			t := text(&in.Request)
			res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-First", Value: count()})
			if strings.Contains(t, "fail") {
				return errors.New("first fails on request")
			}
			res.Annotations = append(res.Annotations, wire.KV{Key: "first", Value: t})
			if strings.Contains(t, "edit") {
				m := &in.Request.Messages[len(in.Request.Messages)-1]
				m.Content[len(m.Content)-1].Text = "edited"
				res.Patched = wire.PartMessages
				res.Request.Messages = in.Request.Messages
			}
			return nil
		},
	})
	plugin.RegisterLayer(plugin.Layer{
		Name:   "patch",
		Phases: wire.PhaseRequest,
		Reads:  wire.PartModel | wire.PartMessages,
		Writes: wire.PartModel,
		OnRequest: func(in *wire.LayerRequest, res *wire.LayerResult) error {
			res.Headers = append(res.Headers, wire.KV{Key: "X-Bardo-Patch", Value: count()})
			if strings.Contains(text(&in.Request), "patch") {
				res.Patched = wire.PartModel
				res.Request.Model = in.Request.Model + "+p"
			}
			res.SkipAnswer = true
			return nil
		},
	})
	plugin.RegisterLayer(plugin.Layer{
		Name:   "last",
		Phases: wire.PhaseRequest,
		Reads:  wire.PartModel | wire.PartMessages,
		OnRequest: func(in *wire.LayerRequest, res *wire.LayerResult) error {
			t := text(&in.Request)
			if strings.Contains(t, "trap") {
				panic("last traps on request")
			}
			for strings.Contains(t, "spin") {
				spins++ // until the host's timeout stops it
			}
			var ann []string
			for _, kv := range in.Meta.Annotations {
				ann = append(ann, kv.Key+"="+kv.Value)
			}
			res.Headers = append(res.Headers,
				wire.KV{Key: "X-Bardo-Last", Value: count()},
				wire.KV{Key: "X-Bardo-Saw", Value: in.Request.Model + "|" + t + "|" + strconv.Itoa(len(in.Request.System)) + "|" + strings.Join(ann, ",")})
			return nil
		},
	})
}
