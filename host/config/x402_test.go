package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestX402(t *testing.T) {
	cfg, err := Parse([]byte(`
[auth]
mode = "keys"

[x402]
enabled = true
pay_to = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
network = "eip155:84532"
facilitator = "https://x402.org/facilitator"
facilitator_address = "0x1234567890123456789012345678901234567890"
max_timeout = "90s"
min_amount = 500
spread_percent = 18
requests_per_minute = 30
wallet_day_budget = "5"
wallet_month_budget = "100.000001"
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	x := cfg.X402
	if !x.Enabled || x.PayTo != "0x209693Bc6afc0C5328bA36FaF03C514EF312287C" || x.Network != "eip155:84532" ||
		x.Facilitator != "https://x402.org/facilitator" || x.MaxTimeout != 90*time.Second || x.MinAmount != 500 ||
		x.SpreadBps == nil || *x.SpreadBps != 1800 || x.RequestsPerMinute != 30 ||
		x.FacilitatorAddress != "0x1234567890123456789012345678901234567890" ||
		x.WalletDayBudget != 5_000_000 || x.WalletMonthBudget != 100_000_001 {
		t.Fatalf("%+v", x)
	}
	if cfg, err := Parse(nil, "pipeline.toml"); err != nil || cfg.X402.Enabled {
		t.Fatalf("absent: %+v %v", cfg.X402, err)
	}
	const keys = "[auth]\nmode = \"keys\"\n"
	for src, want := range map[string]string{
		"x402 = 1\n": "x402",
		keys + "[x402]\nenabled = true\nfacilitator = \"http://127.0.0.1:1\"\n": "needs pay_to",
		keys + "[x402]\npay_to = \"0x12\"\n":                                    "x402.pay_to",
		keys + "[x402]\nfacilitator_address = \"fac\"\n":                        "x402.facilitator_address",
		keys + "[x402]\nnetwork = \"base\"\n":                                   "x402.network",
		keys + "[x402]\nfacilitator = \"x402.org\"\n":                           "x402.facilitator",
		keys + "[x402]\nmax_timeout = \"1s\"\n":                                 "x402.max_timeout",
		keys + "[x402]\nmin_amount = 0\n":                                       "x402.min_amount",
		keys + "[x402]\npay_too = 1\n":                                          "unknown key",
		keys + "[x402]\nwallet_day_budget = 5\n":                                "x402.wallet_day_budget",
		keys + "[x402]\nwallet_day_budget = \"0\"\n":                            "x402.wallet_day_budget",
		keys + "[x402]\nwallet_month_budget = \"1.0000001\"\n":                  "x402.wallet_month_budget",
		keys + "[x402]\nwallet_month_budget = \"-2\"\n":                         "x402.wallet_month_budget",
		"[x402]\nenabled = true\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nfacilitator = \"http://f\"\n": `mode = "keys"`,
	} {
		_, err := Parse([]byte(src), "pipeline.toml")
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestX402Chain: settle = "chain" with rpc_url and a settlement key
// reference (file: made absolute), factories, and the refusals.
func TestX402Chain(t *testing.T) {
	cfg, err := Parse([]byte(`
[auth]
mode = "keys"

[x402]
enabled = true
pay_to = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
settle = "chain"
rpc_url = "https://base.example/v2/secret-api-key"
settlement_key = "file:keys/settle"
erc6492_factories = ["0x0BA5ED0c6AA8c49038F819E587E2633c4A9F428a"]
`), "/etc/bardo/pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	x := cfg.X402
	if x.Settle != SettleChain || x.RPCURL != "https://base.example/v2/secret-api-key" || x.SettlementKey != "file:/etc/bardo/keys/settle" ||
		len(x.ERC6492Factories) != 1 || x.Facilitator != "" {
		t.Fatalf("%+v", x)
	}
	// settle = "chain" offers upto too: facilitator_address (the settlement
	// key's) is allowed with it.
	chainUpto := "[auth]\nmode = \"keys\"\n[x402]\nsettle = \"chain\"\nrpc_url = \"https://r\"\nsettlement_key = \"env:K\"\nfacilitator_address = \"0x1234567890123456789012345678901234567890\"\n"
	if cfg, err := Parse([]byte(chainUpto), "pipeline.toml"); err != nil || cfg.X402.FacilitatorAddress == "" {
		t.Fatalf("settle = chain with facilitator_address: %v", err)
	}
	if cfg, _ := Parse([]byte("[auth]\nmode = \"keys\"\n[x402]\n"), "pipeline.toml"); cfg.X402.Settle != SettleFacilitator {
		t.Fatalf("default settle %q", cfg.X402.Settle)
	}
	const keys = "[auth]\nmode = \"keys\"\n[x402]\n"
	for src, want := range map[string]string{
		keys + "settle = \"onchain\"\n":                                                    "x402.settle",
		keys + "settle = \"chain\"\nrpc_url = \"https://r\"\n":                             "needs rpc_url and settlement_key",
		keys + "settle = \"chain\"\nsettlement_key = \"env:K\"\n":                          "needs rpc_url and settlement_key",
		keys + "settlement_key = \"0xabc\"\n":                                              "x402.settlement_key",
		keys + "rpc_url = \"base.example/secret\"\n":                                       "x402.rpc_url",
		keys + "erc6492_factories = [\"0x1\"]\n":                                           "x402.erc6492_factories[0]",
		keys + "enabled = true\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\n": "facilitator unless",
	} {
		_, err := Parse([]byte(src), "pipeline.toml")
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "example/secret") || strings.Contains(err.Error(), "0xabc")) {
			t.Errorf("%q: the error repeats the value: %v", src, err)
		}
	}
}
