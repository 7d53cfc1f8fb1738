package x402

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeSpecExamples(t *testing.T) {
	pr, err := DecodePaymentRequired(specV2PaymentRequired)
	if err != nil {
		t.Fatal(err)
	}
	if pr.X402Version != 2 || pr.Resource == nil || pr.Resource.URL != "https://api.example.com/premium-data" ||
		len(pr.Accepts) != 1 || pr.Accepts[0].Amount != "10000" || pr.Accepts[0].Network != "eip155:84532" ||
		pr.Error != "PAYMENT-SIGNATURE header is required" {
		t.Fatalf("PAYMENT-REQUIRED decoded to %+v", pr)
	}
	if e, err := pr.Accepts[0].ExactExtra(); err != nil || e != (ExactExtra{"USDC", "2"}) {
		t.Fatalf("extra %+v, %v", e, err)
	}

	p, err := DecodePaymentPayload(HeaderPaymentSignature, specV2PaymentSignature)
	if err != nil {
		t.Fatal(err)
	}
	if p.Accepted == nil || p.Payload.Authorization.Nonce != "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480" {
		t.Fatalf("PAYMENT-SIGNATURE decoded to %+v", p)
	}
	if s, n := p.SchemeAndNetwork(); s != "exact" || n != "eip155:84532" {
		t.Fatalf("scheme/network %q %q", s, n)
	}

	p1, err := DecodePaymentPayload(HeaderXPayment, specV1XPayment)
	if err != nil {
		t.Fatal(err)
	}
	if s, n := p1.SchemeAndNetwork(); s != "exact" || n != "base-sepolia" || p1.Payload != p.Payload {
		t.Fatalf("X-PAYMENT decoded to %+v", p1)
	}

	ok, err := DecodeSettlementResponse(specV2ResponseOK)
	if err != nil || !ok.Success || ok.Network != "eip155:84532" || !strings.HasPrefix(ok.Transaction, "0x1234") {
		t.Fatalf("PAYMENT-RESPONSE decoded to %+v, %v", ok, err)
	}
	fail, err := DecodeSettlementResponse(specV2ResponseFail)
	if err != nil || fail.Success || fail.ErrorReason != ReasonInsufficientFunds {
		t.Fatalf("failed PAYMENT-RESPONSE decoded to %+v, %v", fail, err)
	}
	if v1, err := DecodeSettlementResponse(specV1XPaymentResponse); err != nil || !v1.Success || v1.Network != "base-sepolia" {
		t.Fatalf("X-PAYMENT-RESPONSE decoded to %+v, %v", v1, err)
	}

	body, err := ParsePaymentRequiredBody([]byte(specV1PaymentRequiredJS))
	if err != nil {
		t.Fatal(err)
	}
	if body.X402Version != 1 || body.Accepts[0].MaxAmountRequired != "10000" || body.Accepts[0].Resource == "" {
		t.Fatalf("v1 body decoded to %+v", body)
	}
	if price, err := body.Accepts[0].Price(); err != nil || price.Int64() != 10000 {
		t.Fatalf("v1 price %v, %v", price, err)
	}
}

// TestVerifySpecExample verifies the specification's own payment against its
// own requirements, at a time inside its validity window.
func TestVerifySpecExample(t *testing.T) {
	pr, _ := DecodePaymentRequired(specV2PaymentRequired)
	p, _ := DecodePaymentPayload(HeaderPaymentSignature, specV2PaymentSignature)
	clock := newClock(specExampleNow)
	v := NewVerifier(nil, clock.Now)
	got, err := v.Verify(t.Context(), p, &pr.Accepts[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Payer.Hex() != "0x857b06519E91e3A54538791bDbb0E22373e36b66" || got.Amount.Int64() != 10000 {
		t.Fatalf("verified %+v", got)
	}
	// The same payment again is a replay.
	if _, err := v.Verify(t.Context(), p, &pr.Accepts[0]); ReasonOf(err) != ReasonNonceUsed {
		t.Fatalf("replay: %v", err)
	}

	// The v1 example against the v1 requirements.
	body, _ := ParsePaymentRequiredBody([]byte(specV1PaymentRequiredJS))
	p1, _ := DecodePaymentPayload(HeaderXPayment, specV1XPayment)
	if _, err := NewVerifier(nil, clock.Now).Verify(t.Context(), p1, &body.Accepts[0]); err != nil {
		t.Fatalf("v1 example: %v", err)
	}
}

func TestHeaderRoundTrips(t *testing.T) {
	k := mustSigner(t)
	now := newClock(1_800_000_000).Now()
	req := testRequirements(USDCBase, 12345)
	pr2 := &PaymentRequired{X402Version: 2, Error: "PAYMENT-SIGNATURE header is required",
		Resource: &ResourceInfo{URL: "https://x/v1/chat/completions", MimeType: "application/json"},
		Accepts:  []PaymentRequirements{req}}
	enc, err := EncodeHeader(pr2)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodePaymentRequired(enc)
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.rawAccepts) != 1 {
		t.Fatalf("raw offers kept: %d", len(dec.rawAccepts))
	}
	dec.rawAccepts = nil
	if !reflect.DeepEqual(dec, pr2) {
		t.Fatalf("v2 PaymentRequired round trip:\n got %+v\nwant %+v", dec, pr2)
	}

	p2 := signPayload(t, k, req, now, nil)
	p2.Resource = pr2.Resource
	enc, _ = EncodeHeader(p2)
	got2, err := DecodePaymentPayload(HeaderPaymentSignature, enc)
	if err != nil || !reflect.DeepEqual(got2, p2) {
		t.Fatalf("v2 payload round trip: %v\n got %+v\nwant %+v", err, got2, p2)
	}

	p1 := &PaymentPayload{X402Version: 1, Scheme: "exact", Network: "base", Payload: p2.Payload}
	enc, _ = EncodeHeader(p1)
	got1, err := DecodePaymentPayload(HeaderXPayment, enc)
	if err != nil || !reflect.DeepEqual(got1, p1) {
		t.Fatalf("v1 payload round trip: %v\n got %+v\nwant %+v", err, got1, p1)
	}
	// A v1 payload in the v2 header (and vice versa) is refused.
	if _, err := DecodePaymentPayload(HeaderPaymentSignature, enc); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("v1 payload in PAYMENT-SIGNATURE: %v", err)
	}

	sr := &SettlementResponse{Success: true, Transaction: "0xabc", Network: "eip155:8453", Payer: k.Address().Hex()}
	enc, _ = EncodeHeader(sr)
	gotSR, err := DecodeSettlementResponse(enc)
	if err != nil || *gotSR != *sr {
		t.Fatalf("settlement round trip: %v %+v", err, gotSR)
	}
	// "transaction" is required by the spec, so it is sent even when empty.
	enc, _ = EncodeHeader(&SettlementResponse{Network: "base"})
	raw, _ := base64.StdEncoding.DecodeString(enc)
	if !strings.Contains(string(raw), `"transaction":""`) {
		t.Fatalf("failed settlement encodes as %s", raw)
	}
}

func TestHeaderBase64Variants(t *testing.T) {
	raw, _ := base64.StdEncoding.DecodeString(specV2ResponseFail)
	for name, enc := range map[string]string{
		"std":     base64.StdEncoding.EncodeToString(raw),
		"raw-std": base64.RawStdEncoding.EncodeToString(raw),
		"url":     base64.URLEncoding.EncodeToString(raw),
		"raw-url": base64.RawURLEncoding.EncodeToString(raw),
		"spaces":  "  " + base64.StdEncoding.EncodeToString(raw) + " ",
	} {
		if _, err := DecodeSettlementResponse(enc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHeaderErrors(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name string
		run  func() error
		want error
		msg  string
	}{
		{"empty", func() error { _, err := DecodePaymentRequired(""); return err }, ErrMalformed, "is empty"},
		{"not base64", func() error { _, err := DecodePaymentRequired("%%%"); return err }, ErrMalformed, "base64"},
		{"not json", func() error { _, err := DecodePaymentRequired(b64("hello")); return err }, ErrMalformed, "JSON"},
		{"trailing", func() error { _, err := DecodePaymentRequired(b64(`{"x402Version":2,"accepts":[]} {}`)); return err }, ErrMalformed, "trailing"},
		{"v1 in v2 header", func() error { _, err := DecodePaymentRequired(b64(`{"x402Version":1,"accepts":[]}`)); return err }, ErrUnsupportedVersion, "want 2"},
		{"no accepts", func() error { _, err := DecodePaymentRequired(b64(`{"x402Version":2}`)); return err }, ErrMalformed, "accepts"},
		{"huge", func() error { _, err := DecodePaymentRequired(strings.Repeat("A", MaxHeaderLen+1)); return err }, ErrMalformed, "more than"},
		{"payload missing fields", func() error {
			_, err := DecodePaymentPayload(HeaderXPayment, b64(`{"x402Version":1,"scheme":"exact","network":"base","payload":{"signature":"0x00"}}`))
			return err
		}, ErrMalformed, "authorization"},
		{"v2 payload without accepted", func() error {
			_, err := DecodePaymentPayload(HeaderPaymentSignature, b64(`{"x402Version":2,"payload":{}}`))
			return err
		}, ErrMalformed, "accepted"},
		{"settlement without success", func() error { _, err := DecodeSettlementResponse(b64(`{"transaction":""}`)); return err }, ErrMalformed, "success"},
		{"body wrong version", func() error { _, err := ParsePaymentRequiredBody([]byte(`{"x402Version":3,"accepts":[]}`)); return err }, ErrUnsupportedVersion, "3"},
		{"body not a challenge", func() error { _, err := ParsePaymentRequiredBody([]byte(`{"error":"nope"}`)); return err }, ErrNoChallenge, ""},
		{"empty body", func() error { _, err := ParsePaymentRequiredBody(nil); return err }, ErrNoChallenge, ""},
	}
	for _, c := range cases {
		err := c.run()
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %v containing %q", c.name, err, c.want, c.msg)
		}
	}
	if _, err := DecodePaymentPayload("Authorization", "x"); err == nil {
		t.Error("decoded a payload from a non-payment header")
	}
}

func TestParseUint256AndAddress(t *testing.T) {
	for s, want := range map[string]string{"0": "0", "10000": "10000", "0x2710": "10000", "0X2710": "10000", "0x0": "0", "007": "7"} {
		v, err := parseUint256(s)
		if err != nil || v.String() != want {
			t.Errorf("parseUint256(%q) = %v, %v", s, v, err)
		}
	}
	max := "0x" + strings.Repeat("f", 64)
	if _, err := parseUint256(max); err != nil {
		t.Errorf("max uint256: %v", err)
	}
	for _, s := range []string{"", "0x", "-1", "+1", " 1", "1.5", "1e6", "0x" + "1" + strings.Repeat("0", 64), "ff"} {
		if _, err := parseUint256(s); err == nil {
			t.Errorf("parseUint256(%q) accepted", s)
		}
	}
	good := []string{
		"0x209693Bc6afc0C5328bA36FaF03C514EF312287C", // checksummed
		"0x209693bc6afc0c5328ba36faf03c514ef312287c", // lower
		"0x209693BC6AFC0C5328BA36FAF03C514EF312287C", // upper
	}
	for _, s := range good {
		if _, err := ParseAddress(s); err != nil {
			t.Errorf("ParseAddress(%q): %v", s, err)
		}
	}
	for _, s := range []string{"0x209693Bc6afc0C5328bA36FaF03C514EF312287c", "209693Bc6afc0C5328bA36FaF03C514EF312287C", "0x1234", "0xzz9693bc6afc0c5328ba36faf03c514ef312287c"} {
		if _, err := ParseAddress(s); err == nil {
			t.Errorf("ParseAddress(%q) accepted", s)
		}
	}
}

func TestNetworks(t *testing.T) {
	for in, want := range map[string]uint64{"base": 8453, "eip155:8453": 8453, "base-sepolia": 84532, "eip155:84532": 84532, "eip155:1": 1} {
		if got, err := ChainID(in); err != nil || got != want {
			t.Errorf("ChainID(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "eip155:", "eip155:0", "eip155:08453", "eip155:x", "bass"} {
		if _, err := ChainID(bad); err == nil {
			t.Errorf("ChainID(%q) accepted", bad)
		}
	}
	if !SameNetwork("base", "eip155:8453") || SameNetwork("base", "base-sepolia") || SameNetwork("x", "x") {
		t.Error("SameNetwork")
	}
	if n, ok := V1Network(8453); !ok || n != "base" {
		t.Errorf("V1Network(8453) = %q", n)
	}
}
