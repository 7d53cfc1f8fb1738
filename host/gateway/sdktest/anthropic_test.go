package sdktest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
)

// captureAN records the body the Anthropic SDK sends.
func captureAN(dst *[]byte) anthropicoption.RequestOption {
	return anthropicoption.WithMiddleware(func(req *http.Request, next anthropicoption.MiddlewareNext) (*http.Response, error) {
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

func weatherToolAN() anthropic.ToolUnionParam {
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        "get_weather",
		Description: anthropic.String("Get the weather forecast for a city"),
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: weatherSchema["properties"],
			Required:   []string{"city"},
		},
	}}
}

func userText(s string) anthropic.MessageParam {
	return anthropic.NewUserMessage(anthropic.NewTextBlock(s))
}

// checkANUsage checks usage against the fake's tokenizer.
func checkANUsage(t *testing.T, u anthropic.Usage, input, output int64) {
	t.Helper()
	if u.InputTokens != input || u.OutputTokens != output {
		t.Errorf("usage = input %d, output %d; want %d, %d", u.InputTokens, u.OutputTokens, input, output)
	}
}

// streamAN runs a streaming request, accumulating with Message.Accumulate.
// It returns the message, the event types in order and the text deltas joined.
func streamAN(t *testing.T, e *env, params anthropic.MessageNewParams, opts ...anthropicoption.RequestOption) (msg anthropic.Message, types []string, deltas string, err error) {
	t.Helper()
	stream := e.an.Messages.NewStreaming(ctx(t), params, opts...)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
			deltas += ev.Delta.Text
		}
		if aerr := msg.Accumulate(ev); aerr != nil {
			t.Fatalf("Accumulate(%s): %v", ev.Type, aerr)
		}
	}
	return msg, types, deltas, stream.Err()
}

// checkEventOrder checks the shape of an Anthropic event sequence.
func checkEventOrder(t *testing.T, types []string) {
	t.Helper()
	got := strings.Join(types, ",")
	if !strings.HasPrefix(got, "message_start,content_block_start,") || !strings.HasSuffix(got, ",content_block_stop,message_delta,message_stop") {
		t.Errorf("event order = %s", got)
	}
}

func TestAnthropicClientText(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const system, prompt = "Be brief.", `hello from anthropic-sdk-go: ünïcode, "quotes", <tags> & \ backslash`
			var raw *http.Response
			var sent []byte
			msg, err := e.an.Messages.New(ctx(t), anthropic.MessageNewParams{
				Model:     anthropic.Model(u.model),
				MaxTokens: 256,
				System:    []anthropic.TextBlockParam{{Text: system}},
				Messages:  []anthropic.MessageParam{userText(prompt)},
			}, anthropicoption.WithResponseInto(&raw), captureAN(&sent))
			if err != nil {
				t.Fatal(err)
			}
			checkRouted(t, raw, u)
			if msg.Type != "message" || msg.Role != "assistant" || msg.ID == "" || string(msg.Model) != u.model {
				t.Errorf("type %q role %q id %q model %q", msg.Type, msg.Role, msg.ID, msg.Model)
			}
			if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != "echo: "+prompt {
				t.Errorf("content = %s", msg.RawJSON())
			}
			if msg.StopReason != anthropic.StopReasonEndTurn {
				t.Errorf("stop_reason = %q", msg.StopReason)
			}
			checkANUsage(t, msg.Usage, tokens(system+prompt), tokens("echo: "+prompt))
			up := e.checkUpstreamPrompt(t, u, system, prompt, false)
			if u.isAnthropic() {
				if got := e.fake.Last().Body; !bytes.Equal(got, sent) {
					t.Errorf("same dialect, no layer: upstream got\n%s\nwant the SDK's bytes\n%s", got, sent)
				}
			} else if up["max_tokens"] != 256.0 && up["max_completion_tokens"] != 256.0 {
				t.Errorf("max_tokens did not reach the OpenAI upstream: %v", up)
			}
		})
	}
}

func TestAnthropicClientStream(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const system, prompt = "Be brief.", "one two three four five six seven eight nine ten, ünïcode"
			msg, types, deltas, err := streamAN(t, e, anthropic.MessageNewParams{
				Model:     anthropic.Model(u.model),
				MaxTokens: 256,
				System:    []anthropic.TextBlockParam{{Text: system}},
				Messages:  []anthropic.MessageParam{userText(prompt)},
			})
			if err != nil {
				t.Fatal(err)
			}
			checkEventOrder(t, types)
			want := "echo: " + prompt
			if deltas != want {
				t.Errorf("text deltas = %q, want %q", deltas, want)
			}
			if msg.ID == "" || string(msg.Model) != u.model || msg.Role != "assistant" {
				t.Errorf("accumulated id %q model %q role %q", msg.ID, msg.Model, msg.Role)
			}
			if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != want {
				t.Errorf("accumulated content = %s", msg.RawJSON())
			}
			if msg.StopReason != anthropic.StopReasonEndTurn {
				t.Errorf("stop_reason = %q", msg.StopReason)
			}
			checkANUsage(t, msg.Usage, tokens(system+prompt), tokens(want))
			e.checkUpstreamPrompt(t, u, system, prompt, true)
		})
	}
}

// toolUse returns the one tool_use block of msg.
func toolUse(t *testing.T, msg anthropic.Message) anthropic.ToolUseBlock {
	t.Helper()
	var uses []anthropic.ToolUseBlock
	for _, b := range msg.Content {
		switch v := b.AsAny().(type) {
		case anthropic.ToolUseBlock:
			uses = append(uses, v)
		case anthropic.TextBlock:
			if v.Text == "" {
				t.Errorf("empty text block in a tool-only answer: %s", msg.RawJSON())
			}
		}
	}
	if len(uses) != 1 {
		t.Fatalf("tool_use blocks = %d in %s", len(uses), msg.RawJSON())
	}
	return uses[0]
}

func TestAnthropicClientToolCall(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const prompt = "What is the weather in Paris?"
			e.fake.Script(fakeupstream.ToolCall("get_weather", weatherArgs))
			var raw *http.Response
			msg, err := e.an.Messages.New(ctx(t), anthropic.MessageNewParams{
				Model:     anthropic.Model(u.model),
				MaxTokens: 256,
				Messages:  []anthropic.MessageParam{userText(prompt)},
				Tools:     []anthropic.ToolUnionParam{weatherToolAN()},
			}, anthropicoption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			checkRouted(t, raw, u)
			if msg.StopReason != anthropic.StopReasonToolUse {
				t.Errorf("stop_reason = %q, want tool_use", msg.StopReason)
			}
			use := toolUse(t, *msg)
			if use.ID == "" || use.Name != "get_weather" {
				t.Errorf("tool_use id %q name %q", use.ID, use.Name)
			}
			jsonEqual(t, "tool_use input", use.Input, weatherArgs)
			var args struct {
				City string `json:"city"`
				Days int    `json:"days"`
			}
			if err := json.Unmarshal(use.Input, &args); err != nil || args.City != "Paris" || args.Days != 3 {
				t.Errorf("tool_use input does not parse into the tool's arguments: %v %+v", err, args)
			}
			checkANUsage(t, msg.Usage, tokens(prompt), tokens("get_weather"+weatherArgs))
			checkUpstreamTools(t, e.lastUpstream(t, u), u)
		})
	}
}

func TestAnthropicClientToolCallStream(t *testing.T) {
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			const prompt = "Weather in Paris please fake:tool=get_weather"
			msg, types, _, err := streamAN(t, e, anthropic.MessageNewParams{
				Model:     anthropic.Model(u.model),
				MaxTokens: 256,
				Messages:  []anthropic.MessageParam{userText(prompt)},
				Tools:     []anthropic.ToolUnionParam{weatherToolAN()},
			})
			if err != nil {
				t.Fatal(err)
			}
			checkEventOrder(t, types)
			if msg.StopReason != anthropic.StopReasonToolUse {
				t.Errorf("stop_reason = %q, want tool_use", msg.StopReason)
			}
			use := toolUse(t, msg)
			if use.ID == "" || use.Name != "get_weather" {
				t.Errorf("tool_use id %q name %q", use.ID, use.Name)
			}
			wantArgs, _ := json.Marshal(map[string]string{"query": prompt})
			jsonEqual(t, "accumulated tool_use input", use.Input, wantArgs)
			checkANUsage(t, msg.Usage, tokens(prompt), tokens("get_weather"+string(wantArgs)))
			checkUpstreamTools(t, e.lastUpstream(t, u), u)
		})
	}
}

func TestAnthropicClientToolResult(t *testing.T) {
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
				params := anthropic.MessageNewParams{
					Model:     anthropic.Model(u.model),
					MaxTokens: 256,
					Messages:  []anthropic.MessageParam{userText(prompt)},
					Tools:     []anthropic.ToolUnionParam{weatherToolAN()},
				}
				first, err := e.an.Messages.New(ctx(t), params)
				if err != nil {
					t.Fatal(err)
				}
				callID := toolUse(t, *first).ID
				params.Messages = append(params.Messages,
					first.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock(callID, weatherResult, false)))

				var msg anthropic.Message
				if stream {
					msg, _, _, err = streamAN(t, e, params)
				} else {
					var m *anthropic.Message
					if m, err = e.an.Messages.New(ctx(t), params); m != nil {
						msg = *m
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				want := "echo: " + weatherResult
				if len(msg.Content) != 1 || msg.Content[0].Text != want || msg.StopReason != anthropic.StopReasonEndTurn {
					t.Errorf("second turn = %s, want text %q, end_turn", msg.RawJSON(), want)
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

// Thinking from an Anthropic upstream comes back with its signature intact,
// and the signature goes back to the upstream byte for byte when the client
// sends the turn again: as the caller's own bytes (no layer), and re-encoded
// by the gateway (a layer rewrote the request).
func TestAnthropicClientThinking(t *testing.T) {
	for _, tc := range []struct {
		name, layers string
		suffix       string // what the layer appends to the last text block
	}{
		{"passthrough", "", ""},
		{"re-encoded", touchLayer, "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.layers)
			for _, stream := range []bool{false, true} {
				name := "json"
				if stream {
					name = "stream"
				}
				t.Run(name, func(t *testing.T) {
					const prompt = "fake:thinking How many primes below 20?" // the layer appends to the end
					params := anthropic.MessageNewParams{
						Model:     anthropic.Model(anthropicUp.model),
						MaxTokens: 2048,
						Thinking:  anthropic.ThinkingConfigParamOfEnabled(1024),
						Messages:  []anthropic.MessageParam{userText(prompt)},
					}
					var first anthropic.Message
					var err error
					if stream {
						var types []string
						first, types, _, err = streamAN(t, e, params)
						checkEventOrder(t, types)
					} else {
						var m *anthropic.Message
						if m, err = e.an.Messages.New(ctx(t), params); m != nil {
							first = *m
						}
					}
					if err != nil {
						t.Fatal(err)
					}
					seen := prompt + tc.suffix // what the upstream saw
					wantThinking := "Thinking about: " + seen
					wantSig := fakeSignature(wantThinking)
					if len(first.Content) != 2 {
						t.Fatalf("content = %s, want thinking + text", first.RawJSON())
					}
					th, ok := first.Content[0].AsAny().(anthropic.ThinkingBlock)
					if !ok {
						t.Fatalf("first block = %s, want thinking", first.Content[0].RawJSON())
					}
					if th.Thinking != wantThinking || th.Signature != wantSig {
						t.Errorf("thinking %q signature %q, want %q %q", th.Thinking, th.Signature, wantThinking, wantSig)
					}
					if first.Content[1].Type != "text" || first.Content[1].Text != "echo: "+seen {
						t.Errorf("text block = %s", first.Content[1].RawJSON())
					}
					if first.StopReason != anthropic.StopReasonEndTurn {
						t.Errorf("stop_reason = %q", first.StopReason)
					}
					wantOut := tokens(wantThinking) + tokens("echo: "+seen)
					if first.Usage.OutputTokens != wantOut {
						t.Errorf("output_tokens = %d, want %d (thinking included)", first.Usage.OutputTokens, wantOut)
					}
					if up := e.lastUpstream(t, anthropicUp); up["thinking"] == nil {
						t.Errorf("the thinking parameter did not reach the upstream: %v", up)
					} else {
						jsonEqual(t, "upstream thinking", up["thinking"], `{"type":"enabled","budget_tokens":1024}`)
					}

					// The turn goes back, thinking and signature included.
					params.Messages = append(params.Messages, first.ToParam(), userText("And below 30?"))
					second, err := e.an.Messages.New(ctx(t), params)
					if err != nil {
						t.Fatal(err)
					}
					if len(second.Content) != 1 || second.Content[0].Text != "echo: And below 30?"+tc.suffix {
						t.Errorf("second turn = %s", second.RawJSON())
					}
					body := e.fake.Last().Body
					if !bytes.Contains(body, []byte(`"signature":"`+wantSig+`"`)) {
						t.Errorf("the signature did not reach the upstream byte for byte: want %q in\n%s", wantSig, body)
					}
					up := e.lastUpstream(t, anthropicUp)
					msgs := arr(t, up["messages"], "upstream messages")
					if len(msgs) != 3 {
						t.Fatalf("upstream messages = %v", msgs)
					}
					a := obj(t, msgs[1], "assistant message")
					blocks := arr(t, a["content"], "assistant content")
					if a["role"] != "assistant" || len(blocks) != 2 {
						t.Fatalf("assistant turn at the upstream = %v", a)
					}
					tb := obj(t, blocks[0], "thinking block")
					if tb["type"] != "thinking" || tb["thinking"] != wantThinking || tb["signature"] != wantSig {
						t.Errorf("thinking block at the upstream = %v, want thinking %q signature %q", tb, wantThinking, wantSig)
					}
					xb := obj(t, blocks[1], "text block")
					if xb["type"] != "text" || xb["text"] != "echo: "+seen {
						t.Errorf("text block at the upstream = %v", xb)
					}
				})
			}
		})
	}
}

// Thinking from an OpenAI upstream (reasoning_content) reaches an Anthropic
// client as a thinking block; a signed Anthropic thinking block is not sent
// to an OpenAI upstream when the conversation moves there.
func TestAnthropicClientThinkingAcrossUpstreams(t *testing.T) {
	e := newEnv(t, "")
	t.Run("openai-upstream", func(t *testing.T) {
		const prompt = "Reason about it fake:thinking"
		msg, err := e.an.Messages.New(ctx(t), anthropic.MessageNewParams{
			Model:     anthropic.Model(openaiUp.model),
			MaxTokens: 2048,
			Messages:  []anthropic.MessageParam{userText(prompt)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != "Thinking about: "+prompt ||
			msg.Content[1].Type != "text" || msg.Content[1].Text != "echo: "+prompt {
			t.Errorf("content = %s, want thinking then text", msg.RawJSON())
		}
	})
	t.Run("signed-thinking-to-openai-upstream", func(t *testing.T) {
		const prompt = "Reason first fake:thinking"
		params := anthropic.MessageNewParams{
			Model:     anthropic.Model(anthropicUp.model),
			MaxTokens: 2048,
			Messages:  []anthropic.MessageParam{userText(prompt)},
		}
		first, err := e.an.Messages.New(ctx(t), params)
		if err != nil {
			t.Fatal(err)
		}
		sig := first.Content[0].Signature
		if first.Content[0].Type != "thinking" || sig == "" {
			t.Fatalf("first turn = %s", first.RawJSON())
		}
		params.Model = anthropic.Model(openaiUp.model)
		params.Messages = append(params.Messages, first.ToParam(), userText("continue"))
		second, err := e.an.Messages.New(ctx(t), params)
		if err != nil {
			t.Fatal(err)
		}
		if len(second.Content) != 1 || second.Content[0].Text != "echo: continue" {
			t.Errorf("second turn = %s", second.RawJSON())
		}
		body := e.fake.Last().Body
		if bytes.Contains(body, []byte(sig)) {
			t.Errorf("an Anthropic signature was sent to the OpenAI upstream: %s", body)
		}
		msgs := arr(t, e.lastUpstream(t, openaiUp)["messages"], "upstream messages")
		if len(msgs) != 3 {
			t.Fatalf("upstream messages = %v", msgs)
		}
		a := obj(t, msgs[1], "assistant message")
		if a["role"] != "assistant" || a["content"] != "echo: "+prompt {
			t.Errorf("assistant turn at the OpenAI upstream = %v", a)
		}
	})
}
