package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/store"
)

// ProvisionPrivy creates one account per user, also when a user's first
// requests arrive at once, and LinkPrivy re-points a user.
func TestPrivyUsers(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.PrivyAccount(ctx, "did:privy:u1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], _ = s.ProvisionPrivy(ctx, "did:privy:u1", store.Account{ID: "privy:u1", Name: "did:privy:u1"})
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != "privy:u1" {
			t.Fatalf("provisioned %v", ids)
		}
	}
	if got, err := s.PrivyAccount(ctx, "did:privy:u1"); err != nil || got != "privy:u1" {
		t.Fatalf("lookup %q %v", got, err)
	}
	as, _ := s.ListAccounts(ctx)
	if len(as) != 1 || as[0].Tier != store.TierFree || as[0].Balance != 0 {
		t.Fatalf("accounts %+v", as)
	}
	if _, err := s.CreateAccount(ctx, store.Account{ID: "team", Name: "team"}); err != nil {
		t.Fatal(err)
	}
	if err := s.LinkPrivy(ctx, "did:privy:u1", "team"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.PrivyAccount(ctx, "did:privy:u1"); got != "team" {
		t.Fatalf("re-linked to %q", got)
	}
	if id, err := s.ProvisionPrivy(ctx, "did:privy:u1", store.Account{ID: "privy:u1"}); err != nil || id != "team" {
		t.Fatalf("provision of a linked user: %q %v", id, err)
	}
}
