package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// binary builds the bardo command once per test binary.
var binary = sync.OnceValues(func() (string, error) {
	root, err := wasmbuild.Root()
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, "build", "test-bardo")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/bardo")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, b)
	}
	return out, nil
})

// instance is a running bardo process.
type instance struct {
	cmd  *exec.Cmd
	addr string
	log  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// setup writes a config with the sim provider and the plugins it needs into
// a directory, with a compilation cache there.
func setup(tb testing.TB, extra string) (dir string) {
	tb.Helper()
	dir = tb.TempDir()
	pdir := filepath.Join(dir, "plugins")
	os.MkdirAll(pdir, 0o755)
	for name, pkg := range map[string]string{
		"sim.wasm": "plugins/providers/sim", "hostcalls.wasm": "testplugins/hostcalls",
		"pii.wasm": "plugins/layers/pii", "hashcache.wasm": "plugins/layers/hashcache",
		"toolprune.wasm": "plugins/layers/toolprune", "promptcache.wasm": "plugins/layers/promptcache",
		"affinity.wasm": "plugins/layers/affinity",
	} {
		if err := os.Symlink(wasmbuild.MustBuild(tb, pkg), filepath.Join(pdir, name)); err != nil {
			tb.Fatal(err)
		}
	}
	writeConfig(tb, dir, extra)
	return dir
}

func writeConfig(tb testing.TB, dir, extra string) {
	cfg := `[server]
plugin_dir = "plugins"
cache_dir = "cache"
` + extra + `
[[provider]]
name = "sim"
plugin = "sim.wasm"
models = ["*"]
trusted = true
`
	if err := os.WriteFile(filepath.Join(dir, "pipeline.toml"), []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func start(tb testing.TB, dir string) *instance {
	tb.Helper()
	bin, err := binary()
	if err != nil {
		tb.Fatal(err)
	}
	in := &instance{addr: freeAddr(tb), log: &lockedBuffer{}}
	in.cmd = exec.Command(bin, "serve")
	in.cmd.Dir = dir
	in.cmd.Env = append(os.Environ(), "BARDO_LISTEN="+in.addr,
		"OPENAI_API_KEY=", "OPENROUTER_API_KEY=", "ANTHROPIC_API_KEY=", "GEMINI_API_KEY=")
	in.cmd.Stderr = in.log
	if err := in.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		in.cmd.Process.Kill()
		in.cmd.Wait()
	})
	return in
}

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`

func (in *instance) ask(path, body string) (int, http.Header, string, error) {
	req, _ := http.NewRequest("POST", "http://"+in.addr+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

// waitReady polls until the gateway answers a chat request; it returns how
// long that took from the process start.
func (in *instance) waitReady(tb testing.TB, began time.Time) time.Duration {
	tb.Helper()
	// Generous: a fresh clone compiles every plugin of the default pipeline
	// once (about a second each) while other test packages share the two
	// cores. Cold-start speed is BenchmarkColdStart's business, not this.
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if code, _, _, err := in.ask("/v1/chat/completions", chatBody); err == nil && code == 200 {
			return time.Since(began)
		}
		time.Sleep(2 * time.Millisecond)
	}
	tb.Fatalf("gateway did not answer; log:\n%s", in.log.String())
	return 0
}

func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return 0
}

// The `make run` + curl promise, on the real binary: both dialects answer
// with no keys, the simulated provider is announced, SIGHUP reloads, and
// SIGTERM shuts down cleanly.
func TestServe(t *testing.T) {
	dir := setup(t, "")
	in := start(t, dir)
	in.waitReady(t, time.Now())

	code, h, body, err := in.ask("/v1/chat/completions", chatBody)
	if err != nil || code != 200 || !strings.Contains(body, "[bardo sim]") || h.Get("X-Bardo-Provider") != "sim" {
		t.Fatalf("openai: %d %v %s", code, err, body)
	}
	code, _, body, err = in.ask("/v1/messages", `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`)
	if err != nil || code != 200 || !strings.Contains(body, `"type":"message"`) {
		t.Fatalf("anthropic: %d %v %s", code, err, body)
	}
	if !strings.Contains(in.log.String(), "only the simulated provider") {
		t.Fatalf("no notice that the simulated provider is active:\n%s", in.log.String())
	}

	// SIGHUP: a new layer takes effect.
	writeConfig(t, dir, "\n[[layer]]\nname = \"hc\"\nplugin = \"hostcalls.wasm\"\ntrusted = true\n")
	in.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, h, _, _ := in.ask("/v1/chat/completions", chatBody)
		if h.Get("X-Bardo-Hostcalls") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not reload; log:\n%s", in.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A file change alone (no signal): the watcher reloads; the layer goes.
	writeConfig(t, dir, "")
	deadline = time.Now().Add(15 * time.Second)
	for {
		_, h, _, _ := in.ask("/v1/chat/completions", chatBody)
		if h.Get("X-Bardo-Hostcalls") == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("editing pipeline.toml did not reload; log:\n%s", in.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	in.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- in.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, in.log.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not exit after SIGTERM")
	}
}

func TestCheck(t *testing.T) {
	dir := setup(t, "")
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("check: %v %s", err, out)
	}
	writeConfig(t, dir, "\n[[layer]]\nname = \"x\"\nplugin = \"missing.wasm\"\non_error = \"maybe\"\n")
	cmd = exec.Command(bin, "check")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "pipeline.toml:") || !strings.Contains(string(out), "on_error") {
		t.Fatalf("check of a broken file: %v %s", err, out)
	}
}

// defaultLayers are the layers of the repository's default pipeline.toml.
// BenchmarkColdStart measures process start to first answer with a warm
// compilation cache (the first start fills it), and the idle RSS after it:
// with the simulated provider alone, and with the default pipeline's five
// layers in front of it.
func BenchmarkColdStart(b *testing.B) {
	for _, tc := range []struct {
		name string
		dir  func(testing.TB) string
	}{
		{"sim-only", func(tb testing.TB) string { return setup(tb, "") }},
		{"pipeline.toml", defaultPipelineDir},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := tc.dir(b)
			warm := start(b, dir)
			warm.waitReady(b, time.Now())
			warm.cmd.Process.Kill()
			warm.cmd.Wait()

			var total time.Duration
			var rss int
			n := 0
			for b.Loop() {
				began := time.Now()
				in := start(b, dir)
				total += in.waitReady(b, began)
				time.Sleep(200 * time.Millisecond)
				rss += rssKiB(in.cmd.Process.Pid)
				n++
				in.cmd.Process.Kill()
				in.cmd.Wait()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-first-answer")
			b.ReportMetric(float64(rss)/float64(n)/1024, "idle-RSS-MiB")
		})
	}
}

// defaultPipelineDir lays out the repository's pipeline.toml as `make run`
// serves it: every shipped plugin in build/plugins and the offline models
// in build/models.
func defaultPipelineDir(tb testing.TB) string {
	tb.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		tb.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "pipeline.toml"))
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	pdir := filepath.Join(dir, "build", "plugins")
	os.MkdirAll(pdir, 0o755)
	for _, kind := range []string{"layers", "providers"} {
		entries, _ := os.ReadDir(filepath.Join(root, "plugins", kind))
		for _, e := range entries {
			if err := os.Symlink(wasmbuild.MustBuild(tb, "plugins/"+kind+"/"+e.Name()), filepath.Join(pdir, e.Name()+".wasm")); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := os.Symlink(wasmbuild.MustBuild(tb, wasmbuild.Bundle), filepath.Join(pdir, "bardo.wasm")); err != nil {
		tb.Fatal(err)
	}
	modeltest.Dir(tb, modeltest.Glove)
	if err := os.Symlink(filepath.Join(root, "build", "models"), filepath.Join(dir, "build", "models")); err != nil {
		tb.Fatal(err)
	}
	// The compilation cache every test gateway of the run shares: the
	// plugins compile once per run, not once per test.
	src = []byte(strings.Replace(string(src), `cache_dir = ".cache/wazero"`, `cache_dir = "`+filepath.Join(root, "build", "testcache")+`"`, 1))
	if err := os.WriteFile(filepath.Join(dir, "pipeline.toml"), src, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// The repository's own pipeline.toml — what `make run` serves — loads every
// plugin it names and answers through its layers.
func TestDefaultPipeline(t *testing.T) {
	in := start(t, defaultPipelineDir(t))
	in.waitReady(t, time.Now())
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"write to ann@example.com"}]}`
	code, h, out, err := in.ask("/v1/chat/completions", body)
	if err != nil || code != 200 || h.Get("X-Bardo-Provider") != "sim" || h.Get("X-Bardo-Pii") == "" || h.Get("X-Bardo-Cache") != "miss" {
		t.Fatalf("%d %v %v %s\n%s", code, err, h, out, in.log.String())
	}
	if !strings.Contains(out, "ann@example.com") {
		t.Fatalf("the masked address was not restored: %s", out)
	}
	if _, h, _, _ := in.ask("/v1/chat/completions", body); h.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatalf("second ask: X-Bardo-Cache = %q", h.Get("X-Bardo-Cache"))
	}
	// L8 scored the text; L2 answers the same question asked in other case
	// and punctuation (the hash cache cannot); an intent picks a model.
	if h.Get("X-Bardo-Injection") == "" {
		t.Errorf("no injection score: %v", h)
	}
	q := `{"model":"auto","messages":[{"role":"user","content":"%s"}]}`
	if code, h, out, _ := in.ask("/v1/chat/completions", fmt.Sprintf(q, "Explain impermanent loss for a liquidity provider, please.")); code != 200 ||
		h.Get("X-Bardo-Cache") != "miss" || h.Get("X-Bardo-Model") != "sim" || h.Get("X-Bardo-Intent") == "" {
		t.Fatalf("auto: %d %v %s", code, h, out)
	}
	if _, h, _, _ := in.ask("/v1/chat/completions", fmt.Sprintf(q, "explain IMPERMANENT loss for a liquidity provider please")); h.Get("X-Bardo-Cache") != "semantic-hit" {
		t.Fatalf("rephrased: X-Bardo-Cache = %q", h.Get("X-Bardo-Cache"))
	}
}

// TestServeConfigFlag: serve reads the file --config (or a FILE argument)
// names, not ./pipeline.toml; --help prints the usage and serves nothing;
// a flag it does not know is a usage error (exit 2), not a gateway started
// on the default file.
func TestServeConfigFlag(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := setup(t, "")
	// The named file serves; the directory's own pipeline.toml is broken,
	// so an answer proves the flag was read.
	other := filepath.Join(dir, "other.toml")
	cfg, err := os.ReadFile(filepath.Join(dir, "pipeline.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.toml"), []byte("[server]\nbogus = \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve", "--config", other}, {"serve", "-config=" + other}, {"serve", other}} {
		in := &instance{addr: freeAddr(t), log: &lockedBuffer{}}
		in.cmd = exec.Command(bin, args...)
		in.cmd.Dir = dir
		in.cmd.Env = append(os.Environ(), "BARDO_LISTEN="+in.addr, "BARDO_CONFIG=", "OPENAI_API_KEY=")
		in.cmd.Stderr = in.log
		if err := in.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		in.waitReady(t, time.Now())
		if code, _, body, err := in.ask("/v1/chat/completions", chatBody); err != nil || code != 200 {
			t.Errorf("%v: %d %v %s", args, code, err, body)
		}
		in.cmd.Process.Kill()
		in.cmd.Wait()
	}

	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BARDO_LISTEN="+freeAddr(t))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := run("serve", "--help"); code != 0 || !strings.Contains(out, "--config") && !strings.Contains(out, "-config") {
		t.Errorf("serve --help: exit %d\n%s", code, out)
	}
	if code, out := run("serve", "--bogus"); code != 2 || !strings.Contains(out, "bogus") {
		t.Errorf("serve --bogus: exit %d\n%s", code, out)
	}
	if code, out := run("serve", "a.toml", "b.toml"); code != 2 {
		t.Errorf("serve with two files: exit %d\n%s", code, out)
	}
	missing := filepath.Join(dir, "missing.toml")
	if code, out := run("serve", "--config", missing); code != 1 || !strings.Contains(out, "missing.toml") {
		t.Errorf("serve --config of a missing file: exit %d\n%s", code, out)
	}
}
