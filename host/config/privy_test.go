package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAuthPrivy(t *testing.T) {
	cfg, err := Parse([]byte("[auth]\nmode = \"keys\"\n[auth.privy]\napp_id = \"cm1abc\"\n"), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Auth.Privy
	if p == nil || p.AppID != "cm1abc" || p.JWKSURL != "https://auth.privy.io/api/v1/apps/cm1abc/jwks.json" || !p.AutoProvision ||
		p.Issuer != "" || p.Leeway != 0 {
		t.Fatalf("defaults %+v", p)
	}
	cfg, err = Parse([]byte(`[auth]
mode = "keys"
[auth.privy]
app_id = "cm1abc"
jwks_url = "http://127.0.0.1:9/jwks.json"
issuer = "privy.io"
leeway = "5s"
jwks_refresh = "10m"
jwks_min_refetch = "10s"
auto_provision = false
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	p = cfg.Auth.Privy
	if p.JWKSURL != "http://127.0.0.1:9/jwks.json" || p.Issuer != "privy.io" || p.Leeway != 5*time.Second ||
		p.JWKSRefresh != 10*time.Minute || p.JWKSMinRefetch != 10*time.Second || p.AutoProvision {
		t.Fatalf("set %+v", p)
	}
	if cfg, err := Parse([]byte("[auth]\nmode = \"keys\"\n"), "pipeline.toml"); err != nil || cfg.Auth.Privy != nil {
		t.Fatalf("absent: %+v %v", cfg.Auth.Privy, err)
	}
	for src, want := range map[string]string{
		"[auth]\nmode = \"keys\"\n[auth.privy]\n":                                           "app_id",
		"[auth]\nmode = \"keys\"\n[auth.privy]\napp_id = \"a/b\"\n":                         "app_id",
		"[auth]\nmode = \"open\"\n[auth.privy]\napp_id = \"a\"\n":                           `mode = "keys"`,
		"[auth]\nmode = \"keys\"\n[auth.privy]\napp_id = \"a\"\njwks_url = \"ftp://x\"\n":   "jwks_url",
		"[auth]\nmode = \"keys\"\n[auth.privy]\napp_id = \"a\"\nleeway = \"1h\"\n":          "leeway",
		"[auth]\nmode = \"keys\"\n[auth.privy]\napp_id = \"a\"\nsecret = \"x\"\n":           "secret",
		"[auth]\nmode = \"keys\"\nprivy = 1\n":                                              "auth.privy",
		"[auth]\nmode = \"keys\"\n[auth.privy]\napp_id = \"a\"\nauto_provision = \"yes\"\n": "auto_provision",
	} {
		_, err := Parse([]byte(src), "pipeline.toml")
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %s", src, err, want)
		}
	}
}
