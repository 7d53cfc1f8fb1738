package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
