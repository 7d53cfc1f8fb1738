package admit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/billing"
	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/sdk/wire"
)

// privyRig is a keys admitter with Privy over a real store and meter, and
// a local JWKS with one ES256 key.
type privyRig struct {
	k   *Keys
	s   *sqlite.Store
	m   *billing.Meter
	key *ecdsa.PrivateKey
}

func newPrivyRig(t *testing.T) *privyRig {
	t.Helper()
	c := context.Background()
	s, err := sqlite.Open(c, filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := key.PublicKey.Bytes()
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256",
		"x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:])}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(jwks) }))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	p, err := auth.NewPrivy(auth.PrivyConfig{AppID: "app1", JWKSURL: srv.URL, AutoProvision: true, Accounts: s})
	if err != nil {
		t.Fatal(err)
	}
	m, err := billing.New(billing.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(c) })
	return &privyRig{k: &Keys{Auth: auth.New(s, []byte("0123456789abcdef0123456789abcdef"), auth.Options{Accounts: s}), Privy: p, Meter: m},
		s: s, m: m, key: key}
}

func (r *privyRig) token(t *testing.T, edit func(jwt.MapClaims)) string {
	now := time.Now()
	c := jwt.MapClaims{"iss": "privy.io", "aud": "app1", "sub": "did:privy:u1", "sid": "s1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if edit != nil {
		edit(c)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(r.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func paidAdmission(token string) *gateway.Admission {
	a := admission(token)
	a.InputTokens, a.MaxTokens = 1000, 1000
	a.Quotes = func() []gateway.Quote {
		in, _ := catalog.ParsePrice("3")
		out, _ := catalog.ParsePrice("15")
		return []gateway.Quote{{Model: "gpt-4o", Prices: pricing.PricesOf(&catalog.Model{Input: in, Output: out}, pricing.OpenAI)}}
	}
	return a
}

// A Privy user is billed as a key's account: its provisioned account is
// the tenant, the balance is checked and held, and the charge lands in
// its ledger.
func TestPrivyBilled(t *testing.T) {
	r := newPrivyRig(t)
	ctx := context.Background()
	tok := r.token(t, nil)
	c, werr := r.k.Admit(ctx, paidAdmission(tok))
	if werr == nil || werr.Status != 402 || c.Tenant != "privy:u1" || c.Key != auth.PrivyKeyID || c.Tab == nil {
		t.Fatalf("empty account: %+v %+v", c, werr)
	}
	c.Tab.Close(&gateway.Settlement{RequestID: "r0", Path: gateway.PathError, Status: 402, Err: werr})
	if _, err := r.s.TopUp(ctx, "privy:u1", 1_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	r.m.Invalidate("privy:u1")
	c, werr = r.k.Admit(ctx, paidAdmission(tok))
	if werr != nil || c.Tenant != "privy:u1" || c.Tab == nil {
		t.Fatalf("funded: %+v %+v", c, werr)
	}
	in, _ := catalog.ParsePrice("3")
	out, _ := catalog.ParsePrice("15")
	c.Tab.Close(&gateway.Settlement{RequestID: "r1", Path: gateway.PathUpstream, Upstream: true, Provider: "up", Model: "gpt-4o",
		Asked: "gpt-4o", Usage: &wire.Usage{InputTokens: 1000, OutputTokens: 100}, Status: 200,
		Prices: pricing.PricesOf(&catalog.Model{Input: in, Output: out}, pricing.OpenAI), Priced: true})
	if err := r.m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := r.s.Account(ctx, "privy:u1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Balance >= 1_000_000 || a.Balance <= 0 || a.Held != 0 {
		t.Fatalf("after a charged request: balance %d held %d", a.Balance, a.Held)
	}
}

// Each bad token is a 401 of kind authentication (the dialect's
// authentication error), never a 5xx, and reaches no meter.
func TestPrivyRefused(t *testing.T) {
	r := newPrivyRig(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signed := func(key any, m jwt.SigningMethod, kid string) string {
		tok := jwt.NewWithClaims(m, jwt.MapClaims{"iss": "privy.io", "aud": "app1", "sub": "did:privy:u1", "sid": "s1",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pub, _ := r.key.PublicKey.Bytes()
	for name, tok := range map[string]string{
		"expired":       r.token(t, func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
		"wrong aud":     r.token(t, func(c jwt.MapClaims) { c["aud"] = "app2" }),
		"wrong iss":     r.token(t, func(c jwt.MapClaims) { c["iss"] = "auth0.com" }),
		"unknown kid":   signed(other, jwt.SigningMethodES256, "k9"),
		"bad signature": signed(other, jwt.SigningMethodES256, "k1"),
		"HS256":         signed(pub, jwt.SigningMethodHS256, "k1"),
	} {
		c, werr := r.k.Admit(context.Background(), paidAdmission(tok))
		if werr == nil || werr.Status != 401 || werr.Kind != wire.ErrAuthentication || c.Tab != nil || c.Tenant != "" {
			t.Errorf("%s: %+v %+v", name, c, werr)
			continue
		}
		if !strings.Contains(werr.Message, "Privy") || strings.Contains(werr.Message, tok) {
			t.Errorf("%s: message %q", name, werr.Message)
		}
	}
}
