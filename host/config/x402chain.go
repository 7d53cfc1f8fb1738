package config

import (
	"net/url"
)

// Settlement modes of [x402] settle.
const (
	SettleFacilitator = "facilitator"
	SettleChain       = "chain"
)

// X402Chain holds the [x402] keys that reach a chain directly.
type X402Chain struct {
	// Settle is how payments settle: "facilitator" (the default: POST
	// /settle to Facilitator) or "chain" (transferWithAuthorization sent
	// by the gateway with SettlementKey, through RPCURL).
	Settle string
	// RPCURL is an Ethereum JSON-RPC endpoint of the network (http(s) or
	// ws(s)). Set, payments are also verified on chain: the payer's
	// balance, and contract-wallet signatures (ERC-1271, ERC-6492).
	RPCURL string
	// SettlementKey is a reference ("env:NAME" or "file:PATH") to the key
	// that signs settlement transactions and pays their gas; required
	// with settle = "chain". Never a literal, never logged.
	SettlementKey string
	// ERC6492Factories are the factories a counterfactual wallet may be
	// deployed through (0x addresses); empty: none.
	ERC6492Factories []string
}

func (c *checker) x402Chain(t map[string]any, p string, x *X402) {
	x.Settle = SettleFacilitator
	if s, ok := c.str(t, p, "settle"); ok {
		if s != SettleFacilitator && s != SettleChain {
			c.errf(joinKey(p, "settle"), `must be "facilitator" or "chain", got %q`, s)
		} else {
			x.Settle = s
		}
	}
	if s, ok := c.str(t, p, "rpc_url"); ok {
		// The URL may carry a provider's API key in its path or query:
		// it is not echoed.
		if u, err := url.Parse(s); err != nil || u.Host == "" ||
			(u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") {
			c.errf(joinKey(p, "rpc_url"), "must be an http(s) or ws(s) URL (value not shown)")
		} else {
			x.RPCURL = s
		}
	}
	if s, ok := c.str(t, p, "settlement_key"); ok {
		if ref, err := normalizeCredential(s, c.dir); err != nil {
			c.errf(joinKey(p, "settlement_key"), "%v", err)
		} else {
			x.SettlementKey = ref
		}
	}
	c.strings(t, p, "erc6492_factories", func(k string, _ int, s string) {
		if !evmAddrRe.MatchString(s) {
			c.errf(k, "must be a 0x-prefixed 20-byte hex address, got %q", s)
			return
		}
		x.ERC6492Factories = append(x.ERC6492Factories, s)
	})
	if x.Settle == SettleChain {
		if x.RPCURL == "" || x.SettlementKey == "" {
			c.errf(p, `settle = "chain" needs rpc_url and settlement_key`)
		}
		// upto is offered too: its Permit2 witness names the settlement
		// key as facilitator (facilitator_address may be left out; set, it
		// must be that key's address, which the paywall checks once the
		// key is loaded).
	}
}
