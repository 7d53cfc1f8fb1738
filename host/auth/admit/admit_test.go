package admit

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/billing"
	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
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

// TestAdmitMeters: a verified, in-scope key is metered (a paid request
// gets a tab, the meter's refusal comes back with it); a request the
// scopes refuse never reaches the meter.
func TestAdmitMeters(t *testing.T) {
	ctx := context.Background()
	k, s, token := newKeys(t)
	m, err := billing.New(billing.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(ctx) })
	k.Meter = m
	a := admission(token)
	a.InputTokens, a.MaxTokens = 100, 100
	a.Quotes = func() []gateway.Quote {
		in, _ := catalog.ParsePrice("1")
		return []gateway.Quote{{Model: "gpt-4o", Prices: pricing.PricesOf(&catalog.Model{Input: in, Output: in}, pricing.OpenAI)}}
	}
	// The account holds nothing: 402, settled on the request's tab.
	c, werr := k.Admit(ctx, a)
	if werr == nil || werr.Status != 402 || c.Tab == nil || c.Tenant != "acct_a" || c.Key == "" {
		t.Fatalf("%+v %+v", c, werr)
	}
	c.Tab.Close(&gateway.Settlement{RequestID: "r1", Path: gateway.PathError, Status: 402, Err: werr})
	a.Model = "claude-sonnet-4-5" // out of the key's scope
	if c, werr := k.Admit(ctx, a); werr == nil || werr.Status != 403 || c.Tab != nil {
		t.Fatalf("out of scope: %+v %+v", c, werr)
	}
	a.Model, a.Spends = "", false
	if c, werr := k.Admit(ctx, a); werr != nil || c.Tab != nil || len(c.Headers) == 0 {
		t.Fatalf("read: %+v %+v", c, werr)
	}
}
