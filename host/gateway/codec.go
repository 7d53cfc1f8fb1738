package gateway

import (
	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/dialect/responses"
	"github.com/bardoinference/bardo/sdk/wire"
)

// codec is one dialect's native encoders and decoders.
type codec interface {
	DecodeRequest(body []byte) (*wire.Request, error)
	EncodeRequest(req *wire.Request) ([]byte, error)
	DecodeResponse(body []byte) (*wire.Response, error)
	EncodeResponse(resp *wire.Response) ([]byte, error)
	EncodeError(e *wire.Error) (status int, body []byte)
	NewStreamEncoder(req *wire.Request) streamEncoder
	NewStreamDecoder() streamDecoder
}

type streamEncoder interface {
	Encode(dst []byte, ev *wire.Event) []byte
}

type streamDecoder interface {
	Decode(event string, data []byte) ([]wire.Event, error)
	Finish() []wire.Event
	// Done reports whether the stream's own end marker was seen ([DONE],
	// message_stop): without it, an upstream stream that simply stops was cut.
	Done() bool
}

type openaiCodec struct{}

func (openaiCodec) DecodeRequest(b []byte) (*wire.Request, error) { return openai.DecodeRequest(b) }

// EncodeRequest asks an OpenAI upstream for usage in streams: translated and
// re-encoded streams need it for their own usage events (and billing).
func (openaiCodec) EncodeRequest(r *wire.Request) ([]byte, error) {
	return openai.EncodeRequestWith(r, openai.EncodeOptions{StreamUsage: r.Stream})
}
func (openaiCodec) DecodeResponse(b []byte) (*wire.Response, error) { return openai.DecodeResponse(b) }
func (openaiCodec) EncodeResponse(r *wire.Response) ([]byte, error) { return openai.EncodeResponse(r) }
func (openaiCodec) EncodeError(e *wire.Error) (int, []byte)         { return openai.EncodeError(e) }
func (openaiCodec) NewStreamEncoder(r *wire.Request) streamEncoder {
	return openai.NewStreamEncoder(openai.IncludeUsage(r))
}
func (openaiCodec) NewStreamDecoder() streamDecoder { return openai.NewStreamDecoder() }

type anthropicCodec struct{}

func (anthropicCodec) DecodeRequest(b []byte) (*wire.Request, error) {
	return anthropic.DecodeRequest(b)
}
func (anthropicCodec) EncodeRequest(r *wire.Request) ([]byte, error) {
	return anthropic.EncodeRequest(r)
}
func (anthropicCodec) DecodeResponse(b []byte) (*wire.Response, error) {
	return anthropic.DecodeResponse(b)
}
func (anthropicCodec) EncodeResponse(r *wire.Response) ([]byte, error) {
	return anthropic.EncodeResponse(r)
}
func (anthropicCodec) EncodeError(e *wire.Error) (int, []byte) { return anthropic.EncodeError(e) }
func (anthropicCodec) NewStreamEncoder(*wire.Request) streamEncoder {
	return anthropic.NewStreamEncoder()
}
func (anthropicCodec) NewStreamDecoder() streamDecoder { return anthropic.NewStreamDecoder() }

// responsesCodec is the OpenAI Responses API's (host/dialect/responses).
type responsesCodec struct{}

func (responsesCodec) DecodeRequest(b []byte) (*wire.Request, error) {
	return responses.DecodeRequest(b)
}
func (responsesCodec) EncodeRequest(r *wire.Request) ([]byte, error) {
	return responses.EncodeRequest(r)
}
func (responsesCodec) DecodeResponse(b []byte) (*wire.Response, error) {
	return responses.DecodeResponse(b)
}
func (responsesCodec) EncodeResponse(r *wire.Response) ([]byte, error) {
	return responses.EncodeResponse(r)
}
func (responsesCodec) EncodeError(e *wire.Error) (int, []byte) { return responses.EncodeError(e) }
func (responsesCodec) NewStreamEncoder(*wire.Request) streamEncoder {
	return responses.NewStreamEncoder()
}
func (responsesCodec) NewStreamDecoder() streamDecoder { return responses.NewStreamDecoder() }

// codecFor returns the codec of a dialect; DialectNone falls back to OpenAI,
// the most widely spoken.
func codecFor(d wire.Dialect) codec {
	switch d {
	case wire.DialectAnthropic:
		return anthropicCodec{}
	case wire.DialectResponses:
		return responsesCodec{}
	}
	return openaiCodec{}
}
