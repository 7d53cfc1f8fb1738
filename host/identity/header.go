package identity

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// HeaderDelegation is the request header carrying a delegation.
const HeaderDelegation = "X-Bardo-Delegation"

// maxHeader bounds the header's encoded size: a contract wallet's
// signature may be long, but not unbounded.
const maxHeader = 8 << 10

// Delegation is a decoded X-Bardo-Delegation header: base64 (standard or
// URL alphabet, padded or not) of the JSON
//
//	{"agentId":"42","signer":"0x…","timestamp":1767225600,"nonce":"0x<32 bytes>","signature":"0x…"}
type Delegation struct {
	AgentID   *big.Int
	Signer    common.Address
	Timestamp int64
	Nonce     [32]byte
	Signature []byte
}

// ErrMalformed: the delegation header cannot be decoded.
var ErrMalformed = errors.New("malformed X-Bardo-Delegation header")

// ParseDelegation decodes a delegation header's value.
func ParseDelegation(v string) (*Delegation, error) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxHeader {
		return nil, ErrMalformed
	}
	raw, err := decodeBase64(v)
	if err != nil {
		return nil, ErrMalformed
	}
	var j struct {
		AgentID   json.RawMessage `json:"agentId"`
		Signer    string          `json:"signer"`
		Timestamp int64           `json:"timestamp"`
		Nonce     string          `json:"nonce"`
		Signature string          `json:"signature"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, ErrMalformed
	}
	d := &Delegation{Timestamp: j.Timestamp}
	if d.AgentID, err = parseAgentID(j.AgentID); err != nil {
		return nil, err
	}
	if !common.IsHexAddress(j.Signer) || !strings.HasPrefix(j.Signer, "0x") {
		return nil, ErrMalformed
	}
	d.Signer = common.HexToAddress(j.Signer)
	n, err := hexutil.Decode(j.Nonce)
	if err != nil || len(n) != 32 {
		return nil, ErrMalformed
	}
	copy(d.Nonce[:], n)
	if d.Signature, err = hexutil.Decode(j.Signature); err != nil || len(d.Signature) == 0 || d.Timestamp <= 0 {
		return nil, ErrMalformed
	}
	return d, nil
}

// Encode returns the header value of d (what a client sends).
func (d *Delegation) Encode() string {
	b, _ := json.Marshal(map[string]any{"agentId": d.AgentID.String(), "signer": d.Signer.Hex(),
		"timestamp": d.Timestamp, "nonce": hexutil.Encode(d.Nonce[:]), "signature": hexutil.Encode(d.Signature)})
	return base64.StdEncoding.EncodeToString(b)
}

// parseAgentID reads a uint256 agent id given as a JSON string (decimal or
// 0x hex) or number.
func parseAgentID(raw json.RawMessage) (*big.Int, error) {
	s := strings.Trim(string(raw), `"`)
	if s == "" || len(s) > 80 {
		return nil, ErrMalformed
	}
	var n *big.Int
	var ok bool
	if strings.HasPrefix(s, "0x") {
		n, ok = new(big.Int).SetString(s[2:], 16)
	} else {
		n, ok = new(big.Int).SetString(s, 10)
	}
	if !ok || n.Sign() < 0 || n.BitLen() > 256 {
		return nil, ErrMalformed
	}
	return n, nil
}

func decodeBase64(v string) ([]byte, error) {
	v = strings.TrimRight(v, "=")
	if strings.ContainsAny(v, "-_") {
		return base64.RawURLEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}
