package agenttest

import (
	"encoding/json"
	"strings"
	"testing"
)

// claudeModel is the model the checks ask for. Claude Code's default model
// sends role "system" messages inside messages (see TestClaudeCode's
// default-model check), so the other checks name one that does not, to
// judge everything else on its own.
const claudeModel = "claude-sonnet-4-5"

var claudeCode = agent{
	name: "claude",
	bin:  "claude",
	setup: func(t *testing.T, e *env, cfgDir string) []string {
		return []string{
			"ANTHROPIC_BASE_URL=" + e.fr.srv.URL,
			"ANTHROPIC_API_KEY=" + clientKey,
			"DISABLE_TELEMETRY=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1",
		}
	},
	args: func(prompt string) []string {
		return []string{"-p", prompt, "--output-format", "json", "--allowedTools", "Read", "--model", claudeModel}
	},
	answer: func(r run) (string, string) {
		var out struct {
			Result  string `json:"result"`
			IsError bool   `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &out); err != nil {
			return "", "output is not claude's JSON result: " + truncate(r.stdout, 300) + truncate(r.stderr, 300)
		}
		if out.IsError {
			return out.Result, "is_error: " + out.Result
		}
		return out.Result, ""
	},
	readFile: func(path string) string {
		return `fake:tool=Read fake:args={"file_path":"` + path + `"}`
	},
	coreTools: []string{"Bash", "Edit", "Read", "Write"},
}

// TestClaudeCode drives Claude Code (`claude -p`) through the shipped
// pipeline to the fake Anthropic upstream.
func TestClaudeCode(t *testing.T) {
	s := newSession(t, claudeCode)
	runChecks(t, s)

	t.Run("thinking-signature", func(t *testing.T) {
		path, marker := writeNote(t, s.dir, "thinking")
		r := s.ask(t, "Think, then read the note fake:thinking "+claudeCode.readFile(path))
		if !r.ok(t) {
			return
		}
		if !strings.Contains(r.text, marker) {
			t.Errorf("final answer %q lacks the file's marker %q", truncate(r.text, 300), marker)
		}
		// The signature the client received must come back with the
		// tool result, byte for byte, at the gateway and at the upstream.
		if len(r.ex) < 2 {
			t.Fatalf("%d requests, want the tool call and the tool result", len(r.ex))
		}
		sig := streamedSignature(string(r.ex[0].RespBody))
		if sig == "" {
			t.Fatalf("no signature_delta in the first answer: %s", truncate(string(r.ex[0].RespBody), 600))
		}
		want := `"signature":"` + sig + `"`
		if !strings.Contains(string(r.ex[1].Body), want) {
			t.Errorf("Claude Code did not send the thinking block back with its signature")
		}
		found := false
		for _, u := range s.e.fake.Requests() {
			if strings.Contains(string(u.Body), marker) && strings.Contains(string(u.Body), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("the upstream did not receive the thinking signature %q with the tool result", truncate(sig, 40))
		}
		checkClean(t, r)
	})

	t.Run("default-model", func(t *testing.T) {
		// No --model: Claude Code's default, which puts role "system"
		// messages inside messages (issue 11, item 4).
		const prompt = "Say hello to the default model check"
		r := s.run(t, []string{"-p", prompt, "--output-format", "json", "--allowedTools", "Read"})
		if r.ok(t) && !strings.Contains(r.text, prompt) {
			t.Errorf("answer %q does not echo the prompt", truncate(r.text, 300))
		}
		if len(r.ex) == 0 {
			return
		}
		// Claude Code falls back (other betas, system messages folded)
		// when its first request is refused: the first must succeed.
		first := r.ex[0]
		if !strings.Contains(string(first.Body), `"role":"system"`) {
			t.Logf("Claude Code's default model sent no role \"system\" message this time")
		}
		if first.Status != 200 {
			t.Errorf("the first request (%d bytes, role \"system\" inside messages: %v) got %d: %s; Claude Code fell back to %d more",
				len(first.Body), strings.Contains(string(first.Body), `"role":"system"`), first.Status, truncate(string(first.RespBody), 300), len(r.ex)-1)
		}
	})

	checkFidelity(t, s)
}

// streamedSignature returns the signature of the first signature_delta in
// an Anthropic SSE body.
func streamedSignature(body string) string {
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !strings.Contains(data, "signature_delta") {
			continue
		}
		var ev struct {
			Delta struct {
				Signature string `json:"signature"`
			} `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil {
			return ev.Delta.Signature
		}
	}
	return ""
}
