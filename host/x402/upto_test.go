package x402

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// The upto digest equals go-ethereum's generic EIP-712 encoder's over the
// types x402UptoPermit2Proxy and Permit2 define: an independent check of
// the hand-rolled encoding.
func TestUptoDigestMatchesEIP712(t *testing.T) {
	w := Permit2Witness{
		Token: USDCBase.Address, Amount: big.NewInt(5_000_000), Spender: UptoProxyAddress,
		Nonce:    new(big.Int).SetBytes(common.FromHex("0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480")),
		Deadline: big.NewInt(1740672154), To: common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
		Facilitator: common.HexToAddress("0x1234567890123456789012345678901234567890"), ValidAfter: big.NewInt(1740672089),
	}
	td := apitypes.TypedData{
		Types: apitypes.Types{
			"EIP712Domain": {{Name: "name", Type: "string"}, {Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"}},
			"PermitWitnessTransferFrom": {{Name: "permitted", Type: "TokenPermissions"}, {Name: "spender", Type: "address"},
				{Name: "nonce", Type: "uint256"}, {Name: "deadline", Type: "uint256"}, {Name: "witness", Type: "Witness"}},
			"TokenPermissions": {{Name: "token", Type: "address"}, {Name: "amount", Type: "uint256"}},
			"Witness":          {{Name: "to", Type: "address"}, {Name: "facilitator", Type: "address"}, {Name: "validAfter", Type: "uint256"}},
		},
		PrimaryType: "PermitWitnessTransferFrom",
		Domain:      apitypes.TypedDataDomain{Name: "Permit2", ChainId: math.NewHexOrDecimal256(8453), VerifyingContract: Permit2Address.Hex()},
		Message: apitypes.TypedDataMessage{
			"permitted": map[string]any{"token": w.Token.Hex(), "amount": w.Amount.String()},
			"spender":   w.Spender.Hex(), "nonce": w.Nonce.String(), "deadline": w.Deadline.String(),
			"witness": map[string]any{"to": w.To.Hex(), "facilitator": w.Facilitator.Hex(), "validAfter": w.ValidAfter.String()},
		},
	}
	want, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Digest(8453); got != common.BytesToHash(want) {
		t.Fatalf("digest %s, go-ethereum's EIP-712 %x", got, want)
	}
}
