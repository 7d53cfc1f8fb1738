package chaintest

import (
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// Permit2 and the x402 upto proxy, at their canonical addresses.
var (
	// Permit2Address is Uniswap's Permit2, the same on every chain.
	Permit2Address = common.HexToAddress("0x000000000022D473030F116dDEE9F6B43aC78BA3")
	// UptoProxyAddress is x402UptoPermit2Proxy, the spender of every
	// upto authorization (specs/schemes/upto/scheme_upto_evm.md).
	UptoProxyAddress = common.HexToAddress("0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002")
	// Create2Deployer is Arachnid's deterministic deployment proxy, which
	// both were deployed through: calldata salt ++ initCode, CREATE2.
	Create2Deployer = common.HexToAddress("0x4e59b44847b379578588920cA78FbF26c0B4956C")
)

// create2DeployerCode is the deployment proxy's runtime code (it exists
// at the same address on Base and every chain that ran its keyless
// deployment transaction; the genesis puts it there).
var create2DeployerCode = common.FromHex("0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3")

// vendored is a contract compiled from vendored sources by compile.mjs:
// its creation code with constructor arguments, and the CREATE2 salt and
// address upstream deployed it with.
type vendored struct {
	ABI      abi.ABI
	InitCode []byte
	Salt     common.Hash
	Address  common.Address
}

func loadVendored(t testing.TB, name string) *vendored {
	t.Helper()
	rel := name + ".json"
	b, err := os.ReadFile(filepath.Join(ContractsDir(), rel))
	if err != nil {
		t.Fatalf("chaintest: %s: %v", rel, err)
	}
	var raw struct {
		ABI      json.RawMessage `json:"abi"`
		InitCode string          `json:"initCode"`
		Salt     string          `json:"salt"`
		Address  string          `json:"address"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("chaintest: %s: %v", rel, err)
	}
	a, err := abi.JSON(strings.NewReader(string(raw.ABI)))
	if err != nil {
		t.Fatalf("chaintest: %s abi: %v", rel, err)
	}
	return &vendored{ABI: a, InitCode: common.FromHex(raw.InitCode), Salt: common.HexToHash(raw.Salt), Address: common.HexToAddress(raw.Address)}
}

// deployPermit2 deploys Permit2 and the upto proxy as they were deployed
// on Base: through the CREATE2 deployment proxy, with upstream's salts.
// That they land at the canonical addresses proves the bytecode is the
// deployed one.
func (c *Chain) deployPermit2(t testing.TB) {
	t.Helper()
	for _, name := range []string{"Permit2", "x402UptoPermit2Proxy"} {
		v := loadVendored(t, name)
		if got := crypto.CreateAddress2(Create2Deployer, v.Salt, crypto.Keccak256(v.InitCode)); got != v.Address {
			t.Fatalf("chaintest: %s would be at %s, not %s", name, got, v.Address)
		}
		to := Create2Deployer
		c.send(t, c.deployer, &to, nil, append(v.Salt.Bytes(), v.InitCode...))
		if !c.HasCode(t, v.Address) {
			t.Fatalf("chaintest: %s not deployed at %s", name, v.Address)
		}
		switch name {
		case "Permit2":
			c.permit2 = v.ABI
		default:
			c.upto = v.ABI
		}
	}
}

// Permit2ABI is Permit2's ABI.
func (c *Chain) Permit2ABI() abi.ABI { return c.permit2 }

// UptoProxyABI is x402UptoPermit2Proxy's ABI.
func (c *Chain) UptoProxyABI() abi.ABI { return c.upto }

// ApprovePermit2 has owner approve Permit2 to spend amount of its USDC
// (the one-time approval upto needs; owner gets ether for the gas).
func (c *Chain) ApprovePermit2(t testing.TB, owner *ecdsa.PrivateKey, amount *big.Int) {
	t.Helper()
	c.FundETH(t, Address(owner), new(big.Int).Exp(big.NewInt(10), big.NewInt(17), nil))
	c.Call(t, owner, c.USDC, c.token, "approve", Permit2Address, amount)
}

// Allowance is owner's USDC allowance to spender.
func (c *Chain) Allowance(t testing.TB, owner, spender common.Address) *big.Int {
	t.Helper()
	var out *big.Int
	c.Read(t, c.USDC, c.token, "allowance", &out, owner, spender)
	return out
}

// Permit2NonceUsed reports whether owner's unordered Permit2 nonce is
// spent (its bit in nonceBitmap).
func (c *Chain) Permit2NonceUsed(t testing.TB, owner common.Address, nonce *big.Int) bool {
	t.Helper()
	var bitmap *big.Int
	word := new(big.Int).Rsh(nonce, 8)
	c.Read(t, Permit2Address, c.permit2, "nonceBitmap", &bitmap, owner, word)
	return bitmap.Bit(int(new(big.Int).And(nonce, big.NewInt(255)).Int64())) == 1
}
