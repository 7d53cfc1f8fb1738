package x402

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// Upto on chain: the payer's Permit2 allowance and balance are read at
// verification, and the x402UptoPermit2Proxy's settle is simulated there at
// the maximum and sent at settlement with the actual amount.

// Refusals of upto on chain. ReasonPermit2Allowance is the reference
// implementation's code for a payer who has not approved Permit2 (the
// scheme spec's PERMIT2_ALLOWANCE_REQUIRED); ReasonUptoTransactionFailed
// is a settlement whose simulation or transaction reverted for a reason
// no other code names.
const (
	ReasonPermit2Allowance      = "permit2_allowance_required"
	ReasonUptoTransactionFailed = "invalid_upto_evm_transaction_failed"
	// ReasonUptoProxyMissing: the chain has no x402UptoPermit2Proxy (the
	// reference implementation's code).
	ReasonUptoProxyMissing = "permit2_proxy_not_deployed"
)

// uptoProxyABI is x402UptoPermit2Proxy's settle and the errors it and
// Permit2 revert with.
var uptoProxyABI = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(`[
{"type":"function","name":"settle","stateMutability":"nonpayable","outputs":[],"inputs":[
 {"name":"permit","type":"tuple","components":[
  {"name":"permitted","type":"tuple","components":[{"name":"token","type":"address"},{"name":"amount","type":"uint256"}]},
  {"name":"nonce","type":"uint256"},{"name":"deadline","type":"uint256"}]},
 {"name":"amount","type":"uint256"},{"name":"owner","type":"address"},
 {"name":"witness","type":"tuple","components":[
  {"name":"to","type":"address"},{"name":"facilitator","type":"address"},{"name":"validAfter","type":"uint256"}]},
 {"name":"signature","type":"bytes"}]}]`))
	if err != nil {
		panic(err)
	}
	return a
}()

type permitTokens struct {
	Token  common.Address
	Amount *big.Int
}

type permitTransferFrom struct {
	Permitted permitTokens
	Nonce     *big.Int
	Deadline  *big.Int
}

type uptoWitness struct {
	To          common.Address
	Facilitator common.Address
	ValidAfter  *big.Int
}

// settleCall is the calldata of the proxy's settle(permit, amount, owner,
// witness, signature).
func (w *Permit2Witness) settleCall(from common.Address, amount *big.Int, sig []byte) ([]byte, error) {
	return uptoProxyABI.Pack("settle",
		permitTransferFrom{Permitted: permitTokens{Token: w.Token, Amount: w.Amount}, Nonce: w.Nonce, Deadline: w.Deadline},
		amount, from, uptoWitness{To: w.To, Facilitator: w.Facilitator, ValidAfter: w.ValidAfter}, sig)
}

// uptoReverts maps the proxy's and Permit2's custom errors (their 4-byte
// selectors) to x402 codes.
var uptoReverts = func() map[[4]byte]string {
	m := map[[4]byte]string{}
	for sig, reason := range map[string]string{
		"AmountExceedsPermitted()":       ReasonUptoSettlementExceeds,
		"UnauthorizedFacilitator()":      ReasonUptoFacilitator,
		"PaymentTooEarly()":              ReasonUptoValidAfter,
		"SignatureExpired(uint256)":      ReasonUptoDeadline,
		"InvalidNonce()":                 ReasonUptoNonceUsed,
		"InvalidSigner()":                ReasonUptoSignature,
		"InvalidSignature()":             ReasonUptoSignature,
		"InvalidSignatureLength()":       ReasonUptoSignature,
		"InvalidContractSignature()":     ReasonUptoSignature,
		"InvalidAmount()":                ReasonUptoTransactionFailed,
		"InvalidOwner()":                 ReasonUptoTransactionFailed,
		"InvalidDestination()":           ReasonUptoTransactionFailed,
		"InvalidAmount(uint256)":         ReasonUptoSettlementExceeds, // Permit2: requested > permitted
		"ReentrancyGuardReentrantCall()": ReasonUptoTransactionFailed,
	} {
		m[[4]byte(crypto.Keccak256([]byte(sig))[:4])] = reason
	}
	return m
}()

// errTransferFailed is solmate's SafeTransferLib revert when the token's
// transferFrom fails: Permit2 lacks the allowance, or the payer the funds.
const errTransferFailed = "TRANSFER_FROM_FAILED"

// uptoRevert maps a reverted settle to an x402 code, or errTransferFailed
// when the token's transfer failed (the caller tells allowance from
// balance by reading them).
func uptoRevert(err error) string {
	data := revertData(err)
	if len(data) >= 4 {
		if r, ok := uptoReverts[[4]byte(data[:4])]; ok {
			return r
		}
		if msg, uerr := abi.UnpackRevert(data); uerr == nil && strings.Contains(msg, errTransferFailed) {
			return errTransferFailed
		}
	}
	if strings.Contains(err.Error(), errTransferFailed) {
		return errTransferFailed
	}
	return ReasonUptoTransactionFailed
}

// revertData is the revert's return data, when the node sent it.
func revertData(err error) []byte {
	var data interface{ ErrorData() any }
	if errors.As(err, &data) {
		switch d := data.ErrorData().(type) {
		case string:
			return common.FromHex(d)
		case []byte:
			return d
		}
	}
	return nil
}

// Allowance is owner's allowance of token to spender (ERC-20 allowance).
func (c *Chain) Allowance(ctx context.Context, token, owner, spender common.Address) (*big.Int, error) {
	data := append(append(common.FromHex("0xdd62ed3e"), common.LeftPadBytes(owner[:], 32)...), common.LeftPadBytes(spender[:], 32)...)
	res, err := c.Client.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	if err != nil {
		return nil, fmt.Errorf("x402: eth_call allowance on %s: %w", token.Hex(), err)
	}
	if len(res) != 32 {
		return nil, fmt.Errorf("x402: allowance on %s answered %d bytes", token.Hex(), len(res))
	}
	return new(big.Int).SetBytes(res), nil
}

// SimulateUpto runs the upto proxy's settle for amount by eth_call, as the
// witness's facilitator (the only sender the proxy accepts): "" when it
// would succeed, else the refusal's code. A transfer that fails is told
// apart by reading the allowance to Permit2 and the balance, so the happy
// path costs one eth_call (plus, once, eth_getCode of the proxy: a call to
// an address without code "succeeds"). Nothing is sent.
func (c *Chain) SimulateUpto(ctx context.Context, from common.Address, w *Permit2Witness, amount *big.Int, sig []byte) (string, error) {
	if !c.uptoProxy.Load() {
		code, err := c.Client.CodeAt(ctx, UptoProxyAddress, nil)
		if err != nil {
			return "", fmt.Errorf("x402: eth_getCode %s: %w", UptoProxyAddress.Hex(), err)
		}
		if len(code) == 0 {
			return ReasonUptoProxyMissing, nil
		}
		c.uptoProxy.Store(true)
	}
	data, err := w.settleCall(from, amount, sig)
	if err != nil {
		return ReasonInvalidPayload, nil
	}
	to := UptoProxyAddress
	_, err = c.Client.CallContract(ctx, ethereum.CallMsg{From: w.Facilitator, To: &to, Data: data}, nil)
	if err == nil {
		return "", nil
	}
	if !isRevert(err) {
		return "", fmt.Errorf("x402: simulating the upto settlement: %w", err)
	}
	if r := uptoRevert(err); r != errTransferFailed {
		return r, nil
	}
	return c.transferShort(ctx, w.Token, from, amount)
}

// transferShort tells why the token's transfer from the payer failed.
func (c *Chain) transferShort(ctx context.Context, token, from common.Address, amount *big.Int) (string, error) {
	allowance, err := c.Allowance(ctx, token, from, Permit2Address)
	if err != nil {
		return "", err
	}
	if allowance.Cmp(amount) < 0 {
		return ReasonPermit2Allowance, nil
	}
	return ReasonInsufficientFunds, nil
}

// uptoChain is what VerifyUpto asks of Verifier.Chain beyond OnChain;
// *Chain implements it.
type uptoChain interface {
	SimulateUpto(ctx context.Context, from common.Address, w *Permit2Witness, amount *big.Int, sig []byte) (string, error)
}

// uptoChecks are the scheme's on-chain verification steps, with v.Chain
// set: Permit2's allowance (2) and the balance (3) cover the maximum, and
// the proxy's settle at the maximum simulates (7). The simulation comes
// first — when it passes, so do 2 and 3, one eth_call instead of three —
// and a failed transfer in it is told apart by reading the allowance and
// balance. It also finds a nonce already spent on chain. Without a chain
// these are the settlement's.
func (v *Verifier) uptoChecks(ctx context.Context, payer string, from common.Address, w *Permit2Witness, sig []byte) error {
	uc, ok := v.Chain.(uptoChain)
	if !ok {
		return nil
	}
	reason, err := uc.SimulateUpto(ctx, from, w, w.Amount, sig)
	if err != nil {
		return &VerifyError{Reason: ReasonUnexpectedVerify, Payer: payer, Err: err}
	}
	switch reason {
	case "":
		return nil
	case ReasonPermit2Allowance:
		return refuse(reason, payer, "%s has not approved Permit2 (%s) for the maximum %s: approve it once, then pay",
			from.Hex(), Permit2Address.Hex(), w.Amount)
	case ReasonInsufficientFunds:
		return refuse(reason, payer, "the balance is below the maximum %s", w.Amount)
	case ReasonUptoProxyMissing:
		return refuse(reason, payer, "no x402 upto proxy at %s on this chain", UptoProxyAddress.Hex())
	}
	return refuse(reason, payer, "the upto proxy's settle at the maximum would revert")
}

// settleUpto settles an upto payment for req.Amount, the actual charge
// (the spec's settlement-time requirements): at most the authorized
// maximum, refused above it with nothing sent; 0 sends nothing and
// succeeds (the authorization lapses at its deadline). Otherwise the
// proxy's settle is simulated and sent by the settlement key, which must
// be the witness's facilitator. Permit2 spends the nonce, so an
// authorization settles once; a retry finds the transaction it sent, and
// a nonce spent on chain answers ReasonUptoNonceUsed, which the paywall
// counts as paid (the signature binds payTo).
func (s *ChainSettler) settleUpto(ctx context.Context, p *PaymentPayload, req *PaymentRequirements) (*SettlementResponse, error) {
	res := &SettlementResponse{Network: req.Network, Amount: req.Amount}
	no := func(reason string) (*SettlementResponse, error) {
		res.ErrorReason = reason
		return res, nil
	}
	pa := p.Payload.Permit2Authorization
	if pa == nil {
		return no(ReasonInvalidPayload)
	}
	res.Payer = pa.From
	want, err := ChainID(req.Network)
	if err != nil {
		return no(ReasonInvalidNetwork)
	}
	chainID, err := s.chain(ctx)
	if err != nil {
		return nil, err
	}
	if chainID.Uint64() != want {
		return no(ReasonInvalidNetwork)
	}
	from, w, err := ParsePermit2Authorization(pa)
	if err != nil {
		return no(ReasonInvalidPayload)
	}
	res.Payer = from.Hex()
	amount, err := parseUint256(req.Amount)
	if err != nil {
		return no(ReasonInvalidRequirements)
	}
	token, err := ParseAddress(req.Asset)
	switch {
	case err != nil:
		return no(ReasonInvalidRequirements)
	case w.Token != token:
		return no(ReasonUptoToken)
	case amount.Cmp(w.Amount) > 0:
		return no(ReasonUptoSettlementExceeds)
	case w.Spender != UptoProxyAddress:
		return no(ReasonUptoSpender)
	case w.Facilitator != s.SettlementAddress():
		// The proxy takes the call from the witness's facilitator only.
		return no(ReasonUptoFacilitator)
	}
	res.Amount = amount.String()
	if amount.Sign() == 0 {
		res.Success = true
		return res, nil
	}
	sig := common.FromHex(p.Payload.Signature)
	if len(sig) == 0 {
		return no(ReasonUptoSignature)
	}
	key := w.NonceKey(want, from)

	s.mu.Lock()
	prev, ok := s.sent[key]
	s.mu.Unlock()
	if ok {
		r, err := s.Client.TransactionReceipt(ctx, prev)
		if err == nil {
			ans, err := s.answer(res, key, prev, r)
			if ans != nil && ans.ErrorReason == ReasonTransactionFailed {
				ans.ErrorReason = ReasonUptoTransactionFailed
			}
			return ans, err
		}
		if !errors.Is(err, ethereum.NotFound) {
			return nil, fmt.Errorf("x402: receipt of %s: %w", prev.Hex(), err)
		}
	}

	data, err := w.settleCall(from, amount, sig)
	if err != nil {
		return no(ReasonInvalidPayload)
	}
	var hash common.Hash
	reason, err := s.transact(ctx, UptoProxyAddress, data, uptoRevert, s.remember(key, &hash))
	if err != nil {
		return nil, err
	}
	switch reason {
	case "":
	case errTransferFailed:
		reason, err = (&Chain{Client: s.Client}).transferShort(ctx, w.Token, from, amount)
		if err != nil {
			return nil, err
		}
		return no(reason)
	case ReasonTransactionFailed:
		res.Transaction = hash.Hex()
		s.forget(key)
		return no(ReasonUptoTransactionFailed)
	default:
		return no(reason)
	}
	s.forget(key)
	res.Success, res.Transaction = true, hash.Hex()
	return res, nil
}
