package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Attestation receipts. Venice's public API proves TEE inference through
// separate calls (GET /tee/attestation, GET /tee/signature); an adapter can
// make no call of its own, so the receipt must come with the response. The
// spec names the header (X-Venice-Attestation-Receipt, "a base64-encoded
// attestation document") and its fields but not their encoding; the encoding
// below is Bardo's, documented in README.md ("Attestation receipt"), and the
// fake upstream produces it.

// receiptVersion is the only receipt format this adapter reads.
const receiptVersion = 1

// receiptContext starts every signed message, so a signature made for
// anything else can never pass as a receipt.
const receiptContext = "venice-attestation-v1"

// receiptMaxAgeSec bounds a receipt's age (spec: "receipt timestamp within
// 30s"), and by symmetry how far in the future its clock may run.
const receiptMaxAgeSec = 30

// receipt is the decoded X-Venice-Attestation-Receipt header.
type receipt struct {
	Version            int    `json:"version"`
	EnclaveMeasurement string `json:"enclave_measurement"`
	Nonce              string `json:"nonce"`
	Timestamp          int64  `json:"timestamp"` // Unix milliseconds
	ModelID            string `json:"model_id"`
	ResponseHash       string `json:"response_hash"` // lower-case hex SHA-256 of the response body
	DebugMode          *bool  `json:"debug_mode"`    // required: a receipt that does not say is refused
	Signature          string `json:"signature"`     // base64 Ed25519 signature of signedMessage
}

// signedMessage is what the enclave signs: the context string and every
// field but the signature, one per line, in this order. Lines make the
// message unambiguous without a canonical JSON form; no field may hold a
// newline (verify refuses one that does).
func (r *receipt) signedMessage() []byte {
	debug := "false"
	if r.DebugMode != nil && *r.DebugMode {
		debug = "true"
	}
	return []byte(strings.Join([]string{
		receiptContext,
		strconv.Itoa(r.Version),
		r.EnclaveMeasurement,
		r.Nonce,
		strconv.FormatInt(r.Timestamp, 10),
		r.ModelID,
		r.ResponseHash,
		debug,
	}, "\n"))
}

// Reasons a receipt is refused; tests match on them.
var (
	errNoReceipt      = errors.New("no " + headerAttestationReceipt + " header")
	errManyReceipts   = errors.New("more than one " + headerAttestationReceipt + " header")
	errMalformed      = errors.New("malformed receipt")
	errDebugEnclave   = errors.New("the enclave runs in debug mode, which has no integrity guarantee")
	errStale          = errors.New("receipt too old")
	errFuture         = errors.New("receipt dated in the future")
	errNoKey          = errors.New("no attestation key is configured (attestation_keys)")
	errSignature      = errors.New("the signature does not verify against any configured attestation key")
	errMeasurement    = errors.New("the enclave measurement is not in enclave_measurements")
	errModelMismatch  = errors.New("the receipt attests another model")
	errNonceMismatch  = errors.New("the receipt answers another request's nonce")
	errHashMismatch   = errors.New("the response body does not match the receipt's response_hash")
	errNewlineInField = errors.New("a receipt field holds a newline")
)

// receiptCheck is everything verify needs, so it can run natively in tests
// with a chosen clock and key.
type receiptCheck struct {
	header    []string // every X-Venice-Attestation-Receipt value
	body      []byte   // the response body as received
	model     string   // the model the request named
	nonce     string   // the nonce the request carried
	now       time.Time
	keys      []ed25519.PublicKey
	enclaves  []string // allowed measurements; empty: any
	bodyHash  func([]byte) [32]byte
	maxAgeSec int64
}

// verify checks a receipt in the spec's order (debug flag, freshness,
// signature, response hash), with the binding checks (enclave, model,
// nonce) after the signature has proved who wrote them.
func (c *receiptCheck) verify() error {
	switch len(c.header) {
	case 0:
		return errNoReceipt
	case 1:
	default:
		return errManyReceipts
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(c.header[0]))
	if err != nil {
		return fmt.Errorf("%w: not base64: %v", errMalformed, err)
	}
	var r receipt
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	switch {
	case r.Version != receiptVersion:
		return fmt.Errorf("%w: version %d, want %d", errMalformed, r.Version, receiptVersion)
	case r.DebugMode == nil:
		return fmt.Errorf("%w: debug_mode missing", errMalformed)
	case r.Signature == "", r.ResponseHash == "", r.Timestamp == 0:
		return fmt.Errorf("%w: signature, response_hash and timestamp are required", errMalformed)
	}
	for _, f := range []string{r.EnclaveMeasurement, r.Nonce, r.ModelID, r.ResponseHash} {
		if strings.ContainsAny(f, "\n\r") {
			return errNewlineInField
		}
	}

	// 1. Debug enclaves have no integrity guarantee: non-negotiable.
	if *r.DebugMode {
		return errDebugEnclave
	}
	// 2. Freshness.
	age := c.now.UnixMilli() - r.Timestamp
	if age > c.maxAgeSec*1000 {
		return fmt.Errorf("%w: %.1f s old, at most %d s", errStale, float64(age)/1000, c.maxAgeSec)
	}
	if -age > c.maxAgeSec*1000 {
		return fmt.Errorf("%w: %.1f s ahead of the gateway's clock", errFuture, float64(-age)/1000)
	}
	// 3. Signature.
	if len(c.keys) == 0 {
		return errNoKey
	}
	sig, err := base64.StdEncoding.DecodeString(r.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: the signature is not %d base64 bytes", errSignature, ed25519.SignatureSize)
	}
	msg := r.signedMessage()
	signed := false
	for _, k := range c.keys {
		if ed25519.Verify(k, msg, sig) {
			signed = true
			break
		}
	}
	if !signed {
		return errSignature
	}
	// Bindings: this enclave, this model, this request.
	if len(c.enclaves) > 0 && !containsFold(c.enclaves, r.EnclaveMeasurement) {
		return fmt.Errorf("%w: %s", errMeasurement, quote(r.EnclaveMeasurement))
	}
	if r.ModelID != c.model {
		return fmt.Errorf("%w: %s, not %s", errModelMismatch, quote(r.ModelID), quote(c.model))
	}
	if r.Nonce != c.nonce {
		return errNonceMismatch
	}
	// 4. The response is the one the enclave produced.
	sum := c.bodyHash(c.body)
	if !strings.EqualFold(r.ResponseHash, hex.EncodeToString(sum[:])) {
		return errHashMismatch
	}
	return nil
}

// attestationNonce is the freshness challenge sent with a TEE request
// (X-Venice-Attestation-Nonce) and expected back in its receipt. It is
// derived from the request id, which is random per request and seen by
// both encode and decode; hashing it keeps the gateway's own ids private.
// (A few dozen bytes: hashing them in the guest costs less than the host
// call would.)
func attestationNonce(requestID string) string {
	sum := sha256.Sum256([]byte("bardo-venice-nonce\x00" + requestID))
	return hex.EncodeToString(sum[:16])
}
