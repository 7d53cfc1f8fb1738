// Package x402 implements the x402 payment protocol for the host: the wire
// types and HTTP headers of protocol versions 1 and 2, the "exact" scheme on
// EVM chains (an EIP-3009 transferWithAuthorization signed as EIP-712 typed
// data), a Verifier that checks such payments for a resource server, and a
// Payer that answers an upstream's 402 from the gateway's own wallet under a
// spending policy.
//
// The specification is coinbase/x402, directory specs/:
//
//   - specs/x402-specification-v1.md and specs/x402-specification-v2.md:
//     PaymentRequired, PaymentRequirements, PaymentPayload,
//     SettlementResponse, VerifyResponse and the error codes of section 9.
//   - specs/transports-v1/http.md: the 402 JSON body, X-PAYMENT and
//     X-PAYMENT-RESPONSE.
//   - specs/transports-v2/http.md: PAYMENT-REQUIRED, PAYMENT-SIGNATURE and
//     PAYMENT-RESPONSE, each base64-encoded JSON.
//   - specs/schemes/exact/scheme_exact_evm.md: the EIP-3009 payload, its
//     field encodings and the verification steps.
//
// The private key never leaves the Signer: nothing in this package returns
// key bytes, formats them, or logs them, and the Signer only signs EIP-3009
// TransferWithAuthorization messages, never arbitrary digests, so whoever
// reaches it (a host function called by a plugin, say) cannot make it sign
// a transaction or an unrelated permit.
//
// Out of scope here: settling on chain or through a facilitator, balance
// checks and transaction simulation (steps 2 and 5 of the scheme's
// verification list), smart-contract wallets (ERC-1271 and ERC-6492
// signatures are recognised and refused with ErrContractSignature), the
// Permit2 mechanism and the "upto" scheme.
package x402
