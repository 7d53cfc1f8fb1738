package agenttest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// Every plugin the shipped pipeline.toml names, so testgateway builds them
// from this tree's sources (a fix elsewhere is judged here at once).
func init() {
	for _, n := range []string{"pii", "injection", "hashcache", "semcache", "toolprune", "compress", "promptcache", "affinity"} {
		testgateway.Plugins[n+".wasm"] = "plugins/layers/" + n
	}
	for _, n := range []string{"gemini", "bankr", "blockrun", "openrouter", "venice"} {
		testgateway.Plugins[n+".wasm"] = "plugins/providers/" + n
	}
}

const (
	// upKey is the upstream key: only the gateway and the fake know it.
	upKey = "sk-agenttest-upstream-0123456789abcdef"
	// clientKey is what the agents send; the gateway does not check it.
	clientKey = "sk-agent-client-key"
	// runTimeout bounds one agent run.
	runTimeout = 90 * time.Second
)

// shippedPipeline is the repository's pipeline.toml as `make run` serves it,
// with only what a test must change: the [server] keys testgateway sets
// (listen, plugin_dir, cache_dir), the models directory made absolute, and the
// openai and anthropic providers' base_url pointed at the fake upstream. The
// other providers stay as shipped (off: no credential, or enabled = false).
func shippedPipeline(t *testing.T, fakeURL string) string {
	t.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	modeltest.TOML(t) // fails with `make models` when the models are missing
	src, err := os.ReadFile(filepath.Join(root, "pipeline.toml"))
	if err != nil {
		t.Fatal(err)
	}
	header := regexp.MustCompile(`^\s*\[\[?([a-z.]+)\]\]?`)
	key := regexp.MustCompile(`^\s*([a-z_]+)\s*=`)
	var server, out []string
	section, provider := "", ""
	edits := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			section, provider = m[1], ""
			if section != "server" {
				out = append(out, line)
			}
			continue
		}
		k := ""
		if m := key.FindStringSubmatch(line); m != nil {
			k = m[1]
		}
		switch {
		case section == "server":
			// testgateway writes the [server] header with listen,
			// plugin_dir and cache_dir; the other keys join it.
			if k != "" && k != "listen" && k != "plugin_dir" && k != "cache_dir" {
				server = append(server, line)
			}
			continue
		case section == "models" && k == "dir":
			line, edits["models.dir"] = `dir = "`+filepath.Join(root, "build", "models")+`"`, true
		case section == "provider" && k == "name":
			provider = strings.Trim(strings.TrimSpace(strings.SplitN(line, "=", 2)[1]), `"`)
		case section == "provider" && k == "base_url" && provider == "openai":
			line, edits["openai"] = `base_url = "`+fakeURL+`/v1"`, true
		case section == "provider" && k == "base_url" && provider == "anthropic":
			line, edits["anthropic"] = `base_url = "`+fakeURL+`"`, true
		}
		out = append(out, line)
	}
	for _, e := range []string{"models.dir", "openai", "anthropic"} {
		if !edits[e] {
			t.Fatalf("pipeline.toml changed shape: could not point %s at the test's paths", e)
		}
	}
	return strings.Join(server, "\n") + "\n" + strings.Join(out, "\n")
}

// exchange is one request an agent sent to the gateway and what it got back.
type exchange struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	Status                 int
	RespHeader             http.Header
	RespBody               []byte // decoded, complete once the agent read it all
}

// front is a recording reverse proxy in front of the gateway: the agents
// talk to it, so the test sees the exact bytes each client sent and the
// gateway's response headers (X-Bardo-Cache), without a hook in the gateway.
type front struct {
	srv *httptest.Server
	mu  sync.Mutex
	ex  []*exchange
}

func newFront(t *testing.T, gatewayURL string) *front {
	target, err := url.Parse(gatewayURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &front{}
	rp := &httputil.ReverseProxy{
		FlushInterval: -1, // streams pass at once
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			e := resp.Request.Context().Value(exKey{}).(*exchange)
			e.Status, e.RespHeader = resp.StatusCode, resp.Header.Clone()
			resp.Body = &teeBody{ReadCloser: resp.Body, e: e, f: f, gz: resp.Header.Get("Content-Encoding") == "gzip"}
			return nil
		},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e := &exchange{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
		f.mu.Lock()
		f.ex = append(f.ex, e)
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), exKey{}, e)))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

type exKey struct{}

// teeBody records a response body as the agent reads it.
type teeBody struct {
	io.ReadCloser
	e   *exchange
	f   *front
	gz  bool
	buf bytes.Buffer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	return n, err
}

func (b *teeBody) Close() error {
	raw := b.buf.Bytes()
	if b.gz {
		if r, err := gzip.NewReader(bytes.NewReader(raw)); err == nil {
			if d, err := io.ReadAll(r); err == nil {
				raw = d
			}
		}
	}
	b.f.mu.Lock()
	b.e.RespBody = bytes.Clone(raw)
	b.f.mu.Unlock()
	return b.ReadCloser.Close()
}

// exchanges returns copies of what was recorded so far.
func (f *front) exchanges() []exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]exchange, len(f.ex))
	for i, e := range f.ex {
		out[i] = *e
	}
	return out
}

// escapes records every attempt of an agent to reach anything but the
// gateway: the agents run with HTTP(S)_PROXY pointing here (NO_PROXY covers
// 127.0.0.1), and every request or CONNECT is refused with 403 at once.
type escapes struct {
	srv   *httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newEscapes(t *testing.T) *escapes {
	e := &escapes{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.hosts = append(e.hosts, r.Method+" "+r.Host)
		e.mu.Unlock()
		http.Error(w, "agenttest: no network beyond the gateway", http.StatusForbidden)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *escapes) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.hosts...)
}

// env is one gateway with the shipped pipeline in front of one fake
// upstream, with the recording front and the escape trap.
type env struct {
	gw   *testgateway.Gateway
	fake *fakeupstream.Server
	fr   *front
	esc  *escapes
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, shippedPipeline(t, fake.URL()), testgateway.Options{
		Env: map[string]string{"OPENAI_API_KEY": upKey, "ANTHROPIC_API_KEY": upKey},
	})
	e := &env{gw: gw, fake: fake, fr: newFront(t, gw.URL), esc: newEscapes(t)}
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpLog(t)
		}
	})
	return e
}

// dumpLog logs the gateway's warnings and errors.
func (e *env) dumpLog(t *testing.T) {
	for _, l := range strings.Split(e.gw.LogLines.String(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Log("gateway: " + truncate(l, 600))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// agentDir is tools/agents, where `make agent-test-deps` installs the agents.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "tools", "agents", "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not installed (%v): run `make agent-test-deps` (npm ci in tools/agents)", name, err)
	}
	return bin
}

// run is one finished agent process.
type run struct {
	stdout, stderr string
	err            error
}

// runAgent runs bin with args in dir, with home as HOME (a scratch
// directory: one per session, so two runs of one prompt are two runs of
// one user), the given environment on top of a clean one, and a bound on
// its time.
func (e *env) runAgent(t *testing.T, dir, home, bin string, extraEnv []string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"HOME=" + home,
		"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"TERM=dumb", "NO_COLOR=1", "CI=1",
		// Nothing but the gateway may be reached: every other request is
		// refused (and recorded) by the escape trap.
		"HTTP_PROXY=" + e.esc.srv.URL, "HTTPS_PROXY=" + e.esc.srv.URL,
		"http_proxy=" + e.esc.srv.URL, "https_proxy=" + e.esc.srv.URL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	}, extraEnv...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %v in %v", filepath.Base(bin), strings.Join(args, " "), err, time.Since(began).Round(time.Millisecond))
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return run{stdout.String(), stderr.String(), err}
}
