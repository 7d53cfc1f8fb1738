package config

// Auth holds the [auth] table: how the gateway knows its callers.
type Auth struct {
	// Mode is AuthKeys (every request carries a bardo_sk_ key, verified
	// against [storage]) or AuthOpen (no key; every caller is the
	// anonymous tenant). "" — the table or key absent — means open on a
	// loopback listen address and is refused on any other (host/daemon).
	Mode string
	// Privy is the [auth.privy] table; nil when absent.
	Privy *Privy
	// Identity is the [auth.identity] table (ERC-8004); nil when absent.
	Identity *Identity
}

// Auth modes.
const (
	AuthKeys = "keys"
	AuthOpen = "open"
)

var authKeys = []string{"mode", "privy", "identity"}

func (c *checker) auth(tree map[string]any) Auth {
	const p = "auth"
	var a Auth
	v, ok := tree[p]
	if !ok {
		return a
	}
	t, ok := v.(map[string]any)
	if !ok {
		c.errf(p, "must be a table ([auth]), got %s", tomlType(v))
		return a
	}
	c.unknownKeys(t, p, authKeys)
	if v, ok := c.str(t, p, "mode"); ok {
		if v != AuthKeys && v != AuthOpen {
			c.errf(joinKey(p, "mode"), `must be "keys" or "open", got %q`, v)
		} else {
			a.Mode = v
		}
	}
	if v, ok := t["privy"]; ok {
		a.Privy = c.privy(v, a.Mode)
	}
	if v, ok := t["identity"]; ok {
		a.Identity = c.identity(v, a.Mode)
	}
	return a
}
