//go:build !wasip1

package main

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The remembered hash is always the hash of this request's prefix: requests
// that differ in one byte of any part (or only in their tenant, which the
// hash leaves out), asked in turn and again, each get what hashing afresh
// gives, and the memo holds one entry per tenant and prefix.
func TestPrefixMemoMatchesFresh(t *testing.T) {
	plugintest.New(t, `{}`)
	clear(prefixes)
	prefixesSize = 0
	base := conversation("gpt-4o", "hello", "hi", "more").Request
	variants := []func(r *wire.Request){
		func(r *wire.Request) {},
		func(r *wire.Request) { r.Model = "gpt-4o-mini" },
		func(r *wire.Request) { r.System = text(r.System[0].Text + ".") },
		func(r *wire.Request) { r.Tools = r.Tools[:1] },
		func(r *wire.Request) { r.Messages[0].Content = text("hellO") },
		func(r *wire.Request) { r.Messages[2].Content = text("a later turn is not hashed") },
	}
	fresh := func(r *wire.Request) string {
		var b []byte
		b = append(append(b, r.Model...), 0)
		for _, s := range r.System {
			b = append(append(b, s.Text...), '\n')
		}
		b = append(b, 0)
		for _, tl := range r.Tools {
			b = append(append(b, tl.Name...), '\n')
		}
		b = append(b, 0)
		for _, bl := range r.Messages[0].Content {
			b = append(append(append(b, bl.Text...), bl.Data...), '\n')
		}
		sum := plugin.SHA256(b)
		return hex.EncodeToString(sum[:16])
	}
	for round := 0; round < 2; round++ {
		for _, tenant := range []string{"a", "b", strings.Repeat("t", 300)} {
			for i, v := range variants {
				r := base
				r.Messages = append([]wire.Message(nil), base.Messages...)
				v(&r)
				if got, want := string(prefixHash(tenant, &r)[:]), fresh(&r); got != want {
					t.Fatalf("round %d, tenant %.5s, variant %d: %s, want %s", round, tenant, i, got, want)
				}
			}
		}
	}
	if len(prefixes) != 3*(len(variants)-1) {
		t.Fatalf("%d prefixes remembered, want %d", len(prefixes), 3*(len(variants)-1))
	}
}
