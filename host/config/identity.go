package config

import (
	"net/url"
	"time"
)

// Identity holds the [auth.identity] table: ERC-8004 identities linked to
// keys (POST /v1/identity/link) and requests authenticated by an EIP-712
// delegation signed for them (host/identity). It needs [auth] mode = "keys".
type Identity struct {
	// RPCURL is the JSON-RPC endpoint of the chain the registries are on
	// (required; never echoed: it may carry a provider's key).
	RPCURL string
	// ChainID is that chain's id (default 8453, Base): checked against the
	// endpoint at start, and the EIP-712 domain's chainId.
	ChainID uint64
	// IdentityRegistry is the ERC-8004 Identity Registry (required).
	IdentityRegistry string
	// ReputationRegistry is the ERC-8004 Reputation Registry ("": every
	// agent has tier none).
	ReputationRegistry string
	// Reviewers are the client addresses whose feedback counts (the ERC's
	// getSummary requires them; empty: every agent has tier none).
	Reviewers []string
	// Tag1, Tag2 filter the feedback (default "starred", "").
	Tag1, Tag2 string
	// DomainName and DomainVersion are the EIP-712 domain's (default
	// "Bardo Inference", "1"); VerifyingContract defaults to the Identity
	// Registry.
	DomainName, DomainVersion, VerifyingContract string
	// CacheTTL is how long an agent's owner, wallet and score are trusted
	// (0: 60 s).
	CacheTTL time.Duration
	// Window is how far a delegation's timestamp may be from the clock
	// (0: 60 s).
	Window time.Duration
}

var identityKeys = []string{"rpc_url", "chain_id", "identity_registry", "reputation_registry", "reviewers", "tag1", "tag2",
	"domain_name", "domain_version", "verifying_contract", "cache_ttl", "window"}

// identity reads [auth.identity] (v, the value under "identity" in [auth]).
func (c *checker) identity(v any, mode string) *Identity {
	const p = "auth.identity"
	t, ok := v.(map[string]any)
	if !ok {
		c.errf(p, "must be a table ([auth.identity]), got %s", tomlType(v))
		return nil
	}
	c.unknownKeys(t, p, identityKeys)
	x := &Identity{ChainID: 8453, Tag1: "starred", DomainName: "Bardo Inference", DomainVersion: "1"}
	if s, ok := c.str(t, p, "rpc_url"); ok {
		if u, err := url.Parse(s); err != nil || u.Host == "" ||
			(u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") {
			c.errf(joinKey(p, "rpc_url"), "must be an http(s) or ws(s) URL (value not shown)")
		} else {
			x.RPCURL = s
		}
	} else {
		c.errf(joinKey(p, "rpc_url"), "is required")
	}
	if n, ok := c.integer(t, p, "chain_id"); ok {
		if n <= 0 {
			c.errf(joinKey(p, "chain_id"), "must be a positive chain id, got %d", n)
		} else {
			x.ChainID = uint64(n)
		}
	}
	addr := func(key string, dst *string, required bool) {
		s, ok := c.str(t, p, key)
		switch {
		case !ok && required:
			c.errf(joinKey(p, key), "is required")
		case ok && !evmAddrRe.MatchString(s):
			c.errf(joinKey(p, key), "must be a 0x-prefixed 20-byte hex address, got %q", s)
		case ok:
			*dst = s
		}
	}
	addr("identity_registry", &x.IdentityRegistry, true)
	addr("reputation_registry", &x.ReputationRegistry, false)
	addr("verifying_contract", &x.VerifyingContract, false)
	if x.VerifyingContract == "" {
		x.VerifyingContract = x.IdentityRegistry
	}
	c.strings(t, p, "reviewers", func(k string, _ int, s string) {
		if !evmAddrRe.MatchString(s) {
			c.errf(k, "must be a 0x-prefixed 20-byte hex address, got %q", s)
			return
		}
		x.Reviewers = append(x.Reviewers, s)
	})
	for _, f := range []struct {
		key string
		dst *string
	}{{"tag1", &x.Tag1}, {"tag2", &x.Tag2}, {"domain_name", &x.DomainName}, {"domain_version", &x.DomainVersion}} {
		if s, ok := c.str(t, p, f.key); ok {
			*f.dst = s
		}
	}
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"cache_ttl", &x.CacheTTL}, {"window", &x.Window}} {
		if d, ok := c.duration(t, p, f.key); ok {
			if d < time.Second || d > 24*time.Hour {
				c.errf(joinKey(p, f.key), "must be between 1s and 24h, got %s", d)
			} else {
				*f.dst = d
			}
		}
	}
	if mode != AuthKeys {
		c.errf(p, `needs [auth] mode = "keys"`)
	}
	return x
}
