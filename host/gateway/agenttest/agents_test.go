package agenttest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agent is how one coding agent is installed, configured and read.
type agent struct {
	name string // names the agent's files and checks
	bin  string // the binary in tools/agents/node_modules/.bin
	// setup writes the agent's configuration for e (under cfgDir) and
	// returns the environment it runs with.
	setup func(t *testing.T, e *env, cfgDir string) []string
	// args are the command-line arguments for one non-interactive prompt.
	args func(prompt string) []string
	// answer reads the agent's final answer from its output; failed says
	// the agent itself reported an error.
	answer func(r run) (text string, failed string)
	// readFile is the magic phrase that makes the fake upstream answer with
	// the agent's own file-reading tool call for path.
	readFile func(path string) string
	// coreTools are the tools the agent cannot work without: no layer may
	// withhold them from the model (issue 11: toolprune dropped Edit and
	// Write).
	coreTools []string
}

// session is one agent pointed at one gateway, in one working directory.
type session struct {
	a    agent
	e    *env
	bin  string
	dir  string // the agent's working directory
	home string // its HOME
	conf []string
}

func newSession(t *testing.T, a agent) *session {
	t.Helper()
	bin := agentBin(t, a.bin)
	e := newEnv(t)
	s := &session{a: a, e: e, bin: bin, dir: t.TempDir(), home: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(s.home, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.conf = a.setup(t, e, t.TempDir())
	return s
}

// result is one agent run, with the exchanges it caused.
type result struct {
	run
	text, failed string
	ex           []exchange // what this run sent the gateway
	upstream     int        // requests the fake upstream received during the run
}

// ask runs the agent on prompt.
func (s *session) ask(t *testing.T, prompt string) result {
	t.Helper()
	return s.run(t, s.a.args(prompt))
}

// run runs the agent with args.
func (s *session) run(t *testing.T, args []string) result {
	t.Helper()
	before, upBefore := len(s.e.fr.exchanges()), len(s.e.fake.Requests())
	r := s.e.runAgent(t, s.dir, s.home, s.bin, s.conf, args...)
	res := result{run: r}
	res.text, res.failed = s.a.answer(r)
	res.ex = s.e.fr.exchanges()[before:]
	res.upstream = len(s.e.fake.Requests()) - upBefore
	for _, x := range res.ex {
		t.Logf("  %s %s -> %d, X-Bardo-Cache %q, %d bytes sent", x.Method, x.Path, x.Status, x.RespHeader.Get("X-Bardo-Cache"), len(x.Body))
	}
	if r.err != nil && res.failed == "" {
		res.failed = r.err.Error() + ": " + truncate(r.stderr, 800)
	}
	return res
}

// ok fails t when the run failed, explaining with what the gateway answered.
func (r result) ok(t *testing.T) bool {
	t.Helper()
	if r.failed == "" {
		return true
	}
	t.Errorf("the agent failed: %s", truncate(r.failed, 600))
	for i, x := range r.ex {
		t.Logf("  request %d: %s %s -> %d %s; %s", i, x.Method, x.Path, x.Status, bardoHeaders(x.RespHeader), truncate(gatewayError(x), 400))
	}
	return false
}

// gatewayError is the error a response carried: an error body, or an SSE
// error event inside a 200 stream.
func gatewayError(x exchange) string {
	body := string(x.RespBody)
	if x.Status != 200 {
		return body
	}
	// An Anthropic stream's error event, or an OpenAI stream's error chunk:
	// both at the start of a line, where no content can put them.
	for i, line := range strings.SplitAfter(body, "\n") {
		for _, marker := range []string{"event: error", `data: {"error":`, `data: {"type":"error"`} {
			if strings.HasPrefix(line, marker) {
				return strings.Join(strings.SplitAfter(body, "\n")[i:], "")
			}
		}
	}
	return ""
}

// main is the exchange of the run that carried prompt with tools: the
// agent's own turn, not a side request (opencode's title).
func (r result) main(prompt string) (exchange, bool) {
	for i := len(r.ex) - 1; i >= 0; i-- {
		x := r.ex[i]
		if strings.Contains(string(x.Body), jsonText(prompt)) && strings.Contains(string(x.Body), `"tools"`) {
			return x, true
		}
	}
	return exchange{}, false
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// jsonLines decodes every JSON object line of out.
func jsonLines(out string) []map[string]any {
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			evs = append(evs, m)
		}
	}
	return evs
}

// writeNote writes the file the tool round trips read, and returns its path
// and the marker it holds.
func writeNote(t *testing.T, dir, name string) (path, marker string) {
	t.Helper()
	marker = "kestrel-" + strings.ToLower(name) + "-marker"
	path = filepath.Join(dir, "note-"+strings.ToLower(name)+".txt")
	if err := os.WriteFile(path, []byte("The note says: "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, marker
}

// The checks every agent passes, each in its own subtest so one failure
// does not hide the others. All share one gateway (and so its caches), so
// every check uses prompts of its own.
func runChecks(t *testing.T, s *session) {
	checkPlain(t, s)
	checkToolRoundTrip(t, s)
	checkSamePromptTwice(t, s)
	checkDifferentPrompts(t, s)
}

func checkPlain(t *testing.T, s *session) {
	t.Run("plain", func(t *testing.T) {
		const prompt = "Say hello to the plain check"
		r := s.ask(t, prompt)
		checkFresh(t, r, prompt)
		if r.ok(t) && !strings.Contains(r.text, prompt) {
			t.Errorf("answer %q does not echo the prompt %q", truncate(r.text, 300), prompt)
		}
		checkClean(t, r)
	})
}

func checkToolRoundTrip(t *testing.T, s *session) {
	t.Run("tool-round-trip", func(t *testing.T) {
		path, marker := writeNote(t, s.dir, s.a.name)
		prompt := "Read the note " + s.a.readFile(path) + " and tell me what it says"
		r := s.ask(t, prompt)
		checkFresh(t, r, prompt)
		if !r.ok(t) {
			return
		}
		// The fake echoes the last tool result: the agent ran the tool, sent
		// the file back, and showed the final answer.
		if !strings.Contains(r.text, marker) {
			t.Errorf("final answer %q does not carry the file's marker %q (the tool did not run, or its result was lost)", truncate(r.text, 400), marker)
		}
		sawResult := false
		for _, u := range s.e.fake.Requests() {
			if strings.Contains(string(u.Body), marker) {
				sawResult = true
			}
		}
		if !sawResult {
			t.Errorf("the upstream never received the tool result with %q", marker)
		}
		checkClean(t, r)
	})
}

func checkSamePromptTwice(t *testing.T, s *session) {
	t.Run("same-prompt-twice", func(t *testing.T) {
		const prompt = "What is the capital of the repeated check"
		first := s.ask(t, prompt)
		checkFresh(t, first, prompt)
		if !first.ok(t) {
			return
		}
		second := s.ask(t, prompt)
		if !second.ok(t) {
			return
		}
		checkClean(t, second)
		if second.text != first.text {
			t.Errorf("the repeat answered %q, the first run %q", truncate(second.text, 300), truncate(first.text, 300))
		}
		x, found := second.main(prompt)
		if !found {
			t.Fatalf("no request of the second run carried the prompt")
		}
		if hit := hitOf(x); hit == "" {
			t.Errorf("the repeat was not served from the cache (X-Bardo-Cache %q; the upstream got %d requests during it): %s",
				x.RespHeader.Get("X-Bardo-Cache"), second.upstream, firstDiff(first, second, prompt))
		}
	})
}

func checkDifferentPrompts(t *testing.T, s *session) {
	t.Run("different-prompts", func(t *testing.T) {
		// Issue 11's observed pair: same shape, different question.
		a, b := "write a poem about the sea 7", "write a haiku about the mountains 7"
		ra := s.ask(t, a)
		rb := s.ask(t, b)
		for _, c := range []struct {
			r           result
			want, other string
		}{{ra, a, b}, {rb, b, a}} {
			checkFresh(t, c.r, c.want)
			if !c.r.ok(t) {
				continue
			}
			checkClean(t, c.r)
			if !strings.Contains(c.r.text, c.want) || strings.Contains(c.r.text, c.other) {
				x, _ := c.r.main(c.want)
				t.Errorf("asked %q, answered %q (X-Bardo-Cache %q)", c.want, truncate(c.r.text, 300), x.RespHeader.Get("X-Bardo-Cache"))
			}
		}
	})
}

// checkFresh fails t when a run of a prompt never asked before on this
// gateway was answered, in any of its requests, from the cache: that is
// another prompt's answer.
func checkFresh(t *testing.T, r result, prompt string) {
	t.Helper()
	for i, x := range r.ex {
		if hit := hitOf(x); hit != "" {
			t.Errorf("asked %q for the first time, request %d was answered from the cache (%s, similarity %q): another prompt's answer",
				truncate(prompt, 80), i, hit, x.RespHeader.Get("X-Bardo-Cache-Similarity"))
		}
	}
}

// checkClean fails t when a response of the run broke: a non-2xx status,
// or an error event inside a stream.
func checkClean(t *testing.T, r result) {
	t.Helper()
	for i, x := range r.ex {
		if msg := gatewayError(x); msg != "" {
			t.Errorf("request %d (%s, X-Bardo-Cache %q) answered %d with an error: %s", i, x.Path, x.RespHeader.Get("X-Bardo-Cache"), x.Status, truncate(msg, 500))
		}
	}
}

// firstDiff explains why two runs of one prompt may not share a cache
// entry: the first difference between their main request bodies.
func firstDiff(a, b result, prompt string) string {
	xa, _ := a.main(prompt)
	xb, _ := b.main(prompt)
	d := diffJSON("", decode(xa.Body), decode(xb.Body), false)
	if len(d) == 0 {
		return "the two request bodies are equal"
	}
	return "the bodies differ: " + strings.Join(capList(d, 3), "; ")
}

func decode(b []byte) any {
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// checkFidelity compares every request that reached the upstream with the
// one the client sent, and reports any attempt to reach the network.
func checkFidelity(t *testing.T, s *session) {
	t.Run("upstream-equals-client", func(t *testing.T) {
		checkForwarded(t, s.e.fr.exchanges(), s.e.fake.Requests())
	})
	t.Run("core-tools-kept", func(t *testing.T) {
		for i, u := range s.e.fake.Requests() {
			var body struct {
				Tools []any `json:"tools"`
			}
			if json.Unmarshal(u.Body, &body) != nil || len(body.Tools) == 0 {
				continue // a side request without tools (opencode's title)
			}
			have := map[string]bool{}
			for _, tl := range body.Tools {
				have[toolName(tl)] = true
			}
			for _, name := range s.a.coreTools {
				if !have[name] {
					t.Errorf("upstream request #%d lacks the agent's core tool %q (it got %d tools)", i, name, len(body.Tools))
				}
			}
		}
	})
	t.Run("no-layer-skipped", func(t *testing.T) {
		// Every shipped layer ran on every request: none failed, timed
		// out or was skipped (issue 11: layers failing on a busy machine).
		for i, x := range s.e.fr.exchanges() {
			if d := x.RespHeader.Get("X-Bardo-Degraded"); strings.Contains(d, "layer") {
				t.Errorf("request %d (%s): X-Bardo-Degraded %q", i, x.Path, d)
			}
		}
		for _, l := range strings.Split(s.e.gw.LogLines.String(), "\n") {
			if strings.Contains(l, `msg="layer failed"`) {
				t.Errorf("gateway: %s", truncate(l, 400))
			}
		}
	})
	t.Run("no-network", func(t *testing.T) {
		if seen := s.e.esc.seen(); len(seen) > 0 {
			t.Errorf("the agent tried to reach the network: %v", seen)
		}
	})
}
