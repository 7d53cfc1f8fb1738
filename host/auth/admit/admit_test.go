package admit

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/sdk/wire"
)

// newKeys returns an admitter over a fresh SQLite store and one key.
func newKeys(tb testing.TB) (*Keys, *sqlite.Store, string) {
	tb.Helper()
	c := context.Background()
	s, err := sqlite.Open(c, filepath.Join(tb.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if _, err := s.CreateAccount(c, store.Account{ID: "acct_a", Name: "a", Tier: store.TierFree}); err != nil {
		tb.Fatal(err)
	}
	a := auth.New(s, []byte("0123456789abcdef0123456789abcdef"), auth.Options{Accounts: s})
	token, _, err := a.Create(c, "acct_a", auth.KeySpec{Name: "k", Models: []string{"gpt-*"}})
	if err != nil {
		tb.Fatal(err)
	}
	return &Keys{Auth: a}, s, token
}

func admission(token string) *gateway.Admission {
	// The server's own header type, as in production.
	h := &fasthttp.RequestHeader{}
	h.Set("Authorization", "Bearer "+token)
	return &gateway.Admission{Dialect: wire.DialectOpenAI, Path: "/v1/chat/completions", Header: h,
		RemoteIP: netip.MustParseAddr("127.0.0.1"), Model: "gpt-4o", Spends: true}
}

func TestAdmit(t *testing.T) {
	k, s, token := newKeys(t)
	c, werr := k.Admit(context.Background(), admission(token))
	if werr != nil || c.Tenant != "acct_a" {
		t.Fatalf("%+v %+v", c, werr)
	}
	a := admission(token)
	a.Model = "claude-sonnet-4-5"
	if _, werr := k.Admit(context.Background(), a); werr == nil || werr.Status != 403 || werr.Kind != wire.ErrPermission {
		t.Errorf("out of scope: %+v", werr)
	}
	// A store that cannot be read is the gateway's failure (503), not the
	// caller's (401): a key the cache does not hold cannot be checked.
	other, _, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, werr := k.Admit(context.Background(), admission(other)); werr == nil || werr.Status != 503 {
		t.Errorf("store down: %+v", werr)
	}
}

// BenchmarkAdmit is one admission of a cached key: credential detection,
// HMAC verification and the scope check (issue 12's admission budget is
// 20 µs p50 including limits and the reservation).
func BenchmarkAdmit(b *testing.B) {
	k, _, token := newKeys(b)
	a := admission(token)
	ctx := context.Background()
	if _, werr := k.Admit(ctx, a); werr != nil {
		b.Fatal(werr)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, werr := k.Admit(ctx, a); werr != nil {
			b.Fatal(werr)
		}
	}
}
