package identity

import (
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/bardoinference/bardo/host/x402"
)

var testDomain = x402.Domain{Name: "Bardo Inference", Version: "1", ChainID: 8453,
	VerifyingContract: common.HexToAddress("0x8004A169FB4a3325136EB29fA0ceB6D2e539a432")}

func apiDomain() apitypes.TypedDataDomain {
	return apitypes.TypedDataDomain{Name: testDomain.Name, Version: testDomain.Version,
		ChainId: math.NewHexOrDecimal256(int64(testDomain.ChainID)), VerifyingContract: testDomain.VerifyingContract.Hex()}
}

var domainType = []apitypes.Type{{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
	{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"}}

// The digests equal go-ethereum's EIP-712 encoder's (what wallets sign
// through eth_signTypedData_v4) for the same typed data.
func TestDigestsMatchEIP712(t *testing.T) {
	n := NewNonce()
	link := LinkMessage{AgentID: big.NewInt(42), KeyID: "7Hq2mP0aZk9X", Nonce: n, Deadline: 1767225600}
	want, _, err := apitypes.TypedDataAndHash(apitypes.TypedData{
		Types: apitypes.Types{"EIP712Domain": domainType, "Link": {{Name: "agentId", Type: "uint256"},
			{Name: "keyId", Type: "string"}, {Name: "nonce", Type: "bytes32"}, {Name: "deadline", Type: "uint256"}}},
		PrimaryType: "Link", Domain: apiDomain(),
		Message: apitypes.TypedDataMessage{"agentId": "42", "keyId": link.KeyID, "nonce": hexutil.Encode(n[:]), "deadline": "1767225600"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := link.Digest(testDomain); got != common.BytesToHash(want) {
		t.Fatalf("Link digest %s, go-ethereum %x", got, want)
	}
	body := []byte(`{"model":"gpt-4o"}`)
	d := DelegationMessage{AgentID: big.NewInt(42), Method: "POST", Path: "/v1/messages", BodyHash: crypto.Keccak256Hash(body),
		Timestamp: 1767225600, Nonce: n}
	want, _, err = apitypes.TypedDataAndHash(apitypes.TypedData{
		Types: apitypes.Types{"EIP712Domain": domainType, "Delegation": {{Name: "agentId", Type: "uint256"},
			{Name: "method", Type: "string"}, {Name: "path", Type: "string"}, {Name: "bodyHash", Type: "bytes32"},
			{Name: "timestamp", Type: "uint256"}, {Name: "nonce", Type: "bytes32"}}},
		PrimaryType: "Delegation", Domain: apiDomain(),
		Message: apitypes.TypedDataMessage{"agentId": "42", "method": "POST", "path": "/v1/messages",
			"bodyHash": d.BodyHash.Hex(), "timestamp": "1767225600", "nonce": hexutil.Encode(n[:])},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Digest(testDomain); got != common.BytesToHash(want) {
		t.Fatalf("Delegation digest %s, go-ethereum %x", got, want)
	}
}

func TestScoreAndTiers(t *testing.T) {
	for _, c := range []struct {
		count    uint64
		value    int64
		decimals uint8
		score    int64
		tier     string
		spread   int32
	}{
		{0, 0, 0, 0, "none", 2000},
		{49, 100, 0, 49, "none", 2000},
		{50, 100, 0, 50, "basic", 1800},
		{100, 50, 0, 50, "basic", 1800},
		{400, 5000, 2, 200, "verified", 1500}, // 50.00 at two decimals
		{500, 100, 0, 500, "trusted", 1200},
		{1000, 250, 0, 1000, "sovereign", 800}, // an average above 100 counts as 100
		{2000, -7, 0, 0, "none", 2000},
	} {
		s := Summary{Count: c.count, Value: big.NewInt(c.value), Decimals: c.decimals}
		tier := TierOf(s.Score())
		if s.Score() != c.score || tier.Name != c.tier || int32(tier.Spread) != c.spread {
			t.Errorf("%+v: score %d tier %+v", c, s.Score(), tier)
		}
	}
}

func TestParseDelegation(t *testing.T) {
	key, _ := crypto.GenerateKey()
	d := &Delegation{AgentID: big.NewInt(7), Signer: crypto.PubkeyToAddress(key.PublicKey), Timestamp: 1767225600,
		Nonce: NewNonce(), Signature: make([]byte, 65)}
	got, err := ParseDelegation(d.Encode())
	if err != nil || got.AgentID.Cmp(d.AgentID) != 0 || got.Signer != d.Signer || got.Nonce != d.Nonce || got.Timestamp != d.Timestamp {
		t.Fatalf("%+v %v", got, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(d.Encode())
	if _, err := ParseDelegation(base64.RawURLEncoding.EncodeToString(raw)); err != nil {
		t.Fatalf("URL alphabet: %v", err)
	}
	for _, bad := range []string{"", "!!", base64.StdEncoding.EncodeToString([]byte(`{}`)),
		strings.Repeat("A", maxHeader+4),
		base64.StdEncoding.EncodeToString([]byte(`{"agentId":"-1","signer":"0x0000000000000000000000000000000000000001","timestamp":1,"nonce":"0x` + strings.Repeat("00", 32) + `","signature":"0x00"}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"agentId":"1","signer":"0x01","timestamp":1,"nonce":"0x` + strings.Repeat("00", 32) + `","signature":"0x00"}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"agentId":"1","signer":"0x0000000000000000000000000000000000000001","timestamp":1,"nonce":"0x00","signature":"0x00"}`)),
	} {
		if _, err := ParseDelegation(bad); err != ErrMalformed {
			t.Errorf("%.60q: %v", bad, err)
		}
	}
}

// FuzzParseDelegation: any header value decodes or is ErrMalformed, never
// a panic, and what decodes encodes back to the same delegation.
func FuzzParseDelegation(f *testing.F) {
	d := &Delegation{AgentID: big.NewInt(7), Signer: common.HexToAddress("0x01"), Timestamp: 1767225600, Signature: []byte{1, 2}}
	f.Add(d.Encode())
	f.Add("")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"agentId":115792089237316195423570985008687907853269984665640564039457584007913129639936}`)))
	f.Fuzz(func(t *testing.T, v string) {
		got, err := ParseDelegation(v)
		if err != nil {
			if err != ErrMalformed {
				t.Fatalf("error %v", err)
			}
			return
		}
		again, err := ParseDelegation(got.Encode())
		if err != nil || again.AgentID.Cmp(got.AgentID) != 0 || again.Signer != got.Signer || again.Nonce != got.Nonce ||
			again.Timestamp != got.Timestamp || string(again.Signature) != string(got.Signature) {
			t.Fatalf("round trip: %+v %+v %v", got, again, err)
		}
	})
}
