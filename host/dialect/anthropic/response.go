package anthropic

import (
	"strconv"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

var rs = dec.Response

// StopReason maps a canonical stop reason to an Anthropic stop_reason.
// content_filter (OpenAI's) becomes refusal; an empty reason, end_turn.
func StopReason(stop string) string {
	switch stop {
	case "":
		return wire.StopEndTurn
	case wire.StopContentFilter:
		return wire.StopRefusal
	}
	return stop
}

// DecodeResponse parses a non-streamed Messages response. Errors wrap
// dialect.ErrInvalidResponse.
func DecodeResponse(body []byte) (*wire.Response, error) {
	if err := rs.Validate(body, "response body"); err != nil {
		return nil, err
	}
	resp := &wire.Response{}
	var err error
	err = jsonx.ObjectEach(body, func(rawKey, val []byte) error {
		switch string(dec.K(rawKey)) {
		case "id":
			resp.ID, err = rs.Str("id", val)
		case "model":
			resp.Model, err = rs.Str("model", val)
		case "content":
			if !jsonx.IsNull(val) {
				resp.Content, err = decodeContent(rs, nil, val, "content")
			}
		case "stop_reason":
			resp.StopReason, err = rs.Str("stop_reason", val)
		case "stop_sequence":
			resp.StopSeq, err = rs.Str("stop_sequence", val)
		case "usage":
			resp.Usage, err = decodeUsage(val)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// decodeUsage reads an Anthropic usage object (the same fields as canonical
// usage: input_tokens excludes cache reads and writes).
func decodeUsage(val []byte) (wire.Usage, error) {
	var u wire.Usage
	if jsonx.KindOf(val) != jsonx.Object {
		return u, nil
	}
	err := jsonx.ObjectEach(val, func(rawKey, v []byte) error {
		if jsonx.IsNull(v) {
			return nil
		}
		var err error
		switch string(dec.K(rawKey)) {
		case "input_tokens":
			u.InputTokens, err = rs.Int("usage.input_tokens", v)
		case "output_tokens":
			u.OutputTokens, err = rs.Int("usage.output_tokens", v)
		case "cache_read_input_tokens":
			u.CacheReadTokens, err = rs.Int("usage.cache_read_input_tokens", v)
		case "cache_creation_input_tokens":
			u.CacheWriteTokens, err = rs.Int("usage.cache_creation_input_tokens", v)
		}
		return err
	})
	return u, err
}

func appendUsage(b []byte, u *wire.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheWriteTokens, 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheReadTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	return append(b, '}')
}

// EncodeResponse writes resp as a Messages response. Thinking blocks are kept
// even without a signature (written as "").
func EncodeResponse(resp *wire.Response) ([]byte, error) {
	size := 256 + len(resp.ID) + len(resp.Model)
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
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = jsonx.AppendString(b, resp.Model)
	b = append(b, `,"content":[`...)
	n := 0
	for i := range resp.Content {
		bl := &resp.Content[i]
		if n > 0 {
			b = append(b, ',')
		}
		n++
		var err error
		if b, err = appendBlock(b, bl, false); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"stop_reason":`...)
	b = jsonx.AppendString(b, StopReason(resp.StopReason))
	b = append(b, `,"stop_sequence":`...)
	if resp.StopSeq != "" {
		b = jsonx.AppendString(b, resp.StopSeq)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"usage":`...)
	b = appendUsage(b, &resp.Usage)
	return append(b, '}'), nil
}

// NewID returns a fresh "msg_…" id for answers that have none.
func NewID() string { return randomID("msg_") }

// toolID returns id, or a fresh "toolu_…" id when it is empty.
func toolID(id string) string {
	if id == "" {
		return randomID("toolu_")
	}
	return id
}

func randomID(prefix string) string { return dialect.RandomID(prefix) }

// errorType is how a canonical kind looks in Anthropic's dialect.
func errorType(kind string) (typ string, status int) {
	switch kind {
	case wire.ErrInvalidRequest:
		return "invalid_request_error", 400
	case wire.ErrAuthentication:
		return "authentication_error", 401
	case wire.ErrPermission:
		return "permission_error", 403
	case wire.ErrNotFound:
		return "not_found_error", 404
	case wire.ErrRateLimit:
		return "rate_limit_error", 429
	case wire.ErrOverloaded:
		return "overloaded_error", 529
	case wire.ErrTimeout:
		return "timeout_error", 504
	case wire.ErrUpstream:
		return "api_error", 502
	}
	return "api_error", 500
}

// errorTypeFor refines the type by status where Anthropic has a more precise
// one (413 request_too_large, 402 billing_error).
func errorTypeFor(e *wire.Error) (typ string, status int) {
	typ, status = errorType(dialect.Kind(e))
	status = dialect.StatusOf(e, status)
	if status == 413 && typ == "invalid_request_error" {
		typ = "request_too_large"
	}
	if status == 402 && typ == "permission_error" {
		typ = "billing_error" // Anthropic's 402: the gateway's balance or spend limit
	}
	return typ, status
}

func defaultMessage(kind string) string {
	switch kind {
	case wire.ErrInvalidRequest:
		return "Invalid request."
	case wire.ErrAuthentication:
		return "Invalid authentication."
	case wire.ErrPermission:
		return "Permission denied."
	case wire.ErrNotFound:
		return "Not found."
	case wire.ErrRateLimit:
		return "Rate limit reached."
	case wire.ErrOverloaded:
		return "Overloaded"
	case wire.ErrTimeout:
		return "The upstream timed out."
	case wire.ErrUpstream:
		return "The upstream failed."
	}
	return "Internal server error"
}

func appendErrorObject(b []byte, e *wire.Error) []byte {
	typ, _ := errorTypeFor(e)
	msg := e.Message
	if msg == "" {
		msg = defaultMessage(dialect.Kind(e))
	}
	b = append(b, `{"type":"error","error":{"type":`...)
	b = jsonx.AppendString(b, typ)
	b = append(b, `,"message":`...)
	b = jsonx.AppendString(b, msg)
	return append(b, '}', '}')
}

// EncodeError writes e as an Anthropic error body and returns the HTTP
// status: e.Status when set, else the kind's usual one (invalid_request 400,
// authentication 401, permission 403, not_found 404, rate_limit 429,
// overloaded 529, timeout 504, upstream 502, internal 500). An unknown or
// empty kind is derived from e.Status.
func EncodeError(e *wire.Error) (status int, body []byte) {
	if e == nil {
		e = &wire.Error{Kind: wire.ErrInternal}
	}
	_, status = errorTypeFor(e)
	return status, appendErrorObject(nil, e)
}

// DecodeError parses an upstream's error body (any common shape; non-JSON
// bodies become the message, cut to about 500 bytes).
func DecodeError(status int, body []byte) *wire.Error {
	return dialect.DecodeErrorBody(status, body)
}
