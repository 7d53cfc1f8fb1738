package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// opencodeModel is the model opencode's OpenAI-compatible provider asks
// for; opencodeClaude the model of its Anthropic provider.
const (
	opencodeModel  = "gpt-4o"
	opencodeClaude = "claude-sonnet-4-5"
)

// opencode speaks OpenAI Chat Completions through a provider of its own
// over @ai-sdk/openai-compatible.
var opencode = opencodeAgent("opencode", func(e *env) (string, map[string]any) {
	return "bardo/" + opencodeModel, map[string]any{"bardo": map[string]any{
		"npm":     "@ai-sdk/openai-compatible", // bundled in opencode: nothing to install
		"name":    "Bardo",
		"options": map[string]any{"baseURL": e.fr.srv.URL + "/v1", "apiKey": clientKey},
		"models":  map[string]any{opencodeModel: map[string]any{"name": opencodeModel, "tool_call": true}},
	}}
})

// opencodeAnthropic speaks Anthropic Messages through opencode's built-in
// anthropic provider with its baseURL pointed at the gateway (its tools carry
// eager_input_streaming, which the gateway must pass on).
var opencodeAnthropic = opencodeAgent("opencode-anthropic", func(e *env) (string, map[string]any) {
	return "anthropic/" + opencodeClaude, map[string]any{"anthropic": map[string]any{
		"options": map[string]any{"baseURL": e.fr.srv.URL + "/v1", "apiKey": clientKey},
	}}
})

// opencodeAgent is opencode with the provider entry provider returns (and
// the model, "<provider>/<model>", it names).
func opencodeAgent(name string, provider func(e *env) (model string, entry map[string]any)) agent {
	a := opencodeBase
	a.name = name
	a.setup = func(t *testing.T, e *env, cfgDir string) []string {
		model, entry := provider(e)
		cfg := map[string]any{
			"$schema":     "https://opencode.ai/config.json",
			"autoupdate":  false,
			"share":       "disabled",
			"model":       model,
			"small_model": model, // the title request goes through the gateway too
			"provider":    entry,
		}
		b, _ := json.Marshal(cfg)
		file := filepath.Join(cfgDir, "opencode.json")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{
			"OPENCODE_CONFIG=" + file,
			"XDG_CONFIG_HOME=" + opencodeConfigHome(t),
			"OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_SHARE=1",
			"OPENCODE_DISABLE_CLAUDE_CODE=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		}
	}
	return a
}

var opencodeBase = agent{
	bin:  "opencode",
	args: func(prompt string) []string { return []string{"run", "--format", "json", prompt} },
	answer: func(r run) (string, string) {
		var text []string
		failed := ""
		for _, ev := range jsonLines(r.stdout) {
			switch ev["type"] {
			case "text":
				if p, ok := ev["part"].(map[string]any); ok {
					s, _ := p["text"].(string)
					text = append(text, s)
				}
			case "error":
				b, _ := json.Marshal(ev["error"])
				failed = "error event: " + string(b)
			}
		}
		return strings.Join(text, "\n"), failed
	},
	readFile: func(path string) string {
		return `fake:tool=read fake:args={"filePath":"` + path + `"}`
	},
	coreTools: []string{"bash", "edit", "read", "write"},
}

// opencodeConfigHome is an XDG config home whose opencode directory already
// has what opencode installs there at start (@opencode-ai/plugin, for
// plugins in that directory): its node_modules are tools/agents', pinned,
// and package.json and package-lock.json say so, so opencode's install
// check finds nothing to do and reaches for no registry.
func opencodeConfigHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(filepath.Dir(filepath.Dir(agentBin(t, "opencode"))))
	version := packageVersion(t, filepath.Join(mods, "@opencode-ai", "plugin"))
	dep := `{"@opencode-ai/plugin":"` + version + `"}`
	for name, body := range map[string]string{
		"package.json":      `{"dependencies":` + dep + `}`,
		"package-lock.json": `{"lockfileVersion":3,"packages":{"":{"dependencies":` + dep + `}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return home
}

func packageVersion(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatalf("%v: run `make agent-test-deps`", err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil || p.Version == "" {
		t.Fatalf("%s/package.json: no version (%v)", dir, err)
	}
	return p.Version
}

// TestOpencode drives opencode (`opencode run`) through the shipped
// pipeline to the fake OpenAI upstream, over @ai-sdk/openai-compatible.
func TestOpencode(t *testing.T) {
	s := newSession(t, opencode)
	runChecks(t, s)
	checkFidelity(t, s)
}

// TestOpencodeAnthropic drives opencode's built-in anthropic provider through
// the shipped pipeline to the fake Anthropic upstream: the checks that
// differ by dialect (the caches are judged by TestOpencode).
func TestOpencodeAnthropic(t *testing.T) {
	s := newSession(t, opencodeAnthropic)
	checkPlain(t, s)
	checkToolRoundTrip(t, s)
	checkFidelity(t, s)
}
