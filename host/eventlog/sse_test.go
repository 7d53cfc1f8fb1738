package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while SSE writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls (bounded) until out holds want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("never got %q in:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSSEFiltersAndResumes(t *testing.T) {
	l := New(16, nil)
	l.EmitFor(InferenceEnd, "req_old", "acct_a", map[string]any{"status": 200}) // before the stream: not sent
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.SSE(ctx, bufio.NewWriter(out), l.Last(), func(e *Event) bool { return e.Account == "acct_a" }, 20*time.Millisecond)
	}()
	waitFor(t, out, ": events\n\n")
	l.EmitFor(InferenceStart, "req_1", "acct_a", map[string]any{"model": "m"})
	l.EmitFor(InferenceStart, "req_2", "acct_b", nil) // another account's
	l.Emit(ProviderFallback, "req_3", nil)            // the operator's
	l.EmitFor(InferenceEnd, "req_1", "acct_a", map[string]any{"cost_usd": "0.000042"})
	waitFor(t, out, "event: inference.end\n")
	waitFor(t, out, ": keep-alive\n\n") // silence gets a heartbeat
	cancel()
	<-done
	got := out.String()
	if strings.Contains(got, "req_old") || strings.Contains(got, "req_2") || strings.Contains(got, "req_3") ||
		!strings.Contains(got, "id: 2\nevent: inference.start\ndata: {") || !strings.Contains(got, `"cost_usd":"0.000042"`) {
		t.Fatalf("stream:\n%s", got)
	}
	// Resuming after id 2 (Last-Event-ID) sends what came after it.
	if l.ParseLastEventID([]byte("2")) != 2 || l.ParseLastEventID([]byte("junk")) != l.Last() {
		t.Fatal("Last-Event-ID")
	}
}

// A consumer more than the ring behind is dropped with a notice; Emit never
// waited for it.
func TestSSEDropsAReaderThatFellBehind(t *testing.T) {
	l := New(4, nil)
	for i := 0; i < 10; i++ {
		l.Emit(ProviderFallback, "r", nil)
	}
	out := &syncBuffer{}
	l.SSE(context.Background(), bufio.NewWriter(out), 1, nil, time.Second)
	if got := out.String(); !strings.Contains(got, "event: dropped\ndata: {\"missed\":5,") {
		t.Fatalf("stream:\n%s", got)
	}
}
