// Command services is a test layer that exercises the ABI v1.2 service host
// functions, so the host's tests can check them under the real runtime.
//
// The last user message is a command:
//
//	remember <text>   embed text, store it (tenant scope) with id = text
//	recall <text>     embed text, search the tenant's vectors (k=3, min 0.5)
//	share <text>      like remember, in the plugin's shared scope
//	recall-shared <t> like recall, in the shared scope
//	forget <text>     delete the entry with id = text
//	classify <text>   classify text with model "injection"
//	summarise <text>  an internal completion (model from the config's "model")
//	embed-missing     embed with a model the host does not have
//
// Results go to X-Services-* headers; an error goes to X-Services-Error.
package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

var model string

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "services",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		Reads:   wire.PartMessages,
		Init: func() error {
			var c struct {
				Model string `json:"model"`
			}
			if err := plugin.DecodeConfig(&c); err != nil {
				return err
			}
			model = c.Model
			return nil
		},
		OnRequest: onRequest,
	})
}

func main() {}

func header(res *wire.LayerResult, k, v string) {
	res.Headers = append(res.Headers, wire.KV{Key: "X-Services-" + k, Value: v})
}

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	msgs := req.Request.Messages
	if len(msgs) == 0 || len(msgs[len(msgs)-1].Content) == 0 {
		return nil
	}
	cmd, arg, _ := strings.Cut(msgs[len(msgs)-1].Content[0].Text, " ")
	fail := func(err error) error {
		header(res, "Error", err.Error())
		return nil
	}
	scope := plugin.TenantScope
	switch cmd {
	case "share", "recall-shared":
		scope = plugin.SharedScope
	}
	switch cmd {
	case "remember", "share":
		v, err := plugin.Embed("embed", []string{arg})
		if err != nil {
			return fail(err)
		}
		if err := plugin.VectorInsert(scope, arg, v[0], time.Minute, []string{"t"}, []byte("payload:"+arg)); err != nil {
			return fail(err)
		}
		header(res, "Dim", strconv.Itoa(len(v[0])))
	case "recall", "recall-shared":
		v, err := plugin.Embed("embed", []string{arg})
		if err != nil {
			return fail(err)
		}
		ms, err := plugin.VectorSearch(scope, v[0], 3, 0.5)
		if err != nil {
			return fail(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, string(m.Payload)+"@"+strconv.FormatFloat(float64(m.Score), 'f', 3, 32))
		}
		header(res, "Matches", strings.Join(got, ";"))
	case "forget":
		n, err := plugin.VectorDelete(plugin.TenantScope, arg, "")
		if err != nil {
			return fail(err)
		}
		header(res, "Deleted", strconv.Itoa(n))
	case "classify":
		labels, scores, err := plugin.Classify("injection", []string{arg})
		if err != nil {
			return fail(err)
		}
		var parts []string
		for i, l := range labels {
			parts = append(parts, l+"="+strconv.FormatFloat(float64(scores[0][i]), 'f', 3, 32))
		}
		header(res, "Scores", strings.Join(parts, ","))
	case "summarise":
		r, err := plugin.Complete(plugin.Completion{Subsystem: "session_compact", Model: model,
			Messages: []plugin.CompletionMessage{{Role: "user", Text: arg}}, MaxTokens: 50})
		if err != nil {
			return fail(err)
		}
		header(res, "Summary", r.Text)
		header(res, "Summary-Provider", r.Provider)
	case "embed-missing":
		if _, err := plugin.Embed("no-such-model", []string{"x"}); err != nil {
			return fail(err)
		}
	}
	return nil
}
