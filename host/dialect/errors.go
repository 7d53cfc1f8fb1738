package dialect

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// KindForType maps an upstream error type or code, as OpenAI, Anthropic and
// most compatible servers spell them, to a canonical kind ("" when unknown).
func KindForType(typ string) string {
	switch typ {
	case "invalid_request_error", "request_too_large", "invalid_request", "BadRequestError", "context_length_exceeded":
		return wire.ErrInvalidRequest
	case "authentication_error", "invalid_api_key", "AuthenticationError", "unauthorized":
		return wire.ErrAuthentication
	case "permission_error", "billing_error", "insufficient_quota", "PermissionDeniedError", "forbidden":
		return wire.ErrPermission
	case "not_found_error", "model_not_found", "NotFoundError", "not_found":
		return wire.ErrNotFound
	case "rate_limit_error", "rate_limit_exceeded", "tokens", "requests", "RateLimitError":
		return wire.ErrRateLimit
	case "overloaded_error", "server_overloaded", "service_unavailable", "service_unavailable_error", "overloaded":
		return wire.ErrOverloaded
	case "timeout_error", "timeout", "gateway_timeout":
		return wire.ErrTimeout
	case "api_error", "server_error", "internal_server_error", "InternalServerError":
		return wire.ErrUpstream
	// google.rpc.Code names, as Google's OpenAI-compatible endpoints report them
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return wire.ErrInvalidRequest
	case "UNAUTHENTICATED":
		return wire.ErrAuthentication
	case "PERMISSION_DENIED":
		return wire.ErrPermission
	case "NOT_FOUND":
		return wire.ErrNotFound
	case "RESOURCE_EXHAUSTED":
		return wire.ErrRateLimit
	case "UNAVAILABLE":
		return wire.ErrOverloaded
	case "DEADLINE_EXCEEDED":
		return wire.ErrTimeout
	case "INTERNAL", "UNKNOWN":
		return wire.ErrUpstream
	}
	return ""
}

// DecodeErrorBody turns an upstream error response into a canonical error.
// It understands OpenAI's {"error":{"message","type","code"}}, Anthropic's
// {"type":"error","error":{"type","message"}}, {"error":"text"}, the
// {"message"|"detail": …} bodies of many compatible servers, and falls back
// to the raw text for anything else. At most MaxUpstreamText bytes of
// upstream text reach the message. status is the upstream HTTP status; use 0
// for an error that arrived inside a 200 stream.
func DecodeErrorBody(status int, body []byte) *wire.Error {
	typ, code, msg, ok := parseErrorBody(body)
	kind := errorKind(status, KindForType(typ), KindForType(code))
	if !ok {
		if len(body) > 4*MaxUpstreamText {
			body = body[:4*MaxUpstreamText]
		}
		msg = string(bytes.TrimSpace(body))
	}
	if len(msg) > 4*MaxUpstreamText {
		msg = msg[:4*MaxUpstreamText]
	}
	msg = Truncate(cleanText(msg), MaxUpstreamText)
	if msg == "" {
		if status > 0 {
			msg = "upstream returned HTTP " + strconv.Itoa(status)
		} else {
			msg = "upstream error"
		}
	}
	st := status
	if st < 400 {
		st = DefaultStatus(kind)
	}
	return &wire.Error{Status: int64(st), Kind: kind, Message: msg, Retryable: Retryable(kind, st)}
}

// errorKind picks the canonical kind from the HTTP status and what the body's
// type and code say. The status decides, except where the body is more
// precise: an error inside a 200 stream (status < 400), a 5xx that says
// overloaded / timeout / rate limit, a 4xx the status alone would call
// invalid_request.
func errorKind(status int, byType, byCode string) string {
	if status < 400 {
		switch {
		case byType != "":
			return byType
		case byCode != "":
			return byCode
		}
		return wire.ErrUpstream
	}
	kind := KindForStatus(status)
	switch {
	case status >= 500:
		switch byType {
		case wire.ErrOverloaded, wire.ErrTimeout, wire.ErrRateLimit:
			return byType
		}
	case kind == wire.ErrInvalidRequest && byType != "" && byType != wire.ErrUpstream:
		return byType
	}
	return kind
}

// parseErrorBody extracts type, code and message from a JSON error body.
func parseErrorBody(body []byte) (typ, code, msg string, ok bool) {
	body = jsonx.TrimWS(body)
	if len(body) > 1<<20 || !jsonx.Valid(body) {
		return "", "", "", false
	}
	if jsonx.KindOf(body) == jsonx.Array { // [{"error":…}] (some Google endpoints)
		var first []byte
		_ = jsonx.ArrayEach(body, func(i int, v []byte) error {
			if first == nil {
				first = v
			}
			return nil
		})
		body = first
	}
	if jsonx.KindOf(body) != jsonx.Object {
		return "", "", "", false
	}
	var errObj []byte
	read := func(obj []byte) {
		_ = jsonx.ObjectEach(obj, func(key, v []byte) error {
			switch jsonx.KeyString(key) {
			case "error":
				switch jsonx.KindOf(v) {
				case jsonx.Object:
					errObj = v
				case jsonx.String:
					if msg == "" {
						msg, _ = jsonx.Unquote(v)
					}
				}
			case "message", "detail", "error_message":
				if jsonx.KindOf(v) == jsonx.String {
					msg, _ = jsonx.Unquote(v)
				} else if jsonx.KindOf(v) != jsonx.Null && msg == "" {
					msg = string(jsonx.AppendCompact(nil, v))
				}
			case "type":
				if jsonx.KindOf(v) == jsonx.String {
					if t, _ := jsonx.Unquote(v); t != "error" {
						typ = t
					}
				}
			case "code", "status":
				switch jsonx.KindOf(v) {
				case jsonx.String:
					code, _ = jsonx.Unquote(v)
				case jsonx.Number:
					code = string(v)
				}
			}
			return nil
		})
	}
	read(body)
	if errObj != nil {
		read(errObj)
	}
	return typ, code, msg, true
}

// cleanText replaces control characters (other than tab and newline) and
// invalid UTF-8, so upstream text cannot garble logs or terminals.
func cleanText(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}
