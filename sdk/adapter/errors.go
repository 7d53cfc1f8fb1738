// Package adapter holds helpers shared by provider adapter plugins: mapping an
// upstream's HTTP failure to a canonical error, estimating tokens, and reading
// the parts of a request adapters commonly need.
package adapter

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

// maxUpstreamMessage bounds how much upstream text reaches a caller.
const maxUpstreamMessage = 500

// ErrorFromResponse maps an upstream's non-2xx response to a canonical error:
// the kind and retryability follow the status (429 and 5xx are retryable,
// retry-after is honoured), the message is taken from an OpenAI-style
// {"error":{"message"}} or Anthropic-style {"error":{"type","message"}} body
// when there is one, and is bounded in length.
func ErrorFromResponse(provider string, status int64, headers []wire.KV, body []byte) *wire.Error {
	e := &wire.Error{Status: status, Kind: KindForStatus(status)}
	switch {
	case status == 429 || status == 529 || status >= 500:
		e.Retryable = true
	}
	if ra := wire.Header(headers, "retry-after"); ra != "" {
		if secs, err := strconv.ParseFloat(ra, 64); err == nil && secs >= 0 {
			e.RetryAfterMs = int64(secs * 1000)
		} else if t, err := time.Parse(time.RFC1123, ra); err == nil {
			if d := time.Until(t); d > 0 {
				e.RetryAfterMs = d.Milliseconds()
			}
		}
	}
	msg := upstreamMessage(body)
	if msg == "" {
		msg = "HTTP " + strconv.FormatInt(status, 10)
	}
	e.Message = "upstream " + provider + ": " + msg
	// A gateway in front of a failed upstream answers 502 (or passes on the
	// client-side statuses that mean the same to the caller).
	switch {
	case status == 429 || status == 529:
	case status >= 500:
		e.Status = 502
	case status == 401 || status == 403:
		// The caller's credentials are not the upstream's: the operator's key
		// was refused. That is the gateway's failure, not the caller's.
		e.Status, e.Kind = 502, wire.ErrUpstream
		e.Message = "upstream " + provider + " refused the gateway's credentials: " + msg
	}
	return e
}

// KindForStatus returns the canonical error kind for an HTTP status.
func KindForStatus(status int64) string {
	switch {
	case status == 400 || status == 413 || status == 422:
		return wire.ErrInvalidRequest
	case status == 401:
		return wire.ErrAuthentication
	case status == 403:
		return wire.ErrPermission
	case status == 404:
		return wire.ErrNotFound
	case status == 408 || status == 504:
		return wire.ErrTimeout
	case status == 429:
		return wire.ErrRateLimit
	case status == 529 || status == 503:
		return wire.ErrOverloaded
	}
	return wire.ErrUpstream
}

func upstreamMessage(body []byte) string {
	var b struct {
		Error json.RawMessage `json:"error"`
		// Some OpenAI-compatible servers put the message at the top level.
		Message string `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &b) == nil {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		var str string
		switch {
		case json.Unmarshal(b.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(b.Error, &str) == nil && str != "":
			msg = str
		case b.Message != "":
			msg = b.Message
		}
	} else {
		msg = strings.TrimSpace(string(body))
	}
	if len(msg) > maxUpstreamMessage {
		msg = msg[:maxUpstreamMessage] + "…"
	}
	return msg
}
