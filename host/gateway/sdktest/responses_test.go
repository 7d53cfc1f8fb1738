package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// newResponsesEnv is newEnv with a store for the Responses API's stored
// responses.
func newResponsesEnv(t *testing.T, st store.ResponseStore) *env {
	e := newEnv(t, "")
	if st == nil {
		st = &store.MemoryResponses{}
	}
	e.gw.Daemon.Gateway.Responses = st
	return e
}

func weatherToolResp() responses.ToolUnionParam {
	t := responses.ToolParamOfFunction("get_weather", weatherSchema, false)
	t.OfFunction.Description = openai.String("Get the weather forecast for a city")
	return t
}

func checkRespUsage(t *testing.T, u responses.ResponseUsage, in, out int64) {
	t.Helper()
	if u.InputTokens != in || u.OutputTokens != out || u.TotalTokens != in+out {
		t.Errorf("usage = in %d, out %d, total %d; want %d, %d, %d", u.InputTokens, u.OutputTokens, u.TotalTokens, in, out, in+out)
	}
}

// TestResponsesClientText: client.Responses.New with instructions and
// max_output_tokens, through both upstream dialects; the answer is a
// Responses object the SDK reads, and retrieve returns the same id.
func TestResponsesClientText(t *testing.T) {
	e := newResponsesEnv(t, nil)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const system, prompt = "Be brief.", `hello from openai-go responses: ünïcode, "quotes"`
			var raw *http.Response
			resp, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model:           u.model,
				Instructions:    openai.String(system),
				Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
				MaxOutputTokens: openai.Int(300),
			}, openaioption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			checkRouted(t, raw, u)
			if !strings.HasPrefix(raw.Header.Get("X-Bardo-Request-Id"), "req_") {
				t.Errorf("X-Bardo-Request-Id = %q", raw.Header.Get("X-Bardo-Request-Id"))
			}
			if !strings.HasPrefix(resp.ID, "resp_") || resp.Status != "completed" || resp.Model != u.model {
				t.Errorf("id %q status %q model %q", resp.ID, resp.Status, resp.Model)
			}
			if got := resp.OutputText(); got != "echo: "+prompt {
				t.Errorf("output text %q", got)
			}
			checkRespUsage(t, resp.Usage, tokens(system+prompt), tokens("echo: "+prompt))
			up := e.checkUpstreamPrompt(t, u, system, prompt, false)
			maxKey := "max_completion_tokens"
			if u.isAnthropic() {
				maxKey = "max_tokens"
			}
			if up[maxKey] != float64(300) {
				t.Errorf("upstream %s = %v, want 300", maxKey, up[maxKey])
			}
			got, err := e.oa.Responses.Get(ctx(t), resp.ID, responses.ResponseGetParams{})
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != resp.ID || got.OutputText() != resp.OutputText() {
				t.Errorf("retrieve returned %q %q, want %q %q", got.ID, got.OutputText(), resp.ID, resp.OutputText())
			}
		})
	}
}

// TestResponsesClientCachedUsage: cached prompt tokens reach
// input_tokens_details.cached_tokens, from either upstream.
func TestResponsesClientCachedUsage(t *testing.T) {
	e := newResponsesEnv(t, nil)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			e.fake.Script(fakeupstream.Cached(100, 0))
			resp, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a long prompt")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if c := resp.Usage.InputTokensDetails.CachedTokens; c != 100 || resp.Usage.InputTokens < 100 {
				t.Errorf("input %d cached %d, want cached 100 within input", resp.Usage.InputTokens, c)
			}
		})
	}
}

// TestResponsesClientToolRoundTrip: a function call comes back as a
// function_call item; the SDK's follow-up with function_call_output
// reaches the upstream as that dialect's tool result, ids matched.
func TestResponsesClientToolRoundTrip(t *testing.T) {
	e := newResponsesEnv(t, nil)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const prompt = "What is the weather in Paris?"
			e.fake.Script(fakeupstream.ToolCall("get_weather", weatherArgs))
			resp, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
				Tools: []responses.ToolUnionParam{weatherToolResp()},
			})
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseFunctionToolCall
			for _, it := range resp.Output {
				if it.Type == "function_call" {
					call = it.AsFunctionCall()
				}
			}
			if call.Name != "get_weather" || call.CallID == "" {
				t.Fatalf("no function_call in %s", resp.RawJSON())
			}
			jsonEqual(t, "arguments", call.Arguments, weatherArgs)

			out := responses.ResponseInputItemParamOfFunctionCallOutput(weatherResult)
			out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			resp2, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
					out,
				}},
				Tools: []responses.ToolUnionParam{weatherToolResp()},
				Store: openai.Bool(false),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp2.OutputText(); got != "echo: "+weatherResult {
				t.Errorf("follow-up text %q", got)
			}
			up := e.lastUpstream(t, u)
			msgs := arr(t, up["messages"], "messages")
			b, _ := json.Marshal(msgs)
			if !strings.Contains(string(b), call.CallID) || !strings.Contains(string(b), `temp_c`) {
				t.Errorf("upstream lacks the tool result for %s: %s", call.CallID, b)
			}
			if _, err := e.oa.Responses.Get(ctx(t), resp2.ID, responses.ResponseGetParams{}); err == nil {
				t.Error("a store:false response was stored")
			}
		})
	}
}

// TestResponsesClientChain: previous_response_id continues a stored
// conversation (the upstream sees every turn), input_items lists a turn's
// input, delete removes it, and another tenant never sees it.
func TestResponsesClientChain(t *testing.T) {
	e := newResponsesEnv(t, nil)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			first, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada.")},
			})
			if err != nil {
				t.Fatal(err)
			}
			second, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model:              u.model,
				PreviousResponseID: openai.String(first.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if second.PreviousResponseID != first.ID {
				t.Errorf("previous_response_id echoed %q, want %q", second.PreviousResponseID, first.ID)
			}
			checkConversation(t, e.lastUpstream(t, u), "My name is Ada.", "echo: My name is Ada.", "What is my name?")

			items, err := e.oa.Responses.InputItems.List(ctx(t), second.ID, responses.InputItemListParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(items.Data) != 1 || !strings.Contains(items.Data[0].RawJSON(), "What is my name?") || !strings.HasPrefix(items.Data[0].ID, "item_") {
				t.Errorf("input_items = %s", items.RawJSON())
			}
			if err := e.oa.Responses.Delete(ctx(t), second.ID); err != nil {
				t.Fatal(err)
			}
			_, err = e.oa.Responses.Get(ctx(t), second.ID, responses.ResponseGetParams{})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Errorf("get after delete: %v, want 404", err)
			}
		})
	}
}

// checkConversation checks the upstream's messages are user, assistant,
// user with these texts (either dialect).
func checkConversation(t *testing.T, up map[string]any, texts ...string) {
	t.Helper()
	msgs := arr(t, up["messages"], "messages")
	if len(msgs) != len(texts) {
		t.Fatalf("upstream got %d messages, want %d: %v", len(msgs), len(texts), msgs)
	}
	roles := []string{"user", "assistant", "user"}
	for i, m := range msgs {
		mm := obj(t, m, "message")
		if mm["role"] != roles[i%3] || anthropicText(t, mm["content"]) != texts[i] {
			t.Errorf("message %d = %v, want %s %q", i, mm, roles[i%3], texts[i])
		}
	}
}

// TestResponsesChainAcrossRestart: a response stored by one gateway is
// continued by another on the same database (a restart).
func TestResponsesChainAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sqlite.FileName)
	st1, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e1 := newResponsesEnv(t, st1)
	first, err := e1.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: openaiUp.model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	st1.Close()

	st2, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st2.Close() })
	e2 := newResponsesEnv(t, st2)
	if _, err := e2.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              anthropicUp.model,
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")},
	}); err != nil {
		t.Fatal(err)
	}
	checkConversation(t, e2.lastUpstream(t, anthropicUp), "My name is Ada.", "echo: My name is Ada.", "What is my name?")
}

// streamResp runs a streaming request and feeds every event to the SDK's
// ResponseAccumulator (through its server-event form, the same JSON).
func streamResp(t *testing.T, e *env, params responses.ResponseNewParams) (acc *responses.ResponseAccumulator, types []string, final responses.Response, err error) {
	t.Helper()
	acc = &responses.ResponseAccumulator{}
	stream := e.oa.Responses.NewStreaming(ctx(t), params)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		var se responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &se); err != nil {
			t.Fatalf("event %s: %v", ev.RawJSON(), err)
		}
		if err := acc.AddEvent(se); err != nil && ev.Type != "error" {
			t.Errorf("the accumulator rejected %s: %v", ev.RawJSON(), err)
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response
		}
	}
	return acc, types, final, stream.Err()
}

// TestResponsesClientStream: NewStreaming through both upstream dialects,
// text and a function call, accumulated by the SDK; the completed event
// carries usage, and the streamed answer is stored under its id.
func TestResponsesClientStream(t *testing.T) {
	e := newResponsesEnv(t, nil)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const prompt = "one two three four five six seven eight nine ten, ünïcode"
			acc, types, final, err := streamResp(t, e, responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
			})
			if err != nil {
				t.Fatal(err)
			}
			want := "echo: " + prompt
			snap := acc.Snapshot()
			if snap.TerminalEvent != "response.completed" || snap.OutputText() != want {
				t.Errorf("accumulated %q (terminal %q), want %q; events %v", snap.OutputText(), snap.TerminalEvent, want, types)
			}
			full, err := acc.ReconstructedResponse()
			if err != nil {
				t.Fatal(err)
			}
			if full.OutputText() != want || full.ID != final.ID {
				t.Errorf("reconstructed %q %q", full.ID, full.OutputText())
			}
			checkRespUsage(t, final.Usage, tokens(prompt), tokens(want))
			for _, w := range []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"} {
				if !containsStr(types, w) {
					t.Errorf("no %s event in %v", w, types)
				}
			}
			got, err := e.oa.Responses.Get(ctx(t), final.ID, responses.ResponseGetParams{})
			if err != nil {
				t.Fatalf("the streamed response was not stored: %v", err)
			}
			if got.OutputText() != want {
				t.Errorf("stored %q", got.OutputText())
			}

			e.fake.Script(fakeupstream.ToolCall("get_weather", weatherArgs))
			acc, types, _, err = streamResp(t, e, responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather?")},
				Tools: []responses.ToolUnionParam{weatherToolResp()},
			})
			if err != nil {
				t.Fatal(err)
			}
			snap = acc.Snapshot()
			var call *responses.ResponseAccumulatedOutput
			for i := range snap.Output {
				if snap.Output[i].Type == "function_call" {
					call = &snap.Output[i]
				}
			}
			if call == nil || call.Name != "get_weather" || call.CallID == "" {
				t.Fatalf("no function call accumulated: %+v; events %v", snap.Output, types)
			}
			jsonEqual(t, "streamed arguments", call.Arguments, weatherArgs)
			if !containsStr(types, "response.function_call_arguments.delta") || !containsStr(types, "response.function_call_arguments.done") {
				t.Errorf("events %v", types)
			}
		})
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestResponsesClientCutStream: an upstream stream that breaks off ends
// the caller's stream with an error event and response.failed.
func TestResponsesClientCutStream(t *testing.T) {
	e := newResponsesEnv(t, nil)
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			e.fake.Script(fakeupstream.CutAfter(3))
			_, types, final, _ := streamResp(t, e, responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("one two three four five six seven eight nine ten eleven")},
			})
			if !containsStr(types, "error") || types[len(types)-1] != "response.failed" || final.Status != "failed" {
				t.Errorf("events %v, final status %q", types, final.Status)
			}
			if containsStr(types, "response.completed") {
				t.Errorf("a cut stream completed: %v", types)
			}
		})
	}
}

// TestResponsesClientStructured: text.format json_schema reaches an OpenAI
// upstream as response_format and an Anthropic one as a forced tool; the
// answer is JSON text either way.
func TestResponsesClientStructured(t *testing.T) {
	e := newResponsesEnv(t, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			if u.isAnthropic() {
				e.fake.Script(fakeupstream.ToolCall("city_info", `{"city":"Paris"}`))
			} else {
				e.fake.Script(fakeupstream.Reply(`{"city":"Paris"}`))
			}
			var raw *http.Response
			resp, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
				Model: u.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Which city?")},
				Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
					OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "city_info", Schema: schema, Strict: openai.Bool(true)},
				}},
			}, openaioption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, "structured output", resp.OutputText(), `{"city":"Paris"}`)
			if d := raw.Header.Get("X-Bardo-Degraded"); strings.Contains(d, "text") {
				t.Errorf("X-Bardo-Degraded = %q: text.format was dropped", d)
			}
			up := e.lastUpstream(t, u)
			if u.isAnthropic() {
				tc := obj(t, up["tool_choice"], "tool_choice")
				if tc["type"] != "tool" || tc["name"] != "city_info" {
					t.Errorf("tool_choice = %v", tc)
				}
				return
			}
			rf := obj(t, up["response_format"], "response_format")
			js := obj(t, rf["json_schema"], "json_schema")
			if rf["type"] != "json_schema" || js["name"] != "city_info" || js["strict"] != true {
				t.Errorf("response_format = %v", rf)
			}
			jsonEqual(t, "schema", js["schema"], schema)
		})
	}
}

// TestResponsesClientErrors: a built-in tool is refused with a 400 naming
// it; an upstream's 429 reaches the SDK as a 429; a missing
// previous_response_id is a 400; every answer carries a request id, an
// unknown path's 404 too.
func TestResponsesClientErrors(t *testing.T) {
	e := newResponsesEnv(t, nil)
	// A hosted tool the model may use (Codex always offers web_search) is
	// dropped for a Chat or Anthropic upstream, and named; forcing one
	// cannot be served.
	webSearch := responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}
	for _, u := range upstreams {
		var raw *http.Response
		_, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
			Model: u.model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("search the web")},
			Tools: []responses.ToolUnionParam{webSearch, weatherToolResp()},
		}, openaioption.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("%s: hosted tool offered: %v", u.name, err)
		}
		if d := raw.Header.Get("X-Bardo-Degraded"); !strings.Contains(d, "tools[web_search]") {
			t.Errorf("%s: X-Bardo-Degraded = %q, want the dropped web_search named", u.name, d)
		}
		if b, _ := json.Marshal(e.lastUpstream(t, u)["tools"]); strings.Contains(string(b), "web_search") || !strings.Contains(string(b), "get_weather") {
			t.Errorf("%s: upstream tools %s", u.name, b)
		}
	}
	var raw *http.Response
	_, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:      openaiUp.model,
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String("search the web")},
		Tools:      []responses.ToolUnionParam{webSearch},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfHostedTool: &responses.ToolChoiceTypesParam{Type: responses.ToolChoiceTypesTypeWebSearchPreview}},
	}, openaioption.WithResponseInto(&raw))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "web_search") {
		t.Errorf("forced hosted tool: %v", err)
	}
	if raw == nil || raw.Header.Get("X-Bardo-Request-Id") == "" {
		t.Error("the 400 has no X-Bardo-Request-Id")
	}

	e.fake.Script(fakeupstream.Fail(400))
	_, err = e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: openaiUp.model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
	})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("upstream 400: %v", err)
	}

	_, err = e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              openaiUp.model,
		PreviousResponseID: openai.String("resp_doesnotexist"),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
	})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "resp_doesnotexist") {
		t.Errorf("unknown previous_response_id: %v", err)
	}

	res, err := http.Post(e.gw.URL+"/v1/no-such-endpoint", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 404 || !strings.HasPrefix(res.Header.Get("X-Bardo-Request-Id"), "req_") {
		t.Errorf("404: status %d, request id %q", res.StatusCode, res.Header.Get("X-Bardo-Request-Id"))
	}
}

// TestResponsesClientReasoningAcrossTurns: an Anthropic upstream's signed
// thinking comes out as a reasoning item (summary and encrypted_content)
// and, chained with previous_response_id, goes back to Anthropic with its
// signature; a Chat upstream cannot take it and the answer says so.
func TestResponsesClientReasoningAcrossTurns(t *testing.T) {
	e := newResponsesEnv(t, nil)
	e.fake.Script(fakeupstream.Thinking())
	first, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: anthropicUp.model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Think first.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rs responses.ResponseReasoningItem
	for _, it := range first.Output {
		if it.Type == "reasoning" {
			rs = it.AsReasoning()
		}
	}
	if len(rs.Summary) != 1 || rs.EncryptedContent == "" || rs.EncryptedContent != fakeSignature(rs.Summary[0].Text) {
		t.Fatalf("reasoning item %s", first.RawJSON())
	}
	if _, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              anthropicUp.model,
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("And now?")},
	}); err != nil {
		t.Fatal(err)
	}
	msgs := arr(t, e.lastUpstream(t, anthropicUp)["messages"], "messages")
	asst := arr(t, obj(t, msgs[1], "assistant")["content"], "assistant content")
	th := obj(t, asst[0], "thinking block")
	if th["type"] != "thinking" || th["signature"] != rs.EncryptedContent || th["thinking"] != rs.Summary[0].Text {
		t.Errorf("thinking sent back = %v", th)
	}

	var raw *http.Response
	if _, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              openaiUp.model,
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("And now?")},
		Tools:              []responses.ToolUnionParam{responses.ToolParamOfFunction("f", weatherSchema, true)},
	}, openaioption.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if d := raw.Header.Get("X-Bardo-Degraded"); !strings.Contains(d, "reasoning-dropped") || strings.Contains(d, "strict") {
		t.Errorf("X-Bardo-Degraded = %q, want reasoning-dropped and strict kept", d)
	}
	fn := obj(t, obj(t, arr(t, e.lastUpstream(t, openaiUp)["tools"], "tools")[0], "tool")["function"], "function")
	if fn["strict"] != true {
		t.Errorf("strict lost on the way to Chat: %v", fn)
	}
}

// respUp is a Responses-speaking upstream (openai-compatible with api =
// "responses") on the same fake.
var respUp = upstream{"responses-upstream", "o5-mini", "resp", "/v1/responses"}

// newResponsesUpstreamEnv is newResponsesEnv with a third provider that
// speaks the Responses API.
func newResponsesUpstreamEnv(t *testing.T) *env {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	toml := pipelineTOML(fake, "") + `
[[provider]]
name = "resp"
plugin = "openai-compatible.wasm"
base_url = "` + fake.URL() + `/v1"
credential = "env:UP_KEY"
models = ["o5-*"]
trusted = true
[provider.config]
api = "responses"
`
	gw := testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	gw.Daemon.Gateway.Responses = &store.MemoryResponses{}
	e := &env{gw: gw, fake: fake}
	e.oa = openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(clientKey),
		openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(requestTimeout))
	e.an = anthropic.NewClient(anthropicoption.WithoutEnvironmentDefaults(), anthropicoption.WithBaseURL(gw.URL),
		anthropicoption.WithAPIKey(clientKey), anthropicoption.WithMaxRetries(0), anthropicoption.WithRequestTimeout(requestTimeout))
	return e
}

// TestResponsesClientResponsesUpstream: a Responses-speaking upstream gets
// the caller's bytes untouched when nothing changed them, the whole
// conversation when the caller chains, and serves Chat and Messages
// callers through the codec's upstream side, streamed too.
func TestResponsesClientResponsesUpstream(t *testing.T) {
	e := newResponsesUpstreamEnv(t)
	var sent []byte
	var raw *http.Response
	first, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: respUp.model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada.")},
		Tools: []responses.ToolUnionParam{weatherToolResp()},
	}, captureOA(&sent), openaioption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	checkRouted(t, raw, respUp)
	if got := e.fake.Last(); got.Path != respUp.path || string(got.Body) != string(sent) {
		t.Errorf("upstream got %s %s, want the SDK's bytes %s", got.Path, got.Body, sent)
	}
	if first.OutputText() != "echo: My name is Ada." {
		t.Errorf("text %q", first.OutputText())
	}
	second, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              respUp.model,
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id %q", second.PreviousResponseID)
	}
	up := e.lastUpstream(t, respUp)
	if _, ok := up["previous_response_id"]; ok {
		t.Errorf("previous_response_id reached the upstream: %v", up)
	}
	if in := arr(t, up["input"], "input"); len(in) != 3 {
		t.Errorf("upstream input = %v, want the stored turn and the new one", in)
	}

	t.Run("tool-and-reasoning", func(t *testing.T) {
		// A function call and signed reasoning from the Responses upstream,
		// then the result chained with previous_response_id: the stored
		// items go back to the upstream as it sent them.
		e.fake.Script(fakeupstream.Combine(fakeupstream.Thinking(), fakeupstream.ToolCall("get_weather", weatherArgs)))
		r, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
			Model: respUp.model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather?")},
			Tools: []responses.ToolUnionParam{weatherToolResp()},
		})
		if err != nil {
			t.Fatal(err)
		}
		var call responses.ResponseFunctionToolCall
		var rs responses.ResponseReasoningItem
		for _, it := range r.Output {
			switch it.Type {
			case "function_call":
				call = it.AsFunctionCall()
			case "reasoning":
				rs = it.AsReasoning()
			}
		}
		if call.Name != "get_weather" || rs.EncryptedContent == "" {
			t.Fatalf("output %s", r.RawJSON())
		}
		out := responses.ResponseInputItemParamOfFunctionCallOutput(weatherResult)
		out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
		r2, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
			Model:              respUp.model,
			PreviousResponseID: openai.String(r.ID),
			Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}},
			Tools:              []responses.ToolUnionParam{weatherToolResp()},
			Store:              openai.Bool(false),
		})
		if err != nil {
			t.Fatal(err)
		}
		if r2.OutputText() != "echo: "+weatherResult {
			t.Errorf("tool result turn %q", r2.OutputText())
		}
		body := string(e.fake.Last().Body)
		if !strings.Contains(body, `"store":false`) {
			t.Errorf("the caller's store:false did not reach the Responses upstream: %s", body)
		}
		if !strings.Contains(body, `"encrypted_content":"`+rs.EncryptedContent+`"`) || !strings.Contains(body, call.CallID) {
			t.Errorf("the upstream did not get its reasoning and call back: %s", body)
		}
	})
	t.Run("responses-stream", func(t *testing.T) {
		// A relayed (passthrough) Responses stream ends with
		// response.completed, not [DONE] or message_stop: answer.go's
		// isEndMarker must know it, or the relay reports the stream cut.
		acc, types, _, err := streamResp(t, e, responses.ResponseNewParams{
			Model: respUp.model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("one two three four five")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if s := acc.Snapshot(); s.OutputText() != "echo: one two three four five" || s.TerminalEvent != "response.completed" {
			t.Errorf("accumulated %q terminal %q; events %v", s.OutputText(), s.TerminalEvent, types)
		}
	})
	t.Run("chat-caller", func(t *testing.T) {
		resp, err := e.oa.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
			Model:    respUp.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("hi chat")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != "echo: hi chat" {
			t.Errorf("chat answer %q", resp.Choices[0].Message.Content)
		}
		up := e.lastUpstream(t, respUp)
		if _, ok := up["messages"]; ok {
			t.Errorf("a Chat body reached the Responses upstream: %v", up)
		}
		acc, _, _, _, err := streamOA(t, e, openai.ChatCompletionNewParams{
			Model:    respUp.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("streamed chat")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "echo: streamed chat" {
			t.Errorf("streamed chat %q", got)
		}
	})
	t.Run("messages-caller", func(t *testing.T) {
		msg, err := e.an.Messages.New(ctx(t), anthropic.MessageNewParams{
			Model:     anthropic.Model(respUp.model),
			MaxTokens: 100,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi messages"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != "echo: hi messages" {
			t.Errorf("messages answer %+v", msg.Content)
		}
	})
}

// TestResponsesChainAcrossDaemonRestart: the daemon keeps stored responses
// in its [storage] SQLite file, written behind the request and flushed when
// it closes; a new gateway on the same data directory continues the chain.
func TestResponsesChainAcrossDaemonRestart(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	toml := "[storage]\ndata_dir = \"" + t.TempDir() + "\"\n" + pipelineTOML(fake, "")
	start := func() (*testgateway.Gateway, openai.Client) {
		gw := testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
		return gw, openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(clientKey),
			openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(requestTimeout))
	}
	gw1, c1 := start()
	first, err := c1.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: openaiUp.model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	gw1.Server.Shutdown(5 * time.Second)
	gw1.Daemon.Close()

	_, c2 := start()
	second, err := c2.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              anthropicUp.model,
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")},
	})
	if err != nil {
		t.Fatalf("chaining after the restart: %v", err)
	}
	checkConversation(t, lastBody(t, fake, anthropicUp), "My name is Ada.", "echo: My name is Ada.", "What is my name?")
	if got, err := c2.Responses.Get(ctx(t), second.ID, responses.ResponseGetParams{}); err != nil || got.ID != second.ID {
		t.Errorf("retrieve after the restart: %v", err)
	}
}

// lastBody is env.lastUpstream for a bare fake.
func lastBody(t *testing.T, fake *fakeupstream.Server, u upstream) map[string]any {
	e := &env{fake: fake}
	return e.lastUpstream(t, u)
}

// TestResponsesClientGeminiUpstream: the Responses API served by the
// gemini adapter (which builds its own body from the canonical request):
// text, a function call and its result, and a stream the SDK accumulates.
func TestResponsesClientGeminiUpstream(t *testing.T) {
	const geminiKey = "AIza-sdktest-secret-0123456789"
	fake := fakeupstream.New(fakeupstream.WithAPIKey(geminiKey))
	t.Cleanup(fake.Close)
	toml := `
[[provider]]
name = "gemini"
plugin = "` + wasmbuild.MustBuild(t, "plugins/providers/gemini") + `"
base_url = "` + fake.URL() + `"
credential = "env:GEMINI_KEY"
models = ["gemini-*"]
trusted = true
`
	gw := testgateway.Start(t, toml, testgateway.Options{Env: map[string]string{"GEMINI_KEY": geminiKey}})
	gw.Daemon.Gateway.Responses = &store.MemoryResponses{}
	e := &env{gw: gw, fake: fake, oa: openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(clientKey),
		openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(requestTimeout))}
	const model = "gemini-2.5-flash"
	resp, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: model, Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello gemini")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "echo: hello gemini" || resp.Usage.OutputTokens == 0 {
		t.Errorf("%s", resp.RawJSON())
	}

	fake.Script(fakeupstream.ToolCall("get_weather", weatherArgs))
	resp, err = e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Paris?")},
		Tools: []responses.ToolUnionParam{weatherToolResp()},
	})
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseFunctionToolCall
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if call.Name != "get_weather" {
		t.Fatalf("no function call: %s", resp.RawJSON())
	}
	jsonEqual(t, "gemini arguments", call.Arguments, weatherArgs)
	out := responses.ResponseInputItemParamOfFunctionCallOutput(weatherResult)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	resp, err = e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:              model,
		PreviousResponseID: openai.String(resp.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}},
		Tools:              []responses.ToolUnionParam{weatherToolResp()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "echo: "+weatherResult {
		t.Errorf("tool result turn: %q", resp.OutputText())
	}

	// text.format and a hosted tool: Gemini gets a JSON response schema,
	// and no function for web_search (named as dropped).
	var raw *http.Response
	if _, err := e.oa.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("which city?")},
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "city", Schema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		}},
	}, openaioption.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if d := raw.Header.Get("X-Bardo-Degraded"); !strings.Contains(d, "hosted-tool-dropped:web_search") {
		t.Errorf("X-Bardo-Degraded = %q", d)
	}
	up := e.lastUpstream(t, upstream{path: fake.Last().Path})
	if gc, _ := up["generationConfig"].(map[string]any); gc["responseMimeType"] != "application/json" || up["tools"] != nil {
		t.Errorf("gemini body: %v", up)
	}

	acc, types, _, err := streamResp(t, e, responses.ResponseNewParams{
		Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("one two three four five six")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := acc.Snapshot(); s.OutputText() != "echo: one two three four five six" || s.TerminalEvent != "response.completed" {
		t.Errorf("stream %q %q: %v", s.OutputText(), s.TerminalEvent, types)
	}
}

// TestResponsesStoredPerAccount: in keys mode a stored response is its
// account's — another account's key can neither read, delete, list nor
// chain from it, and no key reads nothing.
func TestResponsesStoredPerAccount(t *testing.T) {
	dataDir := t.TempDir()
	c := context.Background()
	s, err := sqlite.Open(c, filepath.Join(dataDir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := auth.LoadSecret(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(s, secret, auth.Options{Accounts: s})
	keyOf := func(acct string) string {
		if _, err := s.CreateAccount(c, store.Account{ID: acct, Name: acct, Tier: store.TierFree}); err != nil {
			t.Fatal(err)
		}
		token, _, err := a.Create(c, acct, auth.KeySpec{Name: acct})
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	keyA, keyB := keyOf("acct_a"), keyOf("acct_b")
	s.Close()

	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, keysTOML(dataDir)+pipelineTOML(fake, ""), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	client := func(key string) openai.Client {
		return openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(key),
			openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(requestTimeout))
	}
	ca, cb := client(keyA), client(keyB)
	first, err := ca.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: openaiUp.model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("account A's secret plan")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ca.Responses.Get(ctx(t), first.ID, responses.ResponseGetParams{}); err != nil || got.ID != first.ID {
		t.Fatalf("the owner cannot read its response: %v", err)
	}
	status := func(err error) int {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return apiErr.StatusCode
		}
		return 0
	}
	if _, err := cb.Responses.Get(ctx(t), first.ID, responses.ResponseGetParams{}); status(err) != 404 {
		t.Errorf("another account read it: %v", err)
	}
	if _, err := cb.Responses.InputItems.List(ctx(t), first.ID, responses.InputItemListParams{}); status(err) != 404 {
		t.Errorf("another account listed its input: %v", err)
	}
	if err := cb.Responses.Delete(ctx(t), first.ID); status(err) != 404 {
		t.Errorf("another account deleted it: %v", err)
	}
	if _, err := cb.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: openaiUp.model, PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("what was the plan?")},
	}); status(err) != 400 {
		t.Errorf("another account chained from it: %v", err)
	}
	anon := client("")
	if _, err := anon.Responses.Get(ctx(t), first.ID, responses.ResponseGetParams{}); status(err) != 401 {
		t.Errorf("no key: %v", err)
	}
	if _, err := ca.Responses.Get(ctx(t), first.ID, responses.ResponseGetParams{}); err != nil {
		t.Errorf("the owner lost it: %v", err)
	}
}
