package sdktest

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/bardoinference/bardo/host/fakeupstream"
)

// A text part followed by a tool call ("Let me check." then get_weather), the
// usual shape of an agent's turn, streamed: the block boundaries must survive
// translation for the SDKs' accumulators.
func TestTextThenToolCallStream(t *testing.T) {
	const prompt, preamble = "What is the weather in Paris?", "Let me check the forecast."
	script := fakeupstream.Combine(fakeupstream.Reply(preamble), fakeupstream.ToolCall("get_weather", weatherArgs))
	e := newEnv(t, "")
	for _, u := range upstreams {
		t.Run("openai-client/"+u.name, func(t *testing.T) {
			e.fake.Script(script)
			acc, _, contents, calls, err := streamOA(t, e, openai.ChatCompletionNewParams{
				Model:         u.model,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				Tools:         []openai.ChatCompletionToolUnionParam{weatherToolOA()},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(contents) != 1 || contents[0] != preamble {
				t.Errorf("JustFinishedContent reported %q, want once %q", contents, preamble)
			}
			if len(calls) != 1 || calls[0].Name != "get_weather" {
				t.Fatalf("JustFinishedToolCall reported %+v, want one get_weather", calls)
			}
			jsonEqual(t, "finished tool call arguments", calls[0].Arguments, weatherArgs)
			if len(acc.Choices) != 1 {
				t.Fatalf("accumulated choices = %d", len(acc.Choices))
			}
			c := acc.Choices[0]
			if c.Message.Content != preamble || c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
				t.Errorf("accumulated content %q finish %q tool calls %d", c.Message.Content, c.FinishReason, len(c.Message.ToolCalls))
			}
			checkOAUsage(t, acc.Usage, tokens(prompt), tokens(preamble)+tokens("get_weather"+weatherArgs))
		})
		t.Run("anthropic-client/"+u.name, func(t *testing.T) {
			e.fake.Script(script)
			msg, types, deltas, err := streamAN(t, e, anthropic.MessageNewParams{
				Model:     anthropic.Model(u.model),
				MaxTokens: 256,
				Messages:  []anthropic.MessageParam{userText(prompt)},
				Tools:     []anthropic.ToolUnionParam{weatherToolAN()},
			})
			if err != nil {
				t.Fatal(err)
			}
			checkEventOrder(t, types)
			if deltas != preamble {
				t.Errorf("text deltas = %q, want %q", deltas, preamble)
			}
			if len(msg.Content) != 2 || msg.Content[0].Type != "text" || msg.Content[0].Text != preamble || msg.Content[1].Type != "tool_use" {
				t.Fatalf("accumulated content = %s, want text then tool_use", msg.RawJSON())
			}
			use := msg.Content[1].AsToolUse()
			if use.Name != "get_weather" || use.ID == "" {
				t.Errorf("tool_use = %s", msg.Content[1].RawJSON())
			}
			jsonEqual(t, "tool_use input", use.Input, weatherArgs)
			if msg.StopReason != anthropic.StopReasonToolUse {
				t.Errorf("stop_reason = %q", msg.StopReason)
			}
			checkANUsage(t, msg.Usage, tokens(prompt), tokens(preamble)+tokens("get_weather"+weatherArgs))
		})
	}
}
