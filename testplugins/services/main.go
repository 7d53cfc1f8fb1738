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
//	summarise-v0 <t>  the same in the complete service's original, text-only
//	                  wire form (as a plugin built before CompleteRequest sends it)
//	call-tool <text>  an internal completion of a whole request with a tool, a
//	                  tool round trip in its history and tool_choice "any"
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
	case "summarise-v0":
		text, provider, err := completeV0(model, arg)
		if err != nil {
			return fail(err)
		}
		header(res, "Summary", text)
		header(res, "Summary-Provider", provider)
	case "call-tool":
		r, err := plugin.CompleteRequest("tool_meta", &wire.Request{
			Model:  model,
			System: []wire.Block{{Type: wire.BlockText, Text: "Use the tools."}},
			Messages: []wire.Message{
				{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "what time is it?"}}},
				{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "call_1", Name: "get_time", Data: []byte(`{}`)}}},
				{Role: "user", Content: []wire.Block{
					{Type: wire.BlockToolResult, ID: "call_1", Text: "12:00"},
					{Type: wire.BlockText, Text: arg},
				}},
			},
			Tools: []wire.Tool{
				{Name: "get_time", Description: "The time.", Schema: []byte(`{"type":"object"}`)},
				{Name: "get_weather", Description: "The weather in a city.", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			},
			ToolChoice: []byte(`{"type":"any"}`),
			Params:     wire.Params{Set: wire.HasMaxTokens | wire.HasTemperature, MaxTokens: 77, Temperature: 0.5},
		})
		if err != nil {
			return fail(err)
		}
		for _, b := range r.Content {
			switch b.Type {
			case wire.BlockText:
				header(res, "Text", b.Text)
			case wire.BlockToolUse:
				header(res, "Call", b.ID+" "+b.Name+" "+string(b.Data))
			}
		}
		header(res, "Stop", r.StopReason)
		header(res, "Usage", strconv.FormatInt(r.Usage.InputTokens, 10)+"/"+strconv.FormatInt(r.Usage.OutputTokens, 10))
	case "embed-missing":
		if _, err := plugin.Embed("no-such-model", []string{"x"}); err != nil {
			return fail(err)
		}
	}
	return nil
}
