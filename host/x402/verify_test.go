package x402

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func TestVerifyAcceptsValidPayments(t *testing.T) {
	k := mustSigner(t)
	clock := newClock(1_800_000_000)
	v := NewVerifier(nil, clock.Now)
	req := testRequirements(USDCBase, 5000)
	got, err := v.Verify(t.Context(), signPayload(t, k, req, clock.Now(), nil), &req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Payer != k.Address() || got.Amount.Int64() != 5000 || got.Domain.ChainID != ChainBase {
		t.Fatalf("verified %+v", got)
	}

	// v1: network "base", maxAmountRequired, payload scheme/network at the
	// top level.
	req1 := req
	req1.Network, req1.Amount, req1.MaxAmountRequired = "base", "", "5000"
	p := signPayload(t, k, req1, clock.Now(), nil)
	p.X402Version, p.Accepted, p.Scheme, p.Network = Version1, nil, SchemeExact, "base"
	if _, err := v.Verify(t.Context(), p, &req1); err != nil {
		t.Fatalf("v1: %v", err)
	}

	// Paying more than asked is allowed (the spec: "meets or exceeds").
	p = signPayload(t, k, req, clock.Now(), func(a *TransferAuthorization, _ *Domain) { a.Value = big.NewInt(6000) })
	if got, err := v.Verify(t.Context(), p, &req); err != nil || got.Amount.Int64() != 6000 {
		t.Fatalf("overpayment: %v", err)
	}
}

func TestVerifyRefusals(t *testing.T) {
	k := mustSigner(t)
	clock := newClock(1_800_000_000)
	now := clock.Now()
	req := testRequirements(USDCBase, 5000)
	other := mustSigner(t)

	cases := []struct {
		name   string
		build  func() *PaymentPayload
		req    func(*PaymentRequirements)
		reason string
	}{
		{"value tampered after signing", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Authorization.Value = "50000"
			return p
		}, nil, ReasonSignature},
		{"nonce tampered", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Authorization.Nonce = "0x01"
			return p
		}, nil, ReasonSignature},
		{"validBefore tampered", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Authorization.ValidBefore = big.NewInt(now.Unix() + 30).String()
			return p
		}, nil, ReasonSignature},
		{"from swapped", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Authorization.From = other.Address().Hex()
			return p
		}, nil, ReasonSignature},
		{"signature byte flipped", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			b := []byte(p.Payload.Signature)
			if b[10] == 'a' {
				b[10] = 'b'
			} else {
				b[10] = 'a'
			}
			p.Payload.Signature = string(b)
			return p
		}, nil, ReasonSignature},
		{"to tampered", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Authorization.To = other.Address().Hex()
			return p
		}, nil, ReasonRecipientMismatch},
		{"signed to someone else", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(a *TransferAuthorization, _ *Domain) { a.To = other.Address() })
		}, nil, ReasonRecipientMismatch},
		{"underpaid", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(a *TransferAuthorization, _ *Domain) { a.Value = big.NewInt(4999) })
		}, nil, ReasonValue},
		{"wrong chain in domain", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(_ *TransferAuthorization, d *Domain) { d.ChainID = ChainBaseSepolia })
		}, nil, ReasonSignature},
		{"wrong token in domain", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(_ *TransferAuthorization, d *Domain) { d.VerifyingContract = USDCBaseSepolia.Address })
		}, nil, ReasonSignature},
		{"wrong domain name", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(_ *TransferAuthorization, d *Domain) { d.Name = "USDC" })
		}, nil, ReasonSignature},
		{"payload on another network", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Accepted.Network = NetworkBaseSepolia
			return p
		}, nil, ReasonInvalidNetwork},
		{"accepted asks for less", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Accepted.Amount = "1"
			return p
		}, nil, ReasonInvalidPayload},
		{"expired", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(a *TransferAuthorization, _ *Domain) {
				a.ValidAfter, a.ValidBefore = big.NewInt(now.Unix()-120), big.NewInt(now.Unix()-1)
			})
		}, nil, ReasonValidBefore},
		{"expiring too soon to settle", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(a *TransferAuthorization, _ *Domain) { a.ValidBefore = big.NewInt(now.Unix() + 2) })
		}, nil, ReasonValidBefore},
		{"valid far longer than maxTimeoutSeconds", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(a *TransferAuthorization, _ *Domain) { a.ValidBefore = big.NewInt(now.Unix() + 86400) })
		}, nil, ReasonValidBefore},
		{"not yet valid", func() *PaymentPayload {
			return signPayload(t, k, req, now, func(a *TransferAuthorization, _ *Domain) { a.ValidAfter = big.NewInt(now.Unix() + 10) })
		}, nil, ReasonValidAfter},
		{"bad version", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.X402Version = 3
			return p
		}, nil, ReasonInvalidVersion},
		{"other scheme", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Accepted.Scheme = "upto"
			return p
		}, nil, ReasonInvalidScheme},
		{"malformed authorization", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Authorization.Value = "ten"
			return p
		}, nil, ReasonInvalidPayload},
		{"short signature", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Signature = p.Payload.Signature[:len(p.Payload.Signature)-2]
			return p
		}, nil, ReasonSignature},
		{"ERC-6492 signature", func() *PaymentPayload {
			p := signPayload(t, k, req, now, nil)
			p.Payload.Signature += strings.Repeat("00", 64) + common.Bytes2Hex(erc6492Magic)
			return p
		}, nil, ReasonContractSignature},
		{"broken requirements", func() *PaymentPayload { return signPayload(t, k, req, now, nil) },
			func(r *PaymentRequirements) { r.Extra = nil }, ReasonInvalidRequirements},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := NewVerifier(nil, clock.Now)
			r := req
			if c.req != nil {
				c.req(&r)
			}
			_, err := v.Verify(t.Context(), c.build(), &r)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Reason != c.reason {
				t.Fatalf("got %v, want reason %s", err, c.reason)
			}
			if c.name == "ERC-6492 signature" && !errors.Is(err, ErrContractSignature) {
				t.Fatalf("6492: %v does not wrap ErrContractSignature", err)
			}
		})
	}
}

// TestVerifyHighS: the malleable twin (n - s, flipped v) of a valid
// signature recovers to the same address but could never settle, so it is
// refused.
func TestVerifyHighS(t *testing.T) {
	k := mustSigner(t)
	clock := newClock(1_800_000_000)
	req := testRequirements(USDCBase, 5000)
	p := signPayload(t, k, req, clock.Now(), nil)
	sig := common.FromHex(p.Payload.Signature)
	s := new(big.Int).SetBytes(sig[32:64])
	s.Sub(crypto.S256().Params().N, s)
	s.FillBytes(sig[32:64])
	sig[64] = 55 - sig[64] // 27 <-> 28
	p.Payload.Signature = "0x" + common.Bytes2Hex(sig)
	_, err := NewVerifier(nil, clock.Now).Verify(t.Context(), p, &req)
	if ReasonOf(err) != ReasonSignature || !strings.Contains(err.Error(), "malleable") {
		t.Fatalf("high-s: %v", err)
	}
}

func TestVerifyReplayAndRelease(t *testing.T) {
	k := mustSigner(t)
	clock := newClock(1_800_000_000)
	store := NewMemoryNonceStore(clock.Now, 0)
	v := NewVerifier(store, clock.Now)
	req := testRequirements(USDCBase, 5000)
	p := signPayload(t, k, req, clock.Now(), nil)

	got, err := v.Verify(t.Context(), p, &req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), p, &req); ReasonOf(err) != ReasonNonceUsed || !errors.Is(err, ErrNonceUsed) {
		t.Fatalf("replay: %v", err)
	}
	// A server that failed before settling releases the nonce; the same
	// payment is then good once more.
	if err := store.Release(t.Context(), got.NonceKey); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), p, &req); err != nil {
		t.Fatalf("after release: %v", err)
	}
	// After expiry the entry goes, but the payment is refused on time.
	clock.Advance(10 * time.Minute)
	if _, err := v.Verify(t.Context(), p, &req); ReasonOf(err) != ReasonValidBefore {
		t.Fatalf("after expiry: %v", err)
	}
}

// TestVerifyConcurrentReplay: of many concurrent presentations of one
// payment exactly one is accepted.
func TestVerifyConcurrentReplay(t *testing.T) {
	k := mustSigner(t)
	clock := newClock(1_800_000_000)
	v := NewVerifier(nil, clock.Now)
	req := testRequirements(USDCBase, 5000)
	p := signPayload(t, k, req, clock.Now(), nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 16 {
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), p, &req); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d of 16 concurrent replays accepted, want 1", ok)
	}
}

func TestMemoryNonceStoreBounds(t *testing.T) {
	clock := newClock(1_800_000_000)
	s := NewMemoryNonceStore(clock.Now, 4)
	exp := clock.Now().Add(time.Minute)
	for i := range 4 {
		if err := s.Use(t.Context(), NonceKey{Nonce: [32]byte{byte(i)}}, exp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Use(t.Context(), NonceKey{Nonce: [32]byte{9}}, exp); !errors.Is(err, ErrNonceStoreFull) {
		t.Fatalf("full store: %v", err)
	}
	clock.Advance(2 * time.Minute) // all expire
	if err := s.Use(t.Context(), NonceKey{Nonce: [32]byte{9}}, clock.Now().Add(time.Minute)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if s.Len() != 1 {
		t.Fatalf("expired entries kept: %d", s.Len())
	}
}

func TestMatchRequirements(t *testing.T) {
	k := mustSigner(t)
	now := newClock(1_800_000_000).Now()
	a := testRequirements(USDCBase, 5000)
	b := testRequirements(USDCBaseSepolia, 7000)
	p := signPayload(t, k, b, now, nil)
	got, err := MatchRequirements(p, []PaymentRequirements{a, b})
	if err != nil || got.Network != NetworkBaseSepolia {
		t.Fatalf("v2 match: %+v, %v", got, err)
	}
	p.Accepted.Amount = "1"
	if _, err := MatchRequirements(p, []PaymentRequirements{a, b}); ReasonOf(err) != ReasonInvalidPayload {
		t.Fatalf("v2 mismatch: %v", err)
	}
	p1 := &PaymentPayload{X402Version: 1, Scheme: "exact", Network: "base"}
	if got, err := MatchRequirements(p1, []PaymentRequirements{b, a}); err != nil || got.Network != NetworkBase {
		t.Fatalf("v1 match: %+v, %v", got, err)
	}
	p1.Network = "polygon"
	if _, err := MatchRequirements(p1, []PaymentRequirements{a, b}); ReasonOf(err) != ReasonInvalidNetwork {
		t.Fatalf("v1 network: %v", err)
	}
	p1.Scheme = "upto"
	if _, err := MatchRequirements(p1, []PaymentRequirements{a, b}); ReasonOf(err) != ReasonInvalidScheme {
		t.Fatalf("v1 scheme: %v", err)
	}
}
