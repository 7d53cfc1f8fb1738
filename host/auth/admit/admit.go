// Package admit is the gateway's admission by API key: it implements
// gateway.Admitter over an auth.Authenticator, so every request that runs
// the pipeline carries a verified bardo_sk_ key whose account is the
// request's tenant, and a refused request reaches no layer.
package admit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/identity"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Refusal texts. The 401 is one text whatever the cause (no key, unknown,
// wrong, revoked, expired, disabled), so an answer never tells whether a
// key exists; the cause goes to the operator's log only.
const (
	msgUnauthenticated = "invalid or missing API key: send a bardo_sk_ key as Authorization: Bearer <key> or x-api-key"
	msgUnavailable     = "the key store is unavailable; try again"
)

// Keys admits callers by their bardo_sk_ key.
type Keys struct {
	Auth *auth.Authenticator
	Log  *slog.Logger // nil: slog.Default()
	// Schemes is the credential detection order (nil: auth.Schemes).
	Schemes []auth.Scheme
	// Meter, when set, is called once the key verified and its scopes
	// allow the request: rate limits, allowance, budgets and the
	// reservation (host/billing). nil admits without metering.
	Meter Meter
	// Payments, when set, makes the gateway accept x402: a request with
	// a payment header is admitted by it (the wallet is the tenant), and a
	// completion without any credential gets its 402 challenge instead of
	// the 401. host/paywall implements it.
	Payments Payments
	// Privy, when set, admits "Authorization: Bearer <Privy access
	// token>": the user's account is billed as a key's (scopes none,
	// then the Meter), under key id auth.PrivyKeyID.
	Privy *auth.Privy
	// Identity, when set, admits ERC-8004 delegations (X-Bardo-Delegation):
	// a request signed for an agent linked to a key is billed as that key,
	// at the agent's reputation spread when it is lower than the tier's.
	Identity *identity.Service
}

// Payments admits requests paid per request.
type Payments interface {
	// Pay admits a request whose credential is an x402 payment.
	Pay(ctx context.Context, cred auth.Credential, a *gateway.Admission) (gateway.Caller, *wire.Error)
	// Challenge answers a request without a credential; ok false leaves
	// it to the 401 (a read is not for sale).
	Challenge(ctx context.Context, a *gateway.Admission) (c gateway.Caller, e *wire.Error, ok bool)
}

// Meter meters an admitted key's request: it returns the Caller (with a
// Tab for a request that may spend) or a refusal in the canonical error
// form, with the Caller filled when the refusal is to be settled on its
// tab. *billing.Meter implements it.
type Meter interface {
	Open(ctx context.Context, p *auth.Principal, a *gateway.Admission) (gateway.Caller, *wire.Error)
}

var _ gateway.Admitter = (*Keys)(nil)

// Admit implements gateway.Admitter: 401 without a valid key, 403 when
// the key's scopes (read-only, models, IP allow-list) forbid the request,
// 503 when the store cannot be read; then, with a Meter, what it decides
// (limits, budgets, the balance and the request's tab).
func (k *Keys) Admit(ctx context.Context, a *gateway.Admission) (gateway.Caller, *wire.Error) {
	schemes := k.Schemes
	if schemes == nil {
		schemes = auth.Schemes
	}
	if k.Payments != nil {
		schemes = auth.WithX402(schemes)
	}
	if k.Privy != nil {
		schemes = auth.WithPrivy(schemes)
	}
	if k.Identity != nil {
		schemes = auth.WithDelegation(schemes)
	}
	cred, err := auth.Detect(a.Header, schemes)
	if k.Payments != nil {
		if err == nil && cred.Kind == auth.KindX402 {
			return k.Payments.Pay(ctx, cred, a)
		}
		if errors.Is(err, auth.ErrNoCredential) {
			if c, e, ok := k.Payments.Challenge(ctx, a); ok {
				return c, e
			}
		}
	}
	if err == nil && cred.Kind == auth.KindPrivy && k.Privy != nil {
		return k.admitPrivy(ctx, cred, a)
	}
	if err == nil && cred.Kind == auth.KindDelegation && k.Identity != nil {
		return k.admitDelegation(ctx, cred, a)
	}
	if err == nil && cred.Kind != auth.KindKey {
		err = errors.New("credential kind " + cred.Kind.String() + " is not accepted yet")
	}
	if err != nil {
		k.log().Debug("request refused", "path", a.Path, "ip", a.RemoteIP, "cause", err)
		return gateway.Caller{}, unauthenticated()
	}
	p, err := k.Auth.Verify(ctx, cred.Value)
	if err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			// The cause (revoked, expired…) names no secret: Verify's errors
			// carry at most the key's public id.
			k.log().Info("request refused", "path", a.Path, "ip", a.RemoteIP, "cause", err)
			return gateway.Caller{}, unauthenticated()
		}
		k.log().Error("key store", "err", err)
		return gateway.Caller{}, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Message: msgUnavailable, Retryable: true, RetryAfterMs: 1000}
	}
	if k.Identity != nil {
		// A key linked to an ERC-8004 agent is priced at the agent's tier.
		// The chain being unreachable costs the discount, not the request.
		st, linked, err := k.Identity.KeyStanding(ctx, p.Key.ID)
		if err != nil {
			k.log().Warn("identity standing", "key", p.Key.ID, "err", err)
		}
		if linked {
			cp := *p // p is the authenticator's shared record
			cp.Spread = st.Tier.Spread
			p = &cp
		}
	}
	return k.open(ctx, p, a)
}

// admitPrivy admits a Privy access token: 401 in the caller's dialect for
// any token that does not verify (the reason named: expired, audience…),
// 503 when the key set or the store cannot be read; then as a key.
func (k *Keys) admitPrivy(ctx context.Context, cred auth.Credential, a *gateway.Admission) (gateway.Caller, *wire.Error) {
	p, err := k.Privy.Principal(ctx, cred.Value)
	switch {
	case errors.Is(err, auth.ErrPrivyToken):
		k.log().Info("request refused", "path", a.Path, "ip", a.RemoteIP, "cause", err)
		return gateway.Caller{}, &wire.Error{Status: 401, Kind: wire.ErrAuthentication,
			Message: err.Error() + "; send a current Privy access token of this app, or a bardo_sk_ key"}
	case errors.Is(err, auth.ErrPrivyUnavailable):
		k.log().Error("privy", "err", err)
		return gateway.Caller{}, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 5000,
			Message: "Privy tokens cannot be checked right now (the app's key set is unreachable); try again"}
	case err != nil:
		k.log().Error("privy account store", "err", err)
		return gateway.Caller{}, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Message: msgUnavailable, Retryable: true, RetryAfterMs: 1000}
	}
	return k.open(ctx, p, a)
}

// admitDelegation admits an ERC-8004 delegation: 401 naming why for a
// delegation that does not verify (malformed, expired, replayed, not
// linked, not the agent's signer, bad signature) or whose key no longer
// admits; 503 when the chain or the store cannot be read; then as the
// linked key, at the agent's reputation spread.
func (k *Keys) admitDelegation(ctx context.Context, cred auth.Credential, a *gateway.Admission) (gateway.Caller, *wire.Error) {
	if strings.HasPrefix(a.Path, "/v1/responses") {
		// The Responses front admits a request twice (to read the stored
		// turn, then the completion it converts to), which a single-use
		// delegation cannot pass, and the engine sees the converted body.
		return gateway.Caller{}, &wire.Error{Status: 401, Kind: wire.ErrAuthentication,
			Message: "ERC-8004 delegations are not accepted on /v1/responses: use /v1/chat/completions or /v1/messages, or a bardo_sk_ key"}
	}
	method := a.Method
	if method == "" {
		method = "GET" // reads: no body
	}
	d, err := k.Identity.Delegate(ctx, cred.Value, method, a.Path, a.Body)
	if err == nil {
		var p *auth.Principal
		if p, err = k.Auth.Lookup(ctx, d.KeyID); err == nil {
			p.Spread = d.Standing.Tier.Spread
			return k.open(ctx, p, a)
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, auth.ErrUnauthenticated) {
			err = fmt.Errorf("%w: the linked key does not admit (%v)", identity.ErrRefused, err)
		}
	}
	if errors.Is(err, identity.ErrRefused) {
		k.log().Info("request refused", "path", a.Path, "ip", a.RemoteIP, "cause", err)
		return gateway.Caller{}, &wire.Error{Status: 401, Kind: wire.ErrAuthentication,
			Message: "ERC-8004 delegation refused: " + strings.TrimPrefix(err.Error(), identity.ErrRefused.Error()+": ")}
	}
	k.log().Error("identity", "err", err)
	return gateway.Caller{}, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 2000,
		Message: "ERC-8004 delegations cannot be checked right now (the chain or the store is unreachable); try again"}
}

// open checks a verified principal's scopes and meters its request.
func (k *Keys) open(ctx context.Context, p *auth.Principal, a *gateway.Admission) (gateway.Caller, *wire.Error) {
	if err := p.Allow(auth.Access{Model: a.Model, ClientIP: a.RemoteIP, Spends: a.Spends}); err != nil {
		k.log().Info("request forbidden", "key", p.Key.ID, "path", a.Path, "ip", a.RemoteIP, "cause", err)
		msg := strings.TrimPrefix(err.Error(), auth.ErrForbidden.Error()+": ")
		return gateway.Caller{}, &wire.Error{Status: 403, Kind: wire.ErrPermission, Message: msg}
	}
	if k.Meter != nil {
		return k.Meter.Open(ctx, p, a)
	}
	return gateway.Caller{Tenant: p.Key.AccountID, Key: p.Key.ID}, nil
}

func unauthenticated() *wire.Error {
	return &wire.Error{Status: 401, Kind: wire.ErrAuthentication, Message: msgUnauthenticated}
}

func (k *Keys) log() *slog.Logger {
	if k.Log != nil {
		return k.Log
	}
	return slog.Default()
}
