package billingtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// binary builds cmd/bardo once per test binary (incrementally, through
// the build cache) under its own name, so cmd/bardo's tests, which build
// build/test-bardo, never race this build.
var binary = sync.OnceValues(func() (string, error) {
	root, err := wasmbuild.Root()
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, "build", "test-bardo-billing")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/bardo")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, b)
	}
	return out, nil
})

// process is a running bardo binary.
type process struct {
	cmd  *exec.Cmd
	url  string
	log  *lockedBuffer
	done chan struct{}
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

// processDir writes a config directory for the binary: the priced
// providers in front of fake, keys mode over dataDir, the provider
// plugins linked in.
func processDir(tb testing.TB, fakeURL, dataDir string) string {
	tb.Helper()
	dir := tb.TempDir()
	pdir := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, pkg := range map[string]string{
		"openai-compatible.wasm": "plugins/providers/openai-compatible",
		"anthropic.wasm":         "plugins/providers/anthropic",
	} {
		if err := os.Symlink(wasmbuild.MustBuild(tb, pkg), filepath.Join(pdir, name)); err != nil {
			tb.Fatal(err)
		}
	}
	root, _ := wasmbuild.Root()
	cfg := "[server]\nplugin_dir = \"plugins\"\ncache_dir = \"" + filepath.Join(root, "build", "testcache-billing") + "\"\nlog_level = \"warn\"\n" +
		providersTOML(fakeURL) + keysTOML(dataDir)
	if err := os.WriteFile(filepath.Join(dir, "pipeline.toml"), []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// startProcess runs the binary in dir and waits until it answers key's
// request for /v1/models; tb's cleanup kills it if it still runs.
func startProcess(tb testing.TB, dir, key string) *process {
	tb.Helper()
	bin, err := binary()
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &process{url: "http://" + addr, log: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "BARDO_LISTEN="+addr, "UP_KEY="+upKey,
		"OPENAI_API_KEY=", "OPENROUTER_API_KEY=", "ANTHROPIC_API_KEY=", "GEMINI_API_KEY=", "BARDO_KEY_SECRET=")
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			tb.Fatalf("the gateway exited at start:\n%s", p.log.String())
		default:
		}
		req, _ := http.NewRequest("GET", p.url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("the gateway did not answer:\n%s", p.log.String())
	return nil
}

// lastCharge is the charge of the last answer in as, from its record in
// account acct.
func lastCharge(tb testing.TB, d *data, acct string, as []answer) int64 {
	tb.Helper()
	rs := d.usage(tb, acct)[as[len(as)-1].id]
	if len(rs) != 1 {
		return 0
	}
	return rs[0].Charge
}

// getJSON GETs url with key and decodes its JSON answer into v.
func getJSON(tb testing.TB, url, key string, v any) {
	tb.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// kill sends SIGKILL — no deferred code, no clean close — and waits.
func (p *process) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for a clean exit.
func (p *process) stop(tb testing.TB) {
	tb.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(45 * time.Second):
		p.kill()
		tb.Errorf("the gateway did not stop on SIGTERM:\n%s", p.log.String())
	}
}

// The gateway process is killed with SIGKILL during paid streaming load,
// then restarted on the same data directory:
//   - every stream whose trailer the client received has exactly one usage
//     record, with the charge the trailer showed (Tab.Close waits for the
//     commit, so a figure a caller saw is durable);
//   - no request has two records; no record is lost or doubled by the
//     restart;
//   - the ledger audits, never went below zero, and the balance is the
//     top-ups less the charges, to the micro-dollar;
//   - the restarted gateway serves paid requests on the same balance.
func TestKill9DuringPaidStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bardo binary")
	}
	const clients = 16
	// Streams of ~40 frames 4 ms apart: many are mid-stream at the kill.
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithDefaultBehaviour(fakeupstream.Behaviour{
		Text: strings.Repeat("settled exactly once ", 40), ChunkDelay: 4 * time.Millisecond}))
	t.Cleanup(fake.Close)
	// The account and its key are made by the binary's own operator CLI,
	// on the data directory the gateway then serves.
	dataDir := t.TempDir()
	const topUp = 50 * store.MicroUSD
	var acct account
	acct.id = cli(t, "accounts", "-data", dataDir, "create", "-name", "crash", "-tier", "pro")
	cli(t, "accounts", "-data", dataDir, "topup", acct.id, "50", "-reason", "crash test")
	acct.key = cli(t, "keys", "-data", dataDir, "create", acct.id, "-name", "load", "-rate-limit", "100000")
	d := openData(t, dataDir)
	dir := processDir(t, fake.URL(), dataDir)
	p := startProcess(t, dir, acct.key)

	var (
		mu       sync.Mutex
		answers  []answer
		trailers int
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := httpClient(clients)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 2000; i++ {
				// Three workers in four stream; the fourth gets JSON answers,
				// whose X-Bardo-Cost is as durable as a stream's trailer.
				c := call{dialect: dialect(w % 2), stream: w%4 != 3, maxTokens: 400, prompt: fmt.Sprintf("worker %d request %d", w, i)}
				c.model = "gpt-4o-mini"
				if c.dialect == anthropicD {
					c.model = "claude-haiku-4-5"
				}
				a := send(ctx, client, p.url, acct.key, c)
				mu.Lock()
				answers = append(answers, a)
				if a.shown() {
					trailers++
				}
				mu.Unlock()
				if a.err != nil && ctx.Err() == nil {
					select {
					case <-p.done: // killed: stop sending
						return
					default:
					}
				}
			}
		}()
	}
	// Kill once enough requests have been settled and shown, or after 20 s.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := trailers
		mu.Unlock()
		if n >= 150 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.kill()
	wg.Wait()
	cancel()
	client.CloseIdleConnections()

	shown, broken := 0, 0
	for _, a := range answers {
		if a.shown() {
			shown++
		}
		if a.status == 200 && isStream(a.header) && !a.ended {
			broken++ // the kill cut it mid-stream
		}
	}
	t.Logf("%d requests before the kill: %d showed their figures, %d streams broken by it", len(answers), shown, broken)
	if shown == 0 || broken == 0 {
		t.Fatalf("the kill did not land mid-load: %d trailers, %d broken streams", shown, broken)
	}

	// Restart on the same data directory; it serves the same balance.
	p2 := startProcess(t, dir, acct.key)
	after := []answer{}
	for i := range 4 {
		c := call{dialect: dialect(i % 2), stream: i >= 2, maxTokens: 400, prompt: fmt.Sprintf("after the restart %d", i)}
		c.model = "gpt-4o-mini"
		if c.dialect == anthropicD {
			c.model = "claude-haiku-4-5"
		}
		a := send(context.Background(), httpClient(1), p2.url, acct.key, c)
		if a.status != 200 || a.err != nil {
			t.Fatalf("after the restart: %d %v %.300s\n%s", a.status, a.err, a.body, p2.log.String())
		}
		after = append(after, a)
	}
	// The caller's own view agrees with the ledger once every settlement
	// is committed (the stop commits them): what it may spend, and the
	// balance its last answer showed. The killed processes' holds died
	// with them, and no request is open, so nothing else is held.
	var bal struct {
		Available int64  `json:"available_micros"`
		Today     *int64 `json:"spent_today_micros"`
	}
	// Killed again, right after answering (those settlements are likely
	// journaled and not yet committed), and started a third time: the
	// journal's replay is idempotent and loses nothing either.
	p2.kill()
	p3 := startProcess(t, dir, acct.key)
	getJSON(t, p3.url+"/v1/balance", acct.key, &bal)
	p3.stop(t)
	row, err := d.st.Account(context.Background(), acct.id)
	if err != nil {
		t.Fatal(err)
	}
	if bal.Available != row.Balance {
		t.Errorf("/v1/balance: available %d; the ledger's balance %d", bal.Available, row.Balance)
	}
	if _, _, shown := after[len(after)-1].cost(); shown != fmtUSD(row.Balance) {
		t.Errorf("the last answer showed balance %s; the ledger's %s", shown, fmtUSD(row.Balance))
	}
	// Spend today is read from the daily rollups, which a settlement
	// still being committed may not have reached: at most the last
	// request's charge behind.
	if spent := topUp - row.Balance; bal.Today == nil || *bal.Today > spent || *bal.Today < spent-lastCharge(t, d, acct.id, after) {
		t.Errorf("/v1/balance: spent today %v, the ledger's charges %d", bal.Today, spent)
	}

	// The ledger and the records, read back from the store.
	recs := d.usage(t, acct.id)
	l := d.ledger(t, acct.id)
	if l.topUps != topUp || l.balance != l.topUps-l.charges {
		t.Errorf("balance %d ≠ top-ups %d − charges %d", l.balance, l.topUps, l.charges)
	}
	var recorded int64
	for id, rs := range recs {
		if len(rs) != 1 {
			t.Errorf("request %s has %d usage records", id, len(rs))
		}
		for _, u := range rs {
			recorded += u.Charge
		}
	}
	if recorded != l.charges {
		t.Errorf("the usage records charge %d, the ledger %d", recorded, l.charges)
	}
	lost := 0
	for _, a := range append(answers, after...) {
		if !a.shown() {
			continue
		}
		cost, _, _ := a.cost()
		rs := recs[a.id]
		if len(rs) != 1 {
			lost++
			t.Errorf("%s showed cost %s but has %d usage records", a.id, cost, len(rs))
			continue
		}
		if cost != fmtUSD(rs[0].Charge) {
			t.Errorf("%s showed cost %s, its record charged %s", a.id, cost, fmtUSD(rs[0].Charge))
		}
	}
	// Records of answers the client never saw: settled before the kill
	// cut them; none may be doubled.
	unseen := len(recs) - shown - len(after)
	t.Logf("records %d (%d of answers the kill cut after their settlement), lost %d; balance %s = %s − %s",
		len(recs), unseen, lost, fmtUSD(l.balance), fmtUSD(l.topUps), fmtUSD(l.charges))
	if unseen < 0 {
		t.Errorf("fewer records (%d) than answers that showed their figures (%d)", len(recs), shown+len(after))
	}
	// The operator's view: the CLI audits the account and shows the same
	// balance.
	show := cli(t, "accounts", "-data", dataDir, "show", acct.id)
	if !strings.Contains(show, "audit      ok") || !strings.Contains(show, "balance    "+fmtUSD(l.balance)) {
		t.Errorf("bardo accounts show:\n%s", show)
	}
}

// cli runs the bardo binary's operator CLI and returns its standard
// output, trimmed.
func cli(tb testing.TB, args ...string) string {
	tb.Helper()
	bin, err := binary()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "BARDO_KEY_SECRET=", "BARDO_CONFIG=/nonexistent")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("bardo %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// SIGTERM while paid streams are open: the gateway stops taking new
// requests, lets the open streams finish (their trailers arrive), and
// commits their settlements before it exits — each has its record, at the
// charge its trailer showed, and the ledger balances.
func TestSigtermSettlesOpenStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bardo binary")
	}
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithDefaultBehaviour(fakeupstream.Behaviour{
		Text: strings.Repeat("drain before exit ", 30), ChunkDelay: 10 * time.Millisecond}))
	t.Cleanup(fake.Close)
	dataDir := t.TempDir()
	d := openData(t, dataDir)
	const topUp = 5 * store.MicroUSD
	acct := d.newAccount(t, "acct_sigterm", store.TierPro, topUp, auth.KeySpec{})
	p := startProcess(t, processDir(t, fake.URL(), dataDir), acct.key)

	const streams = 8
	answers := make([]answer, streams)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := call{dialect: dialect(i % 2), stream: true, maxTokens: 400, prompt: fmt.Sprintf("sigterm %d", i)}
			c.model = "gpt-4o-mini"
			if c.dialect == anthropicD {
				c.model = "claude-haiku-4-5"
			}
			answers[i] = send(context.Background(), httpClient(1), p.url, acct.key, c)
		}()
	}
	// Once every stream is upstream (and so mid-answer), stop the gateway.
	for deadline := time.Now().Add(10 * time.Second); fake.Count("/v1/chat/completions")+fake.Count("/v1/messages") < streams; {
		if time.Now().After(deadline) {
			t.Fatal("the streams did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.stop(t)
	wg.Wait()

	recs := d.usage(t, acct.id)
	for _, a := range answers {
		if a.err != nil || !a.hasTrailer || !a.trailerBefore {
			t.Errorf("%s: cut by the shutdown (err %v, trailer %v)", a.id, a.err, a.hasTrailer)
			continue
		}
		if rs := recs[a.id]; len(rs) != 1 || fmtUSD(rs[0].Charge) != a.trailer.Cost {
			t.Errorf("%s: shown %s, records %+v", a.id, a.trailer.Cost, rs)
		}
	}
	l := d.ledger(t, acct.id)
	if len(recs) != streams || l.balance != topUp-l.charges {
		t.Errorf("%d records for %d streams; balance %d, charges %d", len(recs), streams, l.balance, l.charges)
	}
}
