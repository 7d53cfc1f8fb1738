package identity

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/x402"
)

// registryABI holds the ERC-8004 functions the gateway calls (eth_call
// only: it never writes to the registries).
var registryABI = mustABI(`[
 {"type":"function","name":"ownerOf","stateMutability":"view","inputs":[{"name":"tokenId","type":"uint256"}],"outputs":[{"name":"","type":"address"}]},
 {"type":"function","name":"getAgentWallet","stateMutability":"view","inputs":[{"name":"agentId","type":"uint256"}],"outputs":[{"name":"","type":"address"}]},
 {"type":"function","name":"getSummary","stateMutability":"view","inputs":[{"name":"agentId","type":"uint256"},{"name":"clientAddresses","type":"address[]"},{"name":"tag1","type":"string"},{"name":"tag2","type":"string"}],
  "outputs":[{"name":"count","type":"uint64"},{"name":"summaryValue","type":"int128"},{"name":"summaryValueDecimals","type":"uint8"}]}
]`)

func mustABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic(err)
	}
	return a
}

// Errors of the registry reads.
var (
	// ErrUnknownAgent: the Identity Registry has no such agent id.
	ErrUnknownAgent = errors.New("no such agent on the identity registry")
	// ErrChain: the chain could not be asked (503, not a refusal).
	ErrChain = errors.New("identity: the chain cannot be read")
)

// Signers are who may sign for an agent: its ERC-721 owner and its
// agentWallet (zero when unset).
type Signers struct {
	Owner, Wallet common.Address
}

// Has reports whether a is one of the signers.
func (s Signers) Has(a common.Address) bool {
	return a != (common.Address{}) && (a == s.Owner || a == s.Wallet)
}

// Summary is the Reputation Registry's getSummary answer.
type Summary struct {
	Count    uint64
	Value    *big.Int // summaryValue, scaled by 10^Decimals
	Decimals uint8
}

// Score maps a summary to the spec's reputation score: the number of
// feedback entries weighted by their average on the 0–100 scale of the
// ERC's "starred" rating, ⌊count × clamp(average, 0, 100) / 100⌋ — each
// perfect review from a trusted reviewer is one point. An average outside
// 0–100 (another tag's unit) is clamped, a negative one scores 0.
func (s Summary) Score() int64 {
	if s.Count == 0 || s.Value == nil || s.Value.Sign() <= 0 {
		return 0
	}
	// avg×100 in hundredths, clamped to [0, 100×100]
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s.Decimals)), nil)
	hund := new(big.Int).Mul(s.Value, big.NewInt(100))
	hund.Quo(hund, scale)
	if hund.Cmp(big.NewInt(100*100)) > 0 {
		hund.SetInt64(100 * 100)
	}
	score := new(big.Int).Mul(hund, new(big.Int).SetUint64(s.Count))
	score.Quo(score, big.NewInt(100*100))
	if !score.IsInt64() {
		return 1<<63 - 1
	}
	return score.Int64()
}

// Tier is a reputation tier and its spread.
type Tier struct {
	Name     string
	MinScore int64
	Spread   pricing.Spread
}

// Tiers are the spec's reputation tiers (003, "ERC-8004 identity"), best
// first.
var Tiers = []Tier{
	{"sovereign", 1000, 800},
	{"trusted", 500, 1200},
	{"verified", 200, 1500},
	{"basic", 50, 1800},
	{"none", 0, 2000},
}

// TierOf returns the tier of a score.
func TierOf(score int64) Tier {
	for _, t := range Tiers {
		if score >= t.MinScore {
			return t
		}
	}
	return Tiers[len(Tiers)-1]
}

// Registry reads the ERC-8004 Identity and Reputation registries.
type Registry struct {
	Client     x402.ChainClient
	Identity   common.Address
	Reputation common.Address
	// Reviewers are the clientAddresses getSummary is asked about: the ERC
	// requires a non-empty list (an unfiltered summary is open to Sybil
	// feedback), so the operator names the reviewers it trusts.
	Reviewers  []common.Address
	Tag1, Tag2 string
}

// Signers reads agentID's owner and agent wallet.
func (r *Registry) Signers(ctx context.Context, agentID *big.Int) (Signers, error) {
	var s Signers
	out, err := r.call(ctx, r.Identity, "ownerOf", agentID)
	if errors.Is(err, errRevert) {
		return s, ErrUnknownAgent
	}
	if err != nil {
		return s, err
	}
	s.Owner = out[0].(common.Address)
	if out, err = r.call(ctx, r.Identity, "getAgentWallet", agentID); err == nil {
		s.Wallet = out[0].(common.Address)
	} else if !errors.Is(err, errRevert) {
		return s, err
	}
	return s, nil
}

// Summary reads agentID's reputation summary from the configured reviewers.
func (r *Registry) Summary(ctx context.Context, agentID *big.Int) (Summary, error) {
	if len(r.Reviewers) == 0 || r.Reputation == (common.Address{}) {
		return Summary{}, nil // no reviewers trusted: every agent is tier none
	}
	out, err := r.call(ctx, r.Reputation, "getSummary", agentID, r.Reviewers, r.Tag1, r.Tag2)
	if errors.Is(err, errRevert) {
		return Summary{}, nil
	}
	if err != nil {
		return Summary{}, err
	}
	return Summary{Count: out[0].(uint64), Value: out[1].(*big.Int), Decimals: out[2].(uint8)}, nil
}

var errRevert = errors.New("reverted")

// scrub is err's text without the RPC URL an HTTP failure names (it may
// carry a provider's API key): for *url.Error, only its operation and cause.
func scrub(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + scrub(ue.Err)
	}
	return err.Error()
}

func (r *Registry) call(ctx context.Context, to common.Address, method string, args ...any) ([]any, error) {
	data, err := registryABI.Pack(method, args...)
	if err != nil {
		return nil, err
	}
	res, err := r.Client.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, nil)
	if err != nil {
		if isRevert(err) {
			return nil, errRevert
		}
		return nil, fmt.Errorf("%w: %s on %s: %s", ErrChain, method, to.Hex(), scrub(err))
	}
	if len(res) == 0 {
		return nil, errRevert // no contract there, or an empty revert
	}
	out, err := registryABI.Unpack(method, res)
	if err != nil {
		return nil, errRevert
	}
	return out, nil
}

// isRevert reports whether an eth_call error is the contract's revert
// (an answer) rather than a transport failure: JSON-RPC code 3, or the
// message nodes send without it (as host/x402 judges it).
func isRevert(err error) bool {
	var coded interface{ ErrorCode() int }
	if errors.As(err, &coded) && coded.ErrorCode() == 3 {
		return true
	}
	return strings.Contains(err.Error(), "execution reverted")
}
