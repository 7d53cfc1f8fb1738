package sdktest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// Shared with wasm/sdk-test/sdk.test.js.
const (
	nodeThinkingPrompt   = "fake:thinking node thinking prompt"
	nodeThinkingFollowUp = "node-thinking-roundtrip"
	nodeToolPrompt       = "Weather in Paris? fake:tool=get_weather"
)

// nodeTimeout bounds the whole node run.
const nodeTimeout = 3 * time.Minute

// TestNodeSDKs runs the node SDK tests (wasm/sdk-test, `node --test`) against
// a gateway started here, then checks what reached the fake upstream. It
// needs node on PATH (skipped without) and the packages installed by
// `npm ci --prefix wasm/sdk-test` (failed without).
func TestNodeSDKs(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the node SDK tests in wasm/sdk-test need it")
	}
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "wasm", "sdk-test")
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("wasm/sdk-test/node_modules/%s is missing: run `npm ci --prefix wasm/sdk-test` first (%v)", pkg, err)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.test.js in %s (%v)", dir, err)
	}

	// The OpenAI and Anthropic upstreams, and a Responses-speaking one
	// (o5-*) for the Responses API tests (responses.test.js).
	e := newResponsesUpstreamEnv(t)
	tap := filepath.Join(t.TempDir(), "report.tap")
	c, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	args := []string{"--test",
		"--test-reporter=spec", "--test-reporter-destination=stdout",
		"--test-reporter=tap", "--test-reporter-destination=" + tap}
	cmd := exec.CommandContext(c, node, append(args, files...)...)
	cmd.Dir = root
	cmd.Env = append(nodeEnv(), "GATEWAY_URL="+e.gw.URL, "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // one stream, in order
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node --test failed: %v (timeout %v)", err, nodeTimeout)
	}

	// The run must have run tests, all of them.
	report, err := os.ReadFile(tap)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^# (pass|fail|skipped|todo|cancelled) (\d+)$`).FindAllSubmatch(report, -1) {
		counts[string(m[1])], _ = strconv.Atoi(string(m[2]))
	}
	if counts["pass"] == 0 || counts["fail"] != 0 || counts["skipped"] != 0 || counts["todo"] != 0 || counts["cancelled"] != 0 {
		t.Fatalf("node test counts %v: want every test run and passed", counts)
	}
	t.Logf("node: %d tests passed", counts["pass"])

	e.checkNodeUpstreamRequests(t)
}

// nodeEnv is the environment without the SDKs' own settings, which would
// otherwise reach the clients (base URLs, keys, custom headers).
func nodeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "ANTHROPIC_") || strings.HasPrefix(kv, "GATEWAY_URL=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// checkNodeUpstreamRequests checks, in the upstream's format, the requests
// the node tests caused: the tool results of both SDKs at both upstreams, and
// the thinking signature sent back byte for byte.
func (e *env) checkNodeUpstreamRequests(t *testing.T) {
	t.Helper()
	wantArgs, _ := json.Marshal(map[string]string{"query": nodeToolPrompt})
	wantThinking := "Thinking about: " + nodeThinkingPrompt
	wantSig := fakeSignature(wantThinking)
	var openaiToolResults, anthropicToolResults, thinkingTurns int
	for _, r := range e.fake.Requests() {
		var m map[string]any
		if json.Unmarshal(r.Body, &m) != nil {
			continue
		}
		msgs, _ := m["messages"].([]any)
		if len(msgs) != 3 {
			continue
		}
		last, _ := msgs[2].(map[string]any)
		switch {
		case r.Path == openaiUp.path && last["role"] == "tool":
			openaiToolResults++
			a := obj(t, msgs[1], "assistant message")
			call := obj(t, arr(t, a["tool_calls"], "tool_calls")[0], "tool call")
			checkOpenAIToolTurns(t, msgs, str(t, call["id"], "tool call id"), string(wantArgs), weatherResult)
		case r.Path == anthropicUp.path && strings.Contains(string(r.Body), `"tool_result"`):
			anthropicToolResults++
			tr := obj(t, arr(t, last["content"], "tool result content")[0], "tool_result")
			checkAnthropicToolTurns(t, msgs, str(t, tr["tool_use_id"], "tool_use_id"), string(wantArgs), weatherResult)
		case r.Path == anthropicUp.path && bytes.Contains(r.Body, []byte(nodeThinkingFollowUp)):
			thinkingTurns++
			if !bytes.Contains(r.Body, []byte(`"signature":"`+wantSig+`"`)) {
				t.Errorf("the node client's thinking signature did not reach the upstream byte for byte: want %q in\n%s", wantSig, r.Body)
			}
			tb := obj(t, arr(t, obj(t, msgs[1], "assistant message")["content"], "assistant content")[0], "thinking block")
			if tb["type"] != "thinking" || tb["thinking"] != wantThinking || tb["signature"] != wantSig {
				t.Errorf("thinking block at the upstream = %v", tb)
			}
		}
	}
	// One tool round trip per SDK and upstream; one thinking round trip.
	if openaiToolResults != 2 || anthropicToolResults != 2 || thinkingTurns != 1 {
		t.Errorf("upstream saw %d OpenAI and %d Anthropic tool results and %d thinking round trips; want 2, 2, 1",
			openaiToolResults, anthropicToolResults, thinkingTurns)
	}
}
