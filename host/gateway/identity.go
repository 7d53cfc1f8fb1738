package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/identity"
	"github.com/bardoinference/bardo/sdk/wire"
)

// IdentityLinker links ERC-8004 identities to keys; *identity.Service
// implements it.
type IdentityLinker interface {
	Link(ctx context.Context, keyID string, r *identity.LinkRequest) (*identity.LinkResult, error)
	Unlink(ctx context.Context, keyID string) (string, error)
}

// maxLinkBody bounds POST /v1/identity/link's body.
const maxLinkBody = 64 << 10

// identityLink serves POST /v1/identity/link (link the agent of the
// body's EIP-712 proof to the caller's key) and DELETE (unlink it). Only a
// bardo_sk_ key may link: the link makes the agent's signatures act as
// that key, so the caller must hold it; a Privy user, an x402 wallet or a
// delegation is refused with 403.
func (g *Gateway) identityLink(ctx *fasthttp.RequestCtx, method string) {
	d := wire.DialectOpenAI
	if len(ctx.Request.Header.Peek("anthropic-version")) > 0 {
		d = wire.DialectAnthropic
	}
	ctx.Response.Header.Set(HeaderRequestID, newRequestID())
	if g.Identity == nil {
		WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: "ERC-8004 identities are not enabled on this gateway"})
		return
	}
	if method != fasthttp.MethodPost && method != fasthttp.MethodDelete {
		ctx.Response.Header.Set("Allow", "POST, DELETE")
		WriteError(ctx, d, &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest, Message: "use POST or DELETE on /v1/identity/link"})
		return
	}
	var ip netip.Addr
	if a, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		ip = a.Unmap()
	}
	c, werr := g.admit(ctx, &Admission{Dialect: d, Path: string(ctx.Path()), Header: &ctx.Request.Header, RemoteIP: ip})
	if c.Tab != nil {
		s := &Settlement{Tenant: c.Tenant, Key: c.Key, Dialect: d, Path: PathLocal, Status: 200}
		if werr != nil {
			s.Path, s.Status, s.Err = PathError, int(werr.Status), werr
		}
		c.Tab.Close(s)
	}
	if werr != nil {
		WriteError(ctx, d, werr)
		return
	}
	cred, err := auth.KeyScheme{}.Detect(&ctx.Request.Header)
	keyID, ok := auth.TokenID(cred.Value)
	if err != nil || !ok || keyID != c.Key {
		WriteError(ctx, d, &wire.Error{Status: 403, Kind: wire.ErrPermission,
			Message: "only a bardo_sk_ key may link an ERC-8004 identity: send it as Authorization: Bearer <key> or x-api-key"})
		return
	}
	if method == fasthttp.MethodDelete {
		agent, err := g.Identity.Unlink(ctx, keyID)
		if errors.Is(err, identity.ErrRefused) {
			WriteError(ctx, d, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: refusal(err)})
			return
		}
		if err != nil {
			g.identityFail(ctx, d, err)
			return
		}
		writeJSON(ctx, map[string]any{"agent": agent, "keyId": keyID, "unlinked": true})
		return
	}
	body := ctx.PostBody()
	var r identity.LinkRequest
	if len(body) > maxLinkBody || json.Unmarshal(body, &r) != nil {
		WriteError(ctx, d, &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: `the body must be JSON {"agentId","signer","nonce","deadline","signature"} (an EIP-712 Link proof)`})
		return
	}
	res, err := g.Identity.Link(ctx, keyID, &r)
	if errors.Is(err, identity.ErrRefused) {
		WriteError(ctx, d, &wire.Error{Status: 403, Kind: wire.ErrPermission, Message: "identity link refused: " + refusal(err)})
		return
	}
	if err != nil {
		g.identityFail(ctx, d, err)
		return
	}
	writeJSON(ctx, res)
}

func refusal(err error) string {
	return strings.TrimPrefix(err.Error(), identity.ErrRefused.Error()+": ")
}

// identityFail answers a chain or store failure: 503, the cause logged
// (it names no URL: host/x402's dial scrubs it).
func (g *Gateway) identityFail(ctx *fasthttp.RequestCtx, d wire.Dialect, err error) {
	if g.Log != nil {
		g.Log.Error("identity link", "err", err)
	}
	WriteError(ctx, d, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 2000,
		Message: "identities cannot be linked right now (the chain or the store is unreachable); try again"})
}
