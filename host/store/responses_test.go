package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// slowResponses is a durable store whose writes wait for release, so a
// test can see what is readable before the disk has it.
type slowResponses struct {
	MemoryResponses
	release chan struct{}
}

func (s *slowResponses) PutResponse(ctx context.Context, r *StoredResponse) error {
	<-s.release
	return s.MemoryResponses.PutResponse(ctx, r)
}

// TestBufferedResponses: a put is readable at once (before the durable
// store has it), only by its tenant; Close writes it through; a response
// deleted while pending never reaches the durable store.
func TestBufferedResponses(t *testing.T) {
	ctx := context.Background()
	next := &slowResponses{release: make(chan struct{})}
	b := NewBufferedResponses(next, func(err error) { t.Error(err) })
	r := &StoredResponse{ID: "resp_1", Tenant: "a", Input: []byte(`[]`), Response: []byte(`{}`), Expires: time.Now().Add(time.Hour)}
	if err := b.PutResponse(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetResponse(ctx, "a", "resp_1"); err != nil || got.ID != "resp_1" {
		t.Fatalf("pending response not readable: %v", err)
	}
	if _, err := b.GetResponse(ctx, "b", "resp_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another tenant read it: %v", err)
	}
	if _, err := next.MemoryResponses.GetResponse(ctx, "a", "resp_1"); !errors.Is(err, ErrNotFound) {
		t.Fatal("written before the durable store was released")
	}
	close(next.release)
	b.Close()
	if _, err := next.MemoryResponses.GetResponse(ctx, "a", "resp_1"); err != nil {
		t.Fatalf("Close did not write the pending response: %v", err)
	}

	// Deleted while pending: gone everywhere.
	next2 := &MemoryResponses{}
	b2 := NewBufferedResponses(next2, nil)
	b2.mu.Lock() // hold the writer off while the put and delete happen
	b2.pending[[2]string{"a", "resp_2"}] = &StoredResponse{ID: "resp_2", Tenant: "a"}
	b2.mu.Unlock()
	if err := b2.DeleteResponse(ctx, "a", "resp_2"); err != nil {
		t.Fatal(err)
	}
	b2.Close()
	if _, err := next2.GetResponse(ctx, "a", "resp_2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted pending response was written: %v", err)
	}
	if err := b2.DeleteResponse(ctx, "a", "resp_2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
