// Package dialect holds what the native dialect codecs (packages
// [github.com/bardoinference/bardo/host/dialect/openai],
// [github.com/bardoinference/bardo/host/dialect/anthropic] and
// [github.com/bardoinference/bardo/host/dialect/responses]) share: the errors
// they return, the mapping of canonical error kinds to HTTP statuses, and
// small SSE helpers.
package dialect

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/bardoinference/bardo/sdk/wire"
)

// ErrInvalidRequest is wrapped by every error a codec returns for a caller's
// request it cannot accept (malformed JSON, missing or mistyped fields). The
// server answers these with HTTP 400 (see [ToWireError]).
var ErrInvalidRequest = errors.New("invalid request")

// ErrInvalidResponse is wrapped by every error a codec returns for an
// upstream response or stream event it cannot parse. The server answers these
// with HTTP 502.
var ErrInvalidResponse = errors.New("invalid upstream response")

// FormatError is a decoding failure with the JSON path of the offending field.
type FormatError struct {
	Kind  error  // ErrInvalidRequest or ErrInvalidResponse
	Field string // JSON path, e.g. "messages[2].content"; empty for the whole body
	Msg   string
}

func (e *FormatError) Error() string {
	if e.Field == "" {
		return e.Kind.Error() + ": " + e.Msg
	}
	return e.Kind.Error() + ": " + e.Field + ": " + e.Msg
}

// Unwrap returns Kind, so errors.Is(err, ErrInvalidRequest) works.
func (e *FormatError) Unwrap() error { return e.Kind }

// RequestError returns a *FormatError wrapping ErrInvalidRequest.
func RequestError(field, format string, args ...any) error {
	return &FormatError{Kind: ErrInvalidRequest, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ResponseError returns a *FormatError wrapping ErrInvalidResponse.
func ResponseError(field, format string, args ...any) error {
	return &FormatError{Kind: ErrInvalidResponse, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ToWireError turns a codec error into the canonical error the caller sees:
// ErrInvalidRequest → 400 invalid_request, ErrInvalidResponse → 502 upstream,
// anything else → 500 internal.
func ToWireError(err error) *wire.Error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, ErrInvalidRequest):
		return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()}
	case errors.Is(err, ErrInvalidResponse):
		return &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: err.Error(), Retryable: true}
	}
	return &wire.Error{Status: 500, Kind: wire.ErrInternal, Message: err.Error()}
}

// DefaultStatus is the HTTP status of a canonical error kind when the error
// does not carry one. Overloaded is 529 (Anthropic's); the OpenAI codec uses
// 503 instead.
func DefaultStatus(kind string) int {
	switch kind {
	case wire.ErrInvalidRequest:
		return 400
	case wire.ErrAuthentication:
		return 401
	case wire.ErrPermission:
		return 403
	case wire.ErrNotFound:
		return 404
	case wire.ErrRateLimit:
		return 429
	case wire.ErrOverloaded:
		return 529
	case wire.ErrTimeout:
		return 504
	case wire.ErrUpstream:
		return 502
	}
	return 500
}

// KindForStatus guesses the canonical kind of an upstream HTTP status.
func KindForStatus(status int) string {
	switch {
	case status == 401:
		return wire.ErrAuthentication
	case status == 402 || status == 403:
		return wire.ErrPermission
	case status == 404:
		return wire.ErrNotFound
	case status == 408 || status == 504:
		return wire.ErrTimeout
	case status == 429:
		return wire.ErrRateLimit
	case status == 503 || status == 529:
		return wire.ErrOverloaded
	case status >= 400 && status < 500:
		return wire.ErrInvalidRequest
	}
	return wire.ErrUpstream
}

// Retryable reports whether a request failing with this kind and status may
// succeed if tried again (possibly elsewhere).
func Retryable(kind string, status int) bool {
	switch kind {
	case wire.ErrRateLimit, wire.ErrOverloaded, wire.ErrTimeout, wire.ErrUpstream:
		return true
	}
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// StatusOf returns e.Status when set, else def.
func StatusOf(e *wire.Error, def int) int {
	if e != nil && e.Status >= 100 && e.Status <= 999 {
		return int(e.Status)
	}
	return def
}

// MaxUpstreamText bounds how many bytes of an upstream's error text end up in
// a canonical error message.
const MaxUpstreamText = 500

// Truncate cuts s to at most max bytes on a rune boundary, adding "…" when it
// had to cut.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// AppendEvent appends one server-sent event: "event: name\n" (omitted when
// name is empty), "data: " + data + "\n\n". data must not contain newlines.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// Kind returns e's canonical kind, or, when it is empty or unknown, the kind
// its status suggests (internal when it has none).
func Kind(e *wire.Error) string {
	switch e.Kind {
	case wire.ErrInvalidRequest, wire.ErrAuthentication, wire.ErrPermission, wire.ErrNotFound,
		wire.ErrRateLimit, wire.ErrOverloaded, wire.ErrTimeout, wire.ErrUpstream, wire.ErrInternal:
		return e.Kind
	}
	if e.Status >= 400 {
		return KindForStatus(int(e.Status))
	}
	return wire.ErrInternal
}
