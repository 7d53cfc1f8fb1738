package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Options configures a Refresher. Zero fields take the defaults in
// brackets.
type Options struct {
	// Provider is the [[provider]] name the models belong to (required).
	Provider string
	// BaseURL is the backend's API base ("https://openrouter.ai/api/v1");
	// the catalog is fetched from BaseURL+Path. Empty: static only, never
	// fetched.
	BaseURL string
	// Path is appended to BaseURL ["/models"]; Venice may use
	// "/models?type=text" to skip image and audio models.
	Path string
	// Shape of the answer [ShapeAuto].
	Shape Shape
	// Interval between successful refreshes [1h]; negative disables the
	// background refresh (Refresh still works).
	Interval time.Duration
	// Jitter delays each scheduled refresh by a random fraction of its
	// delay, up to this much [0.1], so replicas do not fetch in lockstep.
	Jitter float64
	// Timeout bounds one fetch, connect to last byte [30s].
	Timeout time.Duration
	// MinRetry is the delay after a failed refresh [1m]; it doubles with
	// each further failure, up to Interval. A failure must not leave the
	// catalog an hour stale, nor hammer a broken backend.
	MinRetry time.Duration
	// MaxBody caps the answer's size [32 MiB]; OpenRouter's full list is a
	// few MB.
	MaxBody int64
	// Header is sent with every fetch (e.g. Authorization: Bearer … for
	// Venice). It is never logged or put in errors.
	Header http.Header
	// Client performs the fetch [a plain &http.Client{}; its redirect
	// policy does not forward Header's Authorization to another domain].
	Client *http.Client
	// Static are the provider's models from config (FromTOML); they are in
	// the catalog from the start and win for the fields they set.
	Static []Model
	// Now is the clock [time.Now]; Rand returns [0, 1) for jitter
	// [math/rand/v2.Float64].
	Now  func() time.Time
	Rand func() float64
	// OnUpdate is called after each successful refresh with the new
	// catalog; OnError after each failed one with its error. Both run on
	// the refreshing goroutine: keep them fast.
	OnUpdate func(*Catalog)
	OnError  func(error)
}

// Refresher defaults.
const (
	DefaultInterval = time.Hour
	DefaultJitter   = 0.1
	DefaultTimeout  = 30 * time.Second
	DefaultMinRetry = time.Minute
	DefaultMaxBody  = 32 << 20
	DefaultPath     = "/models"
)

// Status describes a Refresher's last refreshes, for an admin endpoint and
// logs.
type Status struct {
	Provider    string    `json:"provider"`
	URL         string    `json:"url,omitempty"`
	Shape       Shape     `json:"shape,omitempty"` // of the last good answer
	Models      int       `json:"models"`          // in the current catalog
	Dynamic     int       `json:"dynamic"`         // of which from the backend
	Skipped     int       `json:"skipped"`         // entries left out of the last good answer
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastError   string    `json:"last_error,omitempty"` // of the last attempt, "" if it succeeded
	Failures    int       `json:"failures"`             // consecutive failed attempts
	// Age is the time since the last good fetch (0 when never fetched);
	// Stale is true once it exceeds two intervals, or when attempts were
	// made and none ever succeeded.
	Age         time.Duration `json:"age_ns"`
	Stale       bool          `json:"stale"`
	NextAttempt time.Time     `json:"next_attempt,omitzero"`
}

// Refresher keeps one provider's catalog: its static models, merged with
// what the backend's /models lists, fetched now and then. Catalog is safe to
// call from any goroutine at any time and never blocks.
type Refresher struct {
	o   Options
	url string
	cur atomic.Pointer[Catalog]

	fetchMu sync.Mutex // one fetch at a time

	mu     sync.Mutex // guards st
	st     Status
	static []Model

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  sync.Once
	stop   sync.Once
}

// NewRefresher returns a refresher whose catalog holds the static models
// until the first successful refresh. Start begins the background refresh.
func NewRefresher(o Options) (*Refresher, error) {
	if o.Provider == "" {
		return nil, errors.New("catalog: refresher needs a provider name")
	}
	sh, err := ParseShape(string(o.Shape))
	if err != nil {
		return nil, fmt.Errorf("catalog: provider %q: %w", o.Provider, err)
	}
	o.Shape = sh
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Jitter == 0 {
		o.Jitter = DefaultJitter
	} else if o.Jitter < 0 {
		o.Jitter = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MinRetry <= 0 {
		o.MinRetry = DefaultMinRetry
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	static := make([]Model, len(o.Static))
	for i, m := range o.Static {
		m.Provider = o.Provider
		m.Origin = OriginStatic
		static[i] = m
	}
	r := &Refresher{o: o, static: static}
	if o.BaseURL != "" {
		r.url = strings.TrimRight(o.BaseURL, "/") + "/" + strings.TrimLeft(o.Path, "/")
	}
	r.st = Status{Provider: o.Provider, URL: r.url, Models: len(static)}
	r.cur.Store(NewCatalog(o.Provider, static, time.Time{}))
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// Catalog returns the current catalog: never nil, never blocking.
func (r *Refresher) Catalog() *Catalog { return r.cur.Load() }

// URL returns the URL fetched ("" for a static-only provider).
func (r *Refresher) URL() string { return r.url }

// Status returns the refresh status now.
func (r *Refresher) Status() Status {
	r.mu.Lock()
	st := r.st
	r.mu.Unlock()
	now := r.o.Now()
	if !st.LastSuccess.IsZero() {
		st.Age = now.Sub(st.LastSuccess)
		st.Stale = r.o.Interval > 0 && st.Age > 2*r.o.Interval
	} else {
		st.Stale = !st.LastAttempt.IsZero()
	}
	return st
}

// Refresh fetches the catalog once, now. On success the new catalog (static
// merged over the fetched models) replaces the current one; on any failure
// — transport, non-2xx status, oversized or malformed answer, empty list —
// the current catalog stays and the error is returned and recorded in
// Status. Concurrent calls are serialised.
func (r *Refresher) Refresh(ctx context.Context) error {
	if r.url == "" {
		return nil
	}
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	started := r.o.Now()
	dec, err := r.fetch(ctx)
	now := r.o.Now()

	r.mu.Lock()
	r.st.LastAttempt = started
	if err != nil {
		r.st.Failures++
		r.st.LastError = err.Error()
		r.mu.Unlock()
		err = fmt.Errorf("catalog: provider %q: refresh from %s: %w", r.o.Provider, r.url, err)
		if r.o.OnError != nil {
			r.o.OnError(err)
		}
		return err
	}
	cat := NewCatalog(r.o.Provider, Merge(r.static, dec.Models), now)
	r.cur.Store(cat)
	r.st.Failures = 0
	r.st.LastError = ""
	r.st.LastSuccess = now
	r.st.Shape = dec.Shape
	r.st.Models = cat.Len()
	r.st.Dynamic = len(dec.Models)
	r.st.Skipped = dec.Skipped
	r.mu.Unlock()
	if r.o.OnUpdate != nil {
		r.o.OnUpdate(cat)
	}
	return nil
}

func (r *Refresher) fetch(ctx context.Context) (Decoded, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return Decoded{}, fmt.Errorf("build request: %w", err)
	}
	for k, vs := range r.o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.o.Client.Do(req)
	if err != nil {
		return Decoded{}, fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.o.MaxBody+1))
	if err != nil {
		return Decoded{}, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Decoded{}, fmt.Errorf("status %d: %s", resp.StatusCode, snippet(body))
	}
	if int64(len(body)) > r.o.MaxBody {
		return Decoded{}, fmt.Errorf("answer larger than %d bytes", r.o.MaxBody)
	}
	dec, err := Decode(r.o.Provider, r.o.Shape, body)
	if err != nil {
		return dec, fmt.Errorf("%s answer: %w", dec.Shape, err)
	}
	return dec, nil
}

// snippet returns the start of an error body, printable, for the message.
func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		b = b[:n]
	}
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == utf8.RuneError {
			return ' '
		}
		return r
	}, string(b))
	return strings.TrimSpace(s)
}

// Start begins the background refresh: a first fetch at once (so the
// catalog fills as soon as the gateway starts), then one every Interval
// (+ jitter), or sooner after a failure (MinRetry, doubling up to
// Interval). It does nothing for a static-only provider, with a negative
// Interval, or when called again.
func (r *Refresher) Start() {
	if r.url == "" || r.o.Interval < 0 {
		return
	}
	r.start.Do(func() {
		r.wg.Add(1)
		go r.loop()
	})
}

// Close stops the background refresh, cancelling a fetch in flight, and
// waits for it. It is safe to call more than once; the catalog stays
// readable.
func (r *Refresher) Close() {
	r.stop.Do(r.cancel)
	r.wg.Wait()
}

func (r *Refresher) loop() {
	defer r.wg.Done()
	delay := time.Duration(0)
	for {
		if delay > 0 {
			r.mu.Lock()
			r.st.NextAttempt = r.o.Now().Add(delay)
			r.mu.Unlock()
			t := time.NewTimer(delay)
			select {
			case <-r.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		_ = r.Refresh(r.ctx) // recorded in Status and passed to OnError
		if r.ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		failures := r.st.Failures
		r.mu.Unlock()
		delay = r.nextDelay(failures)
	}
}

// nextDelay returns the wait before the next refresh after failures
// consecutive failures (0: the last one succeeded), jitter included.
func (r *Refresher) nextDelay(failures int) time.Duration {
	d := r.o.Interval
	if failures > 0 {
		d = r.o.MinRetry
		for i := 1; i < failures && d < r.o.Interval; i++ {
			d *= 2
		}
		d = min(d, r.o.Interval)
	}
	return d + time.Duration(r.o.Rand()*r.o.Jitter*float64(d))
}
