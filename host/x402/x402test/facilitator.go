package x402test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/x402"
)

// Facilitator is a local x402 facilitator (POST /verify, POST /settle,
// GET /supported, x402-specification-v2.md section 7) for the gateway's
// accepting side. It is a test stand-in for the network, as
// host/fakeupstream stands in for providers: it verifies exactly as the
// spec's facilitator does for the exact EVM scheme (x402.Verifier:
// ecrecover over the EIP-712 digest, amount, payTo, network and token,
// validity window, nonce), and "settles" by moving the amount between the
// balances it keeps in memory instead of submitting transferWithAuthorization
// to a chain. A nonce it settled is refused afterwards, as the token
// contract's authorizationState would.
//
// It listens on 127.0.0.1 only.
type Facilitator struct {
	*httptest.Server

	// Address is the facilitator's address, announced in /supported for
	// upto (the witness binds it).
	Address common.Address

	verifier *x402.Verifier

	mu       sync.Mutex
	settled  []x402.SettlementResponse
	balances map[string]*big.Int // lower-case address -> atomic units; nil map: unlimited
	down     int                 // answer this many /settle calls with 503
	lose     int                 // settle this many /settle calls, then answer 503
}

// NewFacilitator starts a facilitator. Its verifier keeps nonces in
// memory; pass a clock for tests that move time (nil: time.Now).
func NewFacilitator(v *x402.Verifier) *Facilitator {
	if v == nil {
		v = x402.NewVerifier(nil, nil)
	}
	f := &Facilitator{verifier: v, Address: common.HexToAddress("0xFAC11174700000000000000000000000000fac11")}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /verify", f.handle(false))
	mux.HandleFunc("POST /settle", f.handle(true))
	mux.HandleFunc("GET /supported", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, x402.Supported{Kinds: []x402.SupportedKind{
			{X402Version: 2, Scheme: x402.SchemeExact, Network: x402.NetworkBase},
			{X402Version: 2, Scheme: x402.SchemeExact, Network: x402.NetworkBaseSepolia},
			{X402Version: 1, Scheme: x402.SchemeExact, Network: "base"},
			{X402Version: 1, Scheme: x402.SchemeExact, Network: "base-sepolia"},
			{X402Version: 2, Scheme: x402.SchemeUpto, Network: x402.NetworkBase,
				Extra: json.RawMessage(`{"facilitatorAddress":"` + f.Address.Hex() + `"}`)},
		}})
	})
	f.Server = httptest.NewServer(mux)
	return f
}

// SetBalance gives addr a USDC balance (atomic units); once any balance is
// set, a payer without enough is refused with insufficient_funds.
func (f *Facilitator) SetBalance(addr string, amount int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.balances == nil {
		f.balances = map[string]*big.Int{}
	}
	f.balances[lower(addr)] = big.NewInt(amount)
}

// Balance returns addr's balance (nil when balances are not tracked).
func (f *Facilitator) Balance(addr string) *big.Int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.balances[lower(addr)]; b != nil {
		return new(big.Int).Set(b)
	}
	return nil
}

// Down makes the next n /settle calls fail with 503, as an unreachable
// chain would.
func (f *Facilitator) Down(n int) {
	f.mu.Lock()
	f.down = n
	f.mu.Unlock()
}

// LoseAnswers makes the next n /settle calls settle and then answer 503,
// as a settlement whose answer was lost on the way back.
func (f *Facilitator) LoseAnswers(n int) {
	f.mu.Lock()
	f.lose = n
	f.mu.Unlock()
}

// Settlements returns the settlements made, in order.
func (f *Facilitator) Settlements() []x402.SettlementResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]x402.SettlementResponse(nil), f.settled...)
}

func (f *Facilitator) handle(settle bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req x402.FacilitatorRequest
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err == nil {
			err = json.Unmarshal(b, &req)
		}
		if err != nil || req.PaymentPayload == nil || req.PaymentRequirements == nil {
			if settle {
				writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonInvalidPayload})
			} else {
				writeJSON(w, 400, x402.VerifyResponse{InvalidReason: x402.ReasonInvalidPayload})
			}
			return
		}
		network := req.PaymentRequirements.Network
		if settle {
			f.mu.Lock()
			if f.down > 0 {
				f.down--
				f.mu.Unlock()
				http.Error(w, "chain unavailable", http.StatusServiceUnavailable)
				return
			}
			f.mu.Unlock()
		}
		if req.PaymentRequirements.Scheme == x402.SchemeUpto {
			f.upto(w, &req, settle)
			return
		}
		// Verified without claiming the nonce: /verify never does, and
		// /settle does only once the transfer can happen (a transfer that
		// fails for want of funds leaves the authorization unused, as a
		// reverted transaction would).
		v := *f.verifier
		v.Nonces = nil
		ok, err := v.Verify(context.Background(), req.PaymentPayload, req.PaymentRequirements)
		if err != nil {
			var ve *x402.VerifyError
			payer := ""
			if errors.As(err, &ve) {
				payer = ve.Payer
			}
			if settle {
				writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonOf(err), Payer: payer, Network: network})
			} else {
				writeJSON(w, 200, x402.VerifyResponse{InvalidReason: x402.ReasonOf(err), Payer: payer})
			}
			return
		}
		payer := ok.Payer.Hex()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.balances != nil {
			bal := f.balances[lower(payer)]
			if bal == nil || bal.Cmp(ok.Amount) < 0 {
				if settle {
					writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonInsufficientFunds, Payer: payer, Network: network})
				} else {
					writeJSON(w, 200, x402.VerifyResponse{InvalidReason: x402.ReasonInsufficientFunds, Payer: payer})
				}
				return
			}
		}
		if !settle {
			writeJSON(w, 200, x402.VerifyResponse{IsValid: true, Payer: payer})
			return
		}
		if !f.claim(ok.NonceKey, ok.Authorization.ValidBefore) {
			writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonNonceUsed, Payer: payer, Network: network})
			return
		}
		if f.balances != nil {
			f.balances[lower(payer)].Sub(f.balances[lower(payer)], ok.Amount)
			to := lower(ok.Authorization.To.Hex())
			if f.balances[to] == nil {
				f.balances[to] = new(big.Int)
			}
			f.balances[to].Add(f.balances[to], ok.Amount)
		}
		tx := crypto.Keccak256(ok.NonceKey.Nonce[:], ok.Payer[:])
		res := x402.SettlementResponse{Success: true, Payer: payer, Transaction: "0x" + hex.EncodeToString(tx), Network: network}
		f.settled = append(f.settled, res)
		if f.lose > 0 {
			f.lose--
			http.Error(w, "answer lost", http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, 200, res)
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// upto verifies an upto payment against its maximum and, to settle,
// charges the settlement-time requirements' amount: at most the maximum,
// and 0 settles nothing on chain (specs/schemes/upto/scheme_upto_evm.md).
func (f *Facilitator) upto(w http.ResponseWriter, req *x402.FacilitatorRequest, settle bool) {
	network := req.PaymentRequirements.Network
	pa := req.PaymentPayload.Payload.Permit2Authorization
	fail := func(reason, payer string) {
		if settle {
			writeJSON(w, 400, x402.SettlementResponse{ErrorReason: reason, Payer: payer, Network: network})
		} else {
			writeJSON(w, 200, x402.VerifyResponse{InvalidReason: reason, Payer: payer})
		}
	}
	if pa == nil {
		fail(x402.ReasonInvalidPayload, "")
		return
	}
	actual, ok1 := new(big.Int).SetString(req.PaymentRequirements.Amount, 10)
	maxAmt, ok2 := new(big.Int).SetString(pa.Permitted.Amount, 10)
	if !ok1 || !ok2 {
		fail(x402.ReasonInvalidPayload, pa.From)
		return
	}
	if actual.Cmp(maxAmt) > 0 {
		fail(x402.ReasonUptoSettlementExceeds, pa.From)
		return
	}
	// Verified against the maximum, the amount the client signed.
	atMax := *req.PaymentRequirements
	atMax.Amount = maxAmt.String()
	v := *f.verifier
	v.Nonces = nil // claimed below, once the transfer can happen
	ok, err := v.VerifyUpto(context.Background(), req.PaymentPayload, &atMax)
	if err != nil {
		fail(x402.ReasonOf(err), pa.From)
		return
	}
	payer := ok.Payer.Hex()
	if !settle {
		writeJSON(w, 200, x402.VerifyResponse{IsValid: true, Payer: payer})
		return
	}
	if actual.Sign() == 0 {
		writeJSON(w, 200, x402.SettlementResponse{Success: true, Payer: payer, Network: network, Amount: "0"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.balances != nil {
		bal := f.balances[lower(payer)]
		if bal == nil || bal.Cmp(actual) < 0 {
			writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonInsufficientFunds, Payer: payer, Network: network})
			return
		}
		if !f.claim(ok.NonceKey, nil) {
			writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonUptoNonceUsed, Payer: payer, Network: network})
			return
		}
		bal.Sub(bal, actual)
		to := lower(pa.Witness.To)
		if f.balances[to] == nil {
			f.balances[to] = new(big.Int)
		}
		f.balances[to].Add(f.balances[to], actual)
	}
	if f.balances == nil && !f.claim(ok.NonceKey, nil) {
		writeJSON(w, 400, x402.SettlementResponse{ErrorReason: x402.ReasonUptoNonceUsed, Payer: payer, Network: network})
		return
	}
	tx := crypto.Keccak256(ok.NonceKey.Nonce[:], ok.Payer[:], []byte("upto"))
	res := x402.SettlementResponse{Success: true, Payer: payer, Transaction: "0x" + hex.EncodeToString(tx), Network: network, Amount: actual.String()}
	f.settled = append(f.settled, res)
	writeJSON(w, 200, res)
}

// claim marks an authorization's nonce used, as the token (or Permit2)
// does when a transfer goes through; false when it already was. Called
// with f.mu held or not: it has its own store.
func (f *Facilitator) claim(k x402.NonceKey, validBefore *big.Int) bool {
	exp := time.Now().Add(time.Hour)
	if validBefore != nil {
		exp = time.Unix(validBefore.Int64(), 0)
	}
	if f.verifier.Nonces == nil {
		return true
	}
	return f.verifier.Nonces.Use(context.Background(), k, exp) == nil
}
