package main

import (
	"encoding/binary"
	"errors"

	"github.com/bardoinference/bardo/sdk/wire"
)

// An entry is entryMagic, the time it was stored (Unix milliseconds, 8 bytes
// little endian), and the response in the SDK's wire encoding (a
// LayerResponseResult that replaces, which is exactly a Response): compact,
// reflection-free, and decoded without copying.
const entryMagic = "HC1"

var errEntry = errors.New("hashcache: malformed cache entry")

func encodeEntry(enc *wire.Encoder, r *wire.Response, storedMs int64) []byte {
	x := wire.LayerResponseResult{Replaced: true, Response: *r}
	x.Encode(enc)
	out := make([]byte, 0, len(entryMagic)+8+len(enc.Bytes()))
	out = append(out, entryMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(storedMs))
	return append(out, enc.Bytes()...)
}

func decodeEntry(b []byte) (resp wire.Response, storedMs int64, err error) {
	if len(b) < len(entryMagic)+8 || string(b[:len(entryMagic)]) != entryMagic {
		return resp, 0, errEntry
	}
	storedMs = int64(binary.LittleEndian.Uint64(b[len(entryMagic):]))
	var x wire.LayerResponseResult
	if err := x.Decode(b[len(entryMagic)+8:]); err != nil || !x.Replaced {
		return resp, 0, errEntry
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

// reader reads records; a short or corrupt input sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte1() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return ""
	}
	s := bstr(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) usage(u *wire.Usage) {
	u.InputTokens = r.varint()
	u.OutputTokens = r.varint()
	u.CacheReadTokens = r.varint()
	u.CacheWriteTokens = r.varint()
}

// rebuild folds the records into a complete response; complete is false when
// the stream did not reach message_stop (or the records are corrupt).
func rebuild(records []byte) (resp wire.Response, complete bool) {
	r := reader{b: records}
	var texts [][]byte
	for len(r.b) > 0 && !r.bad {
		switch wire.EventType(r.byte1()) {
		case wire.EventMessageStart:
			resp.ID = r.str()
			resp.Model = r.str()
			var u wire.Usage
			r.usage(&u)
			resp.Usage.InputTokens, resp.Usage.CacheReadTokens, resp.Usage.CacheWriteTokens = u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens
		case wire.EventBlockStart:
			idx := r.varint()
			typ := wire.BlockType(r.uvarint())
			id, name, data := r.str(), r.str(), r.str()
			if idx < 0 || idx > 1<<16 {
				return resp, false
			}
			for int64(len(resp.Content)) <= idx {
				resp.Content = append(resp.Content, wire.Block{})
				texts = append(texts, nil)
			}
			resp.Content[idx] = wire.Block{Type: typ, ID: id, Name: name}
			if data != "" {
				resp.Content[idx].Data = []byte(data)
			}
		case wire.EventDelta:
			idx := r.varint()
			kind := wire.DeltaKind(r.byte1())
			text := r.str()
			if idx < 0 || idx >= int64(len(resp.Content)) {
				continue
			}
			switch kind {
			case wire.DeltaText, wire.DeltaThinking:
				texts[idx] = append(texts[idx], text...)
			case wire.DeltaSignature:
				resp.Content[idx].Signature += text
			case wire.DeltaInputJSON:
				resp.Content[idx].Data = append(resp.Content[idx].Data, text...)
			}
		case wire.EventMessageDelta:
			stop, seq := r.str(), r.str()
			var u wire.Usage
			r.usage(&u)
			if stop != "" {
				resp.StopReason, resp.StopSeq = stop, seq
			}
			if u.OutputTokens > 0 {
				resp.Usage.OutputTokens = u.OutputTokens
			}
			if u.InputTokens > 0 {
				resp.Usage.InputTokens = u.InputTokens
			}
			if u.CacheReadTokens > 0 {
				resp.Usage.CacheReadTokens = u.CacheReadTokens
			}
			if u.CacheWriteTokens > 0 {
				resp.Usage.CacheWriteTokens = u.CacheWriteTokens
			}
		case wire.EventMessageStop:
			complete = true
		default:
			return resp, false
		}
	}
	if r.bad {
		return resp, false
	}
	for i := range resp.Content {
		if texts[i] != nil {
			resp.Content[i].Text = string(texts[i])
		}
	}
	return resp, complete
}
