package auth

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
)

// Errors of Verify and Principal.Allow. ErrUnauthenticated maps to 401 and
// its text is the same whatever the cause (unknown, wrong, revoked,
// expired, disabled), so an answer never tells whether a key exists; the
// wrapped cause is for the operator's log only. ErrForbidden maps to 403
// and is returned only to the holder of a valid key.
var (
	ErrUnauthenticated = errors.New("invalid API key")
	ErrForbidden       = errors.New("forbidden")
)

// KeySpec describes a key to create.
type KeySpec struct {
	Name       string
	ReadOnly   bool
	SpendLimit int64 // micro-USD; 0 = none
	Models     []string
	CIDRs      []string
	Expires    time.Time
	RateLimit  int // requests per minute; 0 = the account tier's default
}

// Options tunes an Authenticator.
type Options struct {
	// TTL bounds how long a verified key record is trusted without a
	// database read (default 10 s): a key revoked or changed by another
	// process (the CLI) stops working within TTL; one revoked through this
	// Authenticator stops at once.
	TTL time.Duration
	// MaxCached bounds the cache (default 100,000 keys); when full it is
	// emptied.
	MaxCached int
	// Accounts, when set, makes Verify refuse the keys of a disabled
	// account too (read with the key record, so also within TTL).
	Accounts store.Accounts
	Now      func() time.Time
}

// Authenticator verifies keys against a store.Keys, caching verified
// records.
type Authenticator struct {
	keys   store.Keys
	accts  store.Accounts
	hasher Hasher
	ttl    time.Duration
	max    int
	now    func() time.Time

	mu    sync.RWMutex
	cache map[string]*Principal
	gen   uint64 // bumped by Invalidate: a record read before it is not cached
}

// New returns an Authenticator over keys hashing under secret.
func New(keys store.Keys, secret []byte, opt Options) *Authenticator {
	a := &Authenticator{keys: keys, accts: opt.Accounts, hasher: NewHasher(secret), ttl: opt.TTL, max: opt.MaxCached, now: opt.Now,
		cache: map[string]*Principal{}}
	if a.ttl <= 0 {
		a.ttl = 10 * time.Second
	}
	if a.max <= 0 {
		a.max = 100_000
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// Principal is a verified key with its parsed scopes. It is shared by
// concurrent requests and must not be modified.
type Principal struct {
	Key    store.Key
	nets   []netip.Prefix
	loaded time.Time
	// accountDisabled is the account's state when the record was loaded
	// (false without Options.Accounts).
	accountDisabled bool
	// Spread, when above zero, caps the spread this request is priced at
	// (an ERC-8004 delegation's reputation tier; set on a copy from
	// Lookup, never on a shared record). 0: the account tier's.
	Spread pricing.Spread
}

// Access is what a request wants to do.
type Access struct {
	Model    string     // the requested model; "" for endpoints without one
	ClientIP netip.Addr // the peer address; zero skips the check (not trusted)
	Spends   bool       // the request costs money (not models, count_tokens, balance)
}

// Allow checks the key's scopes against an access.
func (p *Principal) Allow(acc Access) error {
	if acc.Spends && p.Key.ReadOnly {
		return fmt.Errorf("%w: this key is read-only", ErrForbidden)
	}
	if len(p.nets) > 0 {
		ip := acc.ClientIP.Unmap()
		ok := false
		for _, n := range p.nets {
			if n.Contains(ip) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%w: this key is not allowed from this address", ErrForbidden)
		}
	}
	if acc.Model != "" && len(p.Key.Models) > 0 {
		for _, g := range p.Key.Models {
			if Glob(g, acc.Model) {
				return nil
			}
		}
		return fmt.Errorf("%w: this key may not use model %q", ErrForbidden, acc.Model)
	}
	return nil
}

// Create makes a key for an account and returns its token, which is shown
// once and never stored.
func (a *Authenticator) Create(ctx context.Context, accountID string, spec KeySpec) (string, store.Key, error) {
	if _, err := parseNets(spec.CIDRs); err != nil {
		return "", store.Key{}, err
	}
	for _, g := range spec.Models {
		if g == "" {
			return "", store.Key{}, errors.New("auth: empty model glob")
		}
	}
	for range 3 {
		token, id, err := NewToken()
		if err != nil {
			return "", store.Key{}, err
		}
		k := store.Key{ID: id, AccountID: accountID, Name: spec.Name, Hash: a.hasher.Sum(token),
			ReadOnly: spec.ReadOnly, SpendLimit: spec.SpendLimit, Models: spec.Models, CIDRs: spec.CIDRs,
			Expires: spec.Expires, RateLimit: spec.RateLimit, Created: a.now().UTC()}
		err = a.keys.CreateKey(ctx, k)
		if errors.Is(err, store.ErrExists) {
			continue // a 71-bit id collided: draw again
		}
		if err != nil {
			return "", store.Key{}, err
		}
		return token, k, nil
	}
	return "", store.Key{}, errors.New("auth: could not draw a unique key id")
}

// Verify returns the principal of token, or an error wrapping
// ErrUnauthenticated.
func (a *Authenticator) Verify(ctx context.Context, token string) (*Principal, error) {
	id, ok := TokenID(token)
	if !ok {
		return nil, fmt.Errorf("%w: malformed", ErrUnauthenticated)
	}
	now := a.now()
	a.mu.RLock()
	p, gen := a.cache[id], a.gen
	a.mu.RUnlock()
	if p == nil || now.Sub(p.loaded) >= a.ttl {
		k, err := a.keys.Key(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			a.hasher.Sum(token) // about the same time as a wrong secret
			return nil, fmt.Errorf("%w: unknown id", ErrUnauthenticated)
		}
		if err != nil {
			return nil, err // a store failure is a 5xx, not a refusal
		}
		if p, err = a.principal(ctx, k, now); err != nil {
			return nil, err
		}
	}
	// The secret is checked before any state, so only its holder learns
	// that a key is revoked or expired (and even then, by the same error).
	if !a.hasher.Equal(token, p.Key.Hash) {
		return nil, fmt.Errorf("%w: wrong secret", ErrUnauthenticated)
	}
	a.mu.Lock()
	if cur := a.cache[id]; cur != p && a.gen == gen {
		if len(a.cache) >= a.max {
			clear(a.cache)
		}
		a.cache[id] = p
	}
	a.mu.Unlock()
	if err := p.usable(now); err != nil {
		return nil, err
	}
	return p, nil
}

// principal builds a key's record as the cache keeps it: its parsed
// networks and whether its account is disabled.
func (a *Authenticator) principal(ctx context.Context, k store.Key, now time.Time) (*Principal, error) {
	nets, err := parseNets(k.CIDRs)
	if err != nil {
		return nil, fmt.Errorf("%w: stored CIDR: %v", ErrUnauthenticated, err)
	}
	p := &Principal{Key: k, nets: nets, loaded: now}
	if a.accts != nil {
		acct, err := a.accts.Account(ctx, k.AccountID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		p.accountDisabled = err != nil || acct.Disabled
	}
	return p, nil
}

// usable refuses a key that is revoked, disabled, expired or whose account
// is disabled.
func (p *Principal) usable(now time.Time) error {
	switch {
	case !p.Key.Revoked.IsZero():
		return fmt.Errorf("%w: revoked", ErrUnauthenticated)
	case p.Key.Disabled:
		return fmt.Errorf("%w: disabled", ErrUnauthenticated)
	case p.accountDisabled:
		return fmt.Errorf("%w: account disabled", ErrUnauthenticated)
	case !p.Key.Expires.IsZero() && !now.Before(p.Key.Expires):
		return fmt.Errorf("%w: expired", ErrUnauthenticated)
	}
	return nil
}

// Revoke revokes key id in the store and forgets its cached record.
func (a *Authenticator) Revoke(ctx context.Context, id string) error {
	err := a.keys.RevokeKey(ctx, id, a.now())
	a.Invalidate(id)
	return err
}

// SetDisabled disables or re-enables key id and forgets its cached record.
func (a *Authenticator) SetDisabled(ctx context.Context, id string, disabled bool) error {
	err := a.keys.SetKeyDisabled(ctx, id, disabled)
	a.Invalidate(id)
	return err
}

// Invalidate forgets the cached record of key id (call it after changing
// the key in the store by other means).
func (a *Authenticator) Invalidate(id string) {
	a.mu.Lock()
	delete(a.cache, id)
	a.gen++
	a.mu.Unlock()
}

// parseNets parses CIDRs or bare addresses (one host).
func parseNets(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if !strings.Contains(c, "/") {
			ip, err := netip.ParseAddr(c)
			if err != nil {
				return nil, fmt.Errorf("auth: IP allow-list entry %q: %v", c, err)
			}
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("auth: IP allow-list entry %q: %v", c, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Glob reports whether name matches pattern, where '*' matches any run of
// characters (slashes included: "openai/*" matches "openai/gpt-4o") and
// '?' any one byte. Matching is case-sensitive, as model names are.
func Glob(pattern, name string) bool {
	// Iterative wildcard matching with one backtrack point: linear in
	// practice, never exponential.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
