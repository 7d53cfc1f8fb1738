package gateway

import (
	"strings"

	"github.com/bardoinference/bardo/host/pipeline"
	hostrouting "github.com/bardoinference/bardo/host/routing"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// HeaderCost says who pays for the answer when it is not the gateway's
// ledger: "direct" for a provider reached with the caller's own key.
const HeaderCost = "X-Bardo-Cost"

// HeaderUpstreamKey carries the caller's own provider key for a direct
// provider when Authorization (or x-api-key) carries the gateway's key.
const HeaderUpstreamKey = "X-Bardo-Upstream-Key"

// gatewayKeyPrefix marks the gateway's own keys (host/auth.Prefix), which
// are never forwarded to a provider.
const gatewayKeyPrefix = "bardo_sk_"

// callerKey is the caller's own API key for a direct provider:
// X-Bardo-Upstream-Key, else what its SDK sends (Authorization: Bearer,
// x-api-key, x-goog-api-key) unless that is the gateway's key.
func callerKey(h Header) string {
	if v := strings.TrimSpace(string(h.Peek(HeaderUpstreamKey))); v != "" {
		return v
	}
	if v := string(h.Peek("Authorization")); len(v) > 7 && strings.EqualFold(v[:7], "Bearer ") {
		if v = strings.TrimSpace(v[7:]); !strings.HasPrefix(v, gatewayKeyPrefix) {
			return v
		}
	}
	for _, name := range []string{"x-api-key", "x-goog-api-key"} {
		if v := strings.TrimSpace(string(h.Peek(name))); v != "" && !strings.HasPrefix(v, gatewayKeyPrefix) {
			return v
		}
	}
	return ""
}

// directBody is what a direct provider receives: the caller's request as
// it sent it — before any layer masked, pruned or compressed it (the caller
// pays this provider itself and asked for the provider's own features) —
// with the model routing chose, in the provider's dialect.
func directBody(x *pipeline.Exchange, call *wire.UpstreamCall, route wire.Route) ([]byte, *wire.Error) {
	if x.CallerKey == "" {
		return nil, &wire.Error{Status: 401, Kind: wire.ErrAuthentication,
			Message: "provider " + route.Provider + " is reached with your own API key: send it as " + HeaderUpstreamKey + ": <key> (or, without a gateway key, as Authorization: Bearer <key> or x-api-key)"}
	}
	x.Headers = setKV(x.Headers, HeaderCost, "direct")
	if call.BodyMode == wire.BodyRaw {
		return call.Body, nil
	}
	hasIntent := jsonscan.HasMember(x.Original, hostrouting.BodyField)
	if call.BodyDialect == x.Meta.Dialect && route.Model == x.Meta.Model && !hasIntent {
		return x.Original, nil
	}
	req, err := codecFor(x.Meta.Dialect).DecodeRequest(x.Original)
	if err != nil {
		return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()}
	}
	req.Model = route.Model
	req.Extra = withoutMember(req.Extra, hostrouting.BodyField) // the gateway's, never the upstream's
	if call.BodyDialect != x.Meta.Dialect {
		req.Extra = nil // the caller's dialect's own fields mean nothing to the other
	}
	b, err := codecFor(call.BodyDialect).EncodeRequest(req)
	if err != nil {
		return nil, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "the request cannot be expressed for provider " + route.Provider + ": " + err.Error()}
	}
	return b, nil
}
