package responses

import (
	"strconv"
	"time"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/sdk/wire"
)

// NewID returns a fresh response id, "resp_…".
func NewID() string { return dialect.RandomID("resp_") }

// outItem is one output item being written: a message (one output_text
// part), a function call, or a reasoning item.
type outItem struct {
	kind   byte // 'm' message, 'f' function_call, 'r' reasoning
	id     string
	callID string
	name   string
	text   []byte // the message's text, the call's arguments, the reasoning summary
	enc    string // reasoning: encrypted_content
	block  int64  // canonical block index (streams)
	closed bool
}

// itemFor turns a canonical block into an output item; ok is false for
// blocks the Responses API has no output form for (images, documents).
func itemFor(b *wire.Block) (outItem, bool) {
	switch b.Type {
	case wire.BlockText:
		return outItem{kind: 'm', id: dialect.RandomID("msg_"), text: []byte(b.Text)}, true
	case wire.BlockToolUse:
		id := b.ID
		if id == "" {
			id = dialect.RandomID("call_")
		}
		return outItem{kind: 'f', id: dialect.RandomID("fc_"), callID: id, name: b.Name, text: []byte(dataToArguments(b.Data))}, true
	case wire.BlockThinking:
		return outItem{kind: 'r', id: dialect.RandomID("rs_"), text: []byte(b.Text), enc: b.Signature}, true
	case wire.BlockRedactedThinking:
		data, err := jsonx.Unquote(b.Data)
		if err != nil {
			data = string(b.Data)
		}
		return outItem{kind: 'r', id: dialect.RandomID("rs_"), enc: RedactedPrefix + data}, true
	}
	return outItem{}, false
}

// appendItem writes an output item; status is "completed" or "in_progress"
// (then with empty text, as an output_item.added event announces it).
func appendItem(b []byte, it *outItem, status string) []byte {
	done := status == "completed"
	switch it.kind {
	case 'm':
		b = append(b, `{"type":"message","id":`...)
		b = jsonx.AppendString(b, it.id)
		b = append(b, `,"status":"`...)
		b = append(b, status...)
		b = append(b, `","role":"assistant","content":[`...)
		if done {
			b = appendTextPart(b, it.text)
		}
		return append(b, ']', '}')
	case 'f':
		b = append(b, `{"type":"function_call","id":`...)
		b = jsonx.AppendString(b, it.id)
		b = append(b, `,"call_id":`...)
		b = jsonx.AppendString(b, it.callID)
		b = append(b, `,"name":`...)
		b = jsonx.AppendString(b, it.name)
		b = append(b, `,"arguments":`...)
		if done {
			b = jsonx.AppendString(b, string(it.text))
		} else {
			b = append(b, `""`...)
		}
		b = append(b, `,"status":"`...)
		b = append(b, status...)
		return append(b, '"', '}')
	}
	b = append(b, `{"type":"reasoning","id":`...)
	b = jsonx.AppendString(b, it.id)
	b = append(b, `,"summary":[`...)
	if done && len(it.text) > 0 {
		b = appendSummaryPart(b, it.text)
	}
	b = append(b, ']')
	if done && it.enc != "" {
		b = append(b, `,"encrypted_content":`...)
		b = jsonx.AppendString(b, it.enc)
	}
	return append(b, '}')
}

func appendTextPart(b, text []byte) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = jsonx.AppendString(b, string(text))
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

func appendSummaryPart(b, text []byte) []byte {
	b = append(b, `{"type":"summary_text","text":`...)
	b = jsonx.AppendString(b, string(text))
	return append(b, '}')
}

// appendUsage writes a Responses usage object. input_tokens counts every
// prompt token, cached ones included (OpenAI's convention, as the Chat
// codec's prompt_tokens).
func appendUsage(b []byte, u *wire.Usage) []byte {
	in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, in, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CacheReadTokens, 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = strconv.AppendInt(b, in+u.OutputTokens, 10)
	return append(b, '}')
}

// statusOf is a response's status and incomplete reason for a canonical
// stop reason.
func statusOf(stop string) (status, reason string) {
	switch stop {
	case wire.StopMaxTokens:
		return "incomplete", "max_output_tokens"
	case wire.StopContentFilter:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// head is what a response object says before its output.
type head struct {
	id, model, status, reason string
	created                   int64
}

// appendResponse writes a whole response object. usage nil writes null; e
// non-nil writes a failed response's error.
func appendResponse(b []byte, h *head, items []outItem, usage *wire.Usage, e *wire.Error) []byte {
	b = append(b, `{"id":`...)
	b = jsonx.AppendString(b, h.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, h.created, 10)
	b = append(b, `,"status":"`...)
	b = append(b, h.status...)
	b = append(b, `","background":false,"error":`...)
	if e != nil {
		b = append(b, `{"code":`...)
		b = jsonx.AppendString(b, errorCode(e))
		b = append(b, `,"message":`...)
		b = jsonx.AppendString(b, errorMessage(e))
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if h.reason != "" {
		b = append(b, `{"reason":`...)
		b = jsonx.AppendString(b, h.reason)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":null,"metadata":{},"model":`...)
	b = jsonx.AppendString(b, h.model)
	b = append(b, `,"output":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, &items[i], "completed")
	}
	b = append(b, `],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"truncation":"disabled","usage":`...)
	if usage != nil {
		b = appendUsage(b, usage)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// EncodeResponse writes resp as a Responses API response object with a
// fresh "resp_" id (created_at is now). Blocks the Responses API has no
// output item for (images, documents) are left out.
func EncodeResponse(resp *wire.Response) ([]byte, error) {
	items := make([]outItem, 0, len(resp.Content))
	for i := range resp.Content {
		if it, ok := itemFor(&resp.Content[i]); ok {
			items = append(items, it)
		}
	}
	status, reason := statusOf(resp.StopReason)
	h := head{id: NewID(), model: resp.Model, status: status, reason: reason, created: time.Now().Unix()}
	size := 600 + len(resp.Model)
	for i := range items {
		size += 120 + len(items[i].text) + len(items[i].enc)
	}
	return appendResponse(make([]byte, 0, size), &h, items, &resp.Usage, nil), nil
}

// EncodeError writes e as an error body (the Responses API uses Chat
// Completions' {"error":{message,type,param,code}}) and returns the status.
func EncodeError(e *wire.Error) (status int, body []byte) { return openai.EncodeError(e) }

// errorCode is the code of a failed response's error and of an error
// event.
func errorCode(e *wire.Error) string {
	switch dialect.Kind(e) {
	case wire.ErrInvalidRequest:
		return "invalid_request_error"
	case wire.ErrAuthentication:
		return "invalid_api_key"
	case wire.ErrPermission:
		return "permission_error"
	case wire.ErrNotFound:
		return "not_found"
	case wire.ErrRateLimit:
		return "rate_limit_exceeded"
	case wire.ErrOverloaded:
		return "server_is_overloaded"
	case wire.ErrTimeout:
		return "timeout"
	}
	return "server_error"
}

func errorMessage(e *wire.Error) string {
	if e.Message != "" {
		return e.Message
	}
	return "The request failed."
}
