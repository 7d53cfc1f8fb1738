//go:build !wasip1

package main_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

// A subsystem's reasoning depth reaches Gemini as thinkingConfig: the
// gateway routes by intent (so the provider needs a catalog), maps the
// profile for the Gemini style and annotates the effort; the adapter,
// which writes its own body, honours it.
func TestProfileThinkingConfig(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(geminiKey))
	t.Cleanup(fake.Close)
	wasm := wasmbuild.MustBuild(t, "plugins/providers/gemini")
	g := testgateway.Start(t, fmt.Sprintf(`
[[provider]]
name = "gemini"
plugin = %q
base_url = %q
credential = "env:GEMINI_KEY"
models = ["gemini-*"]
trusted = true
[[provider.model]]
id = "gemini-test-pro"
quality = "maximum"
features = ["tool_use", "reasoning_effort", "visible_thinking", "interleaved_thinking", "citations"]
input_price = "1.25"
output_price = "10"
`, wasm, fake.URL()), testgateway.Options{Env: map[string]string{"GEMINI_KEY": geminiKey}})

	ask := func(subsystem, body string) J {
		t.Helper()
		req, err := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Bardo-Subsystem", subsystem)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Bardo-Provider") != "gemini" {
			t.Fatalf("%s: %d %q", subsystem, resp.StatusCode, resp.Header.Get("X-Bardo-Provider"))
		}
		_, up := upstream(t, fake)
		return up
	}
	const plain = `{"model":"auto","messages":[{"role":"user","content":"assess"}]}`

	// risk: effort max, which the Gemini style caps at high; no summaries.
	up := ask("risk", plain)
	if got := up.At("generationConfig", "thinkingConfig").String(); got != `{"thinkingBudget":24576}` {
		t.Fatalf("risk thinkingConfig %s in %s", got, up)
	}
	// daimon_complex wants its thinking visible.
	up = ask("daimon_complex", plain)
	if got := up.At("generationConfig", "thinkingConfig").String(); got != `{"includeThoughts":true,"thinkingBudget":24576}` {
		t.Fatalf("daimon_complex thinkingConfig %s", got)
	}
	// The caller's own reasoning_effort wins.
	up = ask("risk", `{"model":"auto","reasoning_effort":"low","messages":[{"role":"user","content":"assess"}]}`)
	if got := up.At("generationConfig", "thinkingConfig").String(); got != `{"includeThoughts":true,"thinkingBudget":1024}` {
		t.Fatalf("caller effort: thinkingConfig %s", got)
	}
	// mind_wandering (effort none): the model's default, nothing sent.
	up = ask("mind_wandering", plain)
	if up.Has("generationConfig", "thinkingConfig") {
		t.Fatalf("mind_wandering thinkingConfig %s", up.At("generationConfig"))
	}
}
