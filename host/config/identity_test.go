package config

import (
	"strings"
	"testing"
	"time"
)

func TestAuthIdentity(t *testing.T) {
	const reg = "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432"
	cfg, err := Parse([]byte("[auth]\nmode = \"keys\"\n[auth.identity]\nrpc_url = \"https://base.example/secret\"\nidentity_registry = \""+reg+"\"\n"), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	x := cfg.Auth.Identity
	if x == nil || x.ChainID != 8453 || x.Tag1 != "starred" || x.DomainName != "Bardo Inference" || x.DomainVersion != "1" ||
		x.VerifyingContract != reg || x.ReputationRegistry != "" || len(x.Reviewers) != 0 {
		t.Fatalf("defaults %+v", x)
	}
	cfg, err = Parse([]byte(`[auth]
mode = "keys"
[auth.identity]
rpc_url = "wss://base.example/secret"
chain_id = 84532
identity_registry = "`+reg+`"
reputation_registry = "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63"
reviewers = ["0x0000000000000000000000000000000000000001"]
tag1 = "successRate"
domain_name = "Gateway"
cache_ttl = "5m"
window = "30s"
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	x = cfg.Auth.Identity
	if x.ChainID != 84532 || len(x.Reviewers) != 1 || x.Tag1 != "successRate" || x.DomainName != "Gateway" ||
		x.CacheTTL != 5*time.Minute || x.Window != 30*time.Second || x.ReputationRegistry == "" {
		t.Fatalf("set %+v", x)
	}
	for text, want := range map[string]string{
		"[auth]\nmode = \"keys\"\n[auth.identity]\nidentity_registry = \"" + reg + "\"\n":                                           "rpc_url",
		"[auth]\nmode = \"keys\"\n[auth.identity]\nrpc_url = \"https://r/secret\"\n":                                                "identity_registry",
		"[auth]\nmode = \"keys\"\n[auth.identity]\nrpc_url = \"r/secret\"\nidentity_registry = \"" + reg + "\"\n":                   "rpc_url",
		"[auth]\nmode = \"keys\"\n[auth.identity]\nrpc_url = \"https://r\"\nidentity_registry = \"0x12\"\n":                         "identity_registry",
		"[auth]\nmode = \"open\"\n[auth.identity]\nrpc_url = \"https://r\"\nidentity_registry = \"" + reg + "\"\n":                  "mode",
		"[auth]\nmode = \"keys\"\n[auth.identity]\nrpc_url = \"https://r\"\nidentity_registry = \"" + reg + "\"\nwindow = \"0s\"\n": "window",
		"[auth]\nmode = \"keys\"\n[auth.identity]\nrpc_url = \"https://r\"\nidentity_registry = \"" + reg + "\"\nnope = 1\n":        "nope",
	} {
		_, err := Parse([]byte(text), "pipeline.toml")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %v", text, err)
		}
	}
}
