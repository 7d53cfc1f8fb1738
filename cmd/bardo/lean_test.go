package main_test

// The lean harness: the real binary serving the repository's pipeline.toml,
// side by side with the same file without its layers, both in front of one
// host/fakeupstream running in this process (issue 14's targets), and
// TestStreams500. docs/performance.md ("Lean") holds the figures.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/wire"
)

// leanKey is the key the fake upstream expects; the gateway gets it as the
// openai and anthropic providers' credential.
const leanKey = "sk-lean-upstream-0123456789abcdef"

// leanPipeline lays out the shipped pipeline.toml as defaultPipelineDir does,
// with the openai and anthropic providers' base_url pointed at fakeURL and,
// when layers is false, every [[layer]] table (with its [layer.config]
// sub-tables) removed; nothing else changes. It returns the directory and the
// number of layers the file serves.
func leanPipeline(tb testing.TB, fakeURL string, layers bool) (string, int) {
	tb.Helper()
	dir := defaultPipelineDir(tb)
	path := filepath.Join(dir, "pipeline.toml")
	src, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	header := regexp.MustCompile(`^\s*\[\[?([a-z_.]+)\]\]?`)
	key := regexp.MustCompile(`^\s*([a-z_]+)\s*=\s*"?([^"]*)`)
	var out []string
	section, provider := "", ""
	n, edits := 0, 0
	for _, line := range strings.Split(string(src), "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			section, provider = m[1], ""
			if section == "layer" {
				n++
			}
		}
		if !layers && (section == "layer" || strings.HasPrefix(section, "layer.")) {
			continue
		}
		if m := key.FindStringSubmatch(line); m != nil && section == "provider" {
			switch {
			case m[1] == "name":
				provider = m[2]
			case m[1] == "base_url" && provider == "openai":
				line = `base_url = "` + fakeURL + `/v1"`
				edits++
			case m[1] == "base_url" && provider == "anthropic":
				line = `base_url = "` + fakeURL + `"`
				edits++
			}
		}
		out = append(out, line)
	}
	if edits != 2 || n == 0 {
		tb.Fatalf("pipeline.toml changed shape: %d layers, %d of 2 providers pointed at the fake upstream", n, edits)
	}
	if !layers {
		n = 0
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir, n
}

// leanProc is one running gateway process.
type leanProc struct {
	cmd   *exec.Cmd
	base  string // http://127.0.0.1:port
	log   *tailLog
	began time.Time
	once  sync.Once
}

// startLean starts the binary in dir with only the two providers the fake
// upstream serves enabled (every other credential empty). Cleanup stops it.
func startLean(tb testing.TB, dir string) *leanProc {
	tb.Helper()
	bin, err := binary()
	if err != nil {
		tb.Fatal(err)
	}
	addr := freeAddr(tb)
	p := &leanProc{base: "http://" + addr, log: &tailLog{}}
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "BARDO_LISTEN="+addr, "BARDO_CONFIG=",
		"OPENAI_API_KEY="+leanKey, "ANTHROPIC_API_KEY="+leanKey, "GEMINI_API_KEY=", "OPENROUTER_API_KEY=",
		"BANKR_API_KEY=", "VENICE_API_KEY=", "BARDO_WALLET_KEY=")
	p.cmd.Stderr = p.log
	p.cmd.Stdout = p.log
	p.began = time.Now()
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.stop)
	return p
}

func (p *leanProc) stop() {
	p.once.Do(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
}

func (p *leanProc) rssMiB() float64 { return float64(rssKiB(p.cmd.Process.Pid)) / 1024 }

// firstAnswer polls with a unique chat request until the gateway answers it
// through its pipeline from the fake upstream, and returns the time since
// the process started.
func (p *leanProc) firstAnswer(tb testing.TB) time.Duration {
	tb.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		prompt := leanPrompt(0, nil)
		if _, err := askLean(client, p.base, loadtest.OpenAI, prompt, false, loadtest.Simple(loadtest.OpenAI, prompt, false)); err == nil {
			return time.Since(p.began)
		}
		time.Sleep(2 * time.Millisecond)
	}
	tb.Fatalf("the gateway did not answer; log:\n%s", p.log)
	return 0
}

// tailLog keeps the last lines a process wrote and counts its warnings and
// errors, so a long run's log does not grow without bound.
type tailLog struct {
	mu          sync.Mutex
	partial     []byte
	lines       []string
	warn, error int
	first       []string // the first few warnings and errors
}

func (l *tailLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		// The open-mode notice is expected: the pipeline has no [auth].
		warn := strings.Contains(line, "level=WARN") && !strings.Contains(line, "NOTICE: open mode")
		bad := strings.Contains(line, "level=ERROR")
		if warn {
			l.warn++
		}
		if bad {
			l.error++
		}
		if (warn || bad) && len(l.first) < 5 {
			l.first = append(l.first, line)
		}
		if l.lines = append(l.lines, line); len(l.lines) > 400 {
			l.lines = slices.Clone(l.lines[200:])
		}
	}
	return len(b), nil
}

func (l *tailLog) counts() (warn, error int, first []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warn, l.error, slices.Clone(l.first)
}

func (l *tailLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// leanSeq makes every prompt of a test binary unique, across phases and
// processes (a cache dir is shared by the rounds of one configuration).
var leanSeq atomic.Int64

// leanPrompt is loadtest.Words with a sequence number; r may be nil.
func leanPrompt(n int, r *rand.Rand) string {
	if r == nil {
		r = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	}
	return fmt.Sprintf("%s #%d", loadtest.Words(n, r), leanSeq.Add(1))
}

// The 4 KB agent request (fixtures.AgentRequest: system prompt, two tools, a
// six-turn conversation with a tool call) in either dialect, its last user
// turn replaced by the prompt. Built once, with a placeholder.
const leanPlaceholder = "LEAN_PROMPT_PLACEHOLDER"

var leanBodies = sync.OnceValue(func() (t [2][2][]byte) {
	for _, stream := range []bool{false, true} {
		s := 0
		if stream {
			s = 1
		}
		last := fixtures.AgentRequest().Messages
		t[loadtest.OpenAI][s] = bytes.Replace(fixtures.AgentRequestOpenAI(stream),
			mustMarshal(last[len(last)-1].Content[0].Text), mustMarshal(leanPlaceholder), 1)
		t[loadtest.Anthropic][s] = anthropicAgentRequest(stream)
		for d := range t {
			if !bytes.Contains(t[d][s], []byte(leanPlaceholder)) {
				panic("lean: the agent fixture changed shape: no last user turn to replace")
			}
		}
	}
	return t
})

// agentBody is a loadtest.Mix Body: the agent request asking prompt.
func agentBody(d loadtest.Dialect, prompt string, stream bool) []byte {
	s := 0
	if stream {
		s = 1
	}
	return bytes.Replace(leanBodies()[d][s], mustMarshal(leanPlaceholder), mustMarshal(prompt), 1)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// anthropicAgentRequest is fixtures.AgentRequest as a Messages API body for
// claude-sonnet-4-5 (served by the anthropic provider), its last user turn
// the placeholder.
func anthropicAgentRequest(stream bool) []byte {
	r := fixtures.AgentRequest()
	type obj = map[string]any
	var msgs []obj
	for i, m := range r.Messages {
		var content []obj
		for _, b := range m.Content {
			switch b.Type {
			case wire.BlockToolUse:
				content = append(content, obj{"type": "tool_use", "id": "toolu_" + b.ID, "name": b.Name, "input": json.RawMessage(b.Data)})
			case wire.BlockToolResult:
				content = append(content, obj{"type": "tool_result", "tool_use_id": "toolu_" + b.ID, "content": b.Text})
			default:
				text := b.Text
				if i == len(r.Messages)-1 {
					text = leanPlaceholder
				}
				content = append(content, obj{"type": "text", "text": text})
			}
		}
		msgs = append(msgs, obj{"role": m.Role, "content": content})
	}
	var tools []obj
	for _, t := range r.Tools {
		tools = append(tools, obj{"name": t.Name, "description": t.Description, "input_schema": json.RawMessage(t.Schema)})
	}
	return mustMarshal(obj{"model": "claude-sonnet-4-5", "system": r.System[0].Text, "tools": tools, "messages": msgs,
		"max_tokens": r.Params.MaxTokens, "temperature": r.Params.Temperature, "stream": stream})
}

// askLean sends one request and judges the answer as loadtest does: status
// 200, a stream complete with its dialect's end marker and no error event,
// and the text the fake upstream answers ("echo: <prompt>"). It returns the
// time to the end of the body.
func askLean(client *http.Client, base string, d loadtest.Dialect, prompt string, stream bool, body []byte) (time.Duration, error) {
	path := "/v1/chat/completions"
	if d == loadtest.Anthropic {
		path = "/v1/messages"
	}
	req, err := http.NewRequest("POST", base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	if err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d, %v: %.300s", resp.StatusCode, err, b)
	}
	text, err := answerText(d, stream, b)
	if err != nil {
		return 0, fmt.Errorf("%v: %.300s", err, b)
	}
	if text != "echo: "+prompt {
		return 0, fmt.Errorf("asked %q, answered %q", prompt, text)
	}
	return took, nil
}

// answerText is the text of a JSON answer or of a complete stream.
func answerText(d loadtest.Dialect, stream bool, b []byte) (string, error) {
	type delta struct {
		Content string `json:"content"`
		Text    string `json:"text"`
	}
	var m struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Message delta `json:"message"`
			Delta   delta `json:"delta"`
		} `json:"choices"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Delta delta `json:"delta"`
	}
	if !stream {
		if err := json.Unmarshal(b, &m); err != nil {
			return "", err
		}
		if d == loadtest.OpenAI && len(m.Choices) > 0 {
			return m.Choices[0].Message.Content, nil
		}
		var s strings.Builder
		for _, c := range m.Content {
			s.WriteString(c.Text)
		}
		return s.String(), nil
	}
	events, err := fakeupstream.ParseSSE(bytes.NewReader(b))
	if err != nil || len(events) == 0 {
		return "", fmt.Errorf("stream: %d events, %v", len(events), err)
	}
	if last := events[len(events)-1]; d == loadtest.OpenAI && last.Data != "[DONE]" || d == loadtest.Anthropic && last.Event != "message_stop" {
		return "", fmt.Errorf("the stream did not end with its end marker (last %+v)", last)
	}
	var s strings.Builder
	for _, e := range events[:len(events)-1] {
		m.Choices, m.Delta, m.Error = nil, delta{}, nil
		if e.Event == "error" {
			return "", fmt.Errorf("error event %s", e.Data)
		}
		if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
			return "", fmt.Errorf("event %q: %v", e.Data, err)
		}
		if len(m.Error) > 0 {
			return "", fmt.Errorf("error in the stream: %s", e.Data)
		}
		for _, c := range m.Choices {
			s.WriteString(c.Delta.Content)
		}
		s.WriteString(m.Delta.Text)
	}
	return s.String(), nil
}

// envDuration reads a Go duration from the environment, or def.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		tb.Fatalf("%s=%q: want a Go duration", name, v)
	}
	return d
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// leanRound is what one round measured of one configuration.
type leanRound struct {
	start                time.Duration // process start to the first answer
	idle, idleAfter      float64       // RSS (MiB) after the first answer; after the load and the idle pause
	idleStarted          float64       // RSS (MiB) after the first answer and the idle pause: a started gateway at rest
	p50, p90, sp50, sp90 time.Duration // 1 client, JSON and streamed, request to the end of the body
	rps16, rps64, rps100 float64
	peak, final          float64 // RSS (MiB) at 100 clients: the highest and the last sample
	plateau              float64 // the spread of the last third of the samples, relative to its highest
	samples              []float64
	errors, skipped      int
	logWarn, logError    int
	logFirst             []string // the first warnings and errors the gateway logged
	failures             []string
	load                 string // /proc/loadavg's 1-minute figure at the end
}

// leanKnobs are a run's sizes (environment, with the defaults below).
type leanKnobs struct {
	one        int           // requests per mode at 1 client
	load, hold time.Duration // each throughput phase; the 100-client phase
	idle       time.Duration // the pause before the last RSS
}

// leanMeasure starts the gateway in dir and runs every phase against it.
func leanMeasure(b *testing.B, dir string, fake *fakeupstream.Server, k leanKnobs) leanRound {
	var r leanRound
	p := startLean(b, dir)
	defer p.stop()
	r.start = p.firstAnswer(b)
	time.Sleep(time.Second)
	r.idle = p.rssMiB()
	// At rest: [server] idle_release gives the start-up's garbage back once
	// the gateway has been quiet a while.
	time.Sleep(k.idle - time.Second)
	r.idleStarted = p.rssMiB()

	note := func(res *loadtest.Result) {
		r.errors += res.Errors + res.Wrong
		r.skipped += res.Skipped
		for _, f := range res.Failures {
			if len(r.failures) < 10 {
				r.failures = append(r.failures, f)
			}
		}
		fake.Reset() // the fake records every request: keep this process small
	}

	// 1 client, unique 4 KB agent requests, JSON and streamed in turn; the
	// first 20 of each warm the connection and the instances.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: time.Minute}
	var js, ss []time.Duration
	for i := range 2 * (k.one + 20) {
		stream := i%2 == 1
		prompt := leanPrompt(i, nil)
		took, err := askLean(client, p.base, loadtest.OpenAI, prompt, stream, agentBody(loadtest.OpenAI, prompt, stream))
		switch {
		case err != nil:
			r.errors++
			if len(r.failures) < 10 {
				r.failures = append(r.failures, err.Error())
			}
		case i < 40:
		case stream:
			ss = append(ss, took)
		default:
			js = append(js, took)
		}
	}
	client.CloseIdleConnections()
	fake.Reset()
	r.p50, r.p90 = loadtest.Percentile(js, 50), loadtest.Percentile(js, 90)
	r.sp50, r.sp90 = loadtest.Percentile(ss, 50), loadtest.Percentile(ss, 90)

	mix := func(clients int, d time.Duration) loadtest.Mix {
		return loadtest.Mix{Clients: clients, Duration: d, StreamShare: 0.5, Prompt: leanPrompt, Body: agentBody, Seed: uint64(leanSeq.Load())}
	}
	res := loadtest.Run(context.Background(), p.base, mix(16, k.load))
	r.rps16 = res.RPS()
	note(res)
	res = loadtest.Run(context.Background(), p.base, mix(64, k.load))
	r.rps64 = res.RPS()
	note(res)

	// 100 clients held, the RSS sampled every second.
	done := make(chan *loadtest.Result, 1)
	go func() { done <- loadtest.Run(context.Background(), p.base, mix(100, k.hold)) }()
	tick := time.NewTicker(time.Second)
	for res = nil; res == nil; {
		select {
		case res = <-done:
		case <-tick.C:
			r.samples = append(r.samples, p.rssMiB())
		}
	}
	tick.Stop()
	r.rps100 = res.RPS()
	note(res)
	if n := len(r.samples); n > 0 {
		r.peak, r.final = slices.Max(r.samples), r.samples[n-1]
		last := r.samples[n-max(1, n/3):]
		r.plateau = (slices.Max(last) - slices.Min(last)) / slices.Max(last)
	}

	time.Sleep(k.idle)
	r.idleAfter = p.rssMiB()
	r.logWarn, r.logError, r.logFirst = p.log.counts()
	r.load = loadAvg()
	return r
}

// BenchmarkLean measures the shipped pipeline.toml against the same file with
// every [[layer]] removed, side by side in one run: alternating rounds, each
// configuration a fresh process of the real binary (built from this tree, as
// are its plugins), both in front of one fake upstream in this process (0 ms,
// OpenAI and Anthropic wire), real models, a warm compilation cache. Run it
// with -benchtime 1x; knobs: BARDO_LEAN_ROUNDS (3), BARDO_LEAN_REQUESTS (300
// per mode at 1 client), BARDO_LEAN_LOAD (5s per throughput phase),
// BARDO_LEAN_HOLD (10s at 100 clients; the run is 60s),
// BARDO_LEAN_IDLE (10s: the rest before the at-rest RSS after the first
// answer, and before the last RSS).
func BenchmarkLean(b *testing.B) {
	rounds := envInt(b, "BARDO_LEAN_ROUNDS", 3)
	k := leanKnobs{
		one:  envInt(b, "BARDO_LEAN_REQUESTS", 300),
		load: envDuration(b, "BARDO_LEAN_LOAD", 5*time.Second),
		hold: envDuration(b, "BARDO_LEAN_HOLD", 10*time.Second),
		idle: envDuration(b, "BARDO_LEAN_IDLE", 10*time.Second),
	}
	fake := fakeupstream.New(fakeupstream.WithAPIKey(leanKey))
	defer fake.Close()
	shipped, layers := leanPipeline(b, fake.URL(), true)
	bare, _ := leanPipeline(b, fake.URL(), false)
	configs := []struct {
		name string
		dir  string
	}{{fmt.Sprintf("shipped (%d layers)", layers), shipped}, {"no layers", bare}}

	// Warm the compilation cache and the page cache for both.
	for _, c := range configs {
		p := startLean(b, c.dir)
		p.firstAnswer(b)
		p.stop()
	}
	fake.Reset()

	runs := [2][]leanRound{}
	for round := range rounds {
		// Alternate which goes first, so a drift of the machine's load
		// falls on both.
		for j := range 2 {
			c := (j + round) % 2
			runs[c] = append(runs[c], leanMeasure(b, configs[c].dir, fake, k))
		}
	}
	b.StopTimer()

	// The table.
	var t strings.Builder
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	fmt.Fprintf(&t, "\nround | configuration | start→answer ms | idle MiB (1 s / %v) | 1 client p50/p90 ms (JSON) | (streamed) | req/s 16 | req/s 64 | req/s 100 | RSS 100 peak/final MiB | last-third spread | idle after %v MiB | errors | layer-skipped | log warn/error | load avg\n", k.idle, k.idle)
	for i := range rounds {
		for c := range 2 {
			r := runs[c][i]
			plateau := "plateau"
			if r.plateau > 0.05 {
				plateau = "rising"
			}
			fmt.Fprintf(&t, "%d | %s | %d | %.0f / %.0f | %s / %s | %s / %s | %.0f | %.0f | %.0f | %.0f / %.0f | %.1f %% (%s) | %.0f | %d | %d | %d / %d | %s\n",
				i+1, configs[c].name, r.start.Milliseconds(), r.idle, r.idleStarted, ms(r.p50), ms(r.p90), ms(r.sp50), ms(r.sp90),
				r.rps16, r.rps64, r.rps100, r.peak, r.final, 100*r.plateau, plateau, r.idleAfter, r.errors, r.skipped, r.logWarn, r.logError, r.load)
		}
	}
	med := func(c int, f func(r leanRound) float64) float64 {
		var v []float64
		for _, r := range runs[c] {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	medPair := func(f func(a, z leanRound) float64) float64 {
		var v []float64
		for i := range rounds {
			v = append(v, f(runs[0][i], runs[1][i]))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	msf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	errs := 0
	for c := range 2 {
		for _, r := range runs[c] {
			errs += r.errors
		}
	}
	metrics := []struct {
		v    float64
		unit string
	}{
		{med(0, func(r leanRound) float64 { return float64(r.start.Milliseconds()) }), "shipped-start-ms"},
		{med(1, func(r leanRound) float64 { return float64(r.start.Milliseconds()) }), "nolayers-start-ms"},
		{med(0, func(r leanRound) float64 { return r.idle }), "shipped-idle-MiB"},
		{med(0, func(r leanRound) float64 { return r.idleStarted }), "shipped-idle-rest-MiB"},
		{med(1, func(r leanRound) float64 { return r.idleStarted }), "nolayers-idle-rest-MiB"},
		{med(1, func(r leanRound) float64 { return r.idle }), "nolayers-idle-MiB"},
		{med(0, func(r leanRound) float64 { return r.idleAfter }), "shipped-idle-after-MiB"},
		{med(1, func(r leanRound) float64 { return r.idleAfter }), "nolayers-idle-after-MiB"},
		{medPair(func(a, z leanRound) float64 { return msf(a.p50 - z.p50) }), "added-p50-ms"},
		{medPair(func(a, z leanRound) float64 { return msf(a.p90 - z.p90) }), "added-p90-ms"},
		{medPair(func(a, z leanRound) float64 { return msf(a.sp50 - z.sp50) }), "added-stream-p50-ms"},
		{medPair(func(a, z leanRound) float64 { return msf(a.sp90 - z.sp90) }), "added-stream-p90-ms"},
		{med(0, func(r leanRound) float64 { return r.rps16 }), "shipped-rps16"},
		{med(1, func(r leanRound) float64 { return r.rps16 }), "nolayers-rps16"},
		{medPair(func(a, z leanRound) float64 { return a.rps16 / z.rps16 }), "ratio16"},
		{med(0, func(r leanRound) float64 { return r.rps64 }), "shipped-rps64"},
		{med(1, func(r leanRound) float64 { return r.rps64 }), "nolayers-rps64"},
		{medPair(func(a, z leanRound) float64 { return a.rps64 / z.rps64 }), "ratio64"},
		{med(0, func(r leanRound) float64 { return r.peak }), "shipped-peak100-MiB"},
		{med(0, func(r leanRound) float64 { return r.final }), "shipped-final100-MiB"},
		{med(1, func(r leanRound) float64 { return r.peak }), "nolayers-peak100-MiB"},
		{float64(errs), "errors"},
	}
	fmt.Fprintf(&t, "\nmedians over %d rounds (added and ratios: per round, shipped minus/over no layers):\n", rounds)
	for _, m := range metrics {
		b.ReportMetric(m.v, m.unit)
		fmt.Fprintf(&t, "  %-24s %10.2f\n", m.unit, m.v)
	}
	for c := range 2 {
		for i, r := range runs[c] {
			fmt.Fprintf(&t, "RSS at 100 clients, %s, round %d (MiB, 1 s apart): %s\n", configs[c].name, i+1, fmtSamples(r.samples))
			for _, l := range r.logFirst {
				fmt.Fprintf(&t, "  gateway log: %.300s\n", l)
			}
		}
	}
	b.Log(t.String())
	if errs > 0 {
		for c := range 2 {
			for _, r := range runs[c] {
				for _, f := range r.failures {
					b.Errorf("%s: %s", configs[c].name, f)
				}
			}
		}
		b.Fatalf("%d errors", errs)
	}
}

// loadAvg is the machine's 1-minute load average, as /proc/loadavg says.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func fmtSamples(s []float64) string {
	var b strings.Builder
	for i, v := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.0f", v)
	}
	return b.String()
}

// raiseNoFile lifts this process's open-file limit to at least n where the
// hard limit allows (the gateway it starts inherits it): 500 streams hold
// about 1,000 descriptors here and 1,000 in the gateway.
func raiseNoFile(tb testing.TB, n uint64) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		tb.Fatal(err)
	}
	if l.Cur >= n {
		return
	}
	l.Cur = min(n, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur < n {
		tb.Fatalf("open-file limit %d, need %d: %v", l.Cur, n, err)
	}
}

// 500 concurrent streaming connections through the real binary and the
// shipped pipeline.toml, half OpenAI and half Anthropic, each asking a
// unique 4 KB agent request: the fake upstream holds every stream after its
// first frame until all 500 have reached it, so they are provably open at
// once, then drips the rest 5 ms a frame. Every stream must end complete
// with its own answer. BARDO_STREAMS sets another count (docs/performance.md,
// "Lean", for what happens past the upstream client's 1,024 connections).
func TestStreams500(t *testing.T) {
	n := envInt(t, "BARDO_STREAMS", 500)
	raiseNoFile(t, uint64(4*n+256))
	hold := make(chan struct{})
	fake := fakeupstream.New(fakeupstream.WithAPIKey(leanKey),
		fakeupstream.WithDefaultBehaviour(fakeupstream.Behaviour{Hold: hold, ChunkDelay: 5 * time.Millisecond}))
	defer fake.Close()
	dir, _ := leanPipeline(t, fake.URL(), true)
	p := startLean(t, dir)
	p.firstAnswer(t)
	fake.Reset()

	// Release the streams once all have arrived, or after a bound (the
	// test then fails on the count).
	arrived := make(chan int, 1)
	go func() {
		defer close(hold)
		upstream := func() int { return fake.Count("/v1/chat/completions") + fake.Count("/v1/messages") }
		deadline := time.Now().Add(20 * time.Second)
		for upstream() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		arrived <- upstream()
	}()
	began := time.Now()
	res := loadtest.Run(context.Background(), p.base, loadtest.Mix{
		Clients: n, Requests: n, StreamShare: 1, Prompt: leanPrompt, Body: agentBody, Seed: 500,
	})
	held := <-arrived
	t.Logf("%s; %d streams open upstream at once; gateway RSS %.0f MiB after", res, held, p.rssMiB())
	if held < n {
		t.Errorf("only %d of %d streams reached the upstream at once (%v)", held, n, time.Since(began).Round(time.Millisecond))
	}
	if res.Requests != n || res.Streams != n || res.OK != n || res.Errors+res.Wrong+res.Skipped != 0 {
		t.Errorf("%d requests, %d streamed, %d ok, %d errors, %d wrong, %d layer-skipped; first failures: %q",
			res.Requests, res.Streams, res.OK, res.Errors, res.Wrong, res.Skipped, res.Failures)
	}
	if _, e, _ := p.log.counts(); e > 0 || strings.Contains(p.log.String(), "layer failed") {
		t.Errorf("the gateway logged errors:\n%s", p.log)
	}
}
