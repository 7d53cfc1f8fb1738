package openai

import (
	"strconv"
	"time"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

var rs = dec.Response

// now is the clock for "created"; tests replace it.
var now = time.Now

// StopReason maps an OpenAI finish_reason to the canonical stop reason.
// Unknown reasons are passed through.
func StopReason(finish string) string {
	switch finish {
	case "stop":
		return wire.StopEndTurn
	case "length":
		return wire.StopMaxTokens
	case "tool_calls", "function_call":
		return wire.StopToolUse
	case "content_filter":
		return wire.StopContentFilter
	}
	return finish
}

// FinishReason maps a canonical stop reason to an OpenAI finish_reason.
func FinishReason(stop string) string {
	switch stop {
	case wire.StopMaxTokens, "model_context_window_exceeded":
		return "length"
	case wire.StopToolUse:
		return "tool_calls"
	case wire.StopContentFilter:
		return "content_filter"
	}
	// end_turn, stop_sequence, refusal, pause_turn, "" and the rest
	return "stop"
}

// DecodeResponse parses a non-streamed Chat Completions response. Only the
// first choice is kept. Errors wrap dialect.ErrInvalidResponse.
func DecodeResponse(body []byte) (*wire.Response, error) {
	if err := rs.Validate(body, "response body"); err != nil {
		return nil, err
	}
	resp := &wire.Response{}
	var choices []byte
	var err error
	err = jsonx.ObjectEach(body, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "id":
			resp.ID, err = rs.Str("id", val)
		case "model":
			resp.Model, err = rs.Str("model", val)
		case "choices":
			choices = val
		case "usage":
			resp.Usage, err = decodeUsage(val)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if choices == nil || jsonx.IsNull(choices) {
		return resp, nil
	}
	if err := rs.Array("choices", choices); err != nil {
		return nil, err
	}
	var choice []byte
	_ = jsonx.ArrayEach(choices, func(i int, c []byte) error {
		if choice == nil {
			choice = c
		}
		return nil
	})
	if choice == nil {
		return resp, nil
	}
	if err := decodeChoice(resp, choice); err != nil {
		return nil, dec.Prefix(err, "choices[0]")
	}
	return resp, nil
}

func decodeChoice(resp *wire.Response, choice []byte) error {
	if err := rs.Object("", choice); err != nil {
		return err
	}
	var msg []byte
	var err error
	err = jsonx.ObjectEach(choice, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "message":
			msg = val
		case "finish_reason":
			var f string
			f, err = rs.Str("finish_reason", val)
			resp.StopReason = StopReason(f)
		}
		return err
	})
	if err != nil || msg == nil || jsonx.IsNull(msg) {
		return err
	}
	if err := rs.Object("message", msg); err != nil {
		return err
	}
	var content, reasoning, details, refusal, toolCalls []byte
	_ = jsonx.ObjectEach(msg, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "content":
			content = val
		case "reasoning_details":
			details = val
		case "reasoning_content":
			reasoning = val
		case "reasoning":
			if reasoning == nil {
				reasoning = val
			}
		case "refusal":
			refusal = val
		case "tool_calls":
			toolCalls = val
		}
		return nil
	})
	// reasoning_details (OpenRouter's convention) carry signatures, which
	// reasoning_content cannot: when they hold anything, they win.
	var haveDetails bool
	if details != nil {
		bs, err := decodeReasoningDetails(rs, "message.reasoning_details", details)
		if err != nil {
			return err
		}
		resp.Content = append(resp.Content, bs...)
		haveDetails = len(bs) > 0
	}
	if jsonx.KindOf(reasoning) == jsonx.String && !haveDetails {
		s, err := rs.Str("message.reasoning_content", reasoning)
		if err != nil {
			return err
		}
		if s != "" {
			resp.Content = append(resp.Content, wire.Block{Type: wire.BlockThinking, Text: s})
		}
	}
	switch jsonx.KindOf(content) {
	case jsonx.String:
		s, err := rs.Str("message.content", content)
		if err != nil {
			return err
		}
		// A leading <think>…</think> (DeepSeek-R1 on llama.cpp, vLLM,
		// Ollama) is the model's reasoning.
		if th, rest, ok := splitThink(s); ok {
			if th != "" {
				resp.Content = append(resp.Content, wire.Block{Type: wire.BlockThinking, Text: th})
			}
			s = rest
		}
		if s != "" {
			resp.Content = append(resp.Content, wire.Block{Type: wire.BlockText, Text: s})
		}
	case jsonx.Array: // some compatible servers answer with parts
		err := jsonx.ArrayEach(content, func(i int, part []byte) error {
			var typ, text string
			_ = jsonx.ObjectEach(part, func(rawKey, val []byte) error {
				switch string(dec.K(rawKey)) {
				case "type":
					typ, _ = jsonx.Unquote(val)
				case "text":
					text, _ = jsonx.Unquote(val)
				}
				return nil
			})
			if typ == "text" && text != "" {
				resp.Content = append(resp.Content, wire.Block{Type: wire.BlockText, Text: text})
			}
			return nil
		})
		if err != nil {
			return rs.Errf("message.content", err.Error())
		}
	case jsonx.Null, jsonx.Invalid:
	default:
		return rs.Errf("message.content", "must be a string or null")
	}
	if jsonx.KindOf(refusal) == jsonx.String {
		s, err := rs.Str("message.refusal", refusal)
		if err != nil {
			return err
		}
		if s != "" {
			resp.Content = append(resp.Content, wire.Block{Type: wire.BlockText, Text: s})
			resp.StopReason = wire.StopRefusal
		}
	}
	if jsonx.KindOf(toolCalls) == jsonx.Array {
		return jsonx.ArrayEach(toolCalls, func(i int, tc []byte) error {
			b, err := decodeToolCall(rs, tc)
			if err != nil {
				return dec.Prefix(err, dec.Index("message.tool_calls", i))
			}
			resp.Content = append(resp.Content, b)
			return nil
		})
	}
	return nil
}

// decodeUsage reads an OpenAI usage object. prompt_tokens includes cached
// tokens; the canonical InputTokens does not.
func decodeUsage(val []byte) (wire.Usage, error) {
	var u wire.Usage
	if jsonx.KindOf(val) != jsonx.Object {
		return u, nil
	}
	var prompt, cached, hit int64
	var haveCached, haveHit bool
	err := jsonx.ObjectEach(val, func(rawKey, v []byte) error {
		var err error
		switch string(dec.K(rawKey)) {
		case "prompt_tokens":
			prompt, err = intOrNull("usage.prompt_tokens", v)
		case "completion_tokens":
			u.OutputTokens, err = intOrNull("usage.completion_tokens", v)
		case "prompt_tokens_details":
			if jsonx.KindOf(v) == jsonx.Object {
				err = jsonx.ObjectEach(v, func(k2, v2 []byte) error {
					if jsonx.KeyIs(k2, "cached_tokens") {
						var err error
						cached, err = intOrNull("usage.prompt_tokens_details.cached_tokens", v2)
						haveCached = true
						return err
					}
					return nil
				})
			}
		case "prompt_cache_hit_tokens": // DeepSeek
			hit, err = intOrNull("usage.prompt_cache_hit_tokens", v)
			haveHit = true
		}
		return err
	})
	if !haveCached && haveHit {
		cached = hit
	}
	if cached > prompt {
		cached = prompt
	}
	u.InputTokens = prompt - cached
	u.CacheReadTokens = cached
	return u, err
}

func intOrNull(field string, v []byte) (int64, error) {
	if jsonx.IsNull(v) {
		return 0, nil
	}
	return rs.Int(field, v)
}

// appendUsage writes an OpenAI usage object from canonical usage.
func appendUsage(b []byte, u *wire.Usage) []byte {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, prompt, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, prompt+u.OutputTokens, 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CacheReadTokens, 10)
	return append(b, '}', '}')
}

// EncodeResponse writes resp as a Chat Completions response ("created" is
// the current time). Thinking becomes reasoning_content, and, when a thinking
// block is signed or redacted, also reasoning_details (see
// appendReasoningDetails); a refusal stop puts
// the text in "refusal"; blocks OpenAI has no form for are left out.
func EncodeResponse(resp *wire.Response) ([]byte, error) {
	size := 320 + len(resp.ID) + len(resp.Model)
	for i := range resp.Content {
		size += blockSize(&resp.Content[i])
	}
	b := make([]byte, 0, size)
	b = append(b, `{"id":`...)
	id := resp.ID
	if id == "" {
		id = NewID()
	}
	b = jsonx.AppendString(b, id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, now().Unix(), 10)
	b = append(b, `,"model":`...)
	b = jsonx.AppendString(b, resp.Model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)

	var text, reasoning []byte
	var ntext, nthink, ntools int
	for i := range resp.Content {
		bl := &resp.Content[i]
		switch bl.Type {
		case wire.BlockText:
			text = append(text, bl.Text...)
			ntext++
		case wire.BlockThinking:
			reasoning = append(reasoning, bl.Text...)
			nthink++
		case wire.BlockToolUse:
			ntools++
		}
	}
	refusal := resp.StopReason == wire.StopRefusal && ntext > 0
	if ntext > 0 && !refusal {
		b = jsonx.AppendString(b, string(text))
	} else {
		b = append(b, "null"...)
	}
	if nthink > 0 {
		b = append(b, `,"reasoning_content":`...)
		b = jsonx.AppendString(b, string(reasoning))
	}
	if needsDetails(resp.Content) {
		// signed or redacted thinking: OpenRouter's reasoning_details keep
		// what the client must send back
		b = appendReasoningDetails(b, resp.Content)
	}
	if ntools > 0 {
		b = append(b, `,"tool_calls":[`...)
		n := 0
		for i := range resp.Content {
			bl := &resp.Content[i]
			if bl.Type != wire.BlockToolUse {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			if len(bl.Data) > 0 && !jsonx.Valid(bl.Data) {
				return nil, errNotJSON
			}
			b = append(b, `{"id":`...)
			b = jsonx.AppendString(b, toolID(bl.ID))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonx.AppendString(b, bl.Name)
			b = append(b, `,"arguments":`...)
			b = jsonx.AppendString(b, dataToArguments(bl.Data))
			b = append(b, '}', '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"refusal":`...)
	if refusal {
		b = jsonx.AppendString(b, string(text))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = jsonx.AppendString(b, FinishReason(resp.StopReason))
	b = append(b, `}],"usage":`...)
	b = appendUsage(b, &resp.Usage)
	return append(b, '}'), nil
}

// NewID returns a fresh "chatcmpl-…" id for answers that have none.
func NewID() string { return randomID("chatcmpl-") }

// toolID returns id, or a fresh "call_…" id when it is empty (the SDKs
// reject tool calls without one).
func toolID(id string) string {
	if id == "" {
		return randomID("call_")
	}
	return id
}

func randomID(prefix string) string { return dialect.RandomID(prefix) }
