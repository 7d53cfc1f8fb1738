package openai

import (
	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// errorInfo is how a canonical kind looks in OpenAI's dialect.
func errorInfo(kind string) (typ string, status int, code string) {
	switch kind {
	case wire.ErrInvalidRequest:
		return "invalid_request_error", 400, ""
	case wire.ErrAuthentication:
		return "authentication_error", 401, "invalid_api_key"
	case wire.ErrPermission:
		return "permission_error", 403, ""
	case wire.ErrNotFound:
		return "not_found_error", 404, ""
	case wire.ErrRateLimit:
		return "rate_limit_error", 429, "rate_limit_exceeded"
	case wire.ErrOverloaded:
		return "server_error", 503, ""
	case wire.ErrTimeout:
		return "server_error", 504, ""
	case wire.ErrUpstream:
		return "server_error", 502, ""
	}
	return "server_error", 500, ""
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
		return "The server is overloaded, please try again later."
	case wire.ErrTimeout:
		return "The upstream timed out."
	case wire.ErrUpstream:
		return "The upstream failed."
	}
	return "Internal error."
}

// EncodeError writes e as an OpenAI error body and returns the HTTP status:
// e.Status when set, else the kind's usual status (overloaded is 503 here).
// An unknown or empty kind is derived from e.Status.
func EncodeError(e *wire.Error) (status int, body []byte) {
	if e == nil {
		e = &wire.Error{Kind: wire.ErrInternal}
	}
	kind := dialect.Kind(e)
	_, def, _ := errorInfo(kind)
	return dialect.StatusOf(e, def), appendErrorObject(nil, e)
}

// appendErrorObject appends {"error":{...}}.
func appendErrorObject(b []byte, e *wire.Error) []byte {
	kind := dialect.Kind(e)
	typ, def, code := errorInfo(kind)
	if kind == wire.ErrPermission && dialect.StatusOf(e, def) == 402 {
		// OpenAI's own word for a prepaid balance that ran out.
		typ, code = "insufficient_quota", "insufficient_quota"
	}
	msg := e.Message
	if msg == "" {
		msg = defaultMessage(kind)
	}
	b = append(b, `{"error":{"message":`...)
	b = jsonx.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsonx.AppendString(b, typ)
	b = append(b, `,"param":null,"code":`...)
	if code != "" {
		b = jsonx.AppendString(b, code)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}', '}')
}

// DecodeError parses an upstream's error body (any common shape; non-JSON
// bodies become the message, cut to about 500 bytes).
func DecodeError(status int, body []byte) *wire.Error {
	return dialect.DecodeErrorBody(status, body)
}
