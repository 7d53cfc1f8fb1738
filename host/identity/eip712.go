package identity

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/x402"
)

// The EIP-712 types the gateway verifies. The domain is the gateway's
// (Config.Domain): name, version, chainId, verifyingContract.
var (
	// LinkTypeHash is keccak256 of the Link type: the identity's owner or
	// agent wallet lets the gateway key keyId act for agentId.
	LinkTypeHash = crypto.Keccak256Hash([]byte("Link(uint256 agentId,string keyId,bytes32 nonce,uint256 deadline)"))
	// DelegationTypeHash is keccak256 of the Delegation type: one request,
	// signed by the identity's owner or agent wallet.
	DelegationTypeHash = crypto.Keccak256Hash([]byte(
		"Delegation(uint256 agentId,string method,string path,bytes32 bodyHash,uint256 timestamp,bytes32 nonce)"))
)

// LinkMessage is a Link's message.
type LinkMessage struct {
	AgentID  *big.Int
	KeyID    string // the public id of the bardo_sk_ key (never its secret)
	Nonce    [32]byte
	Deadline int64 // unix seconds; the proof is refused after it
}

// Digest returns the EIP-712 digest of m under domain d.
func (m *LinkMessage) Digest(d x402.Domain) common.Hash {
	var buf [5 * 32]byte
	copy(buf[0:32], LinkTypeHash[:])
	m.AgentID.FillBytes(buf[32:64])
	copy(buf[64:96], crypto.Keccak256([]byte(m.KeyID)))
	copy(buf[96:128], m.Nonce[:])
	big.NewInt(m.Deadline).FillBytes(buf[128:160])
	return typedData(d, crypto.Keccak256Hash(buf[:]))
}

// DelegationMessage is a Delegation's message.
type DelegationMessage struct {
	AgentID   *big.Int
	Method    string // the HTTP method, upper case
	Path      string // the request's path, e.g. /v1/messages
	BodyHash  common.Hash
	Timestamp int64 // unix seconds
	Nonce     [32]byte
}

// Digest returns the EIP-712 digest of m under domain d.
func (m *DelegationMessage) Digest(d x402.Domain) common.Hash {
	var buf [7 * 32]byte
	copy(buf[0:32], DelegationTypeHash[:])
	m.AgentID.FillBytes(buf[32:64])
	copy(buf[64:96], crypto.Keccak256([]byte(m.Method)))
	copy(buf[96:128], crypto.Keccak256([]byte(m.Path)))
	copy(buf[128:160], m.BodyHash[:])
	big.NewInt(m.Timestamp).FillBytes(buf[160:192])
	copy(buf[192:224], m.Nonce[:])
	return typedData(d, crypto.Keccak256Hash(buf[:]))
}

func typedData(d x402.Domain, structHash common.Hash) common.Hash {
	sep := d.Separator()
	var buf [66]byte
	buf[0], buf[1] = 0x19, 0x01
	copy(buf[2:34], sep[:])
	copy(buf[34:66], structHash[:])
	return crypto.Keccak256Hash(buf[:])
}

// recoverEOA returns the address that signed digest with a 65-byte
// signature (v 27/28 or 0/1), or false.
func recoverEOA(digest common.Hash, sig []byte) (common.Address, bool) {
	if len(sig) != 65 {
		return common.Address{}, false
	}
	s := make([]byte, 65)
	copy(s, sig)
	if s[64] >= 27 {
		s[64] -= 27
	}
	if s[64] > 1 {
		return common.Address{}, false
	}
	pub, err := crypto.SigToPub(digest[:], s)
	if err != nil {
		return common.Address{}, false
	}
	return crypto.PubkeyToAddress(*pub), true
}
