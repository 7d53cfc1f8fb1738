package auth

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)} }
func secret() []byte                 { return []byte(strings.Repeat("s", 32)) }
func ctx() context.Context           { return context.Background() }
func peer(s string) netip.Addr       { return netip.MustParseAddr(s) }
func isUnauth(err error) bool        { return errors.Is(err, ErrUnauthenticated) }
func isForbidden(err error) bool     { return errors.Is(err, ErrForbidden) }
func mustNil(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(ctx(), filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
	mustNil(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.CreateAccount(ctx(), store.Account{ID: "acct", Tier: store.TierPro})
	mustNil(t, err)
	return s
}

func TestTokenFormat(t *testing.T) {
	tok, id, err := NewToken()
	mustNil(t, err)
	if len(tok) != TokenLen || !strings.HasPrefix(tok, Prefix) {
		t.Fatalf("token %q", tok)
	}
	if got, ok := TokenID(tok); !ok || got != id {
		t.Fatalf("TokenID = %q %v, want %q", got, ok, id)
	}
	for _, bad := range []string{"", Prefix, tok[:len(tok)-1], tok + "x", "bardo_pk_" + tok[len(Prefix):], tok[:20] + "-" + tok[21:]} {
		if _, ok := TokenID(bad); ok {
			t.Errorf("TokenID(%q) accepted", bad)
		}
	}
	tok2, _, _ := NewToken()
	if tok2 == tok {
		t.Fatal("two equal tokens")
	}
}

func TestCreateVerifyRevoke(t *testing.T) {
	s := openStore(t)
	c := newClock()
	a := New(s, secret(), Options{Now: c.Now, TTL: time.Minute})
	tok, k, err := a.Create(ctx(), "acct", KeySpec{Name: "ci"})
	mustNil(t, err)
	stored, err := s.Key(ctx(), k.ID)
	mustNil(t, err)
	if strings.Contains(string(stored.Hash), tok[len(Prefix):]) || len(stored.Hash) != 32 {
		t.Fatal("the stored hash is not an HMAC of the token")
	}
	p, err := a.Verify(ctx(), tok)
	if err != nil || p.Key.AccountID != "acct" {
		t.Fatalf("verify: %v", err)
	}
	if _, err := a.Verify(ctx(), tok); err != nil { // cached
		t.Fatal(err)
	}
	// Same id, another secret: refused, cached or not.
	wrong := tok[:len(tok)-1] + "a"
	if wrong == tok {
		wrong = tok[:len(tok)-1] + "b"
	}
	if _, err := a.Verify(ctx(), wrong); !isUnauth(err) {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := New(s, secret(), Options{}).Verify(ctx(), wrong); !isUnauth(err) {
		t.Fatalf("wrong secret, cold cache: %v", err)
	}
	other, _, _ := NewToken()
	if _, err := a.Verify(ctx(), other); !isUnauth(err) {
		t.Fatalf("unknown key: %v", err)
	}
	// Another server secret: every key is wrong.
	if _, err := New(s, []byte(strings.Repeat("t", 32)), Options{}).Verify(ctx(), tok); !isUnauth(err) {
		t.Fatalf("other secret: %v", err)
	}
	mustNil(t, a.Revoke(ctx(), k.ID))
	if _, err := a.Verify(ctx(), tok); !isUnauth(err) {
		t.Fatalf("revoked: %v", err)
	}
}

// A key changed by another process (the CLI) is picked up within the TTL.
func TestCacheTTL(t *testing.T) {
	s := openStore(t)
	c := newClock()
	a := New(s, secret(), Options{Now: c.Now, TTL: 10 * time.Second})
	tok, k, err := a.Create(ctx(), "acct", KeySpec{})
	mustNil(t, err)
	_, err = a.Verify(ctx(), tok)
	mustNil(t, err)
	mustNil(t, s.RevokeKey(ctx(), k.ID, c.Now())) // behind the cache's back
	if _, err := a.Verify(ctx(), tok); err != nil {
		t.Fatalf("within the TTL the cached record holds: %v", err)
	}
	c.Add(10 * time.Second)
	if _, err := a.Verify(ctx(), tok); !isUnauth(err) {
		t.Fatalf("after the TTL: %v", err)
	}
}

func TestExpiryAndDisabled(t *testing.T) {
	s := openStore(t)
	c := newClock()
	a := New(s, secret(), Options{Now: c.Now})
	tok, k, err := a.Create(ctx(), "acct", KeySpec{Expires: c.Now().Add(time.Hour)})
	mustNil(t, err)
	_, err = a.Verify(ctx(), tok)
	mustNil(t, err)
	c.Add(time.Hour)
	if _, err := a.Verify(ctx(), tok); !isUnauth(err) {
		t.Fatalf("expired: %v", err)
	}
	tok2, k2, _ := a.Create(ctx(), "acct", KeySpec{})
	mustNil(t, a.SetDisabled(ctx(), k2.ID, true))
	if _, err := a.Verify(ctx(), tok2); !isUnauth(err) {
		t.Fatalf("disabled: %v", err)
	}
	mustNil(t, a.SetDisabled(ctx(), k2.ID, false))
	if _, err := a.Verify(ctx(), tok2); err != nil {
		t.Fatalf("re-enabled: %v", err)
	}
	_ = k
}

func TestAccountDisabled(t *testing.T) {
	s := openStore(t)
	c := newClock()
	a := New(s, secret(), Options{Now: c.Now, Accounts: s, TTL: time.Second})
	tok, _, err := a.Create(ctx(), "acct", KeySpec{})
	mustNil(t, err)
	_, err = a.Verify(ctx(), tok)
	mustNil(t, err)
	mustNil(t, s.SetAccountDisabled(ctx(), "acct", true))
	c.Add(time.Second) // the CLI disabled it: seen after the TTL
	if _, err := a.Verify(ctx(), tok); !isUnauth(err) {
		t.Fatalf("key of a disabled account: %v", err)
	}
}

// Every refusal says the same thing to the caller.
func TestUnauthenticatedSaysNothing(t *testing.T) {
	s := openStore(t)
	c := newClock()
	a := New(s, secret(), Options{Now: c.Now})
	revoked, rk, _ := a.Create(ctx(), "acct", KeySpec{})
	a.Revoke(ctx(), rk.ID)
	expired, _, _ := a.Create(ctx(), "acct", KeySpec{Expires: c.Now()})
	unknown, _, _ := NewToken()
	for name, tok := range map[string]string{"revoked": revoked, "expired": expired, "unknown": unknown, "malformed": Prefix + "x"} {
		_, err := a.Verify(ctx(), tok)
		if !isUnauth(err) || isForbidden(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestScopes(t *testing.T) {
	s := openStore(t)
	a := New(s, secret(), Options{})
	tok, _, err := a.Create(ctx(), "acct", KeySpec{Models: []string{"claude-*", "openai/*"}, CIDRs: []string{"10.1.0.0/16", "::1"}})
	mustNil(t, err)
	p, err := a.Verify(ctx(), tok)
	mustNil(t, err)
	for _, c := range []struct {
		acc Access
		ok  bool
	}{
		{Access{Model: "claude-sonnet-4-5", ClientIP: peer("10.1.2.3"), Spends: true}, true},
		{Access{Model: "openai/gpt-4o", ClientIP: peer("::ffff:10.1.2.3"), Spends: true}, true}, // v4-mapped peer
		{Access{Model: "gpt-4o", ClientIP: peer("10.1.2.3"), Spends: true}, false},
		{Access{Model: "claude-x", ClientIP: peer("10.2.0.1"), Spends: true}, false},
		{Access{Model: "claude-x", ClientIP: peer("::1")}, true},
		{Access{ClientIP: peer("10.1.0.1")}, true}, // models endpoint: no model
	} {
		if err := p.Allow(c.acc); (err == nil) != c.ok || (err != nil && !isForbidden(err)) {
			t.Errorf("%+v: %v", c.acc, err)
		}
	}
	ro, _, _ := a.Create(ctx(), "acct", KeySpec{ReadOnly: true})
	p, err = a.Verify(ctx(), ro)
	mustNil(t, err)
	if err := p.Allow(Access{Spends: true}); !isForbidden(err) {
		t.Fatalf("read-only spend: %v", err)
	}
	if err := p.Allow(Access{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Create(ctx(), "acct", KeySpec{CIDRs: []string{"10.0.0.0/33"}}); err == nil {
		t.Fatal("bad CIDR accepted")
	}
	if _, _, err := a.Create(ctx(), "nobody", KeySpec{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key of unknown account: %v", err)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, n string
		ok   bool
	}{
		{"*", "anything/at-all", true}, {"claude-*", "claude-opus-4", true}, {"claude-*", "gpt", false},
		{"*-mini", "gpt-4o-mini", true}, {"gpt-4?", "gpt-4o", true}, {"gpt-4?", "gpt-4", false},
		{"a*b*c", "aXbYbZc", true}, {"a*b*c", "aXbYbZ", false}, {"", "", true}, {"", "x", false}, {"**", "", true},
	} {
		if Glob(c.p, c.n) != c.ok {
			t.Errorf("Glob(%q, %q) = %v", c.p, c.n, !c.ok)
		}
	}
}

func TestLoadSecret(t *testing.T) {
	t.Setenv(SecretEnv, "") // empty counts as unset
	dir := filepath.Join(t.TempDir(), "data")
	s1, err := LoadSecret(dir)
	mustNil(t, err)
	fi, err := os.Stat(filepath.Join(dir, SecretFile))
	mustNil(t, err)
	if fi.Mode().Perm() != 0o600 || len(s1) != 64 {
		t.Fatalf("mode %v, %d bytes", fi.Mode().Perm(), len(s1))
	}
	s2, err := LoadSecret(dir)
	if err != nil || string(s2) != string(s1) {
		t.Fatal("the secret changed between loads")
	}
	mustNil(t, os.Chmod(filepath.Join(dir, SecretFile), 0o644))
	if _, err := LoadSecret(dir); err == nil {
		t.Fatal("world-readable secret accepted")
	}
	t.Setenv(SecretEnv, "short")
	if _, err := LoadSecret(dir); err == nil {
		t.Fatal("short env secret accepted")
	}
	t.Setenv(SecretEnv, strings.Repeat("e", 40))
	if s, err := LoadSecret(dir); err != nil || string(s) != strings.Repeat("e", 40) {
		t.Fatalf("env secret: %v", err)
	}
}

func TestDetect(t *testing.T) {
	tok, _, _ := NewToken()
	tok2, _, _ := NewToken()
	for _, c := range []struct {
		name string
		h    http.Header
		kind Kind
		err  error
	}{
		{"bearer", http.Header{"Authorization": {"Bearer " + tok}}, KindKey, nil},
		{"bearer case", http.Header{"Authorization": {"bearer  " + tok + " "}}, KindKey, nil},
		{"x-api-key", http.Header{"X-Api-Key": {tok}}, KindKey, nil},
		{"both equal", http.Header{"X-Api-Key": {tok}, "Authorization": {"Bearer " + tok}}, KindKey, nil},
		{"both differ", http.Header{"X-Api-Key": {tok}, "Authorization": {"Bearer " + tok2}}, KindNone, ErrAmbiguous},
		{"provider key", http.Header{"Authorization": {"Bearer sk-ant-xyz"}}, KindNone, ErrNoCredential},
		{"basic", http.Header{"Authorization": {"Basic " + tok}}, KindNone, ErrNoCredential},
		{"none", http.Header{}, KindNone, ErrNoCredential},
		{"x402 seam", http.Header{"X-Payment": {"eyJ..."}, "X-Api-Key": {tok}}, KindKey, nil},
	} {
		cred, err := Detect(HTTPHeader(c.h), Schemes)
		if cred.Kind != c.kind || !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("%s: %v %v", c.name, cred.Kind, err)
		}
		if c.kind == KindKey && cred.Value != tok {
			t.Errorf("%s: value %q", c.name, cred.Value)
		}
	}
}
