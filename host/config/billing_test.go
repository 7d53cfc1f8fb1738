package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBilling(t *testing.T) {
	cfg, err := Parse([]byte(`
[billing]
max_batch = 64
commit_wait = "3s"
journal = false

[billing.tiers.pro]
spread_percent = 12.5
requests_per_minute = 600

[billing.tiers.golem]
tokens_per_hour = 0
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Billing
	if b.MaxBatch != 64 || b.MaxBacklog != 0 || b.CommitWait != 3*time.Second || b.Refresh != 0 || len(b.Tiers) != 2 ||
		b.JournalOn() {
		t.Fatalf("%+v", b)
	}
	pro, golem := b.Tiers["pro"], b.Tiers["golem"]
	if pro.SpreadBps == nil || *pro.SpreadBps != 1250 || pro.RequestsPerMinute == nil || *pro.RequestsPerMinute != 600 || pro.TokensPerHour != nil {
		t.Fatalf("pro %+v", pro)
	}
	if golem.TokensPerHour == nil || *golem.TokensPerHour != 0 || golem.SpreadBps != nil {
		t.Fatalf("golem %+v", golem)
	}
	if cfg, err := Parse(nil, "pipeline.toml"); err != nil || cfg.Billing.Tiers != nil || cfg.Billing.MaxBatch != 0 ||
		!cfg.Billing.JournalOn() {
		t.Fatalf("absent: %+v %v", cfg.Billing, err)
	}
	for src, want := range map[string]string{
		"billing = 1\n":                                    "billing",
		"[billing]\nmax_bach = 1\n":                        `did you mean "max_batch"`,
		"[billing]\nmax_batch = 0\n":                       "billing.max_batch",
		"[billing]\ncommit_wait = \"-1s\"\n":               "billing.commit_wait",
		"[billing]\njournal = \"on\"\n":                    "billing.journal",
		"[billing.tiers.gold]\nspread_percent = 1\n":       "billing.tiers.gold",
		"[billing.tiers.free]\nspread_percent = 12.345\n":  "two decimals",
		"[billing.tiers.free]\nspread_percent = -1\n":      "spread_percent",
		"[billing.tiers.free]\nspread_percent = \"25\"\n":  "spread_percent",
		"[billing.tiers.free]\nrequests_per_minute = -5\n": "requests_per_minute",
		"[billing.tiers.free]\ntokens_per_hour = -1\n":     "tokens_per_hour",
		"[billing.tiers.free]\ntoken_per_hour = 1\n":       "unknown key",
		"[billing.tiers]\nfree = 1\n":                      "billing.tiers.free",
	} {
		_, err := Parse([]byte(src), "pipeline.toml")
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", src, err, want)
		}
	}
}
