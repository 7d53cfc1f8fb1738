package x402

import (
	"context"
	"testing"
	"time"
)

func BenchmarkTypedDataHash(b *testing.B) {
	k := mustSigner(b)
	req := testRequirements(USDCBase, 5000)
	p := signPayload(b, k, req, time.Unix(1_800_000_000, 0), nil)
	a, _ := ParseAuthorization(&p.Payload.Authorization)
	d := tokenDomain(USDCBase)
	b.ReportAllocs()
	for b.Loop() {
		TypedDataHash(d, a)
	}
}

func BenchmarkSign(b *testing.B) {
	k := mustSigner(b)
	req := testRequirements(USDCBase, 5000)
	p := signPayload(b, k, req, time.Unix(1_800_000_000, 0), nil)
	a, _ := ParseAuthorization(&p.Payload.Authorization)
	d := tokenDomain(USDCBase)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.SignTransferAuthorization(ctx, d, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is the full offline check without the nonce store:
// parsing, window, EIP-712 digest and ecrecover.
func BenchmarkVerify(b *testing.B) {
	k := mustSigner(b)
	now := time.Unix(1_800_000_000, 0)
	req := testRequirements(USDCBase, 5000)
	p := signPayload(b, k, req, now, nil)
	v := NewVerifier(nil, func() time.Time { return now })
	v.Nonces = nil
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, p, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyNonceStore adds the in-memory nonce claim (and its release,
// so the one payload can be verified again).
func BenchmarkVerifyNonceStore(b *testing.B) {
	k := mustSigner(b)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	req := testRequirements(USDCBase, 5000)
	p := signPayload(b, k, req, now, nil)
	store := NewMemoryNonceStore(clock, 0)
	v := NewVerifier(store, clock)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		got, err := v.Verify(ctx, p, &req)
		if err != nil {
			b.Fatal(err)
		}
		_ = store.Release(ctx, got.NonceKey)
	}
}

// BenchmarkPay is the payer's work for one 402: parse the PAYMENT-REQUIRED
// header, choose, reserve, sign, encode the PAYMENT-SIGNATURE header.
func BenchmarkPay(b *testing.B) {
	k := mustSigner(b)
	pol := DefaultPolicy()
	pol.SpendCap = 1 << 62
	p, err := NewPayer(k, pol)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := EncodeHeader(&PaymentRequired{X402Version: 2, Resource: &ResourceInfo{URL: "https://blockrun.test/v1/chat/completions"},
		Accepts: []PaymentRequirements{testRequirements(USDCBase, 5000)}})
	ch := Challenge{Status: 402, Header: func(name string) string {
		if name == HeaderPaymentRequired {
			return enc
		}
		return ""
	}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		pm, err := p.Pay(ctx, ch)
		if err != nil {
			b.Fatal(err)
		}
		pm.Abandon()
	}
}

func BenchmarkDecodePaymentPayload(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodePaymentPayload(HeaderPaymentSignature, specV2PaymentSignature); err != nil {
			b.Fatal(err)
		}
	}
}
