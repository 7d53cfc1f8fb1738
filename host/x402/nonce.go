package x402

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// NonceKey identifies an EIP-3009 authorization for replay protection. The
// token contract tracks nonces per authorizer (authorizationState(from,
// nonce)), so the key is the chain, the token, the payer and the nonce.
type NonceKey struct {
	ChainID uint64
	Token   common.Address
	From    common.Address
	Nonce   [32]byte
}

// Errors of NonceStore.
var (
	// ErrNonceUsed: the nonce was already presented to this store.
	ErrNonceUsed = errors.New("x402: authorization nonce already used")
	// ErrNonceStoreFull: the store refuses new nonces rather than forget
	// live ones, which would let a replay through.
	ErrNonceStoreFull = errors.New("x402: nonce store full")
)

// NonceStore remembers the authorizations a server has accepted, so the
// same signed payment cannot buy two responses. The in-memory store serves
// one process; a database-backed one (shared by replicas, surviving
// restarts) implements the same interface.
type NonceStore interface {
	// Use claims key until the authorization expires; it returns
	// ErrNonceUsed if the key is already claimed. The claim is atomic: of
	// two concurrent Use calls with one key, exactly one succeeds.
	Use(ctx context.Context, key NonceKey, expires time.Time) error
	// Release drops a claim whose authorization was certainly not settled
	// (the request failed before settlement), so the client may present
	// the same payment again. Releasing an unknown key is not an error.
	Release(ctx context.Context, key NonceKey) error
}

// MemoryNonceStore is an in-process NonceStore. Entries are kept until their
// authorization's validBefore: after that the Verifier refuses the payment
// on time grounds anyway, so forgetting it cannot let a replay through.
type MemoryNonceStore struct {
	now func() time.Time
	max int

	mu        sync.Mutex
	m         map[NonceKey]time.Time
	nextPrune int
}

// DefaultMaxNonces bounds a MemoryNonceStore (about 100 bytes an entry).
const DefaultMaxNonces = 1 << 20

// NewMemoryNonceStore returns an empty store holding at most max live
// entries (DefaultMaxNonces when max <= 0); now is the clock used to expire
// them (time.Now when nil) and must agree with the Verifier's.
func NewMemoryNonceStore(now func() time.Time, max int) *MemoryNonceStore {
	if now == nil {
		now = time.Now
	}
	if max <= 0 {
		max = DefaultMaxNonces
	}
	return &MemoryNonceStore{now: now, max: max, m: make(map[NonceKey]time.Time), nextPrune: 1024}
}

// Use implements NonceStore.
func (s *MemoryNonceStore) Use(ctx context.Context, key NonceKey, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if exp, ok := s.m[key]; ok && exp.After(now) {
		return ErrNonceUsed
	}
	// Pruning runs when the map has doubled since the last pass, so its
	// cost is amortised over the insertions that made it necessary.
	if len(s.m) >= s.nextPrune || len(s.m) >= s.max {
		for k, exp := range s.m {
			if !exp.After(now) {
				delete(s.m, k)
			}
		}
		s.nextPrune = max(2*len(s.m), 1024)
	}
	if len(s.m) >= s.max {
		return ErrNonceStoreFull
	}
	s.m[key] = expires
	return nil
}

// Release implements NonceStore.
func (s *MemoryNonceStore) Release(ctx context.Context, key NonceKey) error {
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
	return nil
}

// Len returns the number of entries held, expired or not.
func (s *MemoryNonceStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
