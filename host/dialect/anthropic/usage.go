package anthropic

import (
	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Usage reads the usage of a Messages response, or of one stream event
// (message_start carries it in its message, message_delta at the top),
// without decoding the rest: forwarded bytes are settled by it. ok is false
// when the object has no usage object.
func Usage(obj []byte) (u wire.Usage, ok bool) {
	if jsonx.KindOf(obj) != jsonx.Object {
		return u, false
	}
	_ = jsonx.ObjectEach(obj, func(k, v []byte) error {
		switch string(dec.K(k)) {
		case "usage":
			if jsonx.KindOf(v) == jsonx.Object {
				var err error
				u, err = decodeUsage(v)
				ok = err == nil
			}
		case "message":
			if mu, mok := Usage(v); mok {
				u, ok = mu, true
			}
		}
		return nil
	})
	return u, ok
}
