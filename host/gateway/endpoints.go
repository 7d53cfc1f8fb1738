package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// detectDialect tells an Anthropic Messages body from an OpenAI Chat
// Completions one by the fields only one of them has: a top-level "system",
// "stop_sequences" or "anthropic_version", or content blocks of Anthropic-only
// types, mean Anthropic; everything else is read as OpenAI.
func detectDialect(body []byte) wire.Dialect {
	var probe struct {
		System           json.RawMessage `json:"system"`
		StopSequences    json.RawMessage `json:"stop_sequences"`
		AnthropicVersion json.RawMessage `json:"anthropic_version"`
		Messages         []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return wire.DialectOpenAI // its decoder reports the syntax error
	}
	if probe.System != nil || probe.StopSequences != nil || probe.AnthropicVersion != nil {
		return wire.DialectAnthropic
	}
	for _, m := range probe.Messages {
		if m.Role == "system" || m.Role == "tool" || m.Role == "developer" {
			return wire.DialectOpenAI
		}
		for _, t := range []string{`"tool_use"`, `"tool_result"`, `"thinking"`, `"redacted_thinking"`} {
			if bytes.Contains(m.Content, []byte(`"type":`+t)) || bytes.Contains(m.Content, []byte(`"type": `+t)) {
				return wire.DialectAnthropic
			}
		}
	}
	return wire.DialectOpenAI
}

// countTokens answers POST /v1/messages/count_tokens: forwarded to the
// upstream when the provider serving the model speaks Anthropic (exact
// counts), otherwise estimated locally at one token per four bytes of the
// request's text, tool definitions included (adapter.RequestTokens' rule; the
// response says which with X-Bardo-Token-Count: upstream|estimate).
func (g *Gateway) countTokens(ctx *fasthttp.RequestCtx) {
	d := wire.DialectAnthropic
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		WriteError(ctx, d, &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest, Message: "use POST on /v1/messages/count_tokens"})
		return
	}
	body := ctx.PostBody()
	// count_tokens bodies have no max_tokens; decode them as a Messages
	// request that has one.
	req, err := codecFor(d).DecodeRequest(withMaxTokens(body))
	if err != nil {
		WriteError(ctx, d, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()})
		return
	}
	p, release := g.Pipelines.Acquire()
	defer release()
	rid := newRequestID()
	ctx.Response.Header.Set(HeaderRequestID, rid)

	var ip netip.Addr
	if a, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		ip = a.Unmap()
	}
	caller, werr := g.admit(ctx, &Admission{Dialect: d, Path: string(ctx.Path()), Header: &ctx.Request.Header,
		RemoteIP: ip, Model: req.Model, Method: "POST", Body: body})
	if werr != nil {
		WriteError(ctx, d, werr)
		return
	}
	x := g.newExchange(&ctx.Request.Header, rid, caller.Tenant, d, req, body)
	// The request phase runs as for the request being counted: what is
	// counted upstream is what would be sent (personal data masked, tools
	// pruned), never the caller's raw body. A layer's answer (a cache hit)
	// has nothing to say about a count and is ignored.
	rctx, cancel := context.WithTimeout(context.Background(), g.timeout())
	defer cancel()
	if _, werr := p.RequestPhase(rctx, x); werr != nil {
		WriteError(ctx, d, werr)
		return
	}
	if !x.Pristine {
		b, err := codecFor(d).EncodeRequest(x.Req)
		if err != nil {
			WriteError(ctx, d, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()})
			return
		}
		if !jsonscan.HasMember(body, "max_tokens") {
			b = withoutMember(b, "max_tokens") // added above to decode; count_tokens takes none
		}
		body = b
	}
	if pr, route, werr := p.Route(x); werr == nil {
		er, werr := p.Encode(ctx, x, pr, route)
		if werr == nil && er.Call != nil && er.Call.BodyDialect == wire.DialectAnthropic && strings.HasSuffix(er.Call.URL, "/messages") {
			pr.ExpandCredential(er.Call.Headers)
			resp, err := g.Upstream.Do(ctx, &upstream.Request{
				Method: "POST", URL: er.Call.URL + "/count_tokens", Headers: dropUnexpanded(er.Call.Headers), Body: body,
			})
			if err == nil && resp.Status == 200 {
				ctx.Response.Header.Set("X-Bardo-Token-Count", "upstream")
				ctx.Response.Header.Set(HeaderProvider, route.Provider)
				ctx.SetContentType("application/json")
				ctx.SetBody(resp.Body)
				return
			}
			if err == nil {
				_, werr := p.Decode(ctx, x, pr, route, resp.Status, resp.Headers, resp.Body)
				if werr != nil && werr.Kind == wire.ErrInvalidRequest {
					WriteError(ctx, d, werr)
					return
				}
			}
			// Any other failure: fall back to the estimate below.
		}
	}
	ctx.Response.Header.Set("X-Bardo-Token-Count", "estimate")
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"input_tokens":` + strconv.FormatInt(adapter.RequestTokens(req), 10) + `}`)
}

// withMaxTokens adds "max_tokens":1 to a JSON object that lacks it.
func withMaxTokens(body []byte) []byte {
	var probe struct {
		MaxTokens json.RawMessage `json:"max_tokens"`
	}
	if json.Unmarshal(body, &probe) != nil || probe.MaxTokens != nil {
		return body
	}
	i := bytes.IndexByte(body, '{')
	if i < 0 {
		return body
	}
	out := make([]byte, 0, len(body)+16)
	out = append(out, body[:i+1]...)
	out = append(out, `"max_tokens":1,`...)
	rest := bytes.TrimLeft(body[i+1:], " \t\r\n")
	if len(rest) > 0 && rest[0] == '}' {
		out = out[:len(out)-1] // empty object: no trailing comma
	}
	return append(out, body[i+1:]...)
}
