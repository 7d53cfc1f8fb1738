package x402

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// Well-known chains and USDC deployments. The EIP-712 domain names differ
// per deployment and a wrong one makes every signature invalid on chain, so
// they are pinned here next to the on-chain DOMAIN_SEPARATOR() values the
// tests check them against.
const (
	ChainBase        = 8453
	ChainBaseSepolia = 84532

	// NetworkBase and NetworkBaseSepolia are the CAIP-2 names v2 uses.
	NetworkBase        = "eip155:8453"
	NetworkBaseSepolia = "eip155:84532"
)

// USDC on Base and Base Sepolia. Circle's FiatToken v2 on Base answers
// name() "USD Coin", version() "2"; the Base Sepolia deployment answers
// "USDC", "2".
var (
	USDCBase = Token{
		Network: NetworkBase, Address: common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
		Name: "USD Coin", Version: "2", Decimals: 6,
	}
	USDCBaseSepolia = Token{
		Network: NetworkBaseSepolia, Address: common.HexToAddress("0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
		Name: "USDC", Version: "2", Decimals: 6,
	}
)

// Token is an EIP-3009 token deployment.
type Token struct {
	Network  string         // CAIP-2, e.g. "eip155:8453"
	Address  common.Address // the token contract, EIP-712 verifyingContract
	Name     string         // EIP-712 domain name
	Version  string         // EIP-712 domain version
	Decimals int            // for display only; amounts are atomic units
}

// v1Networks maps the v1 network names (specs/x402-specification-v1.md and
// the reference implementations) to EVM chain IDs.
var v1Networks = map[string]uint64{
	"base":           ChainBase,
	"base-sepolia":   ChainBaseSepolia,
	"ethereum":       1,
	"sepolia":        11155111,
	"avalanche":      43114,
	"avalanche-fuji": 43113,
	"polygon":        137,
	"polygon-amoy":   80002,
	"optimism":       10,
	"arbitrum":       42161,
}

// ChainID returns the EVM chain ID a network name denotes: a CAIP-2 "eip155:N"
// (v2) or a v1 name such as "base". Non-EVM networks are an error.
func ChainID(network string) (uint64, error) {
	if ref, ok := strings.CutPrefix(network, "eip155:"); ok {
		id, err := strconv.ParseUint(ref, 10, 64)
		if err != nil || id == 0 || ref[0] == '0' {
			return 0, fmt.Errorf("x402: network %q: bad eip155 chain reference", network)
		}
		return id, nil
	}
	if id, ok := v1Networks[network]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("x402: network %q is not a known EVM network", network)
}

// CAIP2 returns the CAIP-2 form of an EVM network name.
func CAIP2(network string) (string, error) {
	id, err := ChainID(network)
	if err != nil {
		return "", err
	}
	return "eip155:" + strconv.FormatUint(id, 10), nil
}

// V1Network returns the v1 name of an EVM chain, if it has one.
func V1Network(chainID uint64) (string, bool) {
	for name, id := range v1Networks {
		if id == chainID {
			return name, true
		}
	}
	return "", false
}

// SameNetwork reports whether two network names denote the same EVM chain,
// whichever form each is written in.
func SameNetwork(a, b string) bool {
	ia, err1 := ChainID(a)
	ib, err2 := ChainID(b)
	return err1 == nil && err2 == nil && ia == ib
}
