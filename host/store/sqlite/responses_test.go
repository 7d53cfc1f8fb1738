package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// TestResponsesSurviveReopen: a stored response is read back after the
// database is closed and opened again (a gateway restart), only by its
// tenant, and not after it expires or is deleted.
func TestResponsesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	now := time.Now()
	r := &store.StoredResponse{ID: "resp_1", Tenant: "acct_a", Previous: "resp_0", Model: "gpt-4o",
		Input: []byte(`[{"role":"user","content":"hi"}]`), Response: []byte(`{"id":"resp_1","output":[]}`),
		Created: now, Expires: now.Add(time.Hour)}
	if err := s.PutResponse(ctx, r); err != nil {
		t.Fatal(err)
	}
	gone := &store.StoredResponse{ID: "resp_old", Tenant: "acct_a", Input: []byte(`[]`), Response: []byte(`{}`),
		Created: now.Add(-2 * time.Hour), Expires: now.Add(-time.Hour)}
	if err := s.PutResponse(ctx, gone); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, dir)
	got, err := s.GetResponse(ctx, "acct_a", "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Previous != "resp_0" || got.Model != "gpt-4o" || string(got.Input) != string(r.Input) ||
		string(got.Response) != string(r.Response) || got.Created.UnixMicro() != now.UnixMicro() {
		t.Fatalf("read back %+v", got)
	}
	if _, err := s.GetResponse(ctx, "acct_b", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant read it: %v", err)
	}
	if _, err := s.GetResponse(ctx, "acct_a", "resp_old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired response read: %v", err)
	}
	if n, err := s.PruneResponses(ctx, now); err != nil || n != 1 {
		t.Fatalf("prune = %d, %v; want 1", n, err)
	}
	if err := s.DeleteResponse(ctx, "acct_b", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant deleted it: %v", err)
	}
	if err := s.DeleteResponse(ctx, "acct_a", "resp_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(ctx, "acct_a", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted response read: %v", err)
	}
}
