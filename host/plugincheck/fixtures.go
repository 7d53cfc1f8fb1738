package plugincheck

import (
	"fmt"
	"strings"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/wire"
)

// A request the kit sends, with the meta the host would send with it.
type sample struct {
	name string
	meta wire.Meta
	req  *wire.Request
}

// dialectSamples are the shared 4 KB agent request (host/testkit/fixtures)
// as the gateway decodes it from each caller dialect: an OpenAI body, and
// the same request as an Anthropic body, streamed.
func dialectSamples() ([]sample, error) {
	oa, err := openai.DecodeRequest(fixtures.AgentRequestOpenAI(false))
	if err != nil {
		return nil, fmt.Errorf("openai fixture: %w", err)
	}
	body, err := anthropic.EncodeRequest(fixtures.AgentRequest())
	if err != nil {
		return nil, fmt.Errorf("anthropic fixture: %w", err)
	}
	an, err := anthropic.DecodeRequest(body)
	if err != nil {
		return nil, fmt.Errorf("anthropic fixture: %w", err)
	}
	an.Stream = true
	return []sample{
		{"openai", meta(wire.DialectOpenAI, oa), oa},
		{"anthropic", meta(wire.DialectAnthropic, an), an},
	}, nil
}

func meta(d wire.Dialect, req *wire.Request) wire.Meta {
	return wire.Meta{RequestID: "kit-1", Tenant: "kit", Session: "kit-session", Dialect: d, Model: req.Model, Stream: req.Stream}
}

// unknownFieldsBody is an OpenAI request with members no version of the
// API the gateway models has, at every level: the top, a message, a content
// part, a tool. The gateway keeps them (Extra) and a layer must too.
const unknownFieldsBody = `{
 "model": "gpt-4o-mini",
 "x_kit_top": {"nested": [1, 2, 3]},
 "messages": [
  {"role": "system", "content": "You are terse."},
  {"role": "user", "x_kit_message": true, "content": [
    {"type": "text", "text": "What is the health factor of my Aave position?", "x_kit_part": "kept"}
  ]}
 ],
 "tools": [{"type": "function", "x_kit_tool": 1, "function": {"name": "get_position", "strict": true,
   "parameters": {"type": "object", "properties": {"asset": {"type": "string"}}}}}],
 "temperature": 0.1
}`

func unknownFieldsSample() (sample, error) {
	req, err := openai.DecodeRequest([]byte(unknownFieldsBody))
	if err != nil {
		return sample{}, fmt.Errorf("unknown-fields fixture: %w", err)
	}
	if len(req.Extra) == 0 || len(req.Messages) == 0 || len(req.Messages[0].Extra) == 0 {
		return sample{}, fmt.Errorf("unknown-fields fixture: the decoder kept no unknown member")
	}
	return sample{"unknown-fields", meta(wire.DialectOpenAI, req), req}, nil
}

// hugeText is prose, not one repeated byte: a layer that scans words or
// patterns meets what it meets in a long pasted document.
func hugeText(n int) string {
	const para = "The quarterly report lists 42 positions across 7 venues; each one is checked " +
		"against its liquidation threshold, its oracle price and the gas it would cost to close. "
	var b strings.Builder
	b.Grow(n + len(para))
	for b.Len() < n {
		b.WriteString(para)
	}
	return b.String()
}

// hugeSample is about 2 MiB: a 1 MiB pasted document as the last user
// message after 200 turns of 4 KB and 64 tools.
func hugeSample() sample {
	req := fixtures.AgentRequest()
	turn := hugeText(4 << 10)
	var msgs []wire.Message
	for i := range 200 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, wire.Message{Role: role, Content: []wire.Block{{Type: wire.BlockText, Text: turn}}})
	}
	msgs = append(msgs, wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: hugeText(1 << 20)}}})
	req.Messages = append(req.Messages[:len(req.Messages)-1], msgs...)
	for i := range 64 {
		req.Tools = append(req.Tools, wire.Tool{Name: fmt.Sprintf("tool_%d", i), Description: hugeText(200),
			Schema: []byte(`{"type":"object","properties":{"x":{"type":"string"}}}`)})
	}
	return sample{"huge", meta(wire.DialectOpenAI, req), req}
}

// emptySample has nothing: no model, no messages.
func emptySample() sample {
	return sample{"empty", wire.Meta{RequestID: "kit-empty"}, &wire.Request{}}
}

// withLastUserText is the agent request whose last user message is text.
func withLastUserText(text string) *wire.Request {
	req := fixtures.AgentRequest()
	req.Messages[len(req.Messages)-1].Content = []wire.Block{{Type: wire.BlockText, Text: text}}
	return req
}

// responseSample is a complete answer, as an upstream's decoded response.
func responseSample(text string) wire.Response {
	return wire.Response{ID: "msg_kit", Model: "gpt-4o-mini",
		Content:    []wire.Block{{Type: wire.BlockText, Text: text}},
		StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 1200, OutputTokens: 40}}
}

// streamBatches is an answer as canonical stream events, in three batches,
// the last one final.
func streamBatches(text string) [][]wire.Event {
	half := len(text) / 2
	return [][]wire.Event{
		{
			{Type: wire.EventMessageStart, ID: "msg_kit", Model: "gpt-4o-mini", Usage: wire.Usage{InputTokens: 1200}},
			{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockText}},
			{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: text[:half]},
		},
		{
			{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: text[half:]},
			{Type: wire.EventBlockStop, Index: 0},
		},
		{
			{Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn, Usage: wire.Usage{OutputTokens: 40}},
			{Type: wire.EventMessageStop},
		},
	}
}

const answerText = "Your Aave position is safe: health factor 1.84. Morpho pays 0.4% more; rebalancing costs about $12 in gas."
