package x402

import (
	"context"
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// signature checks the payload's signature s over digest for from and
// returns its bytes. A 65-byte ECDSA signature that recovers to from is
// accepted offline. Otherwise, with v.Chain set, from may be a contract
// wallet: it is asked (ERC-1271, ERC-6492 for one not deployed yet), as
// FiatToken's transferWithAuthorization will ask it. Without v.Chain a
// contract signature is refused with ReasonContractSignature.
func (v *Verifier) signature(ctx context.Context, payer string, from common.Address, digest common.Hash, s string) ([]byte, error) {
	sig, err := decodeSignature(s)
	switch {
	case err == nil:
		signer, rerr := recoverSigner(digest, sig)
		if rerr == nil && signer == from {
			return sig, nil
		}
		if v.Chain == nil {
			if rerr != nil {
				return nil, refuse(ReasonSignature, payer, "%w", rerr)
			}
			// Also what a wrong chain, token, name or version looks like:
			// the domain is part of the digest, so the signature recovers
			// to an unrelated address.
			return nil, refuse(ReasonSignature, payer, "signature is by %s, not by authorization.from", signer.Hex())
		}
		// A wallet contract may check its owner's 65-byte signature.
	case !errors.Is(err, ErrContractSignature):
		return nil, refuse(ReasonSignature, payer, "%w", err)
	case v.Chain == nil:
		return nil, &VerifyError{Reason: ReasonContractSignature, Payer: payer, Err: err}
	}
	raw := common.FromHex(s) // decodeSignature checked it is hex
	ok, err := v.Chain.ValidSignature(ctx, from, digest, raw)
	if errors.Is(err, ErrFactoryNotAllowed) {
		return nil, &VerifyError{Reason: ReasonFactoryNotAllowed, Payer: payer, Err: err}
	}
	if err != nil {
		return nil, &VerifyError{Reason: ReasonUnexpectedVerify, Payer: payer, Err: err}
	}
	if !ok {
		return nil, refuse(ReasonSignature, payer, "the signature is not by authorization.from, and %s is not a contract wallet that accepts it (ERC-1271)", from.Hex())
	}
	return raw, nil
}

// funds checks, with v.Chain set, that from holds at least value of
// token (spec step 2): a payment that cannot settle is refused before
// anything is served.
func (v *Verifier) funds(ctx context.Context, payer string, token, from common.Address, value *big.Int) error {
	if v.Chain == nil {
		return nil
	}
	bal, err := v.Chain.BalanceOf(ctx, token, from)
	if err != nil {
		return &VerifyError{Reason: ReasonUnexpectedVerify, Payer: payer, Err: err}
	}
	if bal.Cmp(value) < 0 {
		return refuse(ReasonInsufficientFunds, payer, "balance %s is below the authorization's value %s", bal, value)
	}
	return nil
}
