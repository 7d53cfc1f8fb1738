package x402

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"regexp"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// Signer holds a wallet and signs EIP-3009 authorizations with it. It is
// deliberately narrow: no method returns key material or signs an arbitrary
// digest, so code that can reach a Signer (the Payer, a host function on a
// plugin's behalf) can make it sign token transfers of the shape checked
// here and nothing else, such as a transaction or a Permit2 approval.
type Signer interface {
	// Address is the wallet's address, the authorization's "from".
	Address() common.Address
	// SignTransferAuthorization returns the 65-byte r||s||v signature
	// (v = 27 or 28) of the EIP-712 digest of a under d. a.From must be
	// Address().
	SignTransferAuthorization(ctx context.Context, d Domain, a *TransferAuthorization) ([]byte, error)
}

// KeySigner is a Signer over a secp256k1 private key held in memory. The key
// is loaded once and never leaves the value: it is not exported, and every
// formatting path (fmt verbs, JSON, slog) shows only the address.
type KeySigner struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

var _ Signer = (*KeySigner)(nil)

// ErrNoKey reports that a key reference resolved to nothing (an unset
// variable or a missing or empty file): the wallet is not configured.
var ErrNoKey = errors.New("x402: wallet key not configured")

// NewKeySigner parses a 32-byte hex private key, with or without 0x, with
// surrounding blanks ignored. Errors never repeat any part of the input.
func NewKeySigner(hexKey string) (*KeySigner, error) {
	s := strings.TrimSpace(hexKey)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(s) != 64 {
		return nil, errors.New("x402: wallet key: want 32 bytes as 64 hex digits")
	}
	var raw [32]byte
	if _, err := hex.Decode(raw[:], []byte(s)); err != nil {
		return nil, errors.New("x402: wallet key: not hex")
	}
	key, err := crypto.ToECDSA(raw[:])
	clear(raw[:])
	if err != nil {
		return nil, errors.New("x402: wallet key: not a valid secp256k1 private key")
	}
	return &KeySigner{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}, nil
}

// GenerateKeySigner returns a signer over a fresh random key, for tests and
// throwaway wallets.
func GenerateKeySigner() (*KeySigner, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("x402: generate key: %w", err)
	}
	return &KeySigner{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}, nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// LoadKeySigner loads the wallet from a reference, following the
// convention of pipeline.toml credentials: "env:NAME" reads the environment
// variable NAME through getenv, "file:PATH" reads a file (trailing blanks
// and newlines dropped). A literal key is refused so that it never sits in a
// configuration file; the error does not repeat the value. An unset
// variable or a missing or empty file gives ErrNoKey.
func LoadKeySigner(ref string, getenv func(string) string) (*KeySigner, error) {
	var secret string
	switch {
	case strings.HasPrefix(ref, "env:"):
		name := ref[len("env:"):]
		if !envNameRE.MatchString(name) {
			return nil, fmt.Errorf("x402: wallet key: %q is not a valid environment variable name", name)
		}
		secret = getenv(name)
	case strings.HasPrefix(ref, "file:"):
		p := ref[len("file:"):]
		if p == "" {
			return nil, errors.New(`x402: wallet key: "file:" needs a path`)
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoKey, p)
		}
		if err != nil {
			return nil, fmt.Errorf("x402: wallet key: %w", err)
		}
		secret = string(b)
		clear(b)
	default:
		return nil, errors.New(`x402: wallet key must be a reference "env:NAME" or "file:PATH" (value not shown)`)
	}
	if strings.TrimSpace(secret) == "" {
		return nil, fmt.Errorf("%w: %s is empty", ErrNoKey, ref)
	}
	return NewKeySigner(secret)
}

// Address implements Signer.
func (k *KeySigner) Address() common.Address { return k.addr }

// SignTransferAuthorization implements Signer.
func (k *KeySigner) SignTransferAuthorization(ctx context.Context, d Domain, a *TransferAuthorization) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("x402: sign: %w", err)
	}
	if k.key == nil {
		return nil, errors.New("x402: sign: KeySigner has no key (use NewKeySigner or LoadKeySigner)")
	}
	if a.From != k.addr {
		return nil, fmt.Errorf("x402: sign: authorization is from %s, this wallet is %s", a.From.Hex(), k.addr.Hex())
	}
	if err := checkUint256s(a); err != nil {
		return nil, fmt.Errorf("x402: sign: %w", err)
	}
	digest := TypedDataHash(d, a)
	sig, err := crypto.Sign(digest[:], k.key)
	if err != nil {
		return nil, fmt.Errorf("x402: sign: %w", err)
	}
	// crypto.Sign yields v in {0,1}; Ethereum signatures (and the ecrecover
	// precompile FiatToken calls) use 27/28.
	sig[64] += 27
	return sig, nil
}

func checkUint256s(a *TransferAuthorization) error {
	for _, v := range []*big.Int{a.Value, a.ValidAfter, a.ValidBefore} {
		if v == nil || v.Sign() < 0 || v.Cmp(two256) >= 0 {
			return errors.New("authorization integers must be uint256")
		}
	}
	return nil
}

// String shows the address only (value receiver, so a copy is covered too).
func (k KeySigner) String() string { return "x402.KeySigner(" + k.addr.Hex() + ")" }

// GoString shows the address only, also under %#v.
func (k KeySigner) GoString() string { return k.String() }

// MarshalJSON shows the address only.
func (k KeySigner) MarshalJSON() ([]byte, error) {
	return []byte(`{"address":"` + k.addr.Hex() + `"}`), nil
}

// LogValue shows the address only to log/slog.
func (k KeySigner) LogValue() slog.Value { return slog.StringValue(k.String()) }
