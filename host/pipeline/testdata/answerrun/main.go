// Command answerrun is a module of three answer-phase layers for the tests
// of answer runs (ABI v1.8, bardo_on_response_run): "one", "two" and
// "three", alike but for their names. Each watches streams (WatchStream),
// counts its on_response calls in its own kv and reports what it saw, so
// a test can compare a run with the layers called one by one. For a layer
// named N:
//
//   - its request phase notes the annotation N=req, and says SkipAnswer
//     when the request's last text holds "skip-N";
//   - its on_response sets the headers X-Bardo-N (its call count) and
//     X-Bardo-N-Saw (the answer's text, stop reason and the annotations
//     it saw), and keeps the latter under the kv key "saw"; then, as the
//     answer's text holds "fail-N", "trap-N", "spin-N" or "replace-N", it
//     fails, panics (the guest traps), loops until the host stops it, or
//     replaces the answer with its text followed by "+N" (a new block: no
//     edit in place);
//   - its on_stream fails: a host that calls it for a watcher is seen.
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

func lastText(r *wire.Request) string {
	if len(r.Messages) == 0 || len(r.Messages[len(r.Messages)-1].Content) == 0 {
		return ""
	}
	m := r.Messages[len(r.Messages)-1]
	return m.Content[len(m.Content)-1].Text
}

func answerText(r *wire.Response) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
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

func register(name string) {
	plugin.RegisterLayer(plugin.Layer{
		Name:   name,
		Phases: wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		Reads:  wire.PartMessages,
		OnRequest: func(in *wire.LayerRequest, res *wire.LayerResult) error {
			res.Annotations = append(res.Annotations, wire.KV{Key: name, Value: "req"})
			res.SkipAnswer = strings.Contains(lastText(&in.Request), "skip-"+name)
			return nil
		},
		OnResponse: func(in *wire.LayerResponse, res *wire.LayerResponseResult) error {
			t := answerText(&in.Response)
			var ann []string
			for _, kv := range in.Meta.Annotations {
				ann = append(ann, kv.Key+"="+kv.Value)
			}
			saw := t + "|" + in.Response.StopReason + "|" + strings.Join(ann, ",")
			res.Headers = append(res.Headers,
				wire.KV{Key: "X-Bardo-" + name, Value: count()},
				wire.KV{Key: "X-Bardo-" + name + "-Saw", Value: saw})
			if err := plugin.KVPut("saw", []byte(saw), 0); err != nil {
				return err
			}
			switch {
			case strings.Contains(t, "fail-"+name):
				return errors.New(name + " fails on response")
			case strings.Contains(t, "trap-"+name):
				panic(name + " traps on response")
			case strings.Contains(t, "spin-"+name):
				for {
					spins++ // until the host's timeout stops it
				}
			case strings.Contains(t, "replace-"+name):
				res.Replaced = true
				res.Response = in.Response
				res.Response.Content = []wire.Block{{Type: wire.BlockText, Text: t + "+" + name}}
			}
			return nil
		},
		OnStream: func(*wire.LayerStream, *wire.LayerStreamResult) error {
			return errors.New("on_stream called for a watcher")
		},
		WatchStream: true,
	})
}

func init() {
	for _, name := range []string{"one", "two", "three"} {
		register(name)
	}
}
