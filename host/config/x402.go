package config

import (
	"net/url"
	"regexp"
	"time"

	"github.com/bardoinference/bardo/host/pricing"
)

// X402 holds the [x402] table: accepting payment per request with x402
// (host/paywall). It needs [auth] mode = "keys": a key still admits by
// its key, and a completion with neither key nor payment gets the 402.
type X402 struct {
	Enabled bool
	// PayTo is the gateway's receiving address (0x hex; required when
	// enabled).
	PayTo string
	// Network is the CAIP-2 network of the USDC asked for: "eip155:8453"
	// (Base, the default) or "eip155:84532" (Base Sepolia).
	Network string
	// Facilitator is the base URL of the facilitator that settles
	// payments (/settle; required when enabled).
	Facilitator string
	// FacilitatorAddress is the facilitator's own address (its
	// /supported extra.facilitatorAddress for upto): set, the gateway
	// offers upto beside exact. With settle = "chain" upto is offered
	// anyway, the settlement key its facilitator; set, it must be that
	// key's address.
	FacilitatorAddress string
	// MaxTimeout is the offers' maxTimeoutSeconds (0: default).
	MaxTimeout time.Duration
	// MinAmount is the least price offered, in USDC atomic units (0:
	// default).
	MinAmount int64
	// SpreadBps is spread_percent in basis points (nil: default).
	SpreadBps *int32
	// RequestsPerMinute limits each wallet (0: none).
	RequestsPerMinute int
	// WalletDayBudget and WalletMonthBudget cap what each wallet may
	// spend per UTC day and month, in micro-USD (0: none); a wallet's own
	// budget (bardo accounts budget wallet:0x…) overrides them.
	WalletDayBudget, WalletMonthBudget int64
	// ResourceBase is the public base URL the challenge's resource.url
	// starts with ("" : the path alone).
	ResourceBase string
	// Chain: rpc_url, settle, settlement_key, erc6492_factories
	// (x402chain.go).
	X402Chain
}

var (
	x402Keys  = []string{"enabled", "pay_to", "network", "facilitator", "facilitator_address", "max_timeout", "min_amount", "spread_percent", "requests_per_minute", "wallet_day_budget", "wallet_month_budget", "resource_base", "settle", "rpc_url", "settlement_key", "erc6492_factories"}
	evmAddrRe = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
)

func (c *checker) x402(tree map[string]any, a Auth) X402 {
	const p = "x402"
	var x X402
	v, ok := tree[p]
	if !ok {
		return x
	}
	t, ok := v.(map[string]any)
	if !ok {
		c.errf(p, "must be a table ([x402]), got %s", tomlType(v))
		return x
	}
	c.unknownKeys(t, p, x402Keys)
	x.Enabled, _ = c.boolean(t, p, "enabled")
	if s, ok := c.str(t, p, "pay_to"); ok {
		if !evmAddrRe.MatchString(s) {
			c.errf(joinKey(p, "pay_to"), "must be a 0x-prefixed 20-byte hex address, got %q", s)
		} else {
			x.PayTo = s
		}
	}
	x.Network = "eip155:8453"
	if s, ok := c.str(t, p, "network"); ok {
		if s != "eip155:8453" && s != "eip155:84532" {
			c.errf(joinKey(p, "network"), `must be "eip155:8453" (Base) or "eip155:84532" (Base Sepolia), got %q`, s)
		} else {
			x.Network = s
		}
	}
	if s, ok := c.str(t, p, "facilitator"); ok {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.errf(joinKey(p, "facilitator"), "must be an http(s) URL, got %q", s)
		} else {
			x.Facilitator = s
		}
	}
	if s, ok := c.str(t, p, "facilitator_address"); ok {
		if !evmAddrRe.MatchString(s) {
			c.errf(joinKey(p, "facilitator_address"), "must be a 0x-prefixed 20-byte hex address, got %q", s)
		} else {
			x.FacilitatorAddress = s
		}
	}
	if d, ok := c.duration(t, p, "max_timeout"); ok {
		if d < 10*time.Second || d > time.Hour {
			c.errf(joinKey(p, "max_timeout"), "must be between 10s and 1h, got %s", d)
		} else {
			x.MaxTimeout = d
		}
	}
	if n, ok := c.integer(t, p, "min_amount"); ok {
		if n < 1 {
			c.errf(joinKey(p, "min_amount"), "must be at least 1 (atomic units of USDC), got %d", n)
		} else {
			x.MinAmount = n
		}
	}
	if v, ok := t["spread_percent"]; ok {
		if bps, ok := c.spreadBps(p, v); ok {
			x.SpreadBps = &bps
		}
	}
	if n, ok := c.integer(t, p, "requests_per_minute"); ok {
		if n < 0 || n > 1<<31-1 {
			c.errf(joinKey(p, "requests_per_minute"), "must be 0 (no limit) or more, got %d", n)
		} else {
			x.RequestsPerMinute = int(n)
		}
	}
	x.WalletDayBudget = c.walletBudget(t, p, "wallet_day_budget")
	x.WalletMonthBudget = c.walletBudget(t, p, "wallet_month_budget")
	if s, ok := c.str(t, p, "resource_base"); ok {
		x.ResourceBase = s
	}
	c.x402Chain(t, p, &x)
	if x.Enabled && (x.PayTo == "" || (x.Facilitator == "" && x.Settle != SettleChain)) {
		c.errf(p, `enabled = true needs pay_to, and facilitator unless settle = "chain"`)
	}
	if x.Enabled && a.Mode != AuthKeys {
		c.errf(p, `enabled = true needs [auth] mode = "keys"`)
	}
	return x
}

// walletBudget reads a wallet budget: a decimal USD string above 0 with
// at most 6 decimals (USDC's), in micro-USD; 0 when absent.
func (c *checker) walletBudget(t map[string]any, p, key string) int64 {
	s, ok := c.str(t, p, key)
	if !ok {
		return 0
	}
	m, err := pricing.ParseUSD(s)
	if err != nil || m <= 0 {
		c.errf(joinKey(p, key), `must be a USD amount above 0 with at most 6 decimals, such as "5.00" (leave it out for none), got %q`, s)
		return 0
	}
	return int64(m)
}
