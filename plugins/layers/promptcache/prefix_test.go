//go:build !wasip1

package main

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugintest"
)

// The memo gives each prefix its own hash: two prefixes the sampled hash
// cannot tell apart (same length, head and tail) are compared whole, and
// a tenant's prefix is never another tenant's entry.
func TestPrefixMemo(t *testing.T) {
	plugintest.New(t, `{}`)
	clear(prefixes)
	body := strings.Repeat("tools and system prompt ", 100)
	a := "gpt-4o\x00" + body
	b := []byte(a)
	b[len(b)/2+3] ^= 1 // between the sampled words
	if memo.Spread([]byte(a)) != memo.Spread(b) {
		t.Fatal("the test needs prefixes the sampled hash cannot tell apart")
	}
	check := func(tenant, prefix string) {
		t.Helper()
		buf := append([]byte{byte(len(tenant))}, tenant...)
		buf = append(buf, byte(len("gpt-4o")))
		buf = append(buf, prefix...)
		p := prefixOf(buf, len(tenant)+2, len("gpt-4o")+1)
		if want := sha256.Sum256([]byte(prefix)); p.sum != want {
			t.Fatalf("tenant %s: the sum of another prefix", tenant)
		}
		if size := len(prefix) - len("gpt-4o") - 1; p.bytesText != strconv.Itoa(size) || p.tokens != int64(size/4) {
			t.Fatalf("sizes %s/%d for %d bytes", p.bytesText, p.tokens, size)
		}
	}
	for range 2 {
		check("t1", a)
		check("t1", string(b))
		check("t2", a)
	}
	if len(prefixes) != 2 { // a and b share a hash: the later one holds it
		t.Fatalf("%d entries", len(prefixes))
	}
}
