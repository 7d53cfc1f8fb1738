package config

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

const (
	pollEvery = 20 * time.Millisecond
	maxWait   = 2 * time.Second
	// quiet is how long to wait to show that nothing fires: many polls.
	quiet = 300 * time.Millisecond
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitCount waits until c reaches want (or maxWait passes) and returns its
// final value.
func waitCount(c *atomic.Int32, want int32) int32 {
	deadline := time.Now().Add(maxWait)
	for c.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return c.Load()
}

func startWatch(t *testing.T, path string) *atomic.Int32 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var n atomic.Int32
	Watch(ctx, path, pollEvery, func() { n.Add(1) })
	return &n
}

func TestWatchFiresOnChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.toml")
	write(t, path, "a = 1\n")
	n := startWatch(t, path)

	write(t, path, "a = 2\n")
	if got := waitCount(n, 1); got != 1 {
		t.Fatalf("onChange called %d times after a change, want 1", got)
	}
	time.Sleep(quiet)
	if got := n.Load(); got != 1 {
		t.Fatalf("onChange called %d times for one change, want 1", got)
	}

	// A second change fires again, same size this time.
	write(t, path, "a = 3\n")
	if got := waitCount(n, 2); got != 2 {
		t.Fatalf("onChange called %d times after a second change, want 2", got)
	}
}

func TestWatchIgnoresIdenticalRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.toml")
	write(t, path, "a = 1\n")
	n := startWatch(t, path)

	for i := range 5 {
		write(t, path, "a = 1\n")
		// A different modification time each time: only content counts.
		later := time.Now().Add(time.Duration(i+1) * time.Hour)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
		time.Sleep(quiet / 5)
	}
	time.Sleep(quiet)
	if got := n.Load(); got != 0 {
		t.Fatalf("onChange called %d times for identical content, want 0", got)
	}
}

func TestWatchWriteThenRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pipeline.toml")
	write(t, path, "a = 1\n")
	n := startWatch(t, path)

	// What editors do: write a temporary file, then rename it over.
	tmp := filepath.Join(dir, ".pipeline.toml.swp")
	write(t, tmp, "a = 1\nb = 2\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got := waitCount(n, 1); got != 1 {
		t.Fatalf("onChange called %d times after rename, want 1", got)
	}
	time.Sleep(quiet)
	if got := n.Load(); got != 1 {
		t.Fatalf("onChange called %d times after one rename, want 1", got)
	}
}

func TestWatchMissingFileThenCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.toml")
	n := startWatch(t, path)
	time.Sleep(3 * pollEvery)
	if got := n.Load(); got != 0 {
		t.Fatalf("onChange called %d times for a missing file", got)
	}
	write(t, path, "a = 1\n")
	if got := waitCount(n, 1); got != 1 {
		t.Fatalf("onChange called %d times after creation, want 1", got)
	}
}

func TestWatchStopsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.toml")
	write(t, path, "a = 1\n")
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	Watch(ctx, path, pollEvery, func() { n.Add(1) })
	cancel()
	write(t, path, "a = 2\n")
	time.Sleep(quiet)
	if got := n.Load(); got != 0 {
		t.Fatalf("onChange called %d times after cancel", got)
	}
}

func TestWatchFilesSeveral(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b.wasm")
	write(t, a, "1")
	write(t, b, "x")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	WatchFiles(ctx, []string{a, b}, pollEvery, func() { n.Add(1) })
	write(t, b, "y")
	if got := waitCount(&n, 1); got != 1 {
		t.Fatalf("onChange called %d times after the second file changed, want 1", got)
	}
}

// TestWatchDebounce drives the poll logic by hand: a change fires only once
// the new content has been seen by two polls in a row, so a transient state
// (a truncated file mid-write) never fires.
func TestWatchDebounce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.toml")
	write(t, path, "a = 1\n")
	w := &watched{path: path}
	now := time.Now()
	if !w.poll(now) {
		t.Fatal("poll failed")
	}
	w.fired, w.pending = w.sum, w.sum

	step := func(want bool) {
		t.Helper()
		if got := w.check(time.Now()); got != want {
			t.Fatalf("check = %v, want %v", got, want)
		}
	}
	step(false)               // unchanged
	write(t, path, "")        // editor truncates...
	step(false)               // ...a poll sees the empty file: not yet
	write(t, path, "a = 2\n") // ...and writes
	step(false)               // first sight of the new content
	step(true)                // stable: fire
	step(false)               // once
	write(t, path, "a = 3\n")
	step(false)
	write(t, path, "a = 2\n") // changed back before it settled
	step(false)
	step(false) // identical to what was last fired: nothing to do
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	step(false) // missing file: ignored
	write(t, path, "a = 2\n")
	step(false) // back, same content
}

// TestWatchFileSetFollowsTheSet: a file that joins the watched set (a
// plugin a reload added) is watched from then on without firing for
// joining; a file that left the set fires no more.
func TestWatchFileSetFollowsTheSet(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.wasm"), filepath.Join(dir, "b.wasm")
	write(t, a, "1")
	write(t, b, "x")
	var set atomic.Value
	set.Store([]string{a})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	WatchFileSet(ctx, func() []string { return set.Load().([]string) }, pollEvery, func() { n.Add(1) })
	set.Store([]string{b}) // a leaves, b joins
	time.Sleep(quiet)
	if got := n.Load(); got != 0 {
		t.Fatalf("joining the set fired %d times", got)
	}
	write(t, a, "2") // no longer watched
	time.Sleep(quiet)
	if got := n.Load(); got != 0 {
		t.Fatalf("a file that left the set fired %d times", got)
	}
	write(t, b, "y")
	if got := waitCount(&n, 1); got != 1 {
		t.Fatalf("a file that joined the set: onChange called %d times, want 1", got)
	}
}
