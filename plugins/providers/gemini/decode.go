package main

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/wire"
)

// gResponse is a GenerateContentResponse: a whole answer, or one chunk of a
// stream. Gemini may also send an error object inside a 200 stream.
type gResponse struct {
	Candidates     []gCandidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *gUsage `json:"usageMetadata"`
	ModelVersion  string  `json:"modelVersion"`
	ResponseID    string  `json:"responseId"`
	Error         *gError `json:"error"`
}

type gCandidate struct {
	Content      gContent `json:"content"`
	FinishReason string   `json:"finishReason"`
}

type gUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// usage maps usageMetadata: cached tokens are part of promptTokenCount in
// Gemini and separate in the canonical model; thinking counts as output.
func (u *gUsage) usage() wire.Usage {
	in := u.PromptTokenCount + u.ToolUsePromptTokenCount - u.CachedContentTokenCount
	return wire.Usage{
		InputTokens:     max(in, 0),
		CacheReadTokens: u.CachedContentTokenCount,
		OutputTokens:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
	}
}

// stopReason maps a finishReason (with blocked prompts as "BLOCKED:<reason>").
func stopReason(finish string, calls int64) string {
	switch finish {
	case "MAX_TOKENS":
		return wire.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return wire.StopContentFilter
	}
	if len(finish) > 8 && finish[:8] == "BLOCKED:" {
		return wire.StopContentFilter
	}
	if calls > 0 {
		return wire.StopToolUse
	}
	return wire.StopEndTurn
}

// Open block kinds in the stream state.
const (
	openNone uint8 = iota
	openText
	openThinking
)

// state is what a stream's conversion keeps between batches.
type state struct {
	started bool
	open    uint8
	openIdx int64
	signed  bool  // the open thinking block has its signature
	next    int64 // next block index
	calls   int64 // function calls seen (for ids and the stop reason)
	finish  string
	usage   wire.Usage
	id      string
	model   string
}

func (s *state) encode() []byte {
	var e wire.Encoder
	e.Reset()
	e.Bool(s.started)
	e.Uint(uint64(s.open))
	e.Int(s.openIdx)
	e.Bool(s.signed)
	e.Int(s.next)
	e.Int(s.calls)
	e.String(s.finish)
	e.Int(s.usage.InputTokens)
	e.Int(s.usage.OutputTokens)
	e.Int(s.usage.CacheReadTokens)
	e.String(s.id)
	e.String(s.model)
	return e.Bytes()
}

func (s *state) decode(b []byte) error {
	d := wire.NewDecoder(b)
	s.started = d.Bool()
	s.open = uint8(d.Uint())
	s.openIdx = d.Int()
	s.signed = d.Bool()
	s.next = d.Int()
	s.calls = d.Int()
	s.finish = d.String()
	s.usage.InputTokens = d.Int()
	s.usage.OutputTokens = d.Int()
	s.usage.CacheReadTokens = d.Int()
	s.id = d.String()
	s.model = d.String()
	return d.Err()
}

// conv turns Gemini chunks into canonical events. The same code serves
// streams and whole responses (which are folded back into blocks), so both
// give the same blocks for the same parts.
type conv struct {
	st     *state
	evs    []wire.Event
	images bool // keep inlineData output (whole responses only: stream events carry no image data)
}

func (c *conv) start(b wire.Block) int64 {
	idx := c.st.next
	c.st.next++
	c.evs = append(c.evs, wire.Event{Type: wire.EventBlockStart, Index: idx, Block: b})
	return idx
}

func (c *conv) delta(idx int64, kind wire.DeltaKind, text string) {
	c.evs = append(c.evs, wire.Event{Type: wire.EventDelta, Index: idx, Delta: kind, Text: text})
}

func (c *conv) stop(idx int64) {
	c.evs = append(c.evs, wire.Event{Type: wire.EventBlockStop, Index: idx})
}

func (c *conv) openBlock(kind uint8) {
	if c.st.open == kind {
		return
	}
	c.close()
	t := wire.BlockText
	if kind == openThinking {
		t = wire.BlockThinking
	}
	c.st.openIdx = c.start(wire.Block{Type: t})
	c.st.open = kind
	c.st.signed = false
}

// close ends the open block. A thinking block Gemini sent no signature for
// gets the bare prefix as its signature: it marks the thought as Gemini's,
// so it is sent back (see buildParts) while thoughts from elsewhere are not.
func (c *conv) close() {
	if c.st.open == openNone {
		return
	}
	if c.st.open == openThinking && !c.st.signed {
		c.delta(c.st.openIdx, wire.DeltaSignature, sigPrefix)
	}
	c.stop(c.st.openIdx)
	c.st.open = openNone
}

// signature emits a thought signature that rode on a non-thought part as an
// empty thinking block of its own, just before that part's block (so it can
// be put back on the same part on the way up).
func (c *conv) signature(sig string) {
	c.close()
	idx := c.start(wire.Block{Type: wire.BlockThinking})
	c.delta(idx, wire.DeltaSignature, sigPrefix+sig)
	c.stop(idx)
}

func (c *conv) chunk(r *gResponse, fallbackModel string) {
	st := c.st
	if r.UsageMetadata != nil {
		st.usage = r.UsageMetadata.usage()
	}
	if !st.started {
		st.started = true
		st.id, st.model = r.ResponseID, r.ModelVersion
		if st.model == "" {
			st.model = fallbackModel
		}
		c.evs = append(c.evs, wire.Event{Type: wire.EventMessageStart, ID: st.id, Model: st.model,
			Usage: wire.Usage{InputTokens: st.usage.InputTokens, CacheReadTokens: st.usage.CacheReadTokens}})
	}
	if len(r.Candidates) == 0 {
		if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
			c.close()
			st.finish = "BLOCKED:" + pf.BlockReason
		}
		return
	}
	cand := &r.Candidates[0]
	for i := range cand.Content.Parts {
		c.part(&cand.Content.Parts[i])
	}
	if cand.FinishReason != "" {
		c.close()
		st.finish = cand.FinishReason
	}
}

func (c *conv) part(p *gPart) {
	st := c.st
	sig := p.ThoughtSignature
	switch {
	case p.FunctionCall != nil:
		if sig != "" {
			c.signature(sig)
		}
		c.close()
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = callID(st.id, st.calls, fc.Name, fc.Args)
		}
		st.calls++
		idx := c.start(wire.Block{Type: wire.BlockToolUse, ID: id, Name: fc.Name})
		args := string(fc.Args)
		if args == "" || args == "null" {
			args = "{}"
		}
		c.delta(idx, wire.DeltaInputJSON, args)
		c.stop(idx)
	case p.Thought:
		c.openBlock(openThinking)
		if p.Text != nil && *p.Text != "" {
			c.delta(st.openIdx, wire.DeltaThinking, *p.Text)
		}
		if sig != "" { // a signature on the thought itself ends that thinking block
			c.delta(st.openIdx, wire.DeltaSignature, sigPrefix+sig)
			st.signed = true
			c.close()
		}
	case p.Text != nil:
		if sig != "" {
			c.signature(sig)
		}
		if *p.Text != "" {
			c.openBlock(openText)
			c.delta(st.openIdx, wire.DeltaText, *p.Text)
		}
	case p.InlineData != nil:
		if sig != "" {
			c.signature(sig)
		}
		c.close()
		if c.images {
			src, _ := json.Marshal(struct {
				Type      string `json:"type"`
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
			}{"base64", p.InlineData.MimeType, p.InlineData.Data})
			idx := c.start(wire.Block{Type: wire.BlockImage, Data: src})
			c.stop(idx)
		}
	default: // executableCode, codeExecutionResult, …: no canonical form
		if sig != "" {
			c.signature(sig)
		}
	}
}

// callID makes a stable id for a function call Gemini sent without one:
// the same response always yields the same ids.
func callID(responseID string, n int64, name string, args []byte) string {
	h := fnv.New64a()
	h.Write([]byte(responseID))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, n, 10))
	h.Write([]byte{0})
	h.Write([]byte(name))
	if responseID == "" {
		h.Write([]byte{0})
		h.Write(args)
	}
	var b [16]byte
	v := h.Sum64()
	const hex = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = hex[v&15]
		v >>= 4
	}
	return "call_" + string(b[:])
}

// fold rebuilds blocks from the events of a whole response.
func fold(evs []wire.Event) []wire.Block {
	var blocks []wire.Block
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case wire.EventBlockStart:
			blocks = append(blocks, ev.Block)
		case wire.EventDelta:
			b := &blocks[ev.Index]
			switch ev.Delta {
			case wire.DeltaText, wire.DeltaThinking:
				b.Text += ev.Text
			case wire.DeltaSignature:
				b.Signature += ev.Text
			case wire.DeltaInputJSON:
				b.Data = append(b.Data, ev.Text...)
			}
		}
	}
	return blocks
}

func decode(in *wire.DecodeInput, res *wire.DecodeResult) error {
	if in.Status/100 != 2 {
		res.Error = upstreamError(in.Route.Provider, in.Status, in.Headers, in.Body)
		return nil
	}
	var r gResponse
	if err := json.Unmarshal(in.Body, &r); err != nil {
		res.Error = &wire.Error{Status: 502, Kind: wire.ErrUpstream,
			Message: "upstream " + in.Route.Provider + " returned a response that is not valid Gemini JSON: " + err.Error()}
		return nil
	}
	if r.Error != nil {
		res.Error = inBandError(in.Route.Provider, in.Headers, r.Error)
		return nil
	}
	var st state
	c := conv{st: &st, images: true}
	c.chunk(&r, in.Route.Model)
	c.close()
	res.Response = &wire.Response{
		ID:         st.id,
		Model:      st.model,
		Content:    fold(c.evs),
		StopReason: stopReason(st.finish, st.calls),
		Usage:      st.usage,
	}
	return nil
}

func decodeStream(in *wire.DecodeStreamInput, res *wire.DecodeStreamResult) error {
	var st state
	if len(in.State) > 0 {
		if err := st.decode(in.State); err != nil {
			return err
		}
	}
	c := conv{st: &st}
	for i := range in.Events {
		data := in.Events[i].Data
		if len(data) == 0 {
			continue
		}
		var r gResponse
		if err := json.Unmarshal(data, &r); err != nil {
			res.Error = &wire.Error{Status: 502, Kind: wire.ErrUpstream,
				Message: "upstream " + in.Route.Provider + " sent a malformed stream event: " + err.Error()}
			return nil
		}
		if r.Error != nil {
			res.Error = inBandError(in.Route.Provider, nil, r.Error)
			return nil
		}
		c.chunk(&r, in.Route.Model)
	}
	if in.Final {
		if st.finish == "" {
			// A stream that stops without a finishReason was cut: it must
			// not look like a complete answer.
			res.Error = &wire.Error{Status: 502, Kind: wire.ErrUpstream,
				Message: "upstream " + in.Route.Provider + " stream broke off before its finishReason"}
			return nil
		}
		c.close()
		c.evs = append(c.evs,
			wire.Event{Type: wire.EventMessageDelta, StopReason: stopReason(st.finish, st.calls), Usage: st.usage},
			wire.Event{Type: wire.EventMessageStop})
	}
	res.Events = c.evs
	res.State = st.encode()
	return nil
}

// gError is Google's error object: {"code","message","status","details"}.
type gError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		Reason     string `json:"reason"`
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

// upstreamError maps a non-2xx answer with adapter.ErrorFromResponse, plus
// what is particular to Google: an invalid API key is a 400
// (INVALID_ARGUMENT, reason API_KEY_INVALID) that is really the operator's
// credential being refused, and a 429 says when to retry in a RetryInfo
// detail rather than a retry-after header. Some Google front ends wrap the
// error object in an array.
func upstreamError(provider string, status int64, headers []wire.KV, body []byte) *wire.Error {
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
			body = arr[0]
		}
	}
	var b struct {
		Error *gError `json:"error"`
	}
	_ = json.Unmarshal(body, &b)
	return mapError(provider, status, headers, body, b.Error)
}

func inBandError(provider string, headers []wire.KV, ge *gError) *wire.Error {
	status := ge.Code
	if status < 400 {
		status = 500
	}
	body, _ := json.Marshal(struct {
		Error *gError `json:"error"`
	}{ge})
	return mapError(provider, status, headers, body, ge)
}

func mapError(provider string, status int64, headers []wire.KV, body []byte, ge *gError) *wire.Error {
	st := status
	var delay string
	if ge != nil {
		if ge.Status == "UNAUTHENTICATED" {
			st = 401
		}
		for _, d := range ge.Details {
			switch {
			case d.Reason == "API_KEY_INVALID":
				st = 401
			case d.RetryDelay != "":
				delay = d.RetryDelay
			}
		}
	}
	e := adapter.ErrorFromResponse(provider, st, headers, body)
	if e.RetryAfterMs == 0 && delay != "" {
		if d, err := time.ParseDuration(delay); err == nil && d > 0 {
			e.RetryAfterMs = d.Milliseconds()
		}
	}
	return e
}
