package config

import (
	"net/url"
	"regexp"
	"time"
)

// Privy holds the [auth.privy] table: admitting Privy access tokens
// ("Authorization: Bearer <JWT>", host/auth Privy) beside bardo_sk_ keys.
// It needs [auth] mode = "keys".
type Privy struct {
	// AppID is the Privy app id, the tokens' audience (required).
	AppID string
	// JWKSURL is the app's key set ("": Privy's URL for AppID,
	// https://auth.privy.io/api/v1/apps/<app_id>/jwks.json).
	JWKSURL string
	// Issuer is the tokens' iss ("": "privy.io").
	Issuer string
	// Leeway is the clock skew allowed on exp, nbf and iat (0: 10 s).
	Leeway time.Duration
	// JWKSRefresh is how often the key set is fetched again (0: 1 h).
	JWKSRefresh time.Duration
	// JWKSMinRefetch is the least time between fetches an unknown kid
	// triggers (0: 30 s).
	JWKSMinRefetch time.Duration
	// AutoProvision creates an account for a user seen the first time
	// (default true); false admits only users linked to an account.
	AutoProvision bool
}

var (
	privyKeys    = []string{"app_id", "jwks_url", "issuer", "leeway", "jwks_refresh", "jwks_min_refetch", "auto_provision"}
	privyAppIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

// PrivyJWKSURL is Privy's key set URL of an app.
func PrivyJWKSURL(appID string) string {
	return "https://auth.privy.io/api/v1/apps/" + appID + "/jwks.json"
}

// privy reads [auth.privy] (v, the value under "privy" in [auth]).
func (c *checker) privy(v any, mode string) *Privy {
	const p = "auth.privy"
	t, ok := v.(map[string]any)
	if !ok {
		c.errf(p, "must be a table ([auth.privy]), got %s", tomlType(v))
		return nil
	}
	c.unknownKeys(t, p, privyKeys)
	x := &Privy{AutoProvision: true}
	if s, ok := c.str(t, p, "app_id"); ok {
		if !privyAppIDRe.MatchString(s) {
			c.errf(joinKey(p, "app_id"), "must be a Privy app id (letters, digits, '-', '_'), got %q", s)
		} else {
			x.AppID = s
		}
	}
	if x.AppID == "" {
		c.errf(joinKey(p, "app_id"), "is required")
	}
	if s, ok := c.str(t, p, "jwks_url"); ok {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.errf(joinKey(p, "jwks_url"), "must be an http(s) URL, got %q", s)
		} else {
			x.JWKSURL = s
		}
	} else if x.AppID != "" {
		x.JWKSURL = PrivyJWKSURL(x.AppID)
	}
	if s, ok := c.str(t, p, "issuer"); ok && s != "" {
		x.Issuer = s
	}
	for _, d := range []struct {
		key      string
		dst      *time.Duration
		min, max time.Duration
	}{
		{"leeway", &x.Leeway, 0, 5 * time.Minute},
		{"jwks_refresh", &x.JWKSRefresh, time.Minute, 7 * 24 * time.Hour},
		{"jwks_min_refetch", &x.JWKSMinRefetch, time.Second, time.Hour},
	} {
		if v, ok := c.duration(t, p, d.key); ok {
			if v < d.min || v > d.max {
				c.errf(joinKey(p, d.key), "must be between %s and %s, got %s", d.min, d.max, v)
			} else {
				*d.dst = v
			}
		}
	}
	if b, ok := c.boolean(t, p, "auto_provision"); ok {
		x.AutoProvision = b
	}
	if mode != AuthKeys {
		c.errf(p, `needs [auth] mode = "keys"`)
	}
	return x
}
