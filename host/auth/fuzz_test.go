package auth

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// FuzzDetect: whatever the two headers hold, detection never panics, and a
// key it returns is a bardo_sk_ value taken verbatim from one of them.
func FuzzDetect(f *testing.F) {
	tok, _, _ := NewToken()
	f.Add("Bearer "+tok, "")
	f.Add("", tok)
	f.Add("Bearer "+tok, tok+"x")
	f.Add("bearer\t"+Prefix, " "+Prefix+" ")
	f.Add("Bearer", "")
	f.Add("Bearer \x00"+tok, "\xff")
	f.Fuzz(func(t *testing.T, authz, apiKey string) {
		h := http.Header{}
		h["Authorization"] = []string{authz}
		h["X-Api-Key"] = []string{apiKey}
		c, err := Detect(HTTPHeader(h), Schemes)
		if err != nil {
			if c != (Credential{}) || !(errors.Is(err, ErrNoCredential) || errors.Is(err, ErrAmbiguous)) {
				t.Fatalf("error %v with credential %+v", err, c)
			}
			return
		}
		if c.Kind != KindKey || !strings.HasPrefix(c.Value, Prefix) ||
			!(strings.Contains(authz, c.Value) || strings.Contains(apiKey, c.Value)) {
			t.Fatalf("credential %+v from %q / %q", c, authz, apiKey)
		}
		if id, ok := TokenID(c.Value); ok && (len(id) != idLen || !strings.Contains(c.Value, id)) {
			t.Fatalf("id %q of %q", id, c.Value)
		}
	})
}

// FuzzTokenID: TokenID accepts exactly the well-formed keys.
func FuzzTokenID(f *testing.F) {
	tok, _, _ := NewToken()
	f.Add(tok)
	f.Add(Prefix)
	f.Add(strings.Repeat("a", TokenLen))
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := TokenID(s)
		if ok != (len(s) == TokenLen && strings.HasPrefix(s, Prefix) && strings.Trim(s[len(Prefix):], base62) == "") {
			t.Fatalf("TokenID(%q) = %v", s, ok)
		}
		if ok && id != s[len(Prefix):len(Prefix)+idLen] {
			t.Fatalf("id %q", id)
		}
	})
}
