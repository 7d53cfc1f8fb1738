package x402

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// EIP-712 type hashes. The TransferWithAuthorization type is EIP-3009's and
// is what Circle's FiatToken (EIP3009.sol) hashes; the field list is also in
// x402-specification-v2.md section 6.1.1.
var (
	eip712DomainTypeHash = crypto.Keccak256Hash([]byte(
		"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	// TransferWithAuthorizationTypeHash is keccak256 of the EIP-3009 type
	// string; on chain it is FiatToken's TRANSFER_WITH_AUTHORIZATION_TYPEHASH.
	TransferWithAuthorizationTypeHash = crypto.Keccak256Hash([]byte(
		"TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
)

// Domain is an EIP-712 domain with the four fields FiatToken uses.
type Domain struct {
	Name              string
	Version           string
	ChainID           uint64
	VerifyingContract common.Address
}

// Separator returns the domain separator: hashStruct(EIP712Domain). For
// USDC on Base it equals the contract's DOMAIN_SEPARATOR().
func (d Domain) Separator() common.Hash {
	var buf [5 * 32]byte
	copy(buf[0:32], eip712DomainTypeHash[:])
	copy(buf[32:64], crypto.Keccak256([]byte(d.Name)))
	copy(buf[64:96], crypto.Keccak256([]byte(d.Version)))
	new(big.Int).SetUint64(d.ChainID).FillBytes(buf[96:128])
	copy(buf[128+12:160], d.VerifyingContract[:])
	return crypto.Keccak256Hash(buf[:])
}

// TransferAuthorization is a typed EIP-3009 authorization. Integers are
// uint256 and must be non-negative and below 2^256; ParseAuthorization and
// the Payer only produce such values.
type TransferAuthorization struct {
	From        common.Address
	To          common.Address
	Value       *big.Int
	ValidAfter  *big.Int // unix seconds
	ValidBefore *big.Int // unix seconds
	Nonce       [32]byte
}

// StructHash returns hashStruct(TransferWithAuthorization).
func (a *TransferAuthorization) StructHash() common.Hash {
	var buf [7 * 32]byte
	copy(buf[0:32], TransferWithAuthorizationTypeHash[:])
	copy(buf[32+12:64], a.From[:])
	copy(buf[64+12:96], a.To[:])
	a.Value.FillBytes(buf[96:128])
	a.ValidAfter.FillBytes(buf[128:160])
	a.ValidBefore.FillBytes(buf[160:192])
	copy(buf[192:224], a.Nonce[:])
	return crypto.Keccak256Hash(buf[:])
}

// TypedDataHash returns the EIP-712 digest that is signed and ecrecovered:
// keccak256(0x19 0x01 || domainSeparator || hashStruct(message)).
func TypedDataHash(d Domain, a *TransferAuthorization) common.Hash {
	return typedDataHash(d.Separator(), a.StructHash())
}

func typedDataHash(sep, structHash common.Hash) common.Hash {
	var buf [2 + 32 + 32]byte
	buf[0], buf[1] = 0x19, 0x01
	copy(buf[2:34], sep[:])
	copy(buf[34:66], structHash[:])
	return crypto.Keccak256Hash(buf[:])
}

// Wire returns the authorization in its JSON wire form: EIP-55 addresses,
// decimal integers and a 0x-prefixed 32-byte hex nonce, as the reference
// clients send them.
func (a *TransferAuthorization) Wire() Authorization {
	return Authorization{
		From:        a.From.Hex(),
		To:          a.To.Hex(),
		Value:       a.Value.String(),
		ValidAfter:  a.ValidAfter.String(),
		ValidBefore: a.ValidBefore.String(),
		Nonce:       "0x" + common.Bytes2Hex(a.Nonce[:]),
	}
}

// ParseAuthorization turns the wire form into typed values, applying the
// encoding rules of specs/schemes/exact/scheme_exact_evm.md: 0x-prefixed hex
// addresses, integers in hex when 0x-prefixed and decimal otherwise, leading
// zeros optional.
func ParseAuthorization(w *Authorization) (*TransferAuthorization, error) {
	var a TransferAuthorization
	var err error
	if a.From, err = ParseAddress(w.From); err != nil {
		return nil, fmt.Errorf("authorization.from: %w", err)
	}
	if a.To, err = ParseAddress(w.To); err != nil {
		return nil, fmt.Errorf("authorization.to: %w", err)
	}
	if a.Value, err = parseUint256(w.Value); err != nil {
		return nil, fmt.Errorf("authorization.value: %w", err)
	}
	if a.ValidAfter, err = parseUint256(w.ValidAfter); err != nil {
		return nil, fmt.Errorf("authorization.validAfter: %w", err)
	}
	if a.ValidBefore, err = parseUint256(w.ValidBefore); err != nil {
		return nil, fmt.Errorf("authorization.validBefore: %w", err)
	}
	n, err := parseUint256(w.Nonce)
	if err != nil {
		return nil, fmt.Errorf("authorization.nonce: %w", err)
	}
	n.FillBytes(a.Nonce[:])
	return &a, nil
}

var two256 = new(big.Int).Lsh(big.NewInt(1), 256)

// parseUint256 reads a uint256 written in decimal, or in hex with a 0x/0X
// prefix. Signs, spaces and empty digits are refused.
func parseUint256(s string) (*big.Int, error) {
	digits, base := s, 10
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		digits, base = s[2:], 16
	}
	if digits == "" || len(digits) > 80 {
		return nil, fmt.Errorf("%q is not a uint256", s)
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		ok := c >= '0' && c <= '9' || base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
		if !ok {
			return nil, fmt.Errorf("%q is not a uint256", s)
		}
	}
	v, ok := new(big.Int).SetString(digits, base)
	if !ok || v.Cmp(two256) >= 0 {
		return nil, fmt.Errorf("%q is not a uint256", s)
	}
	return v, nil
}

var errBadAddress = errors.New("not a 0x-prefixed 20-byte hex address")

// ParseAddress reads a 0x-prefixed hex address. All-lower and all-upper
// case are accepted as they carry no checksum; mixed case must be a valid
// EIP-55 checksum, so a mistyped address is caught rather than paid.
func ParseAddress(s string) (common.Address, error) {
	if len(s) != 42 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return common.Address{}, fmt.Errorf("%q: %w", s, errBadAddress)
	}
	hex := s[2:]
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return common.Address{}, fmt.Errorf("%q: %w", s, errBadAddress)
		}
	}
	a := common.HexToAddress(s)
	if hex != strings.ToLower(hex) && hex != strings.ToUpper(hex) && a.Hex()[2:] != hex {
		return common.Address{}, fmt.Errorf("%q: bad EIP-55 checksum", s)
	}
	return a, nil
}
