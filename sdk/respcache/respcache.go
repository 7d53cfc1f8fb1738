// Package respcache is what the caching layers (L3 hashcache, L2 semcache)
// share: the rule for which answers may be cached, the compact encoding of a
// stored answer, and the collection of a streamed answer, batch by batch, in
// a layer's stream State until it can be stored whole.
//
// It is policy-free about keys: a cache decides its own key and TTL and hands
// them to StartStream as opaque bytes.
package respcache

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/wire"
)

// DefaultMinTokens is the spec's floor: answers shorter than this are not
// worth a cache entry.
const DefaultMinTokens = 10

// Storable reports whether a response may be cached: never a tool call, an
// error-like stop, an empty answer or one shorter than minTokens output
// tokens (estimated from the text when the upstream reported no usage).
func Storable(r *wire.Response, minTokens int64) bool {
	switch r.StopReason {
	case wire.StopToolUse, wire.StopPauseTurn, wire.StopRefusal, wire.StopContentFilter:
		return false
	}
	if len(r.Content) == 0 {
		return false
	}
	textBytes := 0
	for i := range r.Content {
		switch r.Content[i].Type {
		case wire.BlockToolUse:
			return false
		case wire.BlockText, wire.BlockThinking:
			textBytes += len(r.Content[i].Text)
		}
	}
	out := r.Usage.OutputTokens
	if out <= 0 {
		out = int64((textBytes + 3) / 4) // no usage reported: estimate
	}
	return out >= minTokens
}

// SavedTokens is what a hit saves: every input and output token of the
// stored answer.
func SavedTokens(r *wire.Response) int64 {
	return r.Usage.InputTokens + r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens + r.Usage.OutputTokens
}

// An entry is entryMagic, the time it was stored (Unix milliseconds, 8 bytes
// little endian), and the response in the SDK's wire encoding (a
// LayerResponseResult that replaces, which is exactly a Response): compact,
// reflection-free, and decoded without copying.
const entryMagic = "RC1"

// ErrEntry is returned for bytes that are not an entry of this version.
var ErrEntry = errors.New("respcache: malformed cache entry")

// EncodeEntry encodes r, stored at storedMs (Unix milliseconds), using enc
// as scratch space.
func EncodeEntry(enc *wire.Encoder, r *wire.Response, storedMs int64) []byte {
	return AppendEntry(nil, enc, r, storedMs)
}

// AppendEntry is EncodeEntry appending to dst: a caller that hands the
// entry straight to kv_put (which copies it) can keep dst and allocate
// nothing once it has grown.
func AppendEntry(dst []byte, enc *wire.Encoder, r *wire.Response, storedMs int64) []byte {
	enc.Reset()
	x := wire.LayerResponseResult{Replaced: true, Response: *r}
	x.Encode(enc)
	dst = slices.Grow(dst, len(entryMagic)+8+len(enc.Bytes()))
	dst = append(dst, entryMagic...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(storedMs))
	return append(dst, enc.Bytes()...)
}

// DecodeEntry decodes an entry. The response's strings alias b.
func DecodeEntry(b []byte) (resp wire.Response, storedMs int64, err error) {
	if len(b) < len(entryMagic)+8 || string(b[:len(entryMagic)]) != entryMagic {
		return resp, 0, ErrEntry
	}
	storedMs = int64(binary.LittleEndian.Uint64(b[len(entryMagic):]))
	var x wire.LayerResponseResult
	if err := x.Decode(b[len(entryMagic)+8:]); err != nil || !x.Replaced {
		return resp, 0, ErrEntry
	}
	return x.Response, storedMs, nil
}

// Stream state. A streamed miss is accumulated in the layer's State blob
// (streams are not pinned to an instance) and stored on the Final batch.
// Each batch appends compact records of the events that matter, so a long
// stream costs an append per batch, not a re-encoding of everything so far.
//
//	state  = 'C' key ttl records...   collecting
//	       | 'S'                      not cached (no key, a tool call, an error, too large)
//	record = type fields...            (see appendRecord)
const (
	stateCollect = 'C'
	stateSkip    = 'S'
)

// Skip is the stream state of a stream that will not be stored.
func Skip() []byte { return []byte{stateSkip} }

// StartStream is the first state of a stream to collect under key (opaque
// bytes the cache chose) with ttl.
func StartStream(key []byte, ttl time.Duration) []byte {
	st := append(make([]byte, 0, 256+len(key)), stateCollect)
	st = appendStr(st, bstr(key))
	return binary.AppendUvarint(st, uint64(ttl.Milliseconds()))
}

// Collecting reports whether st is a collecting state.
func Collecting(st []byte) bool { return len(st) > 0 && st[0] == stateCollect }

// Collect appends a batch of events to a collecting state. It returns Skip()
// (and false) when the stream turns out not storable — a tool call or an
// error event — or grows beyond maxBytes.
func Collect(st []byte, events []wire.Event, maxBytes int) ([]byte, bool) {
	if !Collecting(st) {
		return Skip(), false
	}
	for i := range events {
		ev := &events[i]
		if ev.Type == wire.EventError ||
			(ev.Type == wire.EventBlockStart && ev.Block.Type == wire.BlockToolUse) ||
			(ev.Type == wire.EventMessageDelta && ev.StopReason == wire.StopToolUse) {
			return Skip(), false
		}
		st = appendRecord(st, ev)
	}
	if len(st) > maxBytes {
		return Skip(), false
	}
	return st, true
}

// Finish rebuilds the complete response from a collecting state after the
// final batch; ok is false when the stream did not complete or the state is
// corrupt. key aliases st.
func Finish(st []byte) (key []byte, ttl time.Duration, resp wire.Response, ok bool) {
	if !Collecting(st) {
		return nil, 0, resp, false
	}
	r := reader{b: st[1:]}
	k := r.str()
	ttl = time.Duration(r.uvarint()) * time.Millisecond
	resp, complete := rebuild(r.b)
	if r.bad || !complete {
		return nil, 0, resp, false
	}
	return []byte(k), ttl, resp, true
}

// appendRecord appends one event as a record; events that do not change the
// response (pings) are left out.
func appendRecord(b []byte, ev *wire.Event) []byte {
	switch ev.Type {
	case wire.EventMessageStart:
		b = append(b, byte(ev.Type))
		b = appendStr(b, ev.ID)
		b = appendStr(b, ev.Model)
		b = appendUsage(b, &ev.Usage)
	case wire.EventBlockStart:
		b = append(b, byte(ev.Type))
		b = binary.AppendVarint(b, ev.Index)
		b = binary.AppendUvarint(b, uint64(ev.Block.Type))
		b = appendStr(b, ev.Block.ID)
		b = appendStr(b, ev.Block.Name)
		b = appendStr(b, bstr(ev.Block.Data))
	case wire.EventDelta:
		b = append(b, byte(ev.Type))
		b = binary.AppendVarint(b, ev.Index)
		b = append(b, byte(ev.Delta))
		b = appendStr(b, ev.Text)
	case wire.EventMessageDelta:
		b = append(b, byte(ev.Type))
		b = appendStr(b, ev.StopReason)
		b = appendStr(b, ev.StopSeq)
		b = appendUsage(b, &ev.Usage)
	case wire.EventMessageStop:
		b = append(b, byte(ev.Type))
	}
	return b
}

func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendUsage(b []byte, u *wire.Usage) []byte {
	b = binary.AppendVarint(b, u.InputTokens)
	b = binary.AppendVarint(b, u.OutputTokens)
	b = binary.AppendVarint(b, u.CacheReadTokens)
	return binary.AppendVarint(b, u.CacheWriteTokens)
}

// What a cache hit tells the caller and the host, the same for every
// caching layer.
const (
	HeaderCache       = "X-Bardo-Cache"              // the verdict: hash-hit | semantic-hit | miss | stale
	HeaderSavedTokens = "X-Bardo-Cache-Saved-Tokens" // on a hit: input+output tokens not sent upstream
	HeaderAge         = "X-Bardo-Cache-Age"          // on a hit: seconds since the entry was stored
	// AnnotationReplayPace paces the host's stream replay of a hit
	// (host/gateway.AnnotationReplayPace). Every cache layer also reads it
	// as "this answer came from a cache": it is never stored again.
	AnnotationReplayPace = "bardo.replay.pace_ms"
)

// The verdicts of HeaderCache.
const (
	VerdictHashHit     = "hash-hit"     // L3: the exact request was answered before
	VerdictSemanticHit = "semantic-hit" // L2: the same question in the same context
	VerdictMiss        = "miss"
	VerdictStale       = "stale" // every provider failed; a kept answer past its TTL
)

// Answer makes res answer the request with resp, a cache entry stored at
// storedMs (Unix milliseconds) and read at nowMs: the verdict, the tokens
// saved and the entry's age in headers (then extra), the replay pace (pace,
// milliseconds as text; "" for none) as an annotation. It returns the tokens
// saved, for the layer's metrics.
func Answer(res *wire.LayerResult, resp *wire.Response, verdict string, storedMs, nowMs int64, pace string, extra ...wire.KV) int64 {
	resp.ID = ""
	saved := SavedTokens(resp)
	res.Action = wire.ActionAnswer
	res.Answer = resp
	res.Headers = append(res.Headers, wire.KV{Key: HeaderCache, Value: verdict})
	res.Headers = append(res.Headers, extra...)
	res.Headers = append(res.Headers,
		wire.KV{Key: HeaderSavedTokens, Value: strconv.FormatInt(saved, 10)},
		wire.KV{Key: HeaderAge, Value: strconv.FormatInt(max((nowMs-storedMs)/1000, 0), 10)})
	if pace != "" {
		res.Annotations = append(res.Annotations, wire.KV{Key: AnnotationReplayPace, Value: pace})
	}
	return saved
}
