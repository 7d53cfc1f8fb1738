package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codexModel is the model Codex asks for.
const codexModel = "gpt-4o"

var codex = agent{
	name: "codex",
	bin:  "codex",
	setup: func(t *testing.T, e *env, cfgDir string) []string {
		// 0.58 is the last Codex that speaks Chat Completions (wire_api
		// "chat"); later ones speak only /v1/responses.
		cfg := `model = "` + codexModel + `"
model_provider = "bardo"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.bardo]
name = "Bardo"
base_url = "` + e.fr.srv.URL + `/v1"
env_key = "BARDO_API_KEY"
wire_api = "chat"
`
		if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"CODEX_HOME=" + cfgDir, "BARDO_API_KEY=" + clientKey}
	},
	args: func(prompt string) []string {
		return []string{"exec", "--skip-git-repo-check", "--json", prompt}
	},
	answer: func(r run) (string, string) {
		var text []string
		failed := ""
		for _, ev := range jsonLines(r.stdout) {
			switch ev["type"] {
			case "item.completed":
				if it, ok := ev["item"].(map[string]any); ok && it["type"] == "agent_message" {
					s, _ := it["text"].(string)
					text = append(text, s)
				}
			case "error", "turn.failed":
				b, _ := json.Marshal(ev)
				failed = string(b)
			}
		}
		return strings.Join(text, "\n"), failed
	},
	readFile: func(path string) string {
		return `fake:tool=shell fake:args={"command":["cat","` + path + `"]}`
	},
	coreTools: []string{"shell"},
}

// TestCodex drives Codex 0.58 (`codex exec`) through the shipped pipeline to
// the fake OpenAI upstream, over Chat Completions.
func TestCodex(t *testing.T) {
	s := newSession(t, codex)
	runChecks(t, s)
	checkFidelity(t, s)
}
