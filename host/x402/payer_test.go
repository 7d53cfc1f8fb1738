package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func testPolicy() Policy {
	return Policy{
		MaxPerRequest: 100_000,
		SpendCap:      250_000,
		SpendWindow:   time.Hour,
		Tokens:        []Token{USDCBase},
		MaxValidity:   2 * time.Minute,
	}
}

func newTestPayer(t *testing.T, pol Policy, clock *fixedClock, opts ...PayerOption) (*Payer, *countingSigner) {
	t.Helper()
	cs := &countingSigner{Signer: mustSigner(t)}
	p, err := NewPayer(cs, pol, append([]PayerOption{WithClock(clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p, cs
}

// challengeV2 is a 402 with a PAYMENT-REQUIRED header offering accepts.
func challengeV2(t *testing.T, accepts ...PaymentRequirements) Challenge {
	t.Helper()
	if accepts == nil {
		accepts = []PaymentRequirements{}
	}
	v, err := EncodeHeader(&PaymentRequired{X402Version: 2, Resource: &ResourceInfo{URL: "https://blockrun.test/v1/chat/completions"}, Accepts: accepts})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderPaymentRequired, v)
	return Challenge{Status: 402, Header: h.Get, Body: []byte("{}")}
}

func TestPayV2AndVerify(t *testing.T) {
	clock := newClock(1_800_000_000)
	p, cs := newTestPayer(t, testPolicy(), clock)
	req := testRequirements(USDCBase, 12_345)
	pm, err := p.Pay(t.Context(), challengeV2(t, req))
	if err != nil {
		t.Fatal(err)
	}
	if pm.Header != HeaderPaymentSignature || pm.Amount != 12_345 || pm.Version != 2 || cs.n.Load() != 1 {
		t.Fatalf("payment %+v", pm)
	}
	payload, err := DecodePaymentPayload(pm.Header, pm.Value)
	if err != nil {
		t.Fatal(err)
	}
	// The v2 payload echoes the offer and the resource.
	if payload.Resource == nil || payload.Resource.URL != "https://blockrun.test/v1/chat/completions" ||
		payload.Accepted.Amount != "12345" || string(payload.Accepted.Extra) != string(req.Extra) {
		t.Fatalf("payload %+v", payload)
	}
	got, err := NewVerifier(nil, clock.Now).Verify(t.Context(), payload, &req)
	if err != nil {
		t.Fatalf("our own payment does not verify: %v", err)
	}
	if got.Payer != p.Address() {
		t.Fatalf("payer %s, want %s", got.Payer.Hex(), p.Address().Hex())
	}
	// The window: backdated validAfter, validBefore = now + maxTimeoutSeconds.
	a := got.Authorization
	if a.ValidBefore.Int64() != clock.Now().Unix()+60 || a.ValidAfter.Int64() >= clock.Now().Unix() {
		t.Fatalf("window %s..%s at %d", a.ValidAfter, a.ValidBefore, clock.Now().Unix())
	}
}

// TestPayEchoesOfferVerbatim: a v2 "accepted" is the offer's own bytes, so
// fields this package does not model reach a server comparing by deep
// equality.
func TestPayEchoesOfferVerbatim(t *testing.T) {
	clock := newClock(1_800_000_000)
	p, _ := newTestPayer(t, testPolicy(), clock)
	offer := `{"scheme":"exact","network":"eip155:8453","amount":"7","asset":"` + USDCBase.Address.Hex() +
		`","payTo":"` + testPayTo.Hex() + `","maxTimeoutSeconds":30,"extra":{"name":"USD Coin","version":"2","feeBps":5},"futureField":{"a":[1,2]}}`
	enc := base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"accepts":[` + offer + `]}`))
	h := http.Header{}
	h.Set(HeaderPaymentRequired, enc)
	pm, err := p.Pay(t.Context(), Challenge{Status: 402, Header: h.Get})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(pm.Value)
	if !strings.Contains(string(raw), `"accepted":`+offer) {
		t.Fatalf("accepted not echoed verbatim:\n%s", raw)
	}
	payload, err := DecodePaymentPayload(pm.Header, pm.Value)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewVerifier(nil, clock.Now).Verify(t.Context(), payload, &pm.Requirements); err != nil {
		t.Fatal(err)
	}
}

func TestPayV1Body(t *testing.T) {
	clock := newClock(1_800_000_000)
	pol := testPolicy()
	pol.Tokens = []Token{USDCBaseSepolia}
	p, _ := newTestPayer(t, pol, clock)
	pm, err := p.Pay(t.Context(), Challenge{Status: 402, Header: http.Header{}.Get, Body: []byte(specV1PaymentRequiredJS)})
	if err != nil {
		t.Fatal(err)
	}
	if pm.Header != HeaderXPayment || pm.Version != 1 || pm.Amount != 10000 {
		t.Fatalf("payment %+v", pm)
	}
	payload, err := DecodePaymentPayload(HeaderXPayment, pm.Value)
	if err != nil {
		t.Fatal(err)
	}
	if payload.Scheme != "exact" || payload.Network != "base-sepolia" || payload.Accepted != nil {
		t.Fatalf("v1 payload %+v", payload)
	}
	body, _ := ParsePaymentRequiredBody([]byte(specV1PaymentRequiredJS))
	if _, err := NewVerifier(nil, clock.Now).Verify(t.Context(), payload, &body.Accepts[0]); err != nil {
		t.Fatalf("v1 payment does not verify: %v", err)
	}
}

func TestPayChoosesCheapestAcceptable(t *testing.T) {
	clock := newClock(1_800_000_000)
	pol := testPolicy()
	pol.Tokens = []Token{USDCBase, USDCBaseSepolia}
	p, _ := newTestPayer(t, pol, clock)
	solana := PaymentRequirements{Scheme: "exact", Network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", Amount: "1",
		Asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", PayTo: "x", MaxTimeoutSeconds: 60}
	upto := testRequirements(USDCBase, 2)
	upto.Scheme = "upto"
	other := testRequirements(Token{Network: NetworkBase, Address: common.HexToAddress("0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb"), Name: "Dai", Version: "1"}, 3)
	tooDear := testRequirements(USDCBase, 100_001)
	ok1 := testRequirements(USDCBase, 9000)
	ok2 := testRequirements(USDCBaseSepolia, 8000)
	pm, err := p.Pay(t.Context(), challengeV2(t, solana, upto, other, tooDear, ok1, ok2))
	if err != nil {
		t.Fatal(err)
	}
	if pm.Amount != 8000 || pm.Requirements.Network != NetworkBaseSepolia {
		t.Fatalf("chose %+v", pm.Requirements)
	}
}

func TestPayRefusesWithoutSigning(t *testing.T) {
	clock := newClock(1_800_000_000)
	cases := []struct {
		name   string
		offers []PaymentRequirements
		is     []error
		msg    string
	}{
		{"over the price ceiling", []PaymentRequirements{testRequirements(USDCBase, 100_001)},
			[]error{ErrNoAcceptableOffer, ErrOverPriceCeiling}, "100001 > 100000"},
		{"network not allowed", []PaymentRequirements{testRequirements(USDCBaseSepolia, 10)},
			[]error{ErrNoAcceptableOffer}, "is not allowed"},
		{"asset not allowed", []PaymentRequirements{testRequirements(Token{Network: NetworkBase, Address: common.HexToAddress("0x01"), Name: "X", Version: "1"}, 10)},
			[]error{ErrNoAcceptableOffer}, "is not allowed"},
		{"domain name mismatch", []PaymentRequirements{testRequirements(Token{Network: NetworkBase, Address: USDCBase.Address, Name: "USDC", Version: "2"}, 10)},
			[]error{ErrNoAcceptableOffer}, "EIP-712 domain"},
		{"zero payTo", func() []PaymentRequirements {
			r := testRequirements(USDCBase, 10)
			r.PayTo = common.Address{}.Hex()
			return []PaymentRequirements{r}
		}(), []error{ErrNoAcceptableOffer}, "zero address"},
		{"uint256 price", func() []PaymentRequirements {
			r := testRequirements(USDCBase, 10)
			r.Amount = "0x" + strings.Repeat("f", 64)
			return []PaymentRequirements{r}
		}(), []error{ErrOverPriceCeiling}, ""},
		{"no offers", nil, []error{ErrNoAcceptableOffer}, "no offers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, cs := newTestPayer(t, testPolicy(), clock)
			_, err := p.Pay(t.Context(), challengeV2(t, c.offers...))
			for _, want := range c.is {
				if !errors.Is(err, want) {
					t.Errorf("error %v is not %v", err, want)
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v does not say %q", err, c.msg)
			}
			if cs.n.Load() != 0 {
				t.Errorf("signed %d times", cs.n.Load())
			}
			if st := p.Stats(); st.Refused != 1 || st.Signed != 0 || st.Exposure != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
	// Not a 402 at all.
	p, cs := newTestPayer(t, testPolicy(), clock)
	if _, err := p.Pay(t.Context(), Challenge{Status: 200}); !errors.Is(err, ErrNotPaymentRequired) || cs.n.Load() != 0 {
		t.Errorf("200: %v", err)
	}
	if _, err := p.Pay(t.Context(), Challenge{Status: 402, Body: []byte("Payment Required")}); !errors.Is(err, ErrMalformed) {
		t.Errorf("text 402: %v", err)
	}
}

func TestSpendCapWindow(t *testing.T) {
	clock := newClock(1_800_000_000)
	p, cs := newTestPayer(t, testPolicy(), clock) // 100k per request, 250k per hour
	ch := challengeV2(t, testRequirements(USDCBase, 100_000))
	for i := range 2 {
		if _, err := p.Pay(t.Context(), ch); err != nil {
			t.Fatalf("payment %d: %v", i, err)
		}
	}
	// 200k out, 100k more would pass the 250k cap: refused, unsigned.
	if _, err := p.Pay(t.Context(), ch); !errors.Is(err, ErrSpendCapExceeded) {
		t.Fatalf("third payment: %v", err)
	}
	if cs.n.Load() != 2 {
		t.Fatalf("signed %d, want 2", cs.n.Load())
	}
	// A smaller one still fits.
	small, err := p.Pay(t.Context(), challengeV2(t, testRequirements(USDCBase, 50_000)))
	if err != nil {
		t.Fatal(err)
	}
	// Abandoning it (never sent) frees its share.
	small.Abandon()
	if st := p.Stats(); st.Exposure != 200_000 || st.Abandoned != 1 {
		t.Fatalf("after abandon: %+v", st)
	}
	// The window slides: an hour later the cap is free again.
	clock.Advance(time.Hour + time.Second)
	if _, err := p.Pay(t.Context(), ch); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if st := p.Stats(); st.Exposure != 100_000 {
		t.Fatalf("exposure %d, want 100000", st.Exposure)
	}
}

// TestSpendCapConcurrent: concurrent payers never sign past the cap.
func TestSpendCapConcurrent(t *testing.T) {
	clock := newClock(1_800_000_000)
	pol := testPolicy()
	pol.MaxPerRequest, pol.SpendCap = 1000, 10_000
	p, cs := newTestPayer(t, pol, clock)
	ch := challengeV2(t, testRequirements(USDCBase, 1000))
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() { _, _ = p.Pay(t.Context(), ch) })
	}
	wg.Wait()
	if n := cs.n.Load(); n != 10 {
		t.Fatalf("signed %d payments of 1000 under a 10000 cap", n)
	}
	if st := p.Stats(); st.Signed != 10 || st.Refused != 30 {
		t.Fatalf("stats %+v", st)
	}
}

func TestValidityCappedByPolicy(t *testing.T) {
	clock := newClock(1_800_000_000)
	p, _ := newTestPayer(t, testPolicy(), clock) // MaxValidity 2m
	req := testRequirements(USDCBase, 10)
	req.MaxTimeoutSeconds = 86400
	pm, err := p.Pay(t.Context(), challengeV2(t, req))
	if err != nil {
		t.Fatal(err)
	}
	if want := clock.Now().Add(2 * time.Minute); !pm.ValidBefore.Equal(want) {
		t.Fatalf("validBefore %s, want %s", pm.ValidBefore, want)
	}
}

func settlementHeader(t *testing.T, name string, sr SettlementResponse) func(string) string {
	v, err := EncodeHeader(&sr)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(name, v)
	return h.Get
}

func TestCompleteOutcomes(t *testing.T) {
	clock := newClock(1_800_000_000)
	ok := SettlementResponse{Success: true, Transaction: "0x01", Network: NetworkBase}
	bad := SettlementResponse{Success: false, ErrorReason: ReasonInsufficientFunds, Network: NetworkBase}
	cases := []struct {
		name    string
		status  int
		header  func(string) string
		outcome Outcome
		paid    uint64
		lost    uint64
	}{
		{"2xx settled", 200, settlementHeader(t, HeaderPaymentResponse, ok), OutcomePaid, 5000, 0},
		{"2xx settled v1 header", 200, settlementHeader(t, HeaderXPaymentResponse, ok), OutcomePaid, 5000, 0},
		{"2xx unreported", 200, nil, OutcomePaid, 5000, 0},
		{"2xx settlement failed", 200, settlementHeader(t, HeaderPaymentResponse, bad), OutcomeUnsettled, 0, 0},
		{"402 settlement failed", 402, settlementHeader(t, HeaderPaymentResponse, bad), OutcomeFailed, 0, 0},
		{"402 refused", 402, nil, OutcomeFailed, 0, 0},
		{"500 honest", 500, nil, OutcomeFailed, 0, 0},
		{"500 but settled", 500, settlementHeader(t, HeaderPaymentResponse, ok), OutcomeFailed, 0, 5000},
		{"no response", 0, nil, OutcomeFailed, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hooked []Receipt
			p, _ := newTestPayer(t, testPolicy(), clock, WithReceiptHook(func(r Receipt) { hooked = append(hooked, r) }))
			pm, err := p.Pay(t.Context(), challengeV2(t, testRequirements(USDCBase, 5000)))
			if err != nil {
				t.Fatal(err)
			}
			r := pm.Complete(c.status, c.header)
			if r.Outcome != c.outcome {
				t.Fatalf("outcome %s, want %s", r.Outcome, c.outcome)
			}
			st := p.Stats()
			if st.PaidAmount != c.paid || st.LostAmount != c.lost {
				t.Fatalf("stats %+v", st)
			}
			// Whatever the outcome, the authorization left: it stays
			// counted against the cap.
			if st.Exposure != 5000 {
				t.Fatalf("exposure %d", st.Exposure)
			}
			if r.SettledOnFailure != (c.lost > 0) {
				t.Fatalf("SettledOnFailure %v", r.SettledOnFailure)
			}
			// Only the first report counts.
			if again := pm.Complete(200, nil); again.Outcome != c.outcome || len(hooked) != 1 {
				t.Fatalf("second Complete changed the receipt: %+v, hooks %d", again, len(hooked))
			}
			pm.Abandon()
			if p.Stats().Exposure != 5000 {
				t.Fatal("Abandon after Complete released the reservation")
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	if def := DefaultPolicy(); def.Validate() != nil {
		t.Fatalf("default policy: %v", def.Validate())
	}
	for name, mut := range map[string]func(*Policy){
		"zero max":         func(p *Policy) { p.MaxPerRequest = 0 },
		"zero cap":         func(p *Policy) { p.SpendCap = 0 },
		"zero window":      func(p *Policy) { p.SpendWindow = 0 },
		"max above cap":    func(p *Policy) { p.MaxPerRequest = p.SpendCap + 1 },
		"no tokens":        func(p *Policy) { p.Tokens = nil },
		"short validity":   func(p *Policy) { p.MaxValidity = time.Second },
		"bad network":      func(p *Policy) { p.Tokens = []Token{{Network: "solana:x", Address: common.HexToAddress("0x01")}} },
		"no token address": func(p *Policy) { p.Tokens = []Token{{Network: NetworkBase}} },
	} {
		pol := DefaultPolicy()
		mut(&pol)
		if err := pol.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := NewPayer(mustSigner(t), pol); err == nil {
			t.Errorf("%s: NewPayer accepted", name)
		}
	}
}

const testKeyHex = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

func TestKeySignerNeverShowsKey(t *testing.T) {
	k, err := NewKeySigner("0x" + testKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	want := crypto.PubkeyToAddress(crypto.ToECDSAUnsafe(common.FromHex(testKeyHex)).PublicKey)
	if k.Address() != want {
		t.Fatalf("address %s, want %s", k.Address().Hex(), want.Hex())
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%v %+v %#v %s %v %+v %#v", k, k, k, k, *k, *k, *k)
	j, _ := json.Marshal(k)
	buf.Write(j)
	j, _ = json.Marshal(struct{ S *KeySigner }{k})
	buf.Write(j)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("wallet", "signer", k)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("wallet", "signer", k)
	out := strings.ToLower(buf.String())
	// The whole key, and any 16-hex-digit piece of it, must be absent.
	for i := 0; i+16 <= len(testKeyHex); i += 8 {
		if strings.Contains(out, testKeyHex[i:i+16]) {
			t.Fatalf("key material printed: %s", out)
		}
	}
	if !strings.Contains(out, strings.ToLower(want.Hex())) {
		t.Fatalf("address not shown: %s", out)
	}
}

func TestLoadKeySigner(t *testing.T) {
	env := map[string]string{"BARDO_WALLET_KEY": testKeyHex + "\n", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	k, err := LoadKeySigner("env:BARDO_WALLET_KEY", getenv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := os.WriteFile(path, []byte("0x"+testKeyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKeySigner("file:"+path, getenv)
	if err != nil || k2.Address() != k.Address() {
		t.Fatalf("file: %v", err)
	}
	for ref, want := range map[string]error{
		"env:UNSET":                         ErrNoKey,
		"env:EMPTY":                         ErrNoKey,
		"file:" + filepath.Join(dir, "nop"): ErrNoKey,
	} {
		if _, err := LoadKeySigner(ref, getenv); !errors.Is(err, want) {
			t.Errorf("%s: %v", ref, err)
		}
	}
	// Literal keys and junk are refused without being echoed.
	for _, ref := range []string{testKeyHex, "env:1BAD", "file:", "0x" + testKeyHex} {
		_, err := LoadKeySigner(ref, getenv)
		if err == nil {
			t.Errorf("%q accepted", ref)
			continue
		}
		if strings.Contains(err.Error(), testKeyHex[:16]) {
			t.Errorf("error repeats the key: %v", err)
		}
	}
	for _, bad := range []string{"", "12", strings.Repeat("zz", 32), strings.Repeat("00", 32), strings.Repeat("ff", 32)} {
		_, err := NewKeySigner(bad)
		if err == nil {
			t.Errorf("NewKeySigner(%q) accepted", bad)
		} else if bad != "" && len(bad) > 4 && strings.Contains(err.Error(), bad[:8]) {
			t.Errorf("error repeats input: %v", err)
		}
	}
}
