// Package auth turns a request's credential into a verified caller: it
// creates and verifies the gateway's prepaid API keys (bardo_sk_…), checks
// their scopes, and detects which kind of credential a request carries.
//
// A key is "bardo_sk_" followed by a 12-character public id and a
// 32-character secret, both base62. Only HMAC-SHA256(server secret, whole
// token) is stored, under the id; verification recomputes it and compares
// in constant time. See README.md for the choices and their numbers.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"math/big"
)

// Prefix starts every gateway API key.
const Prefix = "bardo_sk_"

const (
	idLen     = 12 // public lookup id: 62^12 ≈ 2^71, unique by construction (retried on collision)
	secretLen = 32 // 62^32 ≈ 2^190 bits of secret
	// TokenLen is the length of a whole key.
	TokenLen = len(Prefix) + idLen + secretLen
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomBase62 returns n uniformly random base62 characters.
func randomBase62(n int) (string, error) {
	b := make([]byte, n)
	max := big.NewInt(int64(len(base62)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b[i] = base62[v.Int64()]
	}
	return string(b), nil
}

// NewToken returns a fresh key and its public id.
func NewToken() (token, id string, err error) {
	id, err = randomBase62(idLen)
	if err != nil {
		return "", "", err
	}
	secret, err := randomBase62(secretLen)
	if err != nil {
		return "", "", err
	}
	return Prefix + id + secret, id, nil
}

// TokenID returns the public id of a well-formed key, or false.
func TokenID(token string) (string, bool) {
	if len(token) != TokenLen || token[:len(Prefix)] != Prefix {
		return "", false
	}
	for i := len(Prefix); i < len(token); i++ {
		c := token[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return "", false
		}
	}
	return token[len(Prefix) : len(Prefix)+idLen], true
}

// Hasher computes the stored form of a key.
type Hasher struct{ secret []byte }

// NewHasher returns a Hasher under the server secret.
func NewHasher(secret []byte) Hasher { return Hasher{secret: secret} }

// Sum returns HMAC-SHA256(secret, token).
func (h Hasher) Sum(token string) []byte {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(token))
	return m.Sum(nil)
}

// Equal reports in constant time whether token hashes to sum.
func (h Hasher) Equal(token string, sum []byte) bool {
	return hmac.Equal(h.Sum(token), sum)
}
