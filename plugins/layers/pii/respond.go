package main

import (
	"errors"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// fetchMapping reads and deletes the request's sealed mapping. ok is false
// (and the reason logged, without any value) when there is none to use.
func fetchMapping(meta *wire.Meta, key string) (sealed []byte, m *mapping, ok bool) {
	k := kvKey(meta.RequestID)
	sealed, found := plugin.KVGet(k)
	if !found {
		plugin.Log(plugin.LevelWarn, "pii: placeholder mapping not found (expired after mapping_ttl, or the kv store lost it); placeholders are left in the answer")
		return nil, nil, false
	}
	if err := plugin.KVDelete(k); err != nil {
		plugin.Log(plugin.LevelWarn, "pii: deleting the placeholder mapping failed (it expires after mapping_ttl): "+err.Error())
	}
	m, err := open(sealed, key)
	if err != nil {
		plugin.Log(plugin.LevelWarn, "pii: placeholder mapping unusable: "+err.Error())
		return nil, nil, false
	}
	return sealed, m, true
}

// onResponse restores the originals in a complete response: in text blocks,
// and in tool_use input JSON (JSON-escaped). Thinking blocks are left as the
// model wrote them: their signature covers the text, and the next turn
// sends them back upstream as they are.
func onResponse(in *wire.LayerResponse, res *wire.LayerResponseResult) error {
	key := keyOf(&in.Meta)
	if key == "" {
		return nil
	}
	_, m, ok := fetchMapping(&in.Meta, key)
	if !ok {
		return nil
	}
	total := 0
	var buf []byte
	for i := range in.Response.Content {
		b := &in.Response.Content[i]
		switch b.Type {
		case wire.BlockText:
			if strings.IndexByte(b.Text, '[') < 0 {
				continue
			}
			var n int
			if buf, n = restore(buf[:0], b.Text, m, false); n > 0 {
				b.Text = string(buf)
				total += n
			}
		case wire.BlockToolUse:
			if len(b.Data) == 0 {
				continue
			}
			out, n := restore(nil, string(b.Data), m, true)
			if n > 0 {
				b.Data = out
				total += n
			}
		}
	}
	if total > 0 {
		res.Replaced = true
		res.Response = in.Response
		plugin.CounterAdd("pii_restored_total", float64(total))
	}
	return nil
}

// streamState is a stream's state between batches.
type streamState struct {
	loaded bool   // the mapping was fetched (or found missing)
	sealed []byte // the sealed mapping; nil when there is none to use
	maxLen int    // the longest placeholder
	pend   []pending
}

// pending is text held back on one content block because it ends with what
// may be the beginning of a placeholder.
type pending struct {
	index int64
	kind  wire.DeltaKind
	text  string
}

const stateVersion = 1

func (st *streamState) encode() []byte {
	var e wire.Encoder
	e.Reset()
	e.Uint(stateVersion)
	e.Bool(st.loaded)
	e.Raw(st.sealed)
	e.Uint(uint64(st.maxLen))
	e.Uint(uint64(len(st.pend)))
	for _, p := range st.pend {
		e.Int(p.index)
		e.Uint(uint64(p.kind))
		e.String(p.text)
	}
	return e.Bytes()
}

func decodeState(b []byte) (streamState, error) {
	var st streamState
	if len(b) == 0 {
		return st, nil
	}
	d := wire.NewDecoder(b)
	if d.Uint() != stateVersion {
		return st, errors.New("unknown stream state version")
	}
	st.loaded = d.Bool()
	st.sealed = d.Raw()
	st.maxLen = int(d.Uint())
	n := d.Uint()
	if n > uint64(len(b)) {
		return st, errors.New("corrupt stream state")
	}
	for i := uint64(0); i < n; i++ {
		st.pend = append(st.pend, pending{index: d.Int(), kind: wire.DeltaKind(d.Uint()), text: d.String()})
	}
	return st, d.Err()
}

// onStream restores placeholders in text and tool-input deltas. A
// placeholder split over several deltas is reassembled: the end of a delta
// that may begin one is held back (in State) until the next delta of the
// same block completes or rules it out, the block stops, or the stream ends.
func onStream(in *wire.LayerStream, res *wire.LayerStreamResult) error {
	key := keyOf(&in.Meta)
	if key == "" {
		res.Events = in.Events
		return nil
	}
	st, err := decodeState(in.State)
	if err != nil {
		return err
	}
	var m *mapping
	if !st.loaded {
		st.loaded = true
		var ok bool
		if st.sealed, m, ok = fetchMapping(&in.Meta, key); ok {
			st.maxLen = m.maxLen
		}
	}
	if st.sealed == nil {
		res.Events = in.Events
		res.State = st.encode()
		return nil
	}
	mapOf := func() *mapping {
		if m == nil {
			m, _ = open(st.sealed, key)
		}
		return m
	}
	out, restored := st.process(in.Events, in.Final, mapOf)
	if restored > 0 {
		plugin.CounterAdd("pii_restored_total", float64(restored))
	}
	res.Events = out
	res.State = st.encode()
	return nil
}

// process runs one batch of events: text and tool-input deltas are
// restored, with a possible partial placeholder at their end held back.
// mapOf returns the mapping (decrypted only when a batch needs it).
func (st *streamState) process(evs []wire.Event, final bool, mapOf func() *mapping) ([]wire.Event, int) {
	out := make([]wire.Event, 0, len(evs)+1)
	restored := 0
	for _, ev := range evs {
		switch ev.Type {
		case wire.EventDelta:
			if ev.Delta != wire.DeltaText && ev.Delta != wire.DeltaInputJSON {
				break
			}
			p := st.pendingFor(ev.Index, ev.Delta, &out)
			emit, hold := splitHold(p.text+ev.Text, st.maxLen)
			p.text = hold
			if emit == "" {
				continue
			}
			if strings.IndexByte(emit, '[') >= 0 {
				b, n := restore(nil, emit, mapOf(), ev.Delta == wire.DeltaInputJSON)
				emit = string(b)
				restored += n
			}
			ev.Text = emit
		case wire.EventBlockStop:
			out = st.flush(out, ev.Index)
		case wire.EventMessageDelta, wire.EventMessageStop, wire.EventError:
			out = st.flushAll(out)
		}
		out = append(out, ev)
	}
	if final {
		out = st.flushAll(out)
	}
	return out, restored
}

// pendingFor returns the held-back text of a block, flushing what another
// kind of delta held there (which a well-formed stream never does).
func (st *streamState) pendingFor(index int64, kind wire.DeltaKind, out *[]wire.Event) *pending {
	for i := range st.pend {
		if st.pend[i].index == index {
			if st.pend[i].kind != kind {
				*out = st.flush(*out, index)
				break
			}
			return &st.pend[i]
		}
	}
	st.pend = append(st.pend, pending{index: index, kind: kind})
	return &st.pend[len(st.pend)-1]
}

// flush emits what a block held back, as it is: an incomplete placeholder
// is no placeholder.
func (st *streamState) flush(out []wire.Event, index int64) []wire.Event {
	for i := range st.pend {
		if st.pend[i].index != index {
			continue
		}
		p := st.pend[i]
		st.pend = append(st.pend[:i], st.pend[i+1:]...)
		if p.text != "" {
			out = append(out, wire.Event{Type: wire.EventDelta, Index: p.index, Delta: p.kind, Text: p.text})
		}
		return out
	}
	return out
}

func (st *streamState) flushAll(out []wire.Event) []wire.Event {
	for len(st.pend) > 0 {
		out = st.flush(out, st.pend[0].index)
	}
	return out
}
