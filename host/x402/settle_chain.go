package x402

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// ChainSettler settles exact payments on chain itself, beside the
// facilitator path: it submits the token's transferWithAuthorization with
// the gateway's settlement key, which pays the gas (the payer signed the
// transfer; the key only carries it). It implements the same Settle as
// Facilitator.
//
// Before sending, each settlement is simulated with eth_call, so a payment
// that would revert (nonce used, balance short, bad signature, expired) is
// refused with its reason and costs no gas. A refusal is an answer
// (Success false); an error means the outcome is unknown — the RPC failed,
// or the transaction was sent and its receipt did not come in time — and
// the caller records it and retries: a retry first looks for the receipt
// of the transaction already sent for that authorization, and an
// authorization used on chain answers ReasonNonceUsed, which the paywall
// counts as paid.
type ChainSettler struct {
	Client ChainClient
	// Key is the settlement key: it signs the transactions and pays their
	// gas. Only its address is ever shown.
	Key *KeySigner
	// Factories may deploy ERC-6492 counterfactual wallets before their
	// first payment settles (the key pays that deployment too).
	Factories []common.Address
	// PollInterval is how often a receipt is looked for (0: 500 ms).
	PollInterval time.Duration

	mu      sync.Mutex
	chainID *big.Int
	nonce   uint64 // next account nonce; 0 with !nonceOK: ask the node
	nonceOK bool
	sent    map[NonceKey]common.Hash // authorization -> its transaction, until settled
}

// Settlement refusals of ChainSettler, the reference facilitator's codes:
// a transaction that was mined and reverted, and an ERC-6492 wallet whose
// factory call would not deploy it.
const (
	ReasonTransactionFailed = "invalid_exact_evm_transaction_failed"
	ReasonWalletDeployment  = "smart_wallet_deployment_failed"
)

// FiatToken v2.2's two transferWithAuthorization entry points: (v, r, s)
// for ECDSA signatures, and bytes, which also takes ERC-1271 ones.
var eip3009ABI = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(`[
{"type":"function","name":"transferWithAuthorization","stateMutability":"nonpayable","outputs":[],"inputs":[
 {"name":"from","type":"address"},{"name":"to","type":"address"},{"name":"value","type":"uint256"},
 {"name":"validAfter","type":"uint256"},{"name":"validBefore","type":"uint256"},{"name":"nonce","type":"bytes32"},
 {"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}]},
{"type":"function","name":"transferWithAuthorization","stateMutability":"nonpayable","outputs":[],"inputs":[
 {"name":"from","type":"address"},{"name":"to","type":"address"},{"name":"value","type":"uint256"},
 {"name":"validAfter","type":"uint256"},{"name":"validBefore","type":"uint256"},{"name":"nonce","type":"bytes32"},
 {"name":"signature","type":"bytes"}]}]`))
	if err != nil {
		panic(err)
	}
	return a
}()

// Settle implements the paywall's Settler: it transfers an exact payment's
// authorization on chain and answers with the transaction hash.
func (s *ChainSettler) Settle(ctx context.Context, p *PaymentPayload, req *PaymentRequirements) (*SettlementResponse, error) {
	if req.Scheme == SchemeUpto {
		return s.settleUpto(ctx, p, req)
	}
	res := &SettlementResponse{Network: req.Network, Payer: p.Payload.Authorization.From}
	no := func(reason string) (*SettlementResponse, error) {
		res.ErrorReason = reason
		return res, nil
	}
	if req.Scheme != SchemeExact {
		return no(ReasonUnsupportedScheme)
	}
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
	token, err := ParseAddress(req.Asset)
	if err != nil {
		return no(ReasonInvalidRequirements)
	}
	auth, err := ParseAuthorization(&p.Payload.Authorization)
	if err != nil {
		return no(ReasonInvalidPayload)
	}
	res.Payer = auth.From.Hex()
	sig := common.FromHex(p.Payload.Signature)
	if len(sig) == 0 {
		return no(ReasonSignature)
	}
	key := NonceKey{ChainID: want, Token: token, From: auth.From, Nonce: auth.Nonce}

	// A retry: the transaction sent last time may have landed since.
	s.mu.Lock()
	prev, ok := s.sent[key]
	s.mu.Unlock()
	if ok {
		r, err := s.Client.TransactionReceipt(ctx, prev)
		if err == nil {
			return s.answer(res, key, prev, r)
		}
		if !errors.Is(err, ethereum.NotFound) {
			return nil, fmt.Errorf("x402: receipt of %s: %w", prev.Hex(), err)
		}
		// Not mined (dropped, or still pending): the simulation below
		// tells which, through the authorization's state.
	}

	code, err := s.Client.CodeAt(ctx, auth.From, nil)
	if err != nil {
		return nil, fmt.Errorf("x402: eth_getCode %s: %w", auth.From.Hex(), err)
	}
	contract := len(code) > 0
	if w, wrapped, err := ParseERC6492(sig); wrapped {
		if err != nil {
			return no(ReasonSignature)
		}
		if !contract {
			if !slices.Contains(s.Factories, w.Factory) {
				return no(ReasonFactoryNotAllowed)
			}
			// Deploy the wallet first: transferWithAuthorization asks it.
			reason, err := s.transact(ctx, w.Factory, w.Calldata, revertReason, nil)
			if err != nil {
				return nil, err
			}
			if reason != "" {
				return no(ReasonWalletDeployment)
			}
			contract = true
		}
		sig = w.Signature
	}

	var data []byte
	if len(sig) == 65 && !contract {
		v := sig[64]
		if v < 27 {
			v += 27
		}
		data, err = eip3009ABI.Pack("transferWithAuthorization", auth.From, auth.To, auth.Value, auth.ValidAfter, auth.ValidBefore,
			auth.Nonce, v, [32]byte(sig[:32]), [32]byte(sig[32:64]))
	} else {
		// go-ethereum names the second overload with a 0 suffix.
		data, err = eip3009ABI.Pack("transferWithAuthorization0", auth.From, auth.To, auth.Value, auth.ValidAfter,
			auth.ValidBefore, auth.Nonce, sig)
	}
	if err != nil {
		return no(ReasonInvalidPayload)
	}
	var hash common.Hash
	reason, err := s.transact(ctx, token, data, revertReason, s.remember(key, &hash))
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return no(reason)
	}
	s.forget(key)
	res.Success, res.Transaction = true, hash.Hex()
	return res, nil
}

// answer turns the receipt of an earlier attempt into the settlement's
// answer.
func (s *ChainSettler) answer(res *SettlementResponse, key NonceKey, tx common.Hash, r *types.Receipt) (*SettlementResponse, error) {
	s.forget(key)
	res.Transaction = tx.Hex()
	if r.Status != types.ReceiptStatusSuccessful {
		res.ErrorReason = ReasonTransactionFailed
		return res, nil
	}
	res.Success = true
	return res, nil
}

func (s *ChainSettler) forget(key NonceKey) {
	s.mu.Lock()
	delete(s.sent, key)
	s.mu.Unlock()
}

func (s *ChainSettler) chain(ctx context.Context) (*big.Int, error) {
	s.mu.Lock()
	id := s.chainID
	s.mu.Unlock()
	if id != nil {
		return id, nil
	}
	id, err := s.Client.ChainID(ctx)
	if err != nil {
		return nil, fmt.Errorf("x402: eth_chainId: %w", err)
	}
	s.mu.Lock()
	s.chainID = id
	s.mu.Unlock()
	return id, nil
}

// transact simulates a call to `to`, then sends it signed by the
// settlement key and waits for its receipt. A simulation that reverts is
// a refusal (its reason read from the revert message) and sends nothing;
// a mined transaction that reverted is ReasonTransactionFailed. sent, when
// set, learns the hash as soon as the transaction is out.
// why maps a revert to its code (revertReason for FiatToken's).
func (s *ChainSettler) transact(ctx context.Context, to common.Address, data []byte, why func(error) string, sent func(common.Hash)) (string, error) {
	if s.Key == nil || s.Key.key == nil {
		return "", errors.New("x402: chain settlement needs a settlement key")
	}
	from := s.Key.addr
	msg := ethereum.CallMsg{From: from, To: &to, Data: data}
	if _, err := s.Client.CallContract(ctx, msg, nil); err != nil {
		if isRevert(err) {
			return why(err), nil
		}
		return "", fmt.Errorf("x402: simulating the settlement: %w", err)
	}
	gas, err := s.Client.EstimateGas(ctx, msg)
	if err != nil {
		if isRevert(err) {
			return why(err), nil
		}
		return "", fmt.Errorf("x402: estimating gas: %w", err)
	}
	tip, err := s.Client.SuggestGasTipCap(ctx)
	if err != nil {
		return "", fmt.Errorf("x402: gas tip: %w", err)
	}
	head, err := s.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("x402: latest header: %w", err)
	}
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	chainID, err := s.chain(ctx)
	if err != nil {
		return "", err
	}

	// One sender at a time: account nonces must be consecutive.
	s.mu.Lock()
	if !s.nonceOK {
		n, err := s.Client.PendingNonceAt(ctx, from)
		if err != nil {
			s.mu.Unlock()
			return "", fmt.Errorf("x402: settlement key nonce: %w", err)
		}
		s.nonce, s.nonceOK = n, true
	}
	tx, err := types.SignNewTx(s.Key.key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: s.nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas + gas/5, To: &to, Data: data})
	if err != nil {
		s.mu.Unlock()
		return "", fmt.Errorf("x402: signing the settlement: %w", err)
	}
	if err := s.Client.SendTransaction(ctx, tx); err != nil {
		s.nonceOK = false // ask the node again next time
		s.mu.Unlock()
		return "", fmt.Errorf("x402: sending the settlement: %w", err)
	}
	s.nonce++
	s.mu.Unlock()
	if sent != nil {
		sent(tx.Hash())
	}

	r, err := s.receipt(ctx, tx.Hash())
	if err != nil {
		return "", err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return ReasonTransactionFailed, nil
	}
	return "", nil
}

// receipt waits for a transaction's receipt until ctx ends.
func (s *ChainSettler) receipt(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	every := s.PollInterval
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	for {
		r, err := s.Client.TransactionReceipt(ctx, h)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) {
			return nil, fmt.Errorf("x402: receipt of %s: %w", h.Hex(), err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("x402: settlement %s sent, no receipt yet: %w", h.Hex(), ctx.Err())
		case <-time.After(every):
		}
	}
}

// revertReason maps FiatToken's revert messages to x402 codes.
func revertReason(err error) string {
	msg := strings.ToLower(err.Error())
	var data interface{ ErrorData() any }
	if errors.As(err, &data) {
		if s, ok := data.ErrorData().(string); ok {
			if b := common.FromHex(s); len(b) > 4 {
				if r, err := abi.UnpackRevert(b); err == nil {
					msg += " " + strings.ToLower(r)
				}
			}
		}
	}
	switch {
	case strings.Contains(msg, "authorization is used or canceled"):
		return ReasonNonceUsed
	case strings.Contains(msg, "authorization is expired"):
		return ReasonValidBefore
	case strings.Contains(msg, "authorization is not yet valid"):
		return ReasonValidAfter
	case strings.Contains(msg, "exceeds balance"):
		return ReasonInsufficientFunds
	case strings.Contains(msg, "invalid signature"):
		return ReasonSignature
	}
	return ReasonTransactionFailed
}

// SettlementAddress is the settlement key's address (it needs ether on
// the chain for gas).
func (s *ChainSettler) SettlementAddress() common.Address {
	if s.Key == nil {
		return common.Address{}
	}
	return s.Key.addr
}

// remember is transact's onSent: the hash goes to *hash and is kept under
// key, so a retry of the same authorization finds the transaction it
// already sent instead of sending another.
func (s *ChainSettler) remember(key NonceKey, hash *common.Hash) func(common.Hash) {
	return func(h common.Hash) {
		*hash = h
		s.mu.Lock()
		if s.sent == nil {
			s.sent = map[NonceKey]common.Hash{}
		}
		s.sent[key] = h
		s.mu.Unlock()
	}
}
