package respcache

import (
	"encoding/binary"

	"github.com/bardoinference/bardo/sdk/wire"
)

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
