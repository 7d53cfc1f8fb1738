package gateway

import (
	"bytes"
	"time"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// tokenInterval is the least time between two inference.token events of
// one stream: a counter a person watches moves four times a second, and a
// long answer costs a few events per second instead of one per delta (the
// ring they share with the operator's events holds 4,096).
const tokenInterval = 250 * time.Millisecond

// tokenTicker raises a stream's inference.token events (spec 003,
// "Inference events"): the tokens streamed since the last event, whether
// they were reasoning, and the running total. Tokens are estimated from the
// deltas' text (4 bytes a token), as the upstream reports its own count
// only at the end. Nothing is counted while no one follows the event
// stream: the events exist for live readers.
type tokenTicker struct {
	log              *eventlog.Log
	requestID, owner string
	last             time.Time
	pending, total   int64
	reasoning        bool
}

func newTokenTicker(log *eventlog.Log, s *Settlement) *tokenTicker {
	if log == nil || s.Internal || s.Tenant == "" {
		return nil
	}
	return &tokenTicker{log: log, requestID: s.RequestID, owner: s.Tenant, last: time.Now()}
}

// event counts a decoded stream event.
func (t *tokenTicker) event(ev *wire.Event) {
	if t == nil || ev.Type != wire.EventDelta || ev.Delta == wire.DeltaSignature || !t.log.Watched() {
		return
	}
	t.add(estimateTokens(len(ev.Text)), ev.Delta == wire.DeltaThinking)
}

// chunk counts a relayed (not decoded) event by the text it carries.
func (t *tokenTicker) chunk(data []byte) {
	if t == nil || !t.log.Watched() {
		return
	}
	if n, reasoning := deltaText(data); n > 0 {
		t.add(estimateTokens(n), reasoning)
	}
}

func (t *tokenTicker) add(n int64, reasoning bool) {
	if t.pending > 0 && reasoning != t.reasoning {
		t.emit() // the reasoning ended (or began): say so at once
	}
	t.pending += n
	t.reasoning = reasoning
	if time.Since(t.last) >= tokenInterval {
		t.emit()
	}
}

// flush sends what was counted since the last event, before the stream's
// inference.end.
func (t *tokenTicker) flush() {
	if t != nil && t.pending > 0 {
		t.emit()
	}
}

func (t *tokenTicker) emit() {
	t.total += t.pending
	t.log.EmitFor(eventlog.InferenceToken, t.requestID, t.owner,
		map[string]any{"token_count": t.pending, "is_reasoning": t.reasoning, "total": t.total})
	t.pending, t.last = 0, time.Now()
}

func estimateTokens(textBytes int) int64 {
	if textBytes <= 0 {
		return 0
	}
	return int64(textBytes+3) / 4
}

// deltaKeys are the members that carry a relayed chunk's generated text,
// in the three dialects' streams: OpenAI chat (content, reasoning_content,
// a tool call's arguments), Anthropic (text, thinking, partial_json) and
// Responses (delta).
var deltaKeys = []struct {
	key       []byte
	reasoning bool
}{
	{[]byte(`"content":"`), false},
	{[]byte(`"text":"`), false},
	{[]byte(`"partial_json":"`), false},
	{[]byte(`"arguments":"`), false},
	{[]byte(`"delta":"`), false},
	{[]byte(`"thinking":"`), true},
	{[]byte(`"reasoning_content":"`), true},
}

// deltaText finds the generated text in a relayed chunk: its length in the
// JSON (escapes included; close enough for an estimate) and whether it is
// reasoning. A chunk without any is 0.
func deltaText(data []byte) (n int, reasoning bool) {
	for _, k := range deltaKeys {
		i := bytes.Index(data, k.key)
		if i < 0 {
			continue
		}
		open := i + len(k.key) - 1
		end := jsonscan.SkipString(data, open)
		if end < 0 {
			return 0, false
		}
		return end - open - 2, k.reasoning
	}
	return 0, false
}
