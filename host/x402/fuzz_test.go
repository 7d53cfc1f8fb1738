package x402

import (
	"encoding/base64"
	"net/http"
	"testing"
	"time"
)

// The header decoders face whatever a peer sends. Each fuzz target checks
// that decoding never panics and that what decodes re-encodes stably
// (encode(decode(encode(x))) == encode(x)); the payload target also runs
// the Verifier on what decodes, and the payer target checks that nothing
// above the price ceiling is ever signed.

// headerInput lets the fuzzer work on the JSON (encoded here) as well as
// on the header text itself: mutating base64 rarely yields new JSON.
func headerInput(encode bool, data []byte) string {
	if encode {
		return base64.StdEncoding.EncodeToString(data)
	}
	return string(data)
}

func unb64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func FuzzDecodePaymentRequired(f *testing.F) {
	f.Add(false, []byte(specV2PaymentRequired))
	f.Add(true, unb64(specV2PaymentRequired))
	f.Add(true, []byte(`{"x402Version":2,"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1","extra":{"name":"a","version":"b"}}]}`))
	f.Add(false, []byte(""))
	f.Fuzz(func(t *testing.T, encode bool, data []byte) {
		pr, err := DecodePaymentRequired(headerInput(encode, data))
		if err != nil {
			return
		}
		enc1, err := EncodeHeader(pr)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		pr2, err := DecodePaymentRequired(enc1)
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", enc1, err)
		}
		if enc2, _ := EncodeHeader(pr2); enc2 != enc1 {
			t.Fatalf("unstable: %q then %q", enc1, enc2)
		}
		for i := range pr.Accepts {
			_, _ = pr.Accepts[i].Price()
			_, _ = pr.Accepts[i].ExactExtra()
		}
	})
}

func FuzzDecodePaymentPayload(f *testing.F) {
	f.Add(true, false, []byte(specV2PaymentSignature))
	f.Add(false, false, []byte(specV1XPayment))
	f.Add(true, true, unb64(specV2PaymentSignature))
	f.Add(false, true, unb64(specV1XPayment))
	f.Add(true, true, []byte(`{"x402Version":2,"accepted":{},"payload":{"signature":"0x","authorization":{"from":"1","to":"2","value":"3","validAfter":"4","validBefore":"5","nonce":"6"}}}`))
	pr, err := DecodePaymentRequired(specV2PaymentRequired)
	if err != nil {
		f.Fatal(err)
	}
	req := pr.Accepts[0]
	f.Fuzz(func(t *testing.T, v2, encode bool, data []byte) {
		header := HeaderXPayment
		if v2 {
			header = HeaderPaymentSignature
		}
		p, err := DecodePaymentPayload(header, headerInput(encode, data))
		if err != nil {
			return
		}
		enc1, err := EncodeHeader(p)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		p2, err := DecodePaymentPayload(header, enc1)
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if enc2, _ := EncodeHeader(p2); enc2 != enc1 {
			t.Fatalf("unstable: %q then %q", enc1, enc2)
		}
		v := NewVerifier(nil, func() time.Time { return time.Unix(specExampleNow, 0) })
		got, err := v.Verify(t.Context(), p, &req)
		if err == nil && got.Payer.Hex() != "0x857b06519E91e3A54538791bDbb0E22373e36b66" {
			// Only the spec's own signer holds a valid signature here.
			t.Fatalf("verified a payment by %s", got.Payer.Hex())
		}
		_, _ = MatchRequirements(p, pr.Accepts)
	})
}

func FuzzDecodeSettlementResponse(f *testing.F) {
	f.Add(false, []byte(specV2ResponseOK))
	f.Add(true, unb64(specV2ResponseFail))
	f.Add(true, unb64(specV1XPaymentResponse))
	f.Fuzz(func(t *testing.T, encode bool, data []byte) {
		sr, err := DecodeSettlementResponse(headerInput(encode, data))
		if err != nil {
			return
		}
		enc, _ := EncodeHeader(sr)
		sr2, err := DecodeSettlementResponse(enc)
		if err != nil || *sr2 != *sr {
			t.Fatalf("round trip: %v %+v %+v", err, sr, sr2)
		}
	})
}

func FuzzParsePaymentRequiredBody(f *testing.F) {
	f.Add([]byte(specV1PaymentRequiredJS))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"x402Version":1,"accepts":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pr, err := ParsePaymentRequiredBody(b)
		if err != nil {
			return
		}
		if pr.X402Version != Version1 && pr.X402Version != Version2 || pr.Accepts == nil {
			t.Fatalf("accepted %+v", pr)
		}
	})
}

// FuzzPayerChallenge feeds arbitrary 402s to a Payer: it must never panic,
// and whatever it signs must respect the policy.
func FuzzPayerChallenge(f *testing.F) {
	f.Add(specV2PaymentRequired, []byte("{}"))
	f.Add("", []byte(specV1PaymentRequiredJS))
	ok, _ := EncodeHeader(&PaymentRequired{X402Version: 2, Accepts: []PaymentRequirements{testRequirements(USDCBase, 77)}})
	f.Add(ok, []byte(nil))
	k, err := GenerateKeySigner()
	if err != nil {
		f.Fatal(err)
	}
	pol := Policy{MaxPerRequest: 1000, SpendCap: 1 << 40, SpendWindow: time.Hour,
		Tokens: []Token{USDCBase, USDCBaseSepolia}, MaxValidity: time.Minute}
	p, err := NewPayer(k, pol)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		h := http.Header{}
		if header != "" {
			h.Set(HeaderPaymentRequired, header)
		}
		pm, err := p.Pay(t.Context(), Challenge{Status: 402, Header: h.Get, Body: body})
		if err != nil {
			return
		}
		if pm.Amount > pol.MaxPerRequest || pm.Token.Address != USDCBase.Address && pm.Token.Address != USDCBaseSepolia.Address {
			t.Fatalf("signed outside the policy: %+v", pm)
		}
		payload, err := DecodePaymentPayload(pm.Header, pm.Value)
		if err != nil {
			t.Fatalf("our own payment does not decode: %v", err)
		}
		// A server asking for less validity than a verifier needs to settle
		// (MinValidity) gets what it asked for, and refuses it; skip those.
		if mt := pm.Requirements.MaxTimeoutSeconds; mt > 0 && mt < 10 {
			return
		}
		if _, err := NewVerifier(nil, nil).Verify(t.Context(), payload, &pm.Requirements); err != nil {
			t.Fatalf("our own payment does not verify: %v", err)
		}
		pm.Abandon()
	})
}
