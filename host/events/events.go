// Package events turns a complete canonical response into canonical stream
// events, so a response answered locally (a simulator, a cache hit) can be
// replayed as a stream.
package events

import (
	"github.com/bardoinference/bardo/sdk/wire"
)

// FromResponse returns the event sequence that streams r: message_start, per
// block a start, deltas of about chunkRunes runes, and a stop, then
// message_delta with the stop reason and output usage, and message_stop.
func FromResponse(r *wire.Response, chunkRunes int) []wire.Event {
	if chunkRunes <= 0 {
		chunkRunes = 16
	}
	evs := make([]wire.Event, 0, 4+len(r.Content)*4)
	evs = append(evs, wire.Event{Type: wire.EventMessageStart, ID: r.ID, Model: r.Model,
		Usage: wire.Usage{InputTokens: r.Usage.InputTokens, CacheReadTokens: r.Usage.CacheReadTokens, CacheWriteTokens: r.Usage.CacheWriteTokens}})
	for i, b := range r.Content {
		idx := int64(i)
		start := wire.Event{Type: wire.EventBlockStart, Index: idx, Block: wire.Block{Type: b.Type, ID: b.ID, Name: b.Name}}
		if b.Type == wire.BlockRedactedThinking {
			start.Block.Data = b.Data
		}
		evs = append(evs, start)
		switch b.Type {
		case wire.BlockText:
			evs = appendDeltas(evs, idx, wire.DeltaText, b.Text, chunkRunes)
		case wire.BlockThinking:
			evs = appendDeltas(evs, idx, wire.DeltaThinking, b.Text, chunkRunes)
			if b.Signature != "" {
				evs = append(evs, wire.Event{Type: wire.EventDelta, Index: idx, Delta: wire.DeltaSignature, Text: b.Signature})
			}
		case wire.BlockToolUse:
			input := string(b.Data)
			if input == "" {
				input = "{}"
			}
			evs = appendDeltas(evs, idx, wire.DeltaInputJSON, input, chunkRunes*4)
		}
		evs = append(evs, wire.Event{Type: wire.EventBlockStop, Index: idx})
	}
	evs = append(evs,
		wire.Event{Type: wire.EventMessageDelta, StopReason: r.StopReason, StopSeq: r.StopSeq, Usage: r.Usage},
		wire.Event{Type: wire.EventMessageStop})
	return evs
}

// appendDeltas splits s into pieces of about n runes, cutting after a space
// when one is near so words are not split needlessly.
func appendDeltas(evs []wire.Event, idx int64, kind wire.DeltaKind, s string, n int) []wire.Event {
	for len(s) > 0 {
		cut, runes := len(s), 0
		for i := range s {
			if runes == n {
				cut = i
				break
			}
			runes++
		}
		if cut < len(s) {
			// Prefer to end the piece just after a space within the last quarter.
			for j := cut - 1; j > cut*3/4; j-- {
				if s[j] == ' ' {
					cut = j + 1
					break
				}
			}
		}
		evs = append(evs, wire.Event{Type: wire.EventDelta, Index: idx, Delta: kind, Text: s[:cut]})
		s = s[cut:]
	}
	return evs
}
