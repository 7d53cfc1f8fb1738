package auth

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// FuzzVerifyHeader runs what admission runs on a request's raw header
// block, as the server's own parser (fasthttp) reads it: Detect, then
// Verify against a real store holding one valid and one revoked key. In
// the fuzzed text {KEY} stands for the valid key and {REVOKED} for the
// revoked one, so mutations explore the neighbourhood of real keys. The
// request authenticates exactly when the credential found is the valid key
// verbatim; every other outcome is a refusal wrapping ErrUnauthenticated
// (never a store error, never a panic).
func FuzzVerifyHeader(f *testing.F) {
	for _, seed := range []string{
		"Authorization: Bearer {KEY}",
		"authorization: bearer\t{KEY}  ",
		"Authorization: BEARER {KEY}",
		"x-api-key: {KEY}",
		"X-Api-Key:   {KEY}\t",
		"Authorization: Bearer {KEY}\r\nx-api-key: {KEY}",
		"Authorization: Bearer {KEY}\r\nx-api-key: {REVOKED}",
		"Authorization: Bearer {REVOKED}",
		"Authorization: Bearer {KEY}x",
		"Authorization: Bearer x{KEY}",
		"Authorization: Basic {KEY}",
		"Authorization: Bearer{KEY}",
		"Authorization: Bearer {KEY} {KEY}",
		"Authorization: Bearer sk-ant-api03-someone-elses-key",
		"Authorization: Bearer " + Prefix,
		"Authorization: Bearer bardo_sk_' OR '1'='1",
		"Authorization: Bearer bardo_sk_\x00\x01\x7f\xff",
		"Authorization: junk\r\nAuthorization: Bearer {KEY}",
		"Authorization: Bearer {KEY}\r\nAuthorization: junk",
		"Authorization: Bearer\r\n {KEY}",
		"x-api-key: " + strings.Repeat("bardo_sk_", 900),
		"Authorization: Bearer " + strings.Repeat("A", 8000),
		"",
	} {
		f.Add(seed)
	}
	s := openStore(f)
	a := New(s, secret(), Options{TTL: time.Minute})
	valid, _, err := a.Create(ctx(), "acct", KeySpec{Name: "valid"})
	mustNil(f, err)
	revoked, rk, err := a.Create(ctx(), "acct", KeySpec{Name: "revoked"})
	mustNil(f, err)
	mustNil(f, a.Revoke(ctx(), rk.ID))

	f.Fuzz(func(t *testing.T, lines string) {
		lines = strings.NewReplacer("{KEY}", valid, "{REVOKED}", revoked).Replace(lines)
		raw := "POST /v1/messages HTTP/1.1\r\nHost: gw\r\n" + lines + "\r\n\r\n"
		var h fasthttp.RequestHeader
		if err := h.Read(bufio.NewReaderSize(strings.NewReader(raw), 64<<10)); err != nil {
			return // the server answers 400/431 before admission
		}
		c, err := Detect(&h, Schemes)
		if err != nil {
			if !errors.Is(err, ErrNoCredential) && !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("Detect: %v", err)
			}
			return
		}
		if !bytes.Contains(h.Peek("Authorization"), []byte(c.Value)) && !bytes.Contains(h.Peek("X-Api-Key"), []byte(c.Value)) {
			t.Fatalf("credential %q is in neither header", c.Value)
		}
		p, err := a.Verify(ctx(), c.Value)
		if c.Value == valid {
			if err != nil || p.Key.AccountID != "acct" {
				t.Fatalf("the valid key was refused: %v", err)
			}
			return
		}
		if err == nil || !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("credential %q: err %v, want a refusal", c.Value, err)
		}
		if strings.Contains(err.Error(), c.Value) && c.Value != "" {
			t.Fatalf("the refusal quotes the credential: %v", err)
		}
	})
}
