package agenttest

import (
	"os"
	"path/filepath"
	"testing"
)

// codexResponses is current Codex (tools/codex: @openai/codex 0.171),
// which speaks only the Responses API (wire_api = "responses"): issue 16.
var codexResponses = agent{
	name: "codex-responses",
	// tools/codex/node_modules/.bin/codex, reached from agentBin's
	// tools/agents/node_modules/.bin: both packages name their bin codex.
	bin: filepath.Join("..", "..", "..", "codex", "node_modules", ".bin", "codex"),
	setup: func(t *testing.T, e *env, cfgDir string) []string {
		cfg := `model = "` + codexModel + `"
model_provider = "bardo"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.bardo]
name = "Bardo"
base_url = "` + e.fr.srv.URL + `/v1"
env_key = "BARDO_API_KEY"
wire_api = "responses"
`
		if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"CODEX_HOME=" + cfgDir, "BARDO_API_KEY=" + clientKey}
	},
	args:   codex.args,
	answer: codex.answer,
	// Current Codex runs commands with exec_command {"cmd": "…"}; the
	// space is escaped so the magic phrase stays one word.
	readFile: func(path string) string {
		return `fake:tool=exec_command fake:args={"cmd":"cat\u0020` + path + `"}`
	},
	coreTools: []string{"exec_command"},
}

// TestCodexResponses drives current Codex (`codex exec`) through the
// shipped pipeline to the fake OpenAI upstream over the Responses API: a
// plain prompt, a tool round trip (exec_command), the same prompt twice
// (a hash-cache hit although Codex sends per-run ids in client_metadata
// and prompt_cache_key), two prompts.
func TestCodexResponses(t *testing.T) {
	s := newSession(t, codexResponses)
	runChecks(t, s)
}
