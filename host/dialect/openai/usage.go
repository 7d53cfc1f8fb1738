package openai

import (
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Usage reads the usage of a Chat Completions response, or of one stream
// chunk (the last, with stream_options.include_usage), without decoding the
// rest: forwarded bytes are settled by it. ok is false when the object has
// no usage object.
func Usage(obj []byte) (u wire.Usage, ok bool) {
	if jsonx.KindOf(obj) != jsonx.Object {
		return u, false
	}
	_ = jsonx.ObjectEach(obj, func(k, v []byte) error {
		if string(dec.K(k)) == "usage" && jsonx.KindOf(v) == jsonx.Object {
			var err error
			u, err = decodeUsage(v)
			ok = err == nil
		}
		return nil
	})
	return u, ok
}
