package sdktest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
)

// captureOA records the body the OpenAI SDK sends.
func captureOA(dst *[]byte) openaioption.RequestOption {
	return openaioption.WithMiddleware(func(req *http.Request, next openaioption.MiddlewareNext) (*http.Response, error) {
		if req.Body != nil {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			*dst = b
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		return next(req)
	})
}

func weatherToolOA() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Get the weather forecast for a city"),
		Parameters:  openai.FunctionParameters(weatherSchema),
	})
}

// checkOAUsage checks usage against the fake's tokenizer.
func checkOAUsage(t *testing.T, u openai.CompletionUsage, prompt, completion int64) {
	t.Helper()
	if u.PromptTokens != prompt || u.CompletionTokens != completion || u.TotalTokens != prompt+completion {
		t.Errorf("usage = prompt %d, completion %d, total %d; want %d, %d, %d",
			u.PromptTokens, u.CompletionTokens, u.TotalTokens, prompt, completion, prompt+completion)
	}
}

// checkUpstreamPrompt checks that a system + user prompt reached the upstream
// in its own format.
func (e *env) checkUpstreamPrompt(t *testing.T, u upstream, system, user string, stream bool) map[string]any {
	t.Helper()
	up := e.lastUpstream(t, u)
	if up["model"] != u.model {
		t.Errorf("upstream model = %v, want %s", up["model"], u.model)
	}
	if got, _ := up["stream"].(bool); got != stream {
		t.Errorf("upstream stream = %v, want %v", up["stream"], stream)
	}
	msgs := arr(t, up["messages"], "upstream messages")
	if u.isAnthropic() {
		if _, ok := up["max_tokens"].(float64); !ok {
			t.Errorf("Anthropic upstream request lacks max_tokens: %v", up)
		}
		if got := anthropicText(t, up["system"]); got != system {
			t.Errorf("upstream system = %q, want %q", got, system)
		}
		if len(msgs) != 1 {
			t.Fatalf("upstream messages = %v, want one user message", msgs)
		}
		m := obj(t, msgs[0], "message")
		if m["role"] != "user" || anthropicText(t, m["content"]) != user {
			t.Errorf("upstream message = %v, want user %q", m, user)
		}
		return up
	}
	if len(msgs) != 2 {
		t.Fatalf("upstream messages = %v, want system + user", msgs)
	}
	m0, m1 := obj(t, msgs[0], "message 0"), obj(t, msgs[1], "message 1")
	if m0["role"] != "system" || m0["content"] != system {
		t.Errorf("upstream system message = %v", m0)
	}
	if m1["role"] != "user" || m1["content"] != user {
		t.Errorf("upstream user message = %v", m1)
	}
	return up
}

func TestOpenAIClientText(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const system, prompt = "Be brief.", `hello from openai-go: ünïcode, "quotes", <tags> & \ backslash`
			var raw *http.Response
			var sent []byte
			resp, err := e.oa.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
				Model:    u.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(prompt)},
			}, openaioption.WithResponseInto(&raw), captureOA(&sent))
			if err != nil {
				t.Fatal(err)
			}
			checkRouted(t, raw, u)
			if resp.Object != "chat.completion" || resp.ID == "" || resp.Model != u.model {
				t.Errorf("object %q id %q model %q", resp.Object, resp.ID, resp.Model)
			}
			if len(resp.Choices) != 1 {
				t.Fatalf("choices = %d", len(resp.Choices))
			}
			c := resp.Choices[0]
			if c.Message.Role != "assistant" || c.Message.Content != "echo: "+prompt || c.FinishReason != "stop" {
				t.Errorf("message %q %q, finish %q", c.Message.Role, c.Message.Content, c.FinishReason)
			}
			if len(c.Message.ToolCalls) != 0 {
				t.Errorf("unexpected tool calls %v", c.Message.ToolCalls)
			}
			checkOAUsage(t, resp.Usage, tokens(system+prompt), tokens("echo: "+prompt))
			e.checkUpstreamPrompt(t, u, system, prompt, false)
			if !u.isAnthropic() {
				if got := e.fake.Last().Body; !bytes.Equal(got, sent) {
					t.Errorf("same dialect, no layer: upstream got\n%s\nwant the SDK's bytes\n%s", got, sent)
				}
			}
		})
	}
}

// streamOA runs a streaming request through the SDK's ChatCompletionAccumulator.
// It returns the accumulation, the number of chunks, the contents reported by
// JustFinishedContent and the tool calls reported by JustFinishedToolCall.
func streamOA(t *testing.T, e *env, params openai.ChatCompletionNewParams) (acc openai.ChatCompletionAccumulator, chunks int, contents []string, calls []openai.FinishedChatCompletionToolCall, err error) {
	t.Helper()
	stream := e.oa.Chat.Completions.NewStreaming(ctx(t), params)
	defer stream.Close()
	for stream.Next() {
		chunk := stream.Current()
		chunks++
		if !acc.AddChunk(chunk) {
			t.Errorf("the accumulator rejected chunk %d: %s", chunks, chunk.RawJSON())
		}
		if s, ok := acc.JustFinishedContent(); ok {
			contents = append(contents, s)
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			calls = append(calls, tc)
		}
	}
	return acc, chunks, contents, calls, stream.Err()
}

func TestOpenAIClientStream(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const system, prompt = "Be brief.", "one two three four five six seven eight nine ten, ünïcode"
			acc, chunks, contents, calls, err := streamOA(t, e, openai.ChatCompletionNewParams{
				Model:         u.model,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(prompt)},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if chunks < 3 {
				t.Errorf("only %d chunks: not streamed", chunks)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("accumulated choices = %d", len(acc.Choices))
			}
			want := "echo: " + prompt
			c := acc.Choices[0]
			if c.Message.Content != want || c.FinishReason != "stop" || c.Message.Role != "assistant" {
				t.Errorf("accumulated %q %q finish %q, want %q stop", c.Message.Role, c.Message.Content, c.FinishReason, want)
			}
			if len(contents) != 1 || contents[0] != want {
				t.Errorf("JustFinishedContent reported %q, want once %q", contents, want)
			}
			if len(calls) != 0 {
				t.Errorf("JustFinishedToolCall reported %v", calls)
			}
			if acc.ID == "" || acc.Model != u.model {
				t.Errorf("accumulated id %q model %q", acc.ID, acc.Model)
			}
			checkOAUsage(t, acc.Usage, tokens(system+prompt), tokens(want))
			e.checkUpstreamPrompt(t, u, system, prompt, true)
		})
	}
}

func TestOpenAIClientToolCall(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const prompt = "What is the weather in Paris?"
			e.fake.Script(fakeupstream.ToolCall("get_weather", weatherArgs))
			var raw *http.Response
			resp, err := e.oa.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
				Model:    u.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				Tools:    []openai.ChatCompletionToolUnionParam{weatherToolOA()},
			}, openaioption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			checkRouted(t, raw, u)
			if len(resp.Choices) != 1 {
				t.Fatalf("choices = %d", len(resp.Choices))
			}
			c := resp.Choices[0]
			if c.FinishReason != "tool_calls" {
				t.Errorf("finish_reason = %q, want tool_calls", c.FinishReason)
			}
			if c.Message.Content != "" {
				t.Errorf("content = %q, want none", c.Message.Content)
			}
			if len(c.Message.ToolCalls) != 1 {
				t.Fatalf("tool calls = %v", c.Message.ToolCalls)
			}
			tc := c.Message.ToolCalls[0]
			if tc.ID == "" || tc.Type != "function" || tc.Function.Name != "get_weather" {
				t.Errorf("tool call id %q type %q name %q", tc.ID, tc.Type, tc.Function.Name)
			}
			jsonEqual(t, "tool call arguments", tc.Function.Arguments, weatherArgs)
			checkOAUsage(t, resp.Usage, tokens(prompt), tokens("get_weather"+weatherArgs))
			checkUpstreamTools(t, e.lastUpstream(t, u), u)
		})
	}
}

// checkUpstreamTools checks that the get_weather declaration reached the
// upstream in its own format.
func checkUpstreamTools(t *testing.T, up map[string]any, u upstream) {
	t.Helper()
	tools := arr(t, up["tools"], "upstream tools")
	if len(tools) != 1 {
		t.Fatalf("upstream tools = %v", tools)
	}
	tool := obj(t, tools[0], "tool")
	if u.isAnthropic() {
		if tool["name"] != "get_weather" || tool["description"] != "Get the weather forecast for a city" {
			t.Errorf("Anthropic tool = %v", tool)
		}
		jsonEqual(t, "input_schema", tool["input_schema"], weatherSchema)
		return
	}
	fn := obj(t, tool["function"], "tool function")
	if tool["type"] != "function" || fn["name"] != "get_weather" || fn["description"] != "Get the weather forecast for a city" {
		t.Errorf("OpenAI tool = %v", tool)
	}
	jsonEqual(t, "parameters", fn["parameters"], weatherSchema)
}

func TestOpenAIClientToolCallStream(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			// The magic phrase: the fake's default arguments are {"query": <prompt>}.
			const prompt = "Weather in Paris please fake:tool=get_weather"
			acc, _, contents, calls, err := streamOA(t, e, openai.ChatCompletionNewParams{
				Model:         u.model,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				Tools:         []openai.ChatCompletionToolUnionParam{weatherToolOA()},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			if err != nil {
				t.Fatal(err)
			}
			wantArgs, _ := json.Marshal(map[string]string{"query": prompt})
			if len(calls) != 1 {
				t.Fatalf("JustFinishedToolCall reported %v, want one call", calls)
			}
			if calls[0].Name != "get_weather" || calls[0].ID == "" || calls[0].Index != 0 {
				t.Errorf("finished tool call = %+v", calls[0])
			}
			jsonEqual(t, "finished tool call arguments", calls[0].Arguments, wantArgs)
			if len(acc.Choices) != 1 {
				t.Fatalf("accumulated choices = %d", len(acc.Choices))
			}
			c := acc.Choices[0]
			if c.FinishReason != "tool_calls" || c.Message.Content != "" {
				t.Errorf("finish %q content %q", c.FinishReason, c.Message.Content)
			}
			if len(c.Message.ToolCalls) != 1 {
				t.Fatalf("accumulated tool calls = %v", c.Message.ToolCalls)
			}
			tc := c.Message.ToolCalls[0]
			if tc.ID != calls[0].ID || tc.Type != "function" || tc.Function.Name != "get_weather" {
				t.Errorf("accumulated tool call id %q type %q name %q", tc.ID, tc.Type, tc.Function.Name)
			}
			jsonEqual(t, "accumulated tool call arguments", tc.Function.Arguments, wantArgs)
			checkOAUsage(t, acc.Usage, tokens(prompt), tokens("get_weather"+string(wantArgs)))
			checkUpstreamTools(t, e.lastUpstream(t, u), u)
			// A tool-only answer must not report a (empty) content part.
			if len(contents) != 0 {
				t.Errorf("JustFinishedContent reported %q for a tool-only answer", contents)
			}
		})
	}
}

// A tool round trip: the assistant's tool call and the tool's result are sent
// back, and reach the upstream in its own format.
func TestOpenAIClientToolResult(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		for _, stream := range []bool{false, true} {
			name := u.name + "/json"
			if stream {
				name = u.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				const prompt = "What is the weather in Paris?"
				e.fake.Script(fakeupstream.ToolCall("get_weather", weatherArgs))
				params := openai.ChatCompletionNewParams{
					Model:    u.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
					Tools:    []openai.ChatCompletionToolUnionParam{weatherToolOA()},
				}
				first, err := e.oa.Chat.Completions.New(ctx(t), params)
				if err != nil {
					t.Fatal(err)
				}
				if len(first.Choices) != 1 || len(first.Choices[0].Message.ToolCalls) != 1 {
					t.Fatalf("first turn: %s", first.RawJSON())
				}
				callID := first.Choices[0].Message.ToolCalls[0].ID
				params.Messages = append(params.Messages,
					first.Choices[0].Message.ToParam(),
					openai.ToolMessage(weatherResult, callID))

				var text, finish string
				if stream {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
					acc, _, _, calls, err := streamOA(t, e, params)
					if err != nil {
						t.Fatal(err)
					}
					if len(calls) != 0 || len(acc.Choices) != 1 {
						t.Fatalf("second turn: calls %v, choices %d", calls, len(acc.Choices))
					}
					text, finish = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason
				} else {
					resp, err := e.oa.Chat.Completions.New(ctx(t), params)
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Choices) != 1 {
						t.Fatalf("choices = %d", len(resp.Choices))
					}
					text, finish = resp.Choices[0].Message.Content, resp.Choices[0].FinishReason
				}
				// The fake echoes the last user-side message: the tool result.
				if text != "echo: "+weatherResult || finish != "stop" {
					t.Errorf("second turn text %q finish %q, want %q stop", text, finish, "echo: "+weatherResult)
				}

				up := e.lastUpstream(t, u)
				checkUpstreamTools(t, up, u)
				msgs := arr(t, up["messages"], "upstream messages")
				if len(msgs) != 3 {
					t.Fatalf("upstream messages = %v, want user, assistant, tool result", msgs)
				}
				if u.isAnthropic() {
					checkAnthropicToolTurns(t, msgs, callID, weatherArgs, weatherResult)
				} else {
					checkOpenAIToolTurns(t, msgs, callID, weatherArgs, weatherResult)
				}
			})
		}
	}
}

// checkOpenAIToolTurns checks msgs[1:3] of an OpenAI request: the assistant's
// tool call and the tool message answering it.
func checkOpenAIToolTurns(t *testing.T, msgs []any, callID, args, result string) {
	t.Helper()
	a := obj(t, msgs[1], "assistant message")
	if a["role"] != "assistant" {
		t.Errorf("message 1 role = %v", a["role"])
	}
	calls := arr(t, a["tool_calls"], "assistant tool_calls")
	if len(calls) != 1 {
		t.Fatalf("assistant tool_calls = %v", calls)
	}
	call := obj(t, calls[0], "tool call")
	fn := obj(t, call["function"], "tool call function")
	if call["id"] != callID || call["type"] != "function" || fn["name"] != "get_weather" {
		t.Errorf("assistant tool call = %v, want id %s", call, callID)
	}
	jsonEqual(t, "upstream tool call arguments", str(t, fn["arguments"], "arguments"), args)
	tm := obj(t, msgs[2], "tool message")
	if tm["role"] != "tool" || tm["tool_call_id"] != callID {
		t.Errorf("tool message = %v, want role tool, tool_call_id %s", tm, callID)
	}
	content := tm["content"]
	if parts, ok := content.([]any); ok { // an array of text parts is valid too
		var s string
		for _, p := range parts {
			s += str(t, obj(t, p, "part")["text"], "part text")
		}
		content = s
	}
	if content != result {
		t.Errorf("tool message content = %v, want %s", tm["content"], result)
	}
}

// checkAnthropicToolTurns checks msgs[1:3] of an Anthropic request: the
// assistant's tool_use block and the user's tool_result block.
func checkAnthropicToolTurns(t *testing.T, msgs []any, callID, args, result string) {
	t.Helper()
	a := obj(t, msgs[1], "assistant message")
	if a["role"] != "assistant" {
		t.Errorf("message 1 role = %v", a["role"])
	}
	var use map[string]any
	for _, b := range arr(t, a["content"], "assistant content") {
		if bm := obj(t, b, "block"); bm["type"] == "tool_use" {
			if use != nil {
				t.Errorf("two tool_use blocks: %v", a["content"])
			}
			use = bm
		} else if bm["type"] == "text" && bm["text"] == "" {
			t.Errorf("empty text block sent to Anthropic (rejected by the real API): %v", a["content"])
		}
	}
	if use == nil {
		t.Fatalf("no tool_use block in %v", a["content"])
	}
	if use["id"] != callID || use["name"] != "get_weather" {
		t.Errorf("tool_use = %v, want id %s", use, callID)
	}
	jsonEqual(t, "tool_use input", use["input"], args)
	r := obj(t, msgs[2], "tool result message")
	if r["role"] != "user" {
		t.Errorf("tool result role = %v", r["role"])
	}
	blocks := arr(t, r["content"], "tool result content")
	if len(blocks) != 1 {
		t.Fatalf("tool result message content = %v", blocks)
	}
	tr := obj(t, blocks[0], "tool_result")
	if tr["type"] != "tool_result" || tr["tool_use_id"] != callID {
		t.Errorf("tool_result = %v, want tool_use_id %s", tr, callID)
	}
	if got := anthropicText(t, tr["content"]); got != result {
		t.Errorf("tool_result content = %q, want %q", got, result)
	}
	if tr["is_error"] == true {
		t.Errorf("tool_result is_error = true")
	}
}

// Reasoning comes back as the message's reasoning_content (an extra field
// for the SDK): the codec's mapping of thinking into the OpenAI dialect.
func TestOpenAIClientReasoning(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const prompt = "think first fake:thinking"
			resp, err := e.oa.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
				Model:    u.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices) != 1 {
				t.Fatalf("choices = %d", len(resp.Choices))
			}
			m := resp.Choices[0].Message
			if m.Content != "echo: "+prompt {
				t.Errorf("content = %q", m.Content)
			}
			f, ok := m.JSON.ExtraFields["reasoning_content"]
			if !ok {
				t.Fatalf("no reasoning_content in %s", m.RawJSON())
			}
			var reasoning string
			if err := json.Unmarshal([]byte(f.Raw()), &reasoning); err != nil || reasoning != "Thinking about: "+prompt {
				t.Errorf("reasoning_content = %s, want %q", f.Raw(), "Thinking about: "+prompt)
			}
		})
		t.Run(u.name+"/stream", func(t *testing.T) {
			const prompt = "think while streaming fake:thinking"
			stream := e.oa.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
				Model:    u.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			})
			defer stream.Close()
			var acc openai.ChatCompletionAccumulator
			var reasoning string
			for stream.Next() {
				chunk := stream.Current()
				acc.AddChunk(chunk)
				if len(chunk.Choices) == 0 {
					continue
				}
				if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
					var piece string
					if err := json.Unmarshal([]byte(f.Raw()), &piece); err != nil {
						t.Fatalf("reasoning_content delta %s: %v", f.Raw(), err)
					}
					if acc.Choices[0].Message.Content != "" {
						t.Errorf("reasoning after the answer's text began")
					}
					reasoning += piece
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if reasoning != "Thinking about: "+prompt {
				t.Errorf("streamed reasoning_content = %q, want %q", reasoning, "Thinking about: "+prompt)
			}
			if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "echo: "+prompt || acc.Choices[0].FinishReason != "stop" {
				t.Errorf("accumulated %+v", acc.Choices)
			}
		})
	}
}
