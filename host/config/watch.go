package config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Fingerprint identifies the content of a file: its SHA-256.
type Fingerprint [sha256.Size]byte

// FingerprintBytes returns the fingerprint of data.
func FingerprintBytes(data []byte) Fingerprint { return sha256.Sum256(data) }

// FingerprintFile returns the fingerprint of the file at path. Compare it with
// Config.Fingerprint to skip a reload when the content is unchanged.
func FingerprintFile(path string) (Fingerprint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Fingerprint{}, err
	}
	return FingerprintBytes(b), nil
}

// String returns the first 12 hex digits, enough for logs.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:6]) }

// DefaultWatchInterval is used by Watch and WatchFiles when interval <= 0.
const DefaultWatchInterval = 2 * time.Second

// Watch calls onChange whenever the content of the file at path changes. See
// WatchFiles.
func Watch(ctx context.Context, path string, interval time.Duration, onChange func()) {
	WatchFiles(ctx, []string{path}, interval, onChange)
}

// WatchFiles calls onChange whenever the content of any of the files
// changes; a caller may pass the plugin files along with pipeline.toml to
// reload on a rebuilt plugin.
//
// It takes the files' initial state before returning, then polls every
// interval in a goroutine of its own until ctx is done. Each poll stats the
// files and hashes one again only when its size or modification time moved,
// or when its modification time is too recent to be trusted (within 2s of
// the poll, the granularity of the coarsest file systems). A change fires
// onChange only once the new content has been seen by two polls in a row:
// an editor's truncate-then-write or write-then-rename thus fires once, and
// rewriting identical content (or changing and then restoring it between
// polls) never fires. A missing or unreadable file is ignored until it is
// readable again. onChange runs on the watching goroutine; polling waits for
// it to return.
func WatchFiles(ctx context.Context, paths []string, interval time.Duration, onChange func()) {
	WatchFileSet(ctx, func() []string { return paths }, interval, onChange)
}

// WatchFileSet is WatchFiles over a set that may change: list is asked
// again at every poll (the plugin files of the pipeline now running, which a
// reload may have changed). A file that joins the set is taken as it is —
// the reload that added it loaded it — and watched from then on; a file that
// leaves it is forgotten.
func WatchFileSet(ctx context.Context, list func() []string, interval time.Duration, onChange func()) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	files := map[string]*watched{}
	track := func(now time.Time) {
		want := list()
		keep := make(map[string]bool, len(want))
		for _, p := range want {
			keep[p] = true
			if files[p] == nil {
				f := &watched{path: p}
				f.poll(now)
				f.fired, f.pending = f.sum, f.sum
				files[p] = f
			}
		}
		for p := range files {
			if !keep[p] {
				delete(files, p)
			}
		}
	}
	track(time.Now())
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				changed := false
				for _, f := range files {
					if f.check(now) {
						changed = true
					}
				}
				if changed && ctx.Err() == nil {
					onChange()
				}
				track(now)
			}
		}
	}()
}

// racyWindow is how recent a modification time must be for the stat
// shortcut to be distrusted.
const racyWindow = 2 * time.Second

type watched struct {
	path    string
	ok      bool // sum is valid
	size    int64
	mtime   time.Time
	sum     Fingerprint
	pending Fingerprint // content seen by the previous poll
	fired   Fingerprint // content at the last notification (or at start)
}

// poll refreshes sum from the file, hashing only when needed. It returns
// false if the file cannot be read.
func (w *watched) poll(now time.Time) bool {
	fi, err := os.Stat(w.path)
	if err != nil {
		return false
	}
	if w.ok && fi.Size() == w.size && fi.ModTime().Equal(w.mtime) && now.Sub(fi.ModTime()) > racyWindow {
		return true
	}
	b, err := os.ReadFile(w.path)
	if err != nil {
		return false
	}
	w.ok, w.size, w.mtime, w.sum = true, fi.Size(), fi.ModTime(), FingerprintBytes(b)
	// The file may have changed between Stat and ReadFile; the stale stat
	// data only costs one more hash on the next poll.
	if int64(len(b)) != fi.Size() {
		w.size = -1
	}
	return true
}

// check polls the file and reports whether a change should fire.
func (w *watched) check(now time.Time) bool {
	if !w.poll(now) {
		return false
	}
	prev := w.pending
	w.pending = w.sum
	if bytes.Equal(w.sum[:], w.fired[:]) || !bytes.Equal(w.sum[:], prev[:]) {
		return false
	}
	w.fired = w.sum
	return true
}

// NotifySIGHUP calls onSignal each time the process receives SIGHUP, until
// ctx is done. Signal delivery is registered before NotifySIGHUP returns, so
// from then on SIGHUP no longer terminates the process. Signals that arrive
// while onSignal runs are coalesced into one further call.
func NotifySIGHUP(ctx context.Context, onSignal func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				if ctx.Err() == nil {
					onSignal()
				}
			}
		}
	}()
}
