package catalog

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/routing"
)

// upstream is a test backend on 127.0.0.1 whose /models answer can be
// switched between requests.
type upstream struct {
	*httptest.Server
	hits    atomic.Int32
	handler atomic.Pointer[http.HandlerFunc]
	auth    atomic.Value // last Authorization header
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.set(h)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		u.auth.Store(r.Header.Get("Authorization"))
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/models") {
			http.NotFound(w, r)
			return
		}
		(*u.handler.Load())(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) set(h http.HandlerFunc) { u.handler.Store(&h) }

func serve(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, body, code) }
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestRefresherEachShape(t *testing.T) {
	for _, c := range []struct {
		file, provider string
		shape          Shape
		models         int
		probe          string
		price          string
	}{
		{"openrouter_models.json", "openrouter", ShapeOpenRouter, 4, "openai/gpt-4o-mini", "0.15"},
		{"venice_models.json", "venice", ShapeVenice, 3, "llama-3.3-70b", "0.7"},
		{"blockrun_models.json", "blockrun", ShapeBlockRun, 3, "openai/gpt-5.4", "2.5"},
		{"openai_models.json", "openai", ShapeOpenAI, 3, "o3", "unknown"},
	} {
		t.Run(c.provider, func(t *testing.T) {
			up := newUpstream(t, serve(readTestdata(t, c.file)))
			hdr := http.Header{}
			hdr.Set("Authorization", "Bearer test-key")
			r, err := NewRefresher(Options{Provider: c.provider, BaseURL: up.URL + "/api/v1/", Header: hdr})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := up.auth.Load(); got != "Bearer test-key" {
				t.Errorf("Authorization = %q", got)
			}
			cat := r.Catalog()
			if cat.Len() != c.models || cat.FetchedAt().IsZero() {
				t.Fatalf("%d models, fetched at %v", cat.Len(), cat.FetchedAt())
			}
			m, ok := cat.Lookup(c.probe)
			if !ok || m.Input.String() != c.price || m.Provider != c.provider {
				t.Errorf("%s: %+v", c.probe, m)
			}
			st := r.Status()
			if st.Shape != c.shape || st.Models != c.models || st.Failures != 0 || st.LastError != "" ||
				st.URL != up.URL+"/api/v1/models" {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// Every kind of failure keeps the last good catalog and is recorded.
func TestRefresherFailureKeepsLastGood(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}
	up := newUpstream(t, serve(readTestdata(t, "openrouter_models.json")))
	release := make(chan struct{})
	defer close(release)
	var updates, errorsSeen atomic.Int32
	r, err := NewRefresher(Options{
		Provider: "openrouter", BaseURL: up.URL, Timeout: 200 * time.Millisecond, MaxBody: 64 << 10,
		Now:      clk.Now,
		OnUpdate: func(*Catalog) { updates.Add(1) },
		OnError:  func(error) { errorsSeen.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	good := r.Catalog()
	fetched := clk.Now()

	failures := []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"500", status(500, `{"error":{"message":"upstream exploded"}}`), "status 500: {\"error\":{\"message\":\"upstream exploded\"}}"},
		{"401", status(401, "invalid key"), "status 401: invalid key"},
		{"malformed", serve([]byte(`{"data":[{"id":"a",`)), "decode model list"},
		{"html", serve([]byte("<html>maintenance</html>")), "want a JSON object"},
		{"empty list", serve([]byte(`{"data":[]}`)), "no usable model"},
		{"too large", serve([]byte(`{"data":[` + strings.Repeat(`{"id":"x"},`, 10000) + `{"id":"y"}]}`)), "answer larger than 65536 bytes"},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, "context deadline exceeded"},
	}
	for i, f := range failures {
		up.set(f.h)
		clk.Advance(time.Minute)
		err := r.Refresh(context.Background())
		if err == nil || !strings.Contains(err.Error(), f.want) {
			t.Fatalf("%s: error %v, want %q", f.name, err, f.want)
		}
		if !strings.Contains(err.Error(), `provider "openrouter"`) {
			t.Errorf("%s: error does not name the provider: %v", f.name, err)
		}
		if r.Catalog() != good {
			t.Fatalf("%s: catalog replaced after a failure", f.name)
		}
		st := r.Status()
		if st.Failures != i+1 || !strings.Contains(st.LastError, f.want) || !st.LastSuccess.Equal(fetched) ||
			st.Age != time.Duration(i+1)*time.Minute || st.Models != 4 {
			t.Errorf("%s: status %+v", f.name, st)
		}
	}
	if updates.Load() != 1 || errorsSeen.Load() != int32(len(failures)) {
		t.Errorf("OnUpdate %d, OnError %d", updates.Load(), errorsSeen.Load())
	}

	// The empty-list error is ErrEmpty underneath.
	up.set(serve([]byte(`{"data":[]}`)))
	if err := r.Refresh(context.Background()); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty list error %v is not ErrEmpty", err)
	}

	// Stale after two intervals without a good fetch.
	clk.Advance(2 * time.Hour)
	if st := r.Status(); !st.Stale {
		t.Errorf("not stale at age %v", st.Age)
	}

	// Recovery: a good answer replaces the catalog and clears the errors.
	up.set(serve(readTestdata(t, "venice_models.json")))
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Catalog() == good || r.Catalog().Len() != 3 {
		t.Error("catalog not replaced after recovery")
	}
	if st := r.Status(); st.Failures != 0 || st.LastError != "" || st.Stale || st.Age != 0 {
		t.Errorf("status after recovery %+v", st)
	}
}

func TestRefresherStaticOnly(t *testing.T) {
	static, err := FromTOML("bankr", decodeModels(t, `
[[model]]
id = "claude-opus-4-6"
input_price = "5"
output_price = "25"
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRefresher(Options{Provider: "bankr", Static: static})
	if err != nil {
		t.Fatal(err)
	}
	r.Start() // nothing to fetch: no goroutine
	defer r.Close()
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, ok := r.Catalog().Lookup("claude-opus-4-6")
	if !ok || m.Output.String() != "25" || m.Origin != OriginStatic || m.Provider != "bankr" {
		t.Errorf("static model %+v", m)
	}
	if st := r.Status(); st.Stale || st.URL != "" || st.Models != 1 {
		t.Errorf("status %+v", st)
	}
	if _, err := NewRefresher(Options{}); err == nil {
		t.Error("refresher without a provider")
	}
	if _, err := NewRefresher(Options{Provider: "x", Shape: "xml"}); err == nil {
		t.Error("refresher with an unknown shape")
	}
}

// Static entries are in the catalog before the first fetch and keep winning
// after it.
func TestRefresherStaticBeforeAndAfterFetch(t *testing.T) {
	static, err := FromTOML("openrouter", decodeModels(t, `
[[model]]
id = "openai/gpt-4o-mini"
output_price = "0.5"
quality = "low"
`))
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, serve(readTestdata(t, "openrouter_models.json")))
	r, err := NewRefresher(Options{Provider: "openrouter", BaseURL: up.URL, Static: static})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := r.Catalog().Lookup("openai/gpt-4o-mini"); !ok || m.Input.Known() || m.Output.String() != "0.5" {
		t.Fatalf("before the fetch: %+v", m)
	}
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, _ := r.Catalog().Lookup("openai/gpt-4o-mini")
	if m.Input.String() != "0.15" || m.Output.String() != "0.5" || m.Quality != routing.Low || m.Origin != OriginMerged {
		t.Errorf("after the fetch: %+v", m)
	}
}

func TestRefresherNextDelay(t *testing.T) {
	mk := func(rnd float64) *Refresher {
		r, err := NewRefresher(Options{Provider: "p", BaseURL: "http://127.0.0.1:1", Interval: time.Hour,
			MinRetry: time.Minute, Rand: func() float64 { return rnd }})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := mk(0)
	want := []time.Duration{time.Hour, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for f, w := range want {
		if got := r.nextDelay(f); got != w {
			t.Errorf("nextDelay(%d) = %v, want %v", f, got, w)
		}
	}
	// Jitter only delays, by at most 10 %.
	r = mk(0.999999)
	if got := r.nextDelay(0); got <= time.Hour || got > 66*time.Minute {
		t.Errorf("jittered interval %v", got)
	}
	if got := r.nextDelay(1); got <= time.Minute || got > 66*time.Second {
		t.Errorf("jittered retry %v", got)
	}
}

// The background loop with short real intervals: it fetches at once, keeps
// refreshing, retries after failures, and Close stops it.
func TestRefresherLoop(t *testing.T) {
	up := newUpstream(t, serve(readTestdata(t, "blockrun_models.json")))
	before := runtime.NumGoroutine()
	tr := &http.Transport{}
	var updates atomic.Int32
	r, err := NewRefresher(Options{Provider: "blockrun", BaseURL: up.URL, Interval: 10 * time.Millisecond,
		MinRetry: 2 * time.Millisecond, Client: &http.Client{Transport: tr},
		OnUpdate: func(*Catalog) { updates.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	r.Start()
	waitFor(t, "three refreshes", func() bool { return updates.Load() >= 3 })
	up.set(status(503, "down"))
	n := up.hits.Load()
	waitFor(t, "retries after failure", func() bool { return up.hits.Load() >= n+3 })
	if r.Catalog().Len() != 3 {
		t.Error("catalog lost while the backend fails")
	}
	if st := r.Status(); st.Failures == 0 || st.NextAttempt.IsZero() {
		t.Errorf("status %+v", st)
	}
	r.Close()
	r.Close()
	// What remains are the keep-alive connection's goroutines, client and
	// server side; closing them must bring the count back.
	tr.CloseIdleConnections()
	up.CloseClientConnections()
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

// Close cancels a fetch in flight instead of waiting out its timeout.
func TestRefresherCloseCancelsFetch(t *testing.T) {
	entered := make(chan struct{}, 1)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})
	r, err := NewRefresher(Options{Provider: "p", BaseURL: up.URL, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	<-entered
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not cancel the fetch in flight")
	}
	if st := r.Status(); !strings.Contains(st.LastError, "context canceled") {
		t.Errorf("status %+v", st)
	}
}

// Readers on the request path run concurrently with refreshes (-race).
func TestRefresherConcurrentReads(t *testing.T) {
	up := newUpstream(t, serve(readTestdata(t, "openrouter_models.json")))
	r, err := NewRefresher(Options{Provider: "openrouter", BaseURL: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				runtime.Gosched()
				select {
				case <-stop:
					return
				default:
				}
				c := r.Catalog()
				if m, ok := c.Lookup("openai/gpt-4o-mini"); !ok || m.Input.Nanos() != 150_000_000 {
					t.Errorf("read %v, %v", m, ok)
					return
				}
				_ = r.Status()
			}
		}()
	}
	for range 10 {
		if err := r.Refresh(context.Background()); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
