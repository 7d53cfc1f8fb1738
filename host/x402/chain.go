package x402

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// ChainClient is what this package asks of an Ethereum JSON-RPC endpoint:
// *ethclient.Client implements it, and so does go-ethereum's simulated
// backend client the tests use (host/x402/chaintest).
type ChainClient interface {
	CallContract(ctx context.Context, msg ethereum.CallMsg, block *big.Int) ([]byte, error)
	CodeAt(ctx context.Context, account common.Address, block *big.Int) ([]byte, error)
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error)
	SuggestGasTipCap(ctx context.Context) (*big.Int, error)
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	SendTransaction(ctx context.Context, tx *types.Transaction) error
	TransactionReceipt(ctx context.Context, txHash common.Hash) (*types.Receipt, error)
	ChainID(ctx context.Context) (*big.Int, error)
}

// OnChain answers what verification cannot know offline. *Chain
// implements it over an RPC endpoint.
type OnChain interface {
	// ValidSignature reports whether the contract wallet signer accepts
	// sig over digest: ERC-1271 isValidSignature, after an ERC-6492
	// counterfactual deployment when sig is so wrapped. An address
	// without code is never valid here (EOAs are checked by ecrecover).
	// An error means the chain could not be asked, not a refusal.
	ValidSignature(ctx context.Context, signer common.Address, digest common.Hash, sig []byte) (bool, error)
	// BalanceOf is owner's balance of token (ERC-20 balanceOf).
	BalanceOf(ctx context.Context, token, owner common.Address) (*big.Int, error)
}

// Chain reads a chain for the Verifier: contract-wallet signatures and
// balances, through eth_call only (nothing is sent, nothing costs gas).
type Chain struct {
	Client ChainClient
	// Factories are the ERC-6492 factories a counterfactual wallet may be
	// deployed through. Settling such a payment makes the settlement key
	// pay for the deployment, so an unknown factory is refused
	// (ErrFactoryNotAllowed) rather than simulated. Empty: none.
	Factories []common.Address

	uptoProxy atomic.Bool // the upto proxy was seen deployed
}

var _ OnChain = (*Chain)(nil)

// ErrFactoryNotAllowed: an ERC-6492 signature names a factory that is not
// in Chain.Factories.
var ErrFactoryNotAllowed = errors.New("x402: ERC-6492 factory not allowed")

// ReasonFactoryNotAllowed is the refusal for ErrFactoryNotAllowed, the
// code the reference facilitator uses.
const ReasonFactoryNotAllowed = "eip6492_factory_not_allowed"

// erc6492Check is the creation code of contracts/ERC6492Check.sol: run
// through eth_call as a contract creation with abi.encode(signer, hash,
// signature) appended, its constructor returns one word, 1 for a valid
// signature. Compiled by host/x402/chaintest/testdata/contracts/compile.mjs
// (solc 0.8.37; `make chain-test-deps` checks it matches the source).
//
//go:embed contracts/ERC6492Check.bin
var erc6492CheckHex string

var erc6492Check = common.FromHex(strings.TrimSpace(erc6492CheckHex))

// The ABI pieces used here, parsed once.
var (
	abiAddress, _ = abi.NewType("address", "", nil)
	abiBytes, _   = abi.NewType("bytes", "", nil)
	abiBytes32, _ = abi.NewType("bytes32", "", nil)

	erc6492Wrapper = abi.Arguments{{Type: abiAddress}, {Type: abiBytes}, {Type: abiBytes}}
	erc6492Args    = abi.Arguments{{Type: abiAddress}, {Type: abiBytes32}, {Type: abiBytes}}
	erc1271Args    = abi.Arguments{{Type: abiBytes32}, {Type: abiBytes}}

	// isValidSignature(bytes32,bytes) and its magic answer.
	erc1271Selector = common.FromHex("0x1626ba7e")
	// balanceOf(address)
	balanceOfSelector = common.FromHex("0x70a08231")
)

// ERC6492 is an unwrapped ERC-6492 signature: the wallet's factory, the
// call that deploys it, and the signature the deployed wallet checks.
type ERC6492 struct {
	Factory   common.Address
	Calldata  []byte
	Signature []byte
}

// ParseERC6492 unwraps sig when it ends in the ERC-6492 magic suffix; ok
// is false when it does not. A suffixed signature whose body is not
// abi.encode(address, bytes, bytes) is an error.
func ParseERC6492(sig []byte) (w ERC6492, ok bool, err error) {
	if len(sig) < len(erc6492Magic) || !bytes.HasSuffix(sig, erc6492Magic) {
		return w, false, nil
	}
	vals, err := erc6492Wrapper.Unpack(sig[:len(sig)-len(erc6492Magic)])
	if err != nil {
		return w, true, fmt.Errorf("x402: ERC-6492 wrapper: %w", err)
	}
	w.Factory = vals[0].(common.Address)
	w.Calldata = vals[1].([]byte)
	w.Signature = vals[2].([]byte)
	return w, true, nil
}

// ValidSignature implements OnChain. A deployed wallet is asked directly
// (isValidSignature by eth_call, the inner signature when sig is ERC-6492
// wrapped); a counterfactual one through ERC6492Check, which deploys it
// inside the simulated call first. The answer counts as valid only when
// its first word is the magic value zero-padded, as FiatToken v2.2
// judges it, so what passes here can settle.
func (c *Chain) ValidSignature(ctx context.Context, signer common.Address, digest common.Hash, sig []byte) (bool, error) {
	w, wrapped, err := ParseERC6492(sig)
	if err != nil {
		return false, nil
	}
	code, err := c.Client.CodeAt(ctx, signer, nil)
	if err != nil {
		return false, fmt.Errorf("x402: eth_getCode %s: %w", signer.Hex(), err)
	}
	if len(code) > 0 {
		if wrapped {
			sig = w.Signature
		}
		return c.erc1271(ctx, signer, digest, sig)
	}
	if !wrapped {
		return false, nil
	}
	if !slices.Contains(c.Factories, w.Factory) {
		return false, fmt.Errorf("%w: %s", ErrFactoryNotAllowed, w.Factory.Hex())
	}
	args, err := erc6492Args.Pack(signer, digest, sig)
	if err != nil {
		return false, nil
	}
	res, err := c.Client.CallContract(ctx, ethereum.CallMsg{Data: append(append([]byte{}, erc6492Check...), args...)}, nil)
	if isRevert(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("x402: eth_call ERC-6492 check: %w", err)
	}
	return len(res) == 32 && new(big.Int).SetBytes(res).Cmp(big.NewInt(1)) == 0, nil
}

func (c *Chain) erc1271(ctx context.Context, wallet common.Address, digest common.Hash, sig []byte) (bool, error) {
	args, err := erc1271Args.Pack(digest, sig)
	if err != nil {
		return false, nil
	}
	res, err := c.Client.CallContract(ctx, ethereum.CallMsg{To: &wallet, Data: append(append([]byte{}, erc1271Selector...), args...)}, nil)
	if isRevert(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("x402: eth_call isValidSignature on %s: %w", wallet.Hex(), err)
	}
	var want [32]byte
	copy(want[:], erc1271Selector)
	return len(res) >= 32 && bytes.Equal(res[:32], want[:]), nil
}

// BalanceOf implements OnChain.
func (c *Chain) BalanceOf(ctx context.Context, token, owner common.Address) (*big.Int, error) {
	data := append(append([]byte{}, balanceOfSelector...), common.LeftPadBytes(owner[:], 32)...)
	res, err := c.Client.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	if err != nil {
		return nil, fmt.Errorf("x402: eth_call balanceOf on %s: %w", token.Hex(), err)
	}
	if len(res) != 32 {
		return nil, fmt.Errorf("x402: balanceOf on %s answered %d bytes", token.Hex(), len(res))
	}
	return new(big.Int).SetBytes(res), nil
}

// isRevert reports whether err is an execution revert (the call ran and
// said no) rather than a failure to ask: JSON-RPC error code 3, or the
// "execution reverted" message nodes send without it.
func isRevert(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ ErrorCode() int }
	if errors.As(err, &coded) && coded.ErrorCode() == 3 {
		return true
	}
	return strings.Contains(err.Error(), "execution reverted")
}
