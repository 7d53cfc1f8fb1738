package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bardoinference/bardo/host/store"
)

const testAppID = "cm-test-app"

// issuer stands in for Privy: ES256 keys by kid, and their JWKS served
// on 127.0.0.1.
type issuer struct {
	t       testing.TB
	srv     *httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	keys    map[string]*ecdsa.PrivateKey
	down    bool
}

func newIssuer(t testing.TB, kids ...string) *issuer {
	t.Helper()
	is := &issuer{t: t, keys: map[string]*ecdsa.PrivateKey{}}
	for _, kid := range kids {
		is.add(kid)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	is.srv = httptest.NewUnstartedServer(http.HandlerFunc(is.serve))
	is.srv.Listener.Close()
	is.srv.Listener = l
	is.srv.Start()
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) add(kid string) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
	return k
}

func (is *issuer) serve(w http.ResponseWriter, r *http.Request) {
	is.fetches.Add(1)
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.down {
		http.Error(w, "down", http.StatusBadGateway)
		return
	}
	type jwk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Y   string `json:"y"`
		Kid string `json:"kid"`
		Alg string `json:"alg"`
		Use string `json:"use"`
	}
	set := struct {
		Keys []jwk `json:"keys"`
	}{}
	for kid, k := range is.keys {
		b, _ := k.PublicKey.Bytes() // 0x04 || x || y
		set.Keys = append(set.Keys, jwk{Kty: "EC", Crv: "P-256", X: base64.RawURLEncoding.EncodeToString(b[1:33]),
			Y: base64.RawURLEncoding.EncodeToString(b[33:]), Kid: kid, Alg: "ES256", Use: "sig"})
	}
	// An RSA key of the set is skipped, not an error.
	set.Keys = append(set.Keys, jwk{Kty: "RSA", Kid: "rsa-1", Alg: "RS256"})
	json.NewEncoder(w).Encode(set)
}

// claims are a valid access token's claims at now.
func claims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": "privy.io", "aud": testAppID, "sub": "did:privy:cmuser1", "sid": "cmsession1",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// mint signs c with kid's key (ES256).
func (is *issuer) mint(kid string, c jwt.MapClaims) string {
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	if k == nil {
		is.t.Fatalf("no key %s", kid)
	}
	return signWith(is.t, jwt.SigningMethodES256, kid, c, k)
}

func signWith(t testing.TB, m jwt.SigningMethod, kid string, c jwt.MapClaims, key any) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newPrivy(t testing.TB, is *issuer, clk *clock, auto bool) (*Privy, PrivyAccounts) {
	t.Helper()
	s := openStore(t)
	p, err := NewPrivy(PrivyConfig{AppID: testAppID, JWKSURL: is.srv.URL + "/jwks.json", AutoProvision: auto, Accounts: s, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func TestPrivyValid(t *testing.T) {
	clk := newClock()
	is := newIssuer(t, "k1")
	p, s := newPrivy(t, is, clk, true)
	tok := is.mint("k1", claims(clk.Now()))
	pr, err := p.Principal(ctx(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Key.AccountID != "privy:cmuser1" || pr.Key.ID != PrivyKeyID || pr.Key.Name != "did:privy:cmuser1" {
		t.Fatalf("principal %+v", pr.Key)
	}
	if err := pr.Allow(Access{Model: "gpt-4o", Spends: true}); err != nil {
		t.Errorf("allow: %v", err)
	}
	// Provisioned once: the account exists, with nothing in it.
	a, err := s.(store.Accounts).Account(ctx(), "privy:cmuser1")
	if err != nil || a.Balance != 0 || a.Tier != store.TierFree || a.Name != "did:privy:cmuser1" {
		t.Fatalf("account %+v %v", a, err)
	}
	clk.Add(time.Minute)
	pr2, err := p.Principal(ctx(), is.mint("k1", claims(clk.Now())))
	if err != nil || pr2.Key.AccountID != pr.Key.AccountID {
		t.Fatalf("second token: %+v %v", pr2, err)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches, want 1 (cached)", n)
	}
	// exp within the leeway still passes; iat a little ahead too.
	c := claims(clk.Now())
	c["exp"] = clk.Now().Add(-5 * time.Second).Unix()
	c["iat"] = clk.Now().Add(-time.Hour).Unix()
	if _, err := p.Verify(ctx(), is.mint("k1", c)); err != nil {
		t.Errorf("expired 5 s ago, leeway 10 s: %v", err)
	}
	c = claims(clk.Now())
	c["aud"] = []string{"other", testAppID}
	if _, err := p.Verify(ctx(), is.mint("k1", c)); err != nil {
		t.Errorf("aud list holding the app: %v", err)
	}
}

// Every token that is not a current access token of this app is refused
// with ErrPrivyToken, naming why.
func TestPrivyRefusals(t *testing.T) {
	clk := newClock()
	is := newIssuer(t, "k1")
	p, _ := newPrivy(t, is, clk, true)
	now := clk.Now()
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	is.mu.Lock()
	pub, _ := is.keys["k1"].PublicKey.Bytes()
	is.mu.Unlock()
	with := func(k string, v any) jwt.MapClaims {
		c := claims(now)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	noneTok, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(now)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, why string
	}{
		{"expired", is.mint("k1", with("exp", now.Add(-time.Minute).Unix())), "expired"},
		{"wrong aud", is.mint("k1", with("aud", "another-app")), "aud"},
		{"no aud", is.mint("k1", with("aud", nil)), "required claim"},
		{"wrong iss", is.mint("k1", with("iss", "evil.example")), "iss"},
		{"not yet valid", is.mint("k1", with("nbf", now.Add(time.Minute).Unix())), "not valid yet"},
		{"issued in the future", is.mint("k1", with("iat", now.Add(time.Minute).Unix())), "future"},
		{"no exp", is.mint("k1", with("exp", nil)), "required claim"},
		{"sub not a Privy DID", is.mint("k1", with("sub", "user-1")), "DID"},
		{"sub with odd characters", is.mint("k1", with("sub", "did:privy:a/b")), "DID"},
		{"no sid", is.mint("k1", with("sid", nil)), "sid"},
		{"bad signature", signWith(t, jwt.SigningMethodES256, "k1", claims(now), other), "signature"},
		{"tampered claims", tamper(is.mint("k1", claims(now))), "signature"},
		{"alg none", noneTok, "ES256"},
		{"HS256 keyed with the public key", signWith(t, jwt.SigningMethodHS256, "k1", claims(now), pub), "ES256"},
		{"ES384", signWith(t, jwt.SigningMethodES384, "k1", claims(now), mustKey(t, elliptic.P384())), "ES256"},
		{"malformed", "eyJhbGciOiJFUzI1NiJ9.e30", "malformed"},
		{"non-canonical base64 signature", lowBit(is.mint("k1", claims(now))), "malformed"},
		{"too long", "eyJ" + strings.Repeat("a", 9000) + ".e30.sig", "longer"},
	} {
		_, err := p.Principal(ctx(), tc.token)
		if !errors.Is(err, ErrPrivyToken) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want ErrPrivyToken naming %q", tc.name, err, tc.why)
		}
		if err != nil && strings.Contains(err.Error(), tc.token) {
			t.Errorf("%s: the error repeats the token", tc.name)
		}
	}
}

func mustKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// lowBit flips an unused low bit of the signature's last base64url
// character: the same bytes under a lenient decoder, another token.
func lowBit(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, tok[len(tok)-1])
	return tok[:len(tok)-1] + string(alphabet[i^1])
}

// tamper changes the claims of a signed token, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	b = []byte(strings.Replace(string(b), "cmuser1", "cmuser2", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

// A token naming a kid the cached set lacks refetches the set (Privy
// rotated its key), at most once per MinRefetch; the set is also fetched
// again once older than Refresh.
func TestPrivyKeyRotation(t *testing.T) {
	clk := newClock()
	is := newIssuer(t, "k1")
	p, _ := newPrivy(t, is, clk, true)
	if _, err := p.Verify(ctx(), is.mint("k1", claims(clk.Now()))); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute) // past MinRefetch
	is.add("k2")
	if _, err := p.Verify(ctx(), is.mint("k2", claims(clk.Now()))); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// Made-up kids within MinRefetch do not reach the issuer.
	for i := range 5 {
		tok := signWith(t, jwt.SigningMethodES256, "made-up-"+string(rune('a'+i)), claims(clk.Now()), mustKey(t, elliptic.P256()))
		if _, err := p.Verify(ctx(), tok); !errors.Is(err, ErrPrivyToken) || !strings.Contains(err.Error(), "unknown key") {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after unknown kids, want 2 (the floor)", n)
	}
	// Past the floor, an unknown kid fetches once more.
	clk.Add(31 * time.Second)
	is.add("k3")
	if _, err := p.Verify(ctx(), is.mint("k3", claims(clk.Now()))); err != nil {
		t.Fatalf("k3: %v", err)
	}
	// A retired key stops verifying after the periodic refresh.
	is.mu.Lock()
	delete(is.keys, "k1")
	is.mu.Unlock()
	clk.Add(DefaultPrivyRefresh)
	before := is.fetches.Load()
	if _, err := p.Verify(ctx(), is.mint("k2", claims(clk.Now()))); err != nil {
		t.Fatal(err)
	}
	if is.fetches.Load() != before+1 {
		t.Fatalf("no refresh after %s", DefaultPrivyRefresh)
	}
	old := signWith(t, jwt.SigningMethodES256, "k1", claims(clk.Now()), mustKey(t, elliptic.P256()))
	if _, err := p.Verify(ctx(), old); !errors.Is(err, ErrPrivyToken) {
		t.Fatalf("retired kid: %v", err)
	}
}

// An unreachable key set is the gateway's trouble (ErrPrivyUnavailable, a
// 503), not the caller's; a set fetched before keeps serving while the
// issuer is down.
func TestPrivyUnavailable(t *testing.T) {
	clk := newClock()
	is := newIssuer(t, "k1")
	is.down = true
	p, _ := newPrivy(t, is, clk, true)
	tok := is.mint("k1", claims(clk.Now()))
	for range 3 {
		if _, err := p.Verify(ctx(), tok); !errors.Is(err, ErrPrivyUnavailable) {
			t.Fatalf("down: %v", err)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches while down within the floor, want 1", n)
	}
	is.mu.Lock()
	is.down = false
	is.mu.Unlock()
	clk.Add(time.Minute)
	if _, err := p.Verify(ctx(), is.mint("k1", claims(clk.Now()))); err != nil {
		t.Fatalf("up again: %v", err)
	}
	is.mu.Lock()
	is.down = true
	is.mu.Unlock()
	clk.Add(2 * DefaultPrivyRefresh)
	if _, err := p.Verify(ctx(), is.mint("k1", claims(clk.Now()))); err != nil {
		t.Fatalf("stale set while the issuer is down: %v", err)
	}
}

// Without auto-provisioning a user needs a link to an account.
func TestPrivyLinked(t *testing.T) {
	clk := newClock()
	is := newIssuer(t, "k1")
	p, s := newPrivy(t, is, clk, false)
	tok := is.mint("k1", claims(clk.Now()))
	if _, err := p.Principal(ctx(), tok); !errors.Is(err, ErrPrivyToken) || !strings.Contains(err.Error(), "no account") {
		t.Fatalf("unlinked: %v", err)
	}
	st := s.(interface {
		store.Accounts
		LinkPrivy(ctx context.Context, did, accountID string) error
	})
	if err := st.LinkPrivy(ctx(), "did:privy:cmuser1", "acct_x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("link to a missing account: %v", err)
	}
	if _, err := st.CreateAccount(ctx(), store.Account{ID: "acct_x", Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := st.LinkPrivy(ctx(), "did:privy:cmuser1", "acct_x"); err != nil {
		t.Fatal(err)
	}
	pr, err := p.Principal(ctx(), tok)
	if err != nil || pr.Key.AccountID != "acct_x" {
		t.Fatalf("linked: %+v %v", pr, err)
	}
}

func TestPrivyScheme(t *testing.T) {
	jwtish := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
	for v, want := range map[string]Kind{
		"Bearer " + jwtish:              KindPrivy,
		"bearer " + jwtish:              KindPrivy,
		"Bearer bardo_sk_abc":           KindKey,
		"Bearer sk-provider-key":        KindNone,
		"Bearer eyJhbGciOiJFUzI1NiJ9.x": KindNone,
		"Bearer eyJ.a.b.c":              KindNone,
		"Bearer eyJa..c":                KindNone,
		"Basic " + jwtish:               KindNone,
	} {
		h := http.Header{}
		h.Set("Authorization", v)
		c, err := Detect(HTTPHeader(h), WithPrivy(Schemes))
		got := c.Kind
		if errors.Is(err, ErrNoCredential) {
			got = KindNone
		}
		if got != want {
			t.Errorf("%q: %v (%v), want %v", v, got, err, want)
		}
	}
	// Without WithPrivy, a JWT is no credential (the seam).
	h := http.Header{}
	h.Set("Authorization", "Bearer "+jwtish)
	if _, err := Detect(HTTPHeader(h), Schemes); !errors.Is(err, ErrNoCredential) {
		t.Errorf("seam: %v", err)
	}
}

// A verified token is trusted from the cache for at most PrivyCacheTTL,
// never past its exp (with the leeway), and not once its key left the set.
func TestPrivyCache(t *testing.T) {
	clk := newClock()
	is := newIssuer(t, "k1")
	p, s := newPrivy(t, is, clk, true)
	st := s.(interface {
		store.Accounts
		LinkPrivy(ctx context.Context, did, accountID string) error
	})
	tok := is.mint("k1", claims(clk.Now()))
	if pr, err := p.Principal(ctx(), tok); err != nil || pr.Key.AccountID != "privy:cmuser1" {
		t.Fatalf("%+v %v", pr, err)
	}
	if _, err := st.CreateAccount(ctx(), store.Account{ID: "team", Name: "team"}); err != nil {
		t.Fatal(err)
	}
	if err := st.LinkPrivy(ctx(), "did:privy:cmuser1", "team"); err != nil {
		t.Fatal(err)
	}
	if pr, _ := p.Principal(ctx(), tok); pr.Key.AccountID != "privy:cmuser1" {
		t.Fatalf("within the cache's TTL: %s", pr.Key.AccountID)
	}
	clk.Add(PrivyCacheTTL)
	if pr, _ := p.Principal(ctx(), tok); pr.Key.AccountID != "team" {
		t.Fatalf("after the cache's TTL: %s, want the new link", pr.Key.AccountID)
	}

	// A token about to expire is cached only until its exp + leeway.
	p1, err := NewPrivy(PrivyConfig{AppID: testAppID, JWKSURL: is.srv.URL, Leeway: time.Second, AutoProvision: true,
		Accounts: s, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	c := claims(clk.Now())
	c["exp"] = clk.Now().Add(2 * time.Second).Unix()
	short := is.mint("k1", c)
	if _, err := p1.Principal(ctx(), short); err != nil {
		t.Fatal(err)
	}
	clk.Add(5 * time.Second) // past exp + 1 s, within PrivyCacheTTL
	if _, err := p1.Principal(ctx(), short); !errors.Is(err, ErrPrivyToken) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired while cached: %v", err)
	}

	// A key Privy retired takes its cached tokens with it.
	tok = is.mint("k1", claims(clk.Now()))
	if _, err := p.Principal(ctx(), tok); err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	delete(is.keys, "k1")
	is.mu.Unlock()
	is.add("k2")
	if err := p.Refresh(ctx()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Principal(ctx(), tok); !errors.Is(err, ErrPrivyToken) {
		t.Fatalf("retired key, cached token: %v", err)
	}
}

// BenchmarkPrivyPrincipal is a Privy token's admission cost with the key
// set fetched: "verify" checks it every time (parse, ES256, claims, the
// DID's account read from SQLite), "cached" is the same token again
// within PrivyCacheTTL (a SHA-256 and a map read).
func BenchmarkPrivyPrincipal(b *testing.B) {
	for _, name := range []string{"verify", "cached"} {
		b.Run(name, func(b *testing.B) {
			clk := newClock()
			is := newIssuer(b, "k1")
			p, _ := newPrivy(b, is, clk, true)
			tok := is.mint("k1", claims(clk.Now()))
			if _, err := p.Principal(ctx(), tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var lat []time.Duration
			for b.Loop() {
				if name == "verify" {
					p.seenMu.Lock()
					p.seen = nil
					p.seenMu.Unlock()
				}
				t0 := time.Now()
				if _, err := p.Principal(ctx(), tok); err != nil {
					b.Fatal(err)
				}
				if len(lat) < 1<<20 {
					lat = append(lat, time.Since(t0))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
}

// FuzzPrivyToken: whatever the Bearer value, detection and verification
// never panic, and nothing but a token the issuer signed is accepted:
// every fuzzed value is refused with ErrPrivyToken (the key set is up).
func FuzzPrivyToken(f *testing.F) {
	clk := newClock()
	is := newIssuer(f, "k1")
	p, _ := newPrivy(f, is, clk, true)
	good := is.mint("k1", claims(clk.Now()))
	if _, err := p.Verify(ctx(), good); err != nil {
		f.Fatal(err)
	}
	f.Add(good[:len(good)-2] + "AA")
	f.Add(tamper(good))
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJkaWQ6cHJpdnk6eCJ9.")
	f.Add("eyJ.eyJ.eyJ")
	f.Add("eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.e30.AAAA")
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h["Authorization"] = []string{"Bearer " + v}
		if c, err := Detect(HTTPHeader(h), WithPrivy(Schemes)); err == nil && c.Kind == KindPrivy && !strings.Contains(v, c.Value) {
			t.Fatalf("credential %q from %q", c.Value, v)
		}
		if v == good {
			return
		}
		if _, err := p.Verify(ctx(), v); !errors.Is(err, ErrPrivyToken) {
			t.Fatalf("%q: %v", v, err)
		}
	})
}
