package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bardoinference/bardo/host/store"
)

// Privy access tokens (https://docs.privy.io, "access tokens"): an ES256
// JWT signed by Privy for one app, whose claims are
//
//	iss "privy.io", aud the app id, sub the user's DID (did:privy:…),
//	sid the session, iat, exp (an hour after iat).
//
// The verification key set is the app's JWKS,
// https://auth.privy.io/api/v1/apps/<app id>/jwks.json.

// Defaults of PrivyConfig.
const (
	DefaultPrivyIssuer     = "privy.io"
	DefaultPrivyLeeway     = 10 * time.Second
	DefaultPrivyRefresh    = time.Hour
	DefaultPrivyMinRefetch = 30 * time.Second
	privyFetchTimeout      = 5 * time.Second
	maxJWKSBody            = 256 << 10
	maxPrivyToken          = 8 << 10
)

// PrivyKeyID is the Key.ID of a Privy user's Principal: usage records
// and per-key limits of a Privy request are filed under it.
const PrivyKeyID = "privy"

// PrivyDIDPrefix starts a Privy user's DID, the token's sub.
const PrivyDIDPrefix = "did:privy:"

// Errors of Privy.Principal. ErrPrivyToken is a 401: the token is not a
// valid access token of this app (the wrapped cause says why, and names
// no secret: expired, audience, issuer, signature, unknown key…).
// ErrPrivyUnavailable is a 503: the key set could never be fetched, so no
// token can be checked.
var (
	ErrPrivyToken       = errors.New("invalid Privy access token")
	ErrPrivyUnavailable = errors.New("privy: the app's key set (JWKS) cannot be fetched")
)

// PrivyAccounts maps Privy users to accounts; *sqlite.Store implements it.
type PrivyAccounts interface {
	// PrivyAccount returns the account did is billed to, or an error
	// wrapping store.ErrNotFound.
	PrivyAccount(ctx context.Context, did string) (string, error)
	// ProvisionPrivy returns did's account, creating a (zero balance)
	// and the link when it has none.
	ProvisionPrivy(ctx context.Context, did string, a store.Account) (string, error)
}

// PrivyConfig configures a Privy verifier.
type PrivyConfig struct {
	// AppID is the Privy app id: the tokens' audience (required).
	AppID string
	// JWKSURL is the app's key set (required).
	JWKSURL string
	// Issuer is the tokens' iss ("": DefaultPrivyIssuer).
	Issuer string
	// Leeway is the clock skew allowed on exp, nbf and iat (0: 10 s).
	Leeway time.Duration
	// Refresh is how often the key set is fetched again (0: 1 h): a key
	// Privy retired stops verifying within it.
	Refresh time.Duration
	// MinRefetch is the least time between two fetches that an unknown
	// kid triggers (0: 30 s), so tokens naming made-up keys cannot make
	// the gateway hammer Privy.
	MinRefetch time.Duration
	// AutoProvision creates an account (id "privy:<DID's id>", zero
	// balance, the free tier) for a user seen the first time; without it
	// a user must have been linked to an account first (LinkPrivy), and
	// an unlinked one gets 401.
	AutoProvision bool
	// Accounts maps users to accounts (required).
	Accounts PrivyAccounts
	// Client fetches the key set (nil: a client with a 5 s timeout).
	Client *http.Client
	Now    func() time.Time
}

// Privy verifies Privy access tokens against the app's JWKS and maps
// their users to accounts.
type Privy struct {
	cfg    PrivyConfig
	parser *jwt.Parser

	fetchMu sync.Mutex // one fetch at a time; the others wait for it
	mu      sync.RWMutex
	keys    map[string]*ecdsa.PublicKey // kid -> key
	fetched time.Time                   // last successful fetch
	tried   time.Time                   // last fetch attempt

	// seen caches verified tokens by their SHA-256: an access token is
	// sent with every request for up to an hour, and its ES256 check and
	// account read cost ~85 µs where a cached key costs ~1 µs.
	seenMu sync.RWMutex
	seen   map[[sha256.Size]byte]*verifiedToken
}

// verifiedToken is a token that verified, and its user's account.
type verifiedToken struct {
	did, account, kid string
	// until is when the entry stops being trusted: the token's exp (with
	// the leeway), and at most PrivyCacheTTL after it was verified, so a
	// re-linked user moves within it.
	until time.Time
}

// PrivyCacheTTL bounds how long a verified token is trusted without being
// checked again, and so how long a DID's new link takes to apply.
const PrivyCacheTTL = 10 * time.Second

// maxSeen bounds the verified-token cache; when full it is emptied.
const maxSeen = 100_000

// NewPrivy returns a Privy verifier. The key set is fetched on first use.
func NewPrivy(cfg PrivyConfig) (*Privy, error) {
	if cfg.AppID == "" || cfg.JWKSURL == "" || cfg.Accounts == nil {
		return nil, errors.New("auth: privy needs an app id, a JWKS URL and an account store")
	}
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultPrivyIssuer
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultPrivyLeeway
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultPrivyRefresh
	}
	if cfg.MinRefetch <= 0 {
		cfg.MinRefetch = DefaultPrivyMinRefetch
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: privyFetchTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Privy{cfg: cfg}
	// Only ES256: an HS256 token "signed" with the public key, or alg
	// none, is refused before any key is looked at. Strict base64: a
	// token has one spelling (no padding, no stray low bits).
	p.parser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithStrictDecoding(), jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.AppID), jwt.WithLeeway(cfg.Leeway), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithTimeFunc(cfg.Now))
	return p, nil
}

// PrivyClaims are an access token's claims.
type PrivyClaims struct {
	jwt.RegisteredClaims
	// SessionID is sid, the user's Privy session.
	SessionID string `json:"sid"`
}

// Principal verifies token and returns its user's principal: billed to
// the account the DID maps to, as a key of that account with no scope
// (Key.ID PrivyKeyID, Key.Name the DID). Errors wrap ErrPrivyToken (401)
// or ErrPrivyUnavailable (503); a store failure is returned as itself.
func (p *Privy) Principal(ctx context.Context, token string) (*Principal, error) {
	sum := sha256.Sum256([]byte(token))
	now := p.cfg.Now()
	if v := p.cached(sum, now); v != nil {
		return privyPrincipal(v.account, v.did), nil
	}
	c, kid, err := p.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	did := c.Subject
	acct, err := p.cfg.Accounts.PrivyAccount(ctx, did)
	if errors.Is(err, store.ErrNotFound) {
		if !p.cfg.AutoProvision {
			return nil, fmt.Errorf("%w: this Privy user has no account at this gateway", ErrPrivyToken)
		}
		acct, err = p.cfg.Accounts.ProvisionPrivy(ctx, did, store.Account{ID: "privy:" + strings.TrimPrefix(did, PrivyDIDPrefix),
			Name: did, Tier: store.TierFree})
	}
	if err != nil {
		return nil, err
	}
	until := now.Add(PrivyCacheTTL)
	if exp := c.ExpiresAt.Add(p.cfg.Leeway); exp.Before(until) {
		until = exp
	}
	p.remember(sum, &verifiedToken{did: did, account: acct, kid: kid, until: until})
	return privyPrincipal(acct, did), nil
}

func privyPrincipal(account, did string) *Principal {
	return &Principal{Key: store.Key{ID: PrivyKeyID, AccountID: account, Name: did}}
}

// cached returns the verified entry of a token, if it is still trusted at
// now and its key is still in the key set (a key Privy retired takes its
// tokens with it at the next refresh).
func (p *Privy) cached(sum [sha256.Size]byte, now time.Time) *verifiedToken {
	p.seenMu.RLock()
	v := p.seen[sum]
	p.seenMu.RUnlock()
	if v == nil || !now.Before(v.until) {
		return nil
	}
	p.mu.RLock()
	_, ok := p.keys[v.kid]
	p.mu.RUnlock()
	if !ok {
		return nil
	}
	return v
}

func (p *Privy) remember(sum [sha256.Size]byte, v *verifiedToken) {
	p.seenMu.Lock()
	defer p.seenMu.Unlock()
	if p.seen == nil || len(p.seen) >= maxSeen {
		p.seen = map[[sha256.Size]byte]*verifiedToken{}
	}
	p.seen[sum] = v
}

// Verify checks token's signature against the app's key set, its alg
// (ES256 only), iss, aud, exp, nbf and iat (with the leeway), and that sub
// is a Privy DID and sid is set.
func (p *Privy) Verify(ctx context.Context, token string) (*PrivyClaims, error) {
	c, _, err := p.verify(ctx, token)
	return c, err
}

// verify is Verify, also returning the kid that signed.
func (p *Privy) verify(ctx context.Context, token string) (*PrivyClaims, string, error) {
	if len(token) > maxPrivyToken {
		return nil, "", fmt.Errorf("%w: longer than %d bytes", ErrPrivyToken, maxPrivyToken)
	}
	var unavailable error
	keyed := false // the alg passed: jwt looks the key up only then
	kid := ""
	c := &PrivyClaims{}
	_, err := p.parser.ParseWithClaims(token, c, func(t *jwt.Token) (any, error) {
		keyed = true
		kid, _ = t.Header["kid"].(string)
		k, err := p.key(ctx, kid)
		if errors.Is(err, ErrPrivyUnavailable) {
			unavailable = err
		}
		return k, err
	})
	if unavailable != nil {
		return nil, "", unavailable
	}
	if err != nil && !keyed && errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		return nil, "", fmt.Errorf("%w: signed with another alg than ES256", ErrPrivyToken)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s", ErrPrivyToken, tokenProblem(err))
	}
	if !validDID(c.Subject) {
		return nil, "", fmt.Errorf("%w: sub is not a Privy DID", ErrPrivyToken)
	}
	if c.SessionID == "" {
		return nil, "", fmt.Errorf("%w: no sid", ErrPrivyToken)
	}
	return c, kid, nil
}

// tokenProblem names what is wrong with a token in a few words, from
// jwt's error (never the token itself).
func tokenProblem(err error) string {
	for _, e := range []struct {
		err  error
		text string
	}{
		{jwt.ErrTokenMalformed, "malformed"},
		{jwt.ErrTokenSignatureInvalid, "bad signature"},
		{jwt.ErrTokenExpired, "expired"},
		{jwt.ErrTokenNotValidYet, "not valid yet"},
		{jwt.ErrTokenUsedBeforeIssued, "issued in the future"},
		{jwt.ErrTokenInvalidAudience, "not issued for this app (aud)"},
		{jwt.ErrTokenInvalidIssuer, "not issued by Privy (iss)"},
		{jwt.ErrTokenRequiredClaimMissing, "a required claim is missing"},
	} {
		if errors.Is(err, e.err) {
			return e.text
		}
	}
	if errors.Is(err, errUnknownKey) {
		return "signed by an unknown key (kid)"
	}
	return "invalid"
}

var errUnknownKey = errors.New("unknown kid")

// validDID reports whether s is did:privy: followed by an id of letters,
// digits, '-' and '_' (it becomes part of an account id).
func validDID(s string) bool {
	id, ok := strings.CutPrefix(s, PrivyDIDPrefix)
	if !ok || id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// key returns the key kid names: from the cached set, fetched again when
// it is older than Refresh, or when kid is unknown and the last fetch is
// at least MinRefetch old (Privy rotated its key).
func (p *Privy) key(ctx context.Context, kid string) (*ecdsa.PublicKey, error) {
	now := p.cfg.Now()
	p.mu.RLock()
	k, known := p.keys[kid]
	stale := now.Sub(p.fetched) >= p.cfg.Refresh
	canRefetch := now.Sub(p.tried) >= p.cfg.MinRefetch
	have := p.keys != nil
	p.mu.RUnlock()
	if known && !stale {
		return k, nil
	}
	if !canRefetch {
		switch {
		case known:
			return k, nil // stale, but a fetch was tried moments ago
		case !have:
			return nil, fmt.Errorf("%w: the last attempt failed", ErrPrivyUnavailable)
		}
		return nil, errUnknownKey
	}
	if err := p.refresh(ctx, now); err != nil && !have {
		return nil, fmt.Errorf("%w: %v", ErrPrivyUnavailable, err)
	}
	p.mu.RLock()
	k, known = p.keys[kid]
	p.mu.RUnlock()
	if !known {
		return nil, errUnknownKey
	}
	return k, nil
}

// refresh fetches the key set unless a fetch was tried after since: one
// fetch for any number of callers waiting on it. A failure keeps the keys
// already known.
func (p *Privy) refresh(ctx context.Context, since time.Time) error {
	p.fetchMu.Lock()
	defer p.fetchMu.Unlock()
	p.mu.RLock()
	done := p.tried.After(since)
	p.mu.RUnlock()
	if done {
		return nil
	}
	keys, err := p.fetch(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tried = p.cfg.Now()
	if err != nil {
		return err
	}
	p.keys, p.fetched = keys, p.tried
	return nil
}

// Refresh fetches the key set now: the daemon calls it at start, so the
// first token does not wait for it, and every Refresh interval.
func (p *Privy) Refresh(ctx context.Context) error {
	return p.refresh(ctx, p.cfg.Now())
}

// fetch reads the JWKS: the EC P-256 keys with a kid (alg ES256 or none
// given); other keys are skipped.
func (p *Privy) fetch(ctx context.Context) (map[string]*ecdsa.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, privyFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET JWKS: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxJWKSBody {
		return nil, errors.New("JWKS larger than 256 KiB")
	}
	return parseJWKS(body)
}

// parseJWKS returns the usable keys of a JWKS document by kid.
func parseJWKS(b []byte) (map[string]*ecdsa.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty, Crv, Alg, Use, Kid, X, Y string
		} `json:"keys"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || (k.Alg != "" && k.Alg != "ES256") || (k.Use != "" && k.Use != "sig") || k.Kid == "" {
			continue
		}
		x, err1 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.X, "="))
		y, err2 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.Y, "="))
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			continue
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			continue // not a point of the curve
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS has no EC P-256 signing key")
	}
	return keys, nil
}

// PrivyScheme finds a Privy access token: "Authorization: Bearer <JWT>"
// whose value has a JWT's shape (three base64url parts, a JSON header).
// A bardo_sk_ key never has it, and the key scheme comes first.
type PrivyScheme struct{}

// Kind returns KindPrivy.
func (PrivyScheme) Kind() Kind { return KindPrivy }

// Detect implements Scheme.
func (PrivyScheme) Detect(h Header) (Credential, error) {
	t := bearerToken(h.Peek("Authorization"))
	if !looksLikeJWT(t) {
		return Credential{}, ErrNotThisKind
	}
	return Credential{Kind: KindPrivy, Value: string(t)}, nil
}

// looksLikeJWT: "eyJ" (base64url of `{"`), then exactly three dot-separated
// non-empty base64url parts.
func looksLikeJWT(t []byte) bool {
	if !bytes.HasPrefix(t, []byte("eyJ")) || len(t) > maxPrivyToken {
		return false
	}
	parts := 0
	n := 0
	for _, c := range t {
		switch {
		case c == '.':
			if n == 0 {
				return false
			}
			parts++
			n = 0
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			n++
		default:
			return false
		}
	}
	return parts == 2 && n > 0
}

// WithPrivy is the detection order of a gateway that accepts Privy
// tokens: schemes with the Privy seam replaced by PrivyScheme.
func WithPrivy(schemes []Scheme) []Scheme {
	out := make([]Scheme, len(schemes))
	for i, s := range schemes {
		if s.Kind() == KindPrivy {
			s = PrivyScheme{}
		}
		out[i] = s
	}
	return out
}
