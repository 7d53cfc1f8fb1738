package x402

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Header values copied from the examples of the x402 specification
// (coinbase/x402 specs/transports-v2/http.md and specs/transports-v1/http.md).
// Their signature is a real one by 0x857b06519E91e3A54538791bDbb0E22373e36b66
// over Base Sepolia USDC (name "USDC", version "2").
const (
	specV2PaymentRequired   = "eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQQVlNRU5ULVNJR05BVFVSRSBoZWFkZXIgaXMgcmVxdWlyZWQiLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS9wcmVtaXVtLWRhdGEiLCJkZXNjcmlwdGlvbiI6IkFjY2VzcyB0byBwcmVtaXVtIG1hcmtldCBkYXRhIiwibWltZVR5cGUiOiJhcHBsaWNhdGlvbi9qc29uIn0sImFjY2VwdHMiOlt7InNjaGVtZSI6ImV4YWN0IiwibmV0d29yayI6ImVpcDE1NTo4NDUzMiIsImFtb3VudCI6IjEwMDAwIiwiYXNzZXQiOiIweDAzNkNiRDUzODQyYzU0MjY2MzRlNzkyOTU0MWVDMjMxOGYzZENGN2UiLCJwYXlUbyI6IjB4MjA5NjkzQmM2YWZjMEM1MzI4YkEzNkZhRjAzQzUxNEVGMzEyMjg3QyIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsibmFtZSI6IlVTREMiLCJ2ZXJzaW9uIjoiMiJ9fV19"
	specV2PaymentSignature  = "eyJ4NDAyVmVyc2lvbiI6MiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vcHJlbWl1bS1kYXRhIiwiZGVzY3JpcHRpb24iOiJBY2Nlc3MgdG8gcHJlbWl1bSBtYXJrZXQgZGF0YSIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRlZCI6eyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJlaXAxNTU6ODQ1MzIiLCJhbW91bnQiOiIxMDAwMCIsImFzc2V0IjoiMHgwMzZDYkQ1Mzg0MmM1NDI2NjM0ZTc5Mjk1NDFlQzIzMThmM2RDRjdlIiwicGF5VG8iOiIweDIwOTY5M0JjNmFmYzBDNTMyOGJBMzZGYUYwM0M1MTRFRjMxMjI4N0MiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7Im5hbWUiOiJVU0RDIiwidmVyc2lvbiI6IjIifX0sInBheWxvYWQiOnsic2lnbmF0dXJlIjoiMHgyZDZhNzU4OGQ2YWNjYTUwNWNiZjBkOWE0YTIyN2UwYzUyYzZjMzQwMDhjOGU4OTg2YTEyODMyNTk3NjQxNzM2MDhhMmNlNjQ5NjY0MmUzNzdkNmRhOGRiYmY1ODM2ZTliZDE1MDkyZjllY2FiMDVkZWQzZDYyOTNhZjE0OGI1NzFjIiwiYXV0aG9yaXphdGlvbiI6eyJmcm9tIjoiMHg4NTdiMDY1MTlFOTFlM0E1NDUzODc5MWJEYmIwRTIyMzczZTM2YjY2IiwidG8iOiIweDIwOTY5M0JjNmFmYzBDNTMyOGJBMzZGYUYwM0M1MTRFRjMxMjI4N0MiLCJ2YWx1ZSI6IjEwMDAwIiwidmFsaWRBZnRlciI6IjE3NDA2NzIwODkiLCJ2YWxpZEJlZm9yZSI6IjE3NDA2NzIxNTQiLCJub25jZSI6IjB4ZjM3NDY2MTNjMmQ5MjBiNWZkYWJjMDg1NmYyYWViMmQ0Zjg4ZWU2MDM3YjhjYzVkMDRhNzFhNDQ2MmYxMzQ4MCJ9fX0="
	specV2ResponseOK        = "eyJzdWNjZXNzIjp0cnVlLCJ0cmFuc2FjdGlvbiI6IjB4MTIzNDU2Nzg5MGFiY2RlZjEyMzQ1Njc4OTBhYmNkZWYxMjM0NTY3ODkwYWJjZGVmMTIzNDU2Nzg5MGFiY2RlZiIsIm5ldHdvcmsiOiJlaXAxNTU6ODQ1MzIiLCJwYXllciI6IjB4ODU3YjA2NTE5RTkxZTNBNTQ1Mzg3OTFiRGJiMEUyMjM3M2UzNmI2NiJ9"
	specV2ResponseFail      = "eyJzdWNjZXNzIjpmYWxzZSwiZXJyb3JSZWFzb24iOiJpbnN1ZmZpY2llbnRfZnVuZHMiLCJuZXR3b3JrIjoiZWlwMTU1Ojg0NTMyIn0="
	specV1XPayment          = "eyJ4NDAyVmVyc2lvbiI6MSwic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoiYmFzZS1zZXBvbGlhIiwicGF5bG9hZCI6eyJzaWduYXR1cmUiOiIweDJkNmE3NTg4ZDZhY2NhNTA1Y2JmMGQ5YTRhMjI3ZTBjNTJjNmMzNDAwOGM4ZTg5ODZhMTI4MzI1OTc2NDE3MzYwOGEyY2U2NDk2NjQyZTM3N2Q2ZGE4ZGJiZjU4MzZlOWJkMTUwOTJmOWVjYWIwNWRlZDNkNjI5M2FmMTQ4YjU3MWMiLCJhdXRob3JpemF0aW9uIjp7ImZyb20iOiIweDg1N2IwNjUxOUU5MWUzQTU0NTM4NzkxYkRiYjBFMjIzNzNlMzZiNjYiLCJ0byI6IjB4MjA5NjkzQmM2YWZjMEM1MzI4YkEzNkZhRjAzQzUxNEVGMzEyMjg3QyIsInZhbHVlIjoiMTAwMDAiLCJ2YWxpZEFmdGVyIjoiMTc0MDY3MjA4OSIsInZhbGlkQmVmb3JlIjoiMTc0MDY3MjE1NCIsIm5vbmNlIjoiMHhmMzc0NjYxM2MyZDkyMGI1ZmRhYmMwODU2ZjJhZWIyZDRmODhlZTYwMzdiOGNjNWQwNGE3MWE0NDYyZjEzNDgwIn19fQ=="
	specV1XPaymentResponse  = "eyJzdWNjZXNzIjp0cnVlLCJ0cmFuc2FjdGlvbiI6IjB4MTIzNDU2Nzg5MGFiY2RlZjEyMzQ1Njc4OTBhYmNkZWYxMjM0NTY3ODkwYWJjZGVmMTIzNDU2Nzg5MGFiY2RlZiIsIm5ldHdvcmsiOiJiYXNlLXNlcG9saWEiLCJwYXllciI6IjB4ODU3YjA2NTE5RTkxZTNBNTQ1Mzg3OTFiRGJiMEUyMjM3M2UzNmI2NiJ9"
	specExampleNow          = 1740672100 // inside the example's validity window
	specV1PaymentRequiredJS = `{
  "x402Version": 1,
  "error": "X-PAYMENT header is required",
  "accepts": [
    {
      "scheme": "exact",
      "network": "base-sepolia",
      "maxAmountRequired": "10000",
      "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      "payTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      "resource": "https://api.example.com/premium-data",
      "description": "Access to premium market data",
      "mimeType": "application/json",
      "outputSchema": null,
      "maxTimeoutSeconds": 60,
      "extra": {
        "name": "USDC",
        "version": "2"
      }
    }
  ]
}`
)

// fixedClock is a settable clock for tests.
type fixedClock struct{ t atomic.Int64 }

func newClock(unix int64) *fixedClock {
	c := &fixedClock{}
	c.t.Store(unix)
	return c
}

func (c *fixedClock) Now() time.Time          { return time.Unix(c.t.Load(), 0) }
func (c *fixedClock) Advance(d time.Duration) { c.t.Add(int64(d / time.Second)) }

var testPayTo = common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C")

// testRequirements is a v2 offer for amount atomic units of tok.
func testRequirements(tok Token, amount uint64) PaymentRequirements {
	extra, _ := json.Marshal(ExactExtra{Name: tok.Name, Version: tok.Version})
	return PaymentRequirements{
		Scheme: SchemeExact, Network: tok.Network, Amount: new(big.Int).SetUint64(amount).String(),
		Asset: tok.Address.Hex(), PayTo: testPayTo.Hex(), MaxTimeoutSeconds: 60, Extra: extra,
	}
}

// signPayload builds a v2 payload paying req with k at time now; mutate may
// alter the authorization before it is signed.
func signPayload(t testing.TB, k Signer, req PaymentRequirements, now time.Time, mutate func(*TransferAuthorization, *Domain)) *PaymentPayload {
	t.Helper()
	price, err := req.Price()
	if err != nil {
		t.Fatal(err)
	}
	extra, err := req.ExactExtra()
	if err != nil {
		t.Fatal(err)
	}
	chain, _ := ChainID(req.Network)
	a := &TransferAuthorization{
		From: k.Address(), To: common.HexToAddress(req.PayTo), Value: price,
		ValidAfter: big.NewInt(now.Add(-time.Minute).Unix()), ValidBefore: big.NewInt(now.Add(time.Duration(req.MaxTimeoutSeconds) * time.Second).Unix()),
	}
	if _, err := rand.Read(a.Nonce[:]); err != nil {
		t.Fatal(err)
	}
	d := Domain{Name: extra.Name, Version: extra.Version, ChainID: chain, VerifyingContract: common.HexToAddress(req.Asset)}
	if mutate != nil {
		mutate(a, &d)
	}
	sig, err := k.SignTransferAuthorization(context.Background(), d, a)
	if err != nil {
		t.Fatal(err)
	}
	accepted := req
	return &PaymentPayload{
		X402Version: Version2, Accepted: &accepted,
		Payload: ExactEVMPayload{Signature: "0x" + common.Bytes2Hex(sig), Authorization: a.Wire()},
	}
}

func mustSigner(t testing.TB) *KeySigner {
	t.Helper()
	k, err := GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// countingSigner counts signatures, to prove refusals sign nothing.
type countingSigner struct {
	Signer
	n atomic.Int64
}

func (c *countingSigner) SignTransferAuthorization(ctx context.Context, d Domain, a *TransferAuthorization) ([]byte, error) {
	c.n.Add(1)
	return c.Signer.SignTransferAuthorization(ctx, d, a)
}
