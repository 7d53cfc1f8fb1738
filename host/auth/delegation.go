package auth

import (
	"bytes"
	"context"
)

// DelegationScheme finds an ERC-8004 delegation: the X-Bardo-Delegation
// header (host/identity decodes and verifies it). It is last in the
// spec's order, so a payment header, a bardo_sk_ key or a Privy token wins.
type DelegationScheme struct{}

// Kind returns KindDelegation.
func (DelegationScheme) Kind() Kind { return KindDelegation }

// Detect implements Scheme.
func (DelegationScheme) Detect(h Header) (Credential, error) {
	if v := bytes.TrimSpace(h.Peek("X-Bardo-Delegation")); len(v) > 0 {
		return Credential{Kind: KindDelegation, Value: string(v), Header: "X-Bardo-Delegation"}, nil
	}
	return Credential{}, ErrNotThisKind
}

// WithDelegation is schemes with the delegation seam replaced by
// DelegationScheme: the order of a gateway with [identity] configured.
func WithDelegation(schemes []Scheme) []Scheme {
	out := make([]Scheme, len(schemes))
	for i, s := range schemes {
		if s.Kind() == KindDelegation {
			s = DelegationScheme{}
		}
		out[i] = s
	}
	return out
}

// Lookup returns the principal of key id without its secret: for a
// credential that was verified another way and names the key it acts as
// (an ERC-8004 delegation linked to the key). The key's state is checked
// as by Verify (revoked, disabled, expired, account disabled), and the
// record is cached as Verify's is.
func (a *Authenticator) Lookup(ctx context.Context, id string) (*Principal, error) {
	now := a.now()
	a.mu.RLock()
	p := a.cache[id]
	a.mu.RUnlock()
	if p == nil || now.Sub(p.loaded) >= a.ttl {
		k, err := a.keys.Key(ctx, id)
		if err != nil {
			return nil, err // store.ErrNotFound included: the caller decides
		}
		if p, err = a.principal(ctx, k, now); err != nil {
			return nil, err
		}
	}
	if err := p.usable(now); err != nil {
		return nil, err
	}
	cp := *p // the caller may set Spread on its copy
	return &cp, nil
}
