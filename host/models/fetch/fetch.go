package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Options configures Fetch. The zero value downloads from huggingface.co
// with no progress output.
type Options struct {
	// AllowUnpinned lets entries without a checksum download (their digest
	// is printed so it can be pinned). Without it Fetch refuses them before
	// downloading anything.
	AllowUnpinned bool
	// Progress receives the progress bar: redrawn in place at most 10 times
	// a second on a terminal, plain lines (every 10%) otherwise. nil means
	// no output.
	Progress io.Writer
	// BaseURL replaces DefaultBaseURL (a mirror, or a test server).
	BaseURL string
	// Client is the HTTP client; nil means one with connection and
	// response-header timeouts but no overall limit (files are large).
	Client *http.Client
	// Entries replaces Manifest() (tests, private mirrors).
	Entries []Entry
	// Attempts is how many times one file is tried, resuming each time
	// from what is already on disk; 0 means 5.
	Attempts int
	// RetryDelay is the pause before the first retry, doubling after each;
	// 0 means 1s.
	RetryDelay time.Duration
	// StallTimeout abandons (and then retries) a transfer that receives no
	// bytes for this long; 0 means 60s.
	StallTimeout time.Duration
}

// ErrChecksum is wrapped by the error for a file whose SHA-256 does not
// match its pin.
var ErrChecksum = errors.New("checksum mismatch")

// Fetch downloads the named entries (all of them when names is empty) into
// destDir/<name>/ and writes each one's config.json. Files already present
// with the right checksum are kept. It stops at the first error.
func Fetch(ctx context.Context, names []string, destDir string, opts Options) error {
	entries := opts.Entries
	if entries == nil {
		entries = Manifest()
	}
	selected, err := selectEntries(entries, names)
	if err != nil {
		return err
	}
	if !opts.AllowUnpinned {
		var unpinned []string
		for _, e := range selected {
			for _, f := range e.Files {
				if f.SHA256 == "" {
					unpinned = append(unpinned, e.Name+"/"+f.Path)
				}
			}
		}
		if len(unpinned) > 0 {
			return fmt.Errorf("fetch: refusing unpinned files (no SHA-256 to verify against): %s; pass --allow-unpinned to download them unverified", strings.Join(unpinned, ", "))
		}
	}
	d := &downloader{opts: opts, out: opts.Progress}
	if d.out == nil {
		d.out = io.Discard
	}
	d.tty = isTerminal(d.out)
	if opts.Client == nil {
		d.client = defaultClient()
	} else {
		d.client = opts.Client
	}
	for _, e := range selected {
		if err := d.fetchEntry(ctx, e, filepath.Join(destDir, e.Name)); err != nil {
			return err
		}
	}
	return nil
}

func selectEntries(entries []Entry, names []string) ([]Entry, error) {
	if len(names) == 0 {
		return entries, nil
	}
	var out []Entry
	for _, n := range names {
		found := false
		for _, e := range entries {
			if e.Name == n {
				out = append(out, e)
				found = true
				break
			}
		}
		if !found {
			known := make([]string, len(entries))
			for i, e := range entries {
				known[i] = e.Name
			}
			return nil, fmt.Errorf("fetch: unknown model %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type downloader struct {
	opts   Options
	client *http.Client
	out    io.Writer
	tty    bool
	now    func() time.Time // nil means time.Now; tests replace it
}

func (d *downloader) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

func (d *downloader) fetchEntry(ctx context.Context, e Entry, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	fmt.Fprintf(d.out, "%s (%s@%.12s, %s) → %s\n", e.Name, e.Repo, e.Revision, e.License, dir)
	for _, f := range e.Files {
		if err := d.fetchFile(ctx, e, f, dir); err != nil {
			return err
		}
	}
	if err := writeSidecars(e, dir); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s: ready (load it as kind %q)\n", e.Name, e.Kind)
	if e.Notes != "" {
		fmt.Fprintf(d.out, "%s: note: %s\n", e.Name, e.Notes)
	}
	return nil
}

// fetchFile makes dir/f.Dest hold the verified file.
func (d *downloader) fetchFile(ctx context.Context, e Entry, f File, dir string) error {
	final := filepath.Join(dir, f.Dest)
	what := e.Name + "/" + f.Path
	if st, err := os.Stat(final); err == nil && !st.IsDir() {
		if f.SHA256 == "" {
			fmt.Fprintf(d.out, "  %s: present (unpinned, not verified)\n", f.Dest)
			return nil
		}
		sum, err := fileSHA256(final)
		if err != nil {
			return fmt.Errorf("fetch: %s: %w", what, err)
		}
		if sum == f.SHA256 {
			fmt.Fprintf(d.out, "  %s: present, checksum ok\n", f.Dest)
			return nil
		}
		// A stale or corrupted copy: download afresh.
		fmt.Fprintf(d.out, "  %s: present but checksum %s does not match; downloading again\n", f.Dest, sum)
		if err := os.Remove(final); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
	}
	part := final + ".part"
	attempts := d.opts.Attempts
	if attempts <= 0 {
		attempts = 5
	}
	delay := d.opts.RetryDelay
	if delay <= 0 {
		delay = time.Second
	}
	var err error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			fmt.Fprintf(d.out, "  %s: attempt %d of %d failed (%v); resuming in %s\n", f.Dest, attempt-1, attempts, err, delay)
			select {
			case <-ctx.Done():
				return fmt.Errorf("fetch: %s: %w", what, ctx.Err())
			case <-time.After(delay):
			}
			delay *= 2
		}
		err = d.transfer(ctx, e.URL(d.opts.BaseURL, f), f, part)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		// The .part file stays: the next run resumes from it.
		return fmt.Errorf("fetch: %s: %w (partial download kept in %s; run again to resume)", what, err, part)
	}
	sum, err := fileSHA256(part)
	if err != nil {
		return fmt.Errorf("fetch: %s: %w", what, err)
	}
	if f.SHA256 == "" {
		fmt.Fprintf(d.out, "  %s: WARNING unpinned, not verified; sha256 %s\n", f.Dest, sum)
	} else if sum != f.SHA256 {
		os.Remove(part)
		return fmt.Errorf("fetch: %s: %w: got sha256 %s, want %s; the download was deleted", what, ErrChecksum, sum, f.SHA256)
	}
	if err := os.Rename(part, final); err != nil {
		return fmt.Errorf("fetch: %s: %w", what, err)
	}
	return nil
}

// httpStatusError is a non-success HTTP status.
type httpStatusError struct {
	code int
	url  string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d %s", e.url, e.code, http.StatusText(e.code))
}

// retryable: network errors and server-side statuses are worth another
// try; client errors (404, 403 for a gated repository) and a file larger
// than its pin are not.
func retryable(err error) bool {
	var he *httpStatusError
	if errors.As(err, &he) {
		return he.code >= 500 || he.code == http.StatusTooManyRequests || he.code == http.StatusRequestTimeout
	}
	return !errors.Is(err, errTooLarge)
}

var errTooLarge = errors.New("server sent more bytes than the pinned size")

// transfer appends the rest of url to part, resuming from part's current
// size with a Range request.
func (d *downloader) transfer(ctx context.Context, url string, f File, part string) error {
	var offset int64
	if st, err := os.Stat(part); err == nil {
		offset = st.Size()
	}
	if f.Size > 0 && offset > f.Size {
		os.Remove(part) // cannot be a prefix of the real file
		offset = 0
	}
	if f.Size > 0 && offset == f.Size {
		return nil // complete; the checksum decides
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "bardo-models-fetch")
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	flags := os.O_CREATE | os.O_WRONLY
	total := f.Size
	switch {
	case resp.StatusCode == http.StatusPartialContent && offset > 0:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			return fmt.Errorf("GET %s: bad Content-Range %q for a resume at %d", url, resp.Header.Get("Content-Range"), offset)
		}
		if size > 0 {
			total = size
		}
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusOK:
		// A fresh download, or a server that ignores Range: start over.
		offset = 0
		flags |= os.O_TRUNC
		if resp.ContentLength > 0 {
			total = resp.ContentLength
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		// Nothing after offset: the .part is complete (or wrong, which the
		// checksum will say).
		return nil
	default:
		return &httpStatusError{code: resp.StatusCode, url: url}
	}
	if f.Size > 0 && total > f.Size {
		return fmt.Errorf("GET %s: %w (%d > %d)", url, errTooLarge, total, f.Size)
	}

	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	bar := newProgress(d.out, d.tty, f.Dest, offset, total, d.clock)
	w := &countingWriter{w: out, bar: bar, limit: f.Size, written: offset}

	// A stalled connection sends nothing and never errors; the watchdog
	// cancels the request so the retry loop can resume it.
	stall := d.opts.StallTimeout
	if stall <= 0 {
		stall = 60 * time.Second
	}
	watchdog := time.AfterFunc(stall, cancel)
	w.onWrite = func() { watchdog.Reset(stall) }
	_, copyErr := io.Copy(w, resp.Body)
	watchdog.Stop()
	closeErr := out.Close()
	bar.finish(copyErr == nil && closeErr == nil)
	if copyErr != nil {
		if ctx.Err() != nil && errors.Is(copyErr, context.Canceled) {
			return fmt.Errorf("no data for %s: %w", stall, copyErr)
		}
		return copyErr
	}
	if closeErr != nil {
		return closeErr
	}
	if total > 0 && w.written < total {
		return fmt.Errorf("GET %s: %w after %d of %d bytes", url, io.ErrUnexpectedEOF, w.written, total)
	}
	return nil
}

// parseContentRange reads "bytes START-END/SIZE" (SIZE may be "*").
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if sz != "*" {
		if size, err = strconv.ParseInt(sz, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, size, true
}

type countingWriter struct {
	w       io.Writer
	bar     *progress
	limit   int64
	written int64
	onWrite func()
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.limit > 0 && c.written+int64(len(p)) > c.limit {
		return 0, errTooLarge
	}
	n, err := c.w.Write(p)
	c.written += int64(n)
	c.bar.update(c.written)
	if c.onWrite != nil {
		c.onWrite()
	}
	return n, err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var h hash.Hash = sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", filepath.Base(path), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
