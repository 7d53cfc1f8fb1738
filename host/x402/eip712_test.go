package x402

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// On-chain values, read from the contracts (FiatToken v2): the
// TRANSFER_WITH_AUTHORIZATION_TYPEHASH constant and DOMAIN_SEPARATOR() of
// USDC on Base and on Base Sepolia. They pin the type string and the
// per-deployment EIP-712 names, which are easy to get wrong ("USDC" vs
// "USD Coin") and silently break every signature when wrong.
const (
	onchainTypeHash          = "0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267"
	onchainSeparatorBase     = "0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f"
	onchainSeparatorBaseSepo = "0x71f17a3b2ff373b803d70a5a07c046c1a2bc8e89c09ef722fcb047abe94c9818"
)

func tokenDomain(t Token) Domain {
	id, err := ChainID(t.Network)
	if err != nil {
		panic(err)
	}
	return Domain{Name: t.Name, Version: t.Version, ChainID: id, VerifyingContract: t.Address}
}

func TestOnchainConstants(t *testing.T) {
	if got := TransferWithAuthorizationTypeHash.Hex(); got != onchainTypeHash {
		t.Errorf("type hash %s, want %s", got, onchainTypeHash)
	}
	if got := tokenDomain(USDCBase).Separator().Hex(); got != onchainSeparatorBase {
		t.Errorf("Base USDC separator %s, want %s", got, onchainSeparatorBase)
	}
	if got := tokenDomain(USDCBaseSepolia).Separator().Hex(); got != onchainSeparatorBaseSepo {
		t.Errorf("Base Sepolia USDC separator %s, want %s", got, onchainSeparatorBaseSepo)
	}
}

// apitypesDigest computes the digest with go-ethereum's generic EIP-712
// implementation (the one behind eth_signTypedData_v4), independently of
// the hand-rolled encoding in eip712.go.
func apitypesDigest(t *testing.T, d Domain, a *TransferAuthorization) common.Hash {
	t.Helper()
	td := apitypes.TypedData{
		Types: apitypes.Types{
			"EIP712Domain": {
				{Name: "name", Type: "string"},
				{Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"},
				{Name: "verifyingContract", Type: "address"},
			},
			"TransferWithAuthorization": {
				{Name: "from", Type: "address"},
				{Name: "to", Type: "address"},
				{Name: "value", Type: "uint256"},
				{Name: "validAfter", Type: "uint256"},
				{Name: "validBefore", Type: "uint256"},
				{Name: "nonce", Type: "bytes32"},
			},
		},
		PrimaryType: "TransferWithAuthorization",
		Domain: apitypes.TypedDataDomain{
			Name: d.Name, Version: d.Version,
			ChainId:           math.NewHexOrDecimal256(int64(d.ChainID)),
			VerifyingContract: d.VerifyingContract.Hex(),
		},
		Message: apitypes.TypedDataMessage{
			"from":        a.From.Hex(),
			"to":          a.To.Hex(),
			"value":       a.Value.String(),
			"validAfter":  a.ValidAfter.String(),
			"validBefore": a.ValidBefore.String(),
			"nonce":       a.Nonce[:],
		},
	}
	h, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatalf("apitypes: %v", err)
	}
	return common.BytesToHash(h)
}

func TestDigestMatchesApitypes(t *testing.T) {
	maxU256 := new(big.Int).Sub(two256, big.NewInt(1))
	cases := []struct {
		name string
		d    Domain
		a    TransferAuthorization
	}{
		{"base", tokenDomain(USDCBase), TransferAuthorization{
			From:  common.HexToAddress("0x857b06519E91e3A54538791bDbb0E22373e36b66"),
			To:    common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
			Value: big.NewInt(10000), ValidAfter: big.NewInt(1740672089), ValidBefore: big.NewInt(1740672154),
			Nonce: common.HexToHash("0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480"),
		}},
		{"sepolia-extremes", tokenDomain(USDCBaseSepolia), TransferAuthorization{
			From: common.Address{}, To: common.HexToAddress("0xffffffffffffffffffffffffffffffffffffffff"),
			Value: maxU256, ValidAfter: big.NewInt(0), ValidBefore: maxU256,
			Nonce: common.Hash{},
		}},
		{"other-domain", Domain{Name: "Token With A Long Name", Version: "10", ChainID: 1 << 40, VerifyingContract: common.HexToAddress("0x01")}, TransferAuthorization{
			From: common.HexToAddress("0xabc"), To: common.HexToAddress("0xdef"),
			Value: big.NewInt(1), ValidAfter: big.NewInt(5), ValidBefore: big.NewInt(6),
			Nonce: common.HexToHash("0x01"),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := TypedDataHash(c.d, &c.a)
			want := apitypesDigest(t, c.d, &c.a)
			if got != want {
				t.Fatalf("digest %s, apitypes %s", got.Hex(), want.Hex())
			}
		})
	}
}

// TestSpecExampleSignature checks the digest against the example payload of
// specs/schemes/exact/scheme_exact_evm.md (Base Sepolia USDC, name "USDC"):
// its signature recovers to its "from" only if the digest is right.
func TestSpecExampleSignature(t *testing.T) {
	a, err := ParseAuthorization(&Authorization{
		From:        "0x857b06519E91e3A54538791bDbb0E22373e36b66",
		To:          "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		Value:       "10000",
		ValidAfter:  "1740672089",
		ValidBefore: "1740672154",
		Nonce:       "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480",
	})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := decodeSignature("0x2d6a7588d6acca505cbf0d9a4a227e0c52c6c34008c8e8986a1283259764173608a2ce6496642e377d6da8dbbf5836e9bd15092f9ecab05ded3d6293af148b571c")
	if err != nil {
		t.Fatal(err)
	}
	got, err := recoverSigner(TypedDataHash(tokenDomain(USDCBaseSepolia), a), sig)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recovered %s", got.Hex())
	if got != a.From {
		t.Fatalf("spec example signature recovers to %s, want %s", got.Hex(), a.From.Hex())
	}
}

func TestSignRecoverRoundTrip(t *testing.T) {
	k, err := GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	a := &TransferAuthorization{From: k.Address(), To: common.HexToAddress("0x1234"),
		Value: big.NewInt(42), ValidAfter: big.NewInt(1), ValidBefore: big.NewInt(2)}
	a.Nonce[0] = 7
	d := tokenDomain(USDCBase)
	sig, err := k.SignTransferAuthorization(context.Background(), d, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 65 || (sig[64] != 27 && sig[64] != 28) {
		t.Fatalf("signature %x: want 65 bytes with v 27/28", sig)
	}
	got, err := recoverSigner(TypedDataHash(d, a), sig)
	if err != nil || got != k.Address() {
		t.Fatalf("recovered %s, %v; want %s", got.Hex(), err, k.Address().Hex())
	}
	// v as a raw recovery id (0/1) is accepted too.
	raw := append([]byte(nil), sig...)
	raw[64] -= 27
	if got, err := recoverSigner(TypedDataHash(d, a), raw); err != nil || got != k.Address() {
		t.Fatalf("v=0/1: recovered %s, %v", got.Hex(), err)
	}
	// The signer refuses to sign for someone else.
	other := *a
	other.From = common.HexToAddress("0x99")
	if _, err := k.SignTransferAuthorization(context.Background(), d, &other); err == nil {
		t.Fatal("signed an authorization from another address")
	}
}
