//go:build !wasip1

package dashboard_test

// The dashboard in real headless Chromium (Debian's chromium, installed by
// scripts/dashboard-deps.sh), driven over the DevTools protocol by
// chromedp: login, console errors, charts with data after a scripted load,
// a page that keeps updating while a stream is held open, screenshots in
// build/test-artifacts/dashboard, and a bounded page-open-through-load run.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// browser is one headless Chromium with its console watched.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: make test installs it (scripts/dashboard-deps.sh)")
	}
	t.Skip("chromium is not installed (scripts/dashboard-deps.sh installs it)")
	return ""
}

func newBrowser(t *testing.T) *browser {
	path := chromiumPath(t)
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1100),
		chromedp.NoSandbox, // the test machines run as root
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	// Stop Chromium (chromedp kills its processes) when the test ends.
	t.Cleanup(func() { cancelC(); cancelA() })
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// timeout bounds one step in the browser.
func (b *browser) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, 30*time.Second)
}

func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func get[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func call[P, R any](t *testing.T, b *browser, cmd cdp.Command[P, R], p P) R {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	r, err := chromedp.Call(ctx, cmd, p)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Method, err)
	}
	return r
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// artifacts is where screenshots go: build/test-artifacts/dashboard (or
// $BARDO_TEST_ARTIFACTS/dashboard).
func artifacts(t *testing.T) string {
	dir := os.Getenv("BARDO_TEST_ARTIFACTS")
	if dir == "" {
		root, err := wasmbuild.Root()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "build", "test-artifacts")
	}
	dir = filepath.Join(dir, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png := get(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	p := filepath.Join(artifacts(t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

// pageState is what the page shows, read from its elements.
type pageState struct {
	Rate, Latency, Money, Breakdown, Feed, Models, Cache, Accounts int
	Requests                                                       float64
	Status                                                         string
	Nodes                                                          int
}

const readState = `(() => {
	const n = (id, k) => +(document.getElementById(id).dataset[k] || 0);
	return {Rate: n('chart-rate', 'points'), Latency: n('chart-latency', 'points'), Money: n('chart-money', 'points'),
		Breakdown: n('chart-breakdown', 'points'), Feed: n('feed', 'count'), Models: n('models', 'rows'),
		Cache: n('cache', 'rows'), Accounts: n('accounts', 'rows'), Requests: n('total-requests', 'value'),
		Status: document.getElementById('status').textContent, Nodes: document.getElementsByTagName('*').length};
})()`

func (b *browser) state(t *testing.T) pageState {
	t.Helper()
	return get(t, b, "read the page", chromedp.Evaluate[pageState](readState))
}

// login goes to /dashboard, is sent to the login form, and logs in.
func (b *browser) login(t *testing.T, base string) {
	t.Helper()
	b.run(t, "open /dashboard", chromedp.Navigate(base+"/dashboard"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := get(t, b, "location", chromedp.Location()); !strings.HasSuffix(loc, "/dashboard/login") {
		t.Fatalf("anonymous /dashboard went to %s, not the login form", loc)
	}
	b.screenshot(t, "login.png")
	b.run(t, "a wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-the-token"), chromedp.Submit(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("failed")))
	if loc := get(t, b, "location", chromedp.Location()); !strings.Contains(loc, "/dashboard/login") {
		t.Fatalf("a wrong token went to %s", loc)
	}
	b.run(t, "log in", chromedp.SendKeys(chromedp.ID("token"), adminToken),
		chromedp.Submit(chromedp.ID("login")), chromedp.WaitVisible(chromedp.ID("chart-rate")))
	if loc := get(t, b, "location", chromedp.Location()); !strings.HasSuffix(loc, "/dashboard") {
		t.Fatalf("after login: %s", loc)
	}
	// The session cookie is httpOnly, Secure (127.0.0.1 is a secure
	// context to Chromium, so it is kept over plain http) and Strict.
	cookies := call(t, b, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/dashboard"}}).Cookies
	if len(cookies) != 1 || !cookies[0].HTTPOnly || !cookies[0].Secure || cookies[0].SameSite != network.CookieSameSiteStrict ||
		strings.Contains(cookies[0].Value, adminToken) {
		t.Fatalf("session cookie: %+v", cookies)
	}
	jsCookies := get(t, b, "document.cookie", chromedp.Evaluate[string](`document.cookie`))
	if jsCookies != "" {
		t.Fatalf("the page's script sees cookies %q", jsCookies)
	}
}

func TestBrowserDashboard(t *testing.T) {
	e := start(t)
	b := newBrowser(t)
	b.login(t, e.g.URL)

	// The page keeps updating while a stream is held open upstream.
	hold := make(chan struct{})
	e.first.Script(fakeupstream.Behaviour{Hold: hold})
	held := make(chan error, 1)
	go func() {
		defer close(held)
		_, err := e.do("/v1/messages", messages("A long answer held open.", true))
		held <- err
	}()
	eventually(t, 10*time.Second, "the held stream reached the upstream", func() error {
		if e.first.Count("/v1/messages") < 1 {
			return errors.New("not yet")
		}
		return nil
	})
	before := b.state(t)
	eventually(t, 15*time.Second, "the page updates while a stream is held", func() error {
		if s := b.state(t); s.Status == before.Status || !strings.HasPrefix(s.Status, "updated") {
			return fmt.Errorf("status still %q", s.Status)
		}
		return nil
	})
	close(hold)
	if err := <-held; err != nil {
		t.Fatalf("the held stream: %v", err)
	}

	for range 2 {
		e.load(t)
	}
	var s pageState
	eventually(t, 40*time.Second, "charts and tables with data", func() error {
		s = b.state(t)
		mfs := e.scrape(t)
		switch {
		case s.Rate == 0 || s.Latency == 0:
			return fmt.Errorf("live charts empty: %+v", s)
		case s.Money == 0 || s.Breakdown == 0:
			return fmt.Errorf("history charts empty: %+v", s)
		case s.Feed == 0 || s.Models < 3 || s.Cache == 0 || s.Accounts != 1:
			return fmt.Errorf("tables: %+v", s)
		case s.Requests != sum(mfs, "bardo_requests_total"):
			return fmt.Errorf("page shows %v requests, /metrics %v", s.Requests, sum(mfs, "bardo_requests_total"))
		}
		return nil
	})
	t.Logf("page: %+v", s)
	b.screenshot(t, "dashboard.png")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// soakDuration is the page-open-through-load run's length: 60 s by
// default, BARDO_DASHBOARD_SOAK (a duration, "10m" for the run).
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("BARDO_DASHBOARD_SOAK")
	if v == "" {
		if testing.Short() {
			return 20 * time.Second
		}
		return 60 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second {
		t.Fatalf("BARDO_DASHBOARD_SOAK=%q: want a duration of at least 10s", v)
	}
	return d
}

// rssBytes is this process's resident set (the gateway runs in it).
func rssBytes(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// With the page open through a steady load, the page's JS heap (after a
// collection), its DOM and the gateway's RSS level off: every buffer the
// page keeps is bounded.
func TestBrowserPageOpenThroughLoad(t *testing.T) {
	d := soakDuration(t)
	e := start(t)
	b := newBrowser(t)
	b.login(t, e.g.URL)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent int64
	var mu sync.Mutex
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond) // ~20 requests/s a client
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				stream := i%4 == 0
				q := fmt.Sprintf("client %d question %d: what moves the health factor?", c, i)
				var err error
				if i%2 == 0 {
					_, err = e.do("/v1/chat/completions", chat(q, stream))
				} else {
					_, err = e.do("/v1/messages", messages(q, stream))
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sent++
				mu.Unlock()
			}
		}()
	}

	type sample struct {
		at        time.Duration
		heap, rss int64
		nodes     int
	}
	var samples []sample
	begin := time.Now()
	for time.Since(begin) < d {
		time.Sleep(d / 12)
		call(t, b, heapprofiler.CollectGarbage, cdp.Empty{})
		used := call(t, b, runtime.GetHeapUsage, cdp.Empty{}).UsedSize
		s := b.state(t)
		samples = append(samples, sample{time.Since(begin), int64(used), rssBytes(t), s.Nodes})
	}
	close(stop)
	wg.Wait()

	for _, s := range samples {
		t.Logf("%6.1fs  js heap %6.2f MiB  dom %4d nodes  gateway rss %6.1f MiB", s.at.Seconds(), float64(s.heap)/(1<<20), s.nodes, float64(s.rss)/(1<<20))
	}
	t.Logf("%d requests in %s", sent, d)
	// The first third warms up (charts fill their 300 points at 2 s a
	// point only after 10 minutes, so a long run checks the ring too).
	third := len(samples) / 3
	var warmHeap, warmRSS int64
	var warmNodes int
	for _, s := range samples[:third+1] {
		warmHeap, warmRSS, warmNodes = max(warmHeap, s.heap), max(warmRSS, s.rss), max(warmNodes, s.nodes)
	}
	last := samples[len(samples)-1]
	if last.heap > warmHeap*3/2+4<<20 {
		t.Errorf("the page's heap grew from %d to %d bytes", warmHeap, last.heap)
	}
	if last.nodes > warmNodes+400 {
		t.Errorf("the page's DOM grew from %d to %d nodes", warmNodes, last.nodes)
	}
	if last.rss > warmRSS+96<<20 {
		t.Errorf("the gateway's RSS grew from %d to %d bytes", warmRSS, last.rss)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	b.screenshot(t, "dashboard-after-load.png")
}
