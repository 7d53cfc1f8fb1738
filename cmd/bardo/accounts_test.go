package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
)

func run(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := cmd(context.Background(), args, &out, &errb)
	return strings.TrimSpace(out.String()), err
}

// The operator's round trip: an account, a top-up and a refund as ledger
// entries, a key that verifies, then revoked.
func TestAccountsAndKeysCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	id, err := run(t, accountsCmd, "-data", dir, "create", "-name", "demo", "-tier", "pro")
	if err != nil || !strings.HasPrefix(id, "acct_") {
		t.Fatalf("create: %q %v", id, err)
	}
	if _, err := run(t, accountsCmd, "-data", dir, "topup", id, "12.5"); err == nil {
		t.Fatal("top-up without a reason accepted")
	}
	if out, err := run(t, accountsCmd, "-data", dir, "topup", id, "12.5", "-reason", "paid"); err != nil || !strings.HasSuffix(out, "balance 12.500000") {
		t.Fatalf("topup: %q %v", out, err)
	}
	if out, err := run(t, accountsCmd, "-data", dir, "adjust", id, "-0.25", "-reason", "refund"); err != nil || !strings.HasSuffix(out, "balance 12.250000") {
		t.Fatalf("adjust: %q %v", out, err)
	}
	token, err := run(t, keysCmd, "-data", dir, "create", id, "-name", "ci", "-models", "claude-*", "-cidrs", "127.0.0.1")
	if err != nil || !strings.HasPrefix(token, auth.Prefix) {
		t.Fatalf("keys create: %q %v", token, err)
	}
	if out, _ := run(t, keysCmd, "-data", dir, "list", id); strings.Contains(out, token) || !strings.Contains(out, "claude-*") {
		t.Fatalf("list shows the secret or misses the scopes:\n%s", out)
	}
	if out, _ := run(t, accountsCmd, "-data", dir, "show", id); !strings.Contains(out, "audit      ok") {
		t.Fatalf("show:\n%s", out)
	}

	s, err := sqlite.Open(context.Background(), filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret, err := auth.LoadSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(s, secret, auth.Options{})
	p, err := a.Verify(context.Background(), token)
	if err != nil || p.Key.AccountID != id {
		t.Fatalf("verify the CLI's key: %v", err)
	}
	if es, _ := s.Entries(context.Background(), id, 0, 10); len(es) != 2 || es[1].Reason != "refund" {
		t.Fatalf("ledger %+v", es)
	}
	if fi, err := os.Stat(filepath.Join(dir, sqlite.FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode %v %v", fi.Mode().Perm(), err)
	}

	if _, err := run(t, keysCmd, "-data", dir, "revoke", p.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.New(s, secret, auth.Options{}).Verify(context.Background(), token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("revoked key: %v", err)
	}
	if _, err := run(t, keysCmd, "-data", dir, "show", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := run(t, accountsCmd, "-data", dir, "frobnicate"); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}

// Budgets, a key's rate limit and the usage listing from the CLI.
func TestBudgetsRateLimitsAndUsageCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	id, err := run(t, accountsCmd, "-data", dir, "create", "-name", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, accountsCmd, "-data", dir, "topup", id, "5", "--reason", "double-dash flag"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, accountsCmd, "-data", dir, "budget", id, "-day", "2.5", "-month", "40"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, accountsCmd, "-data", dir, "budget", id); err == nil {
		t.Fatal("a budget command changing nothing was accepted")
	}
	if _, err := run(t, accountsCmd, "-data", dir, "budget", id, "-day", "1e3"); err == nil {
		t.Fatal("a budget of 1e3 was accepted")
	}
	if _, err := run(t, keysCmd, "-data", dir, "create", id, "-day-budget", "0.0000001"); err == nil {
		t.Fatal("a key with a budget of 0.0000001 was created")
	}
	token, err := run(t, keysCmd, "-data", dir, "create", id, "-rate-limit", "30", "-day-budget", "1", "-month-budget", "10")
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := auth.TokenID(token)
	if out, _ := run(t, keysCmd, "-data", dir, "show", kid); !strings.Contains(out, "30/min") {
		t.Fatalf("key show:\n%s", out)
	}
	if _, err := run(t, keysCmd, "-data", dir, "rate-limit", kid, "-1"); err == nil {
		t.Fatal("a negative rate limit was accepted")
	}
	if _, err := run(t, keysCmd, "-data", dir, "rate-limit", kid, "90"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, keysCmd, "-data", dir, "budget", kid, "-month", "none"); err != nil {
		t.Fatal(err)
	}
	out, _ := run(t, accountsCmd, "-data", dir, "show", id)
	for _, want := range []string{"account " + id + " per day: 2.500000", "account " + id + " per month: 40.000000", "key " + kid + " per day: 1.000000"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "key "+kid+" per month") {
		t.Fatalf("a removed budget is shown:\n%s", out)
	}
	// An x402 wallet's budget (host/paywall enforces it): its account is
	// created with it, under the lower-case id the paywall uses.
	const w = "wallet:0xabcdef0123456789abcdef0123456789abcdef01"
	if _, err := run(t, accountsCmd, "-data", dir, "budget", "wallet:0xABCDEF0123456789abcdef0123456789ABCDEF01", "-day", "3"); err != nil {
		t.Fatal(err)
	}
	if out, _ := run(t, accountsCmd, "-data", dir, "show", w); !strings.Contains(out, "account "+w+" per day: 3.000000") {
		t.Fatalf("wallet show:\n%s", out)
	}

	s, err := sqlite.Open(context.Background(), filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := s.Key(context.Background(), kid); k.RateLimit != 90 {
		t.Fatalf("rate limit %d", k.RateLimit)
	}
	day := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := s.RecordUsage(context.Background(), store.Usage{RequestID: "req_" + strconv.Itoa(i), AccountID: id, KeyID: kid,
			Model: "gpt-4o-mini", Charge: 1500, Status: 200, At: day.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	var stdout, stderr bytes.Buffer
	if err := usageCmd(context.Background(), []string{"-data", dir, id, "-limit", "2"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	_, cursor, ok := strings.Cut(strings.TrimSpace(stderr.String()), "-cursor ")
	if !ok || strings.Count(stdout.String(), "req_") != 2 || !strings.Contains(stdout.String(), "req_2") {
		t.Fatalf("page 1:\n%s%s", stdout.String(), stderr.String())
	}
	next, err := run(t, usageCmd, "-data", dir, id, "-limit", "2", "-cursor", cursor)
	if err != nil || strings.Count(next, "req_") != 1 || !strings.Contains(next, "req_0") {
		t.Fatalf("page 2: %q %v", next, err)
	}
	daily, err := run(t, usageCmd, "-data", dir, id, "-daily", "-from", "2026-11-01", "-to", "2026-12-01")
	if err != nil || !strings.Contains(daily, "2026-11-20") || !strings.Contains(daily, "0.004500") {
		t.Fatalf("daily: %q %v", daily, err)
	}
	if _, err := run(t, usageCmd, "-data", dir, id, "-from", "last week"); err == nil {
		t.Fatal("a bad -from was accepted")
	}
	if _, err := run(t, usageCmd, "-data", dir, "acct_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
}
