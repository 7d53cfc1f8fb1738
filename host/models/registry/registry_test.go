package registry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/models/registry"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
)

// logs is a concurrency-safe log sink.
type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func specs(t *testing.T, lazyEmbed bool, embedPath string) []config.Model {
	return []config.Model{
		{Name: "embed", Kind: "glove", Path: embedPath, MaxBatch: 8, Lazy: lazyEmbed, Line: 1},
		{Name: "injection", Kind: "tfidf-logreg", Path: modeltest.Dir(t, modeltest.Injection), MaxBatch: 8, Line: 2},
	}
}

// A lazy model ([[model]] load = "lazy") has no session until its first
// use, which loads it once however many callers arrive together; an eager
// one is loaded by Sync.
func TestLazyModelLoadsOnFirstUse(t *testing.T) {
	var lg logs
	r := registry.New(slog.New(slog.NewTextHandler(&lg, nil)))
	t.Cleanup(r.Close)
	if err := r.Sync(config.Models{}, specs(t, true, modeltest.Dir(t, modeltest.Glove))); err != nil {
		t.Fatal(err)
	}
	if r.Loaded("embed") || !r.Loaded("injection") {
		t.Fatalf("after Sync: embed loaded %v (lazy), injection loaded %v", r.Loaded("embed"), r.Loaded("injection"))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			v, err := r.Embed(context.Background(), "embed", []string{"what is a health factor"})
			if err == nil && len(v) != 1 {
				t.Errorf("%d vectors", len(v))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !r.Loaded("embed") || lg.count(`msg="model loaded" model=embed`) != 1 {
		t.Fatalf("loaded %v, %d loads:\n%s", r.Loaded("embed"), lg.count(`msg="model loaded" model=embed`), lg.b.String())
	}
	// A reload with the same entries keeps the loaded model.
	if err := r.Sync(config.Models{}, specs(t, true, modeltest.Dir(t, modeltest.Glove))); err != nil || !r.Loaded("embed") {
		t.Fatalf("same entries again: %v, loaded %v", err, r.Loaded("embed"))
	}
	// Kinds are checked before anything loads.
	if _, _, err := r.Classify(context.Background(), "embed", []string{"x"}); err == nil || !strings.Contains(err.Error(), "not a classifier") {
		t.Fatalf("classify with an embedder: %v", err)
	}
}

// A lazy model that cannot load is its callers' error, naming it, and is
// not tried again on every call; `bardo check` (LoadAll) reports it. An
// eager one with the same fault fails Sync.
func TestLazyModelFailure(t *testing.T) {
	var lg logs
	r := registry.New(slog.New(slog.NewTextHandler(&lg, nil)))
	t.Cleanup(r.Close)
	empty := t.TempDir()
	if err := r.Sync(config.Models{}, specs(t, true, empty)); err != nil {
		t.Fatalf("a lazy model is not loaded by Sync: %v", err)
	}
	for range 3 {
		if _, err := r.Embed(context.Background(), "embed", []string{"x"}); err == nil || !strings.Contains(err.Error(), `model "embed"`) {
			t.Fatalf("embed with a broken model: %v", err)
		}
	}
	if n := lg.count(`msg="model failed to load"`); n != 1 {
		t.Fatalf("%d load attempts in a row, want 1 within the retry interval", n)
	}
	if err := r.LoadAll(); err == nil || !strings.Contains(err.Error(), "embed (line 1)") {
		t.Fatalf("LoadAll: %v", err)
	}
	r2 := registry.New(slog.New(slog.DiscardHandler))
	t.Cleanup(r2.Close)
	if err := r2.Sync(config.Models{}, specs(t, false, empty)); err == nil {
		t.Fatal("an eager model that cannot load passed Sync")
	}
}
