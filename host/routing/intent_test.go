package routing

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	route "github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

func userText(s string) *wire.Request {
	return &wire.Request{Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: s}}}}}
}

func TestBuildPrecedence(t *testing.T) {
	withTools := userText("hello")
	withTools.Tools = []wire.Tool{{Name: "get_price"}}
	withImage := userText("what is this?")
	withImage.Messages[0].Content = append(withImage.Messages[0].Content, wire.Block{Type: wire.BlockImage, Data: []byte(`{}`)})
	schemaReq := userText("classify")
	schemaReq.Extra = []byte(`{"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},"thinking":{"type":"enabled"}}`)

	cases := []struct {
		name   string
		src    Sources
		check  func(b Built) bool
		source string
	}{
		{"header subsystem", Sources{Model: "auto", Subsystem: "risk"},
			func(b Built) bool {
				return b.Intent.Subsystem == "risk" && b.Intent.Quality == route.Maximum && b.Intent.Model == "" && len(b.Notes) == 0
			}, "subsystem"},
		{"body subsystem wins over the header", Sources{Subsystem: "risk", Bardo: []byte(`{"subsystem":"daimon"}`)},
			func(b Built) bool { return b.Intent.Subsystem == "daimon" && b.Intent.Quality == route.Low }, "subsystem"},
		{"unknown subsystem: default intent and a note", Sources{Subsystem: "context"},
			func(b Built) bool {
				return b.Intent.Subsystem == "context" && b.Intent.Quality == route.Low && b.Intent.CostSensitivity == 0.8 &&
					strings.Join(b.Notes, ",") == "unknown-subsystem:context"
			}, "subsystem"},
		// The issue's example: "risk assessment, maximum quality,
		// interleaved thinking".
		{"body fields", Sources{Bardo: []byte(`{"subsystem":"risk","require":["interleaved_thinking"],"prefer":["private","telepathy"],
			"quality":"maximum","max_latency_ms":60000,"cost_sensitivity":0.2,"security_class":"private","color":"blue"}`)},
			func(b Built) bool {
				in := b.Intent
				return in.Require == route.Features(route.InterleavedThinking) &&
					in.Prefer == route.Features(route.Citations, route.Privacy) && // interleaved moved to require
					in.Quality == route.Maximum && in.MaxLatencyMs == 60000 && in.CostSensitivity == 0.2 &&
					in.Security == route.Private &&
					strings.Contains(strings.Join(b.Notes, ","), "unknown-feature:telepathy") &&
					strings.Contains(strings.Join(b.Notes, ","), "bardo-field-ignored:color")
			}, "subsystem"},
		{"escaped strings", Sources{Bardo: []byte(`{"subsystem":"ri\u0073k","prefer":["cit\u0061tions"]}`)},
			func(b Built) bool { return b.Intent.Subsystem == "risk" && b.Intent.Prefer.Has(route.Citations) }, "subsystem"},
		{"cost sensitivity 0 is a statement", Sources{Subsystem: "daimon", Bardo: []byte(`{"cost_sensitivity":0}`)},
			func(b Built) bool { return b.Intent.CostSensitivity == 0 }, "subsystem"},
		{"explicit model", Sources{Model: "claude-sonnet-4-6", Subsystem: "curator"},
			func(b Built) bool { return b.Intent.Model == "claude-sonnet-4-6" && b.Intent.Subsystem == "curator" }, "subsystem"},
		{"plain client: task and tier", Sources{Model: "", Request: userText("Summarize this article for me"), Tier: "free"},
			func(b Built) bool {
				return b.Task == TaskSummarize && b.Intent.Subsystem == "task:summarize" && b.Intent.CostSensitivity == 0.8 &&
					b.Intent.InputTokens > 0
			}, "task"},
		{"plain client, pro tier", Sources{Model: "auto", Request: userText("Compare these two designs"), Tier: "PRO"},
			func(b Built) bool {
				return b.Task == TaskAnalysis && b.Intent.CostSensitivity == 0.4 && b.Intent.Quality == route.High
			}, "task"},
		{"request shape: tools, images, schema", Sources{Subsystem: "curator", Request: withTools},
			func(b Built) bool { return b.Intent.Require == route.Features(route.ToolUse) }, "subsystem"},
		{"images", Sources{Subsystem: "curator", Request: withImage},
			func(b Built) bool { return b.Intent.Require == route.Features(route.Vision) }, "subsystem"},
		{"schema and thinking", Sources{Subsystem: "heartbeat_t1", Request: schemaReq},
			func(b Built) bool {
				return b.Intent.Prefer == route.Features(route.LowEffort, route.StructuredOutputs, route.Reasoning) && b.Intent.Require == 0
			}, "subsystem"},
		// Mortality applies last, to the final intent; risk is exempt.
		{"vitality", Sources{Subsystem: "dream", Vitality: " 0.2 "},
			func(b Built) bool {
				return b.Vitality == 0.2 && b.Intent.Quality == route.Medium && math.Abs(b.Intent.CostSensitivity-0.74) < 1e-9
			}, "subsystem"},
		{"vitality after the body", Sources{Subsystem: "dream", Vitality: "0.5", Bardo: []byte(`{"cost_sensitivity":0.1}`)},
			func(b Built) bool { return math.Abs(b.Intent.CostSensitivity-0.25) < 1e-9 }, "subsystem"},
		{"vitality, exempt", Sources{Subsystem: "risk", Vitality: "0"},
			func(b Built) bool { return b.Intent.Quality == route.Maximum && b.Intent.CostSensitivity == 0 }, "subsystem"},
		{"no vitality", Sources{Subsystem: "dream"},
			func(b Built) bool { return math.IsNaN(b.Vitality) && b.Intent.CostSensitivity == 0.5 }, "subsystem"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Build(&c.src)
			if err != nil {
				t.Fatal(err)
			}
			if b.Source != c.source || !c.check(b) {
				t.Errorf("%s: %+v", b.Source, b)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	for name, src := range map[string]Sources{
		"vitality not a number":   {Subsystem: "dream", Vitality: "high"},
		"vitality out of range":   {Subsystem: "dream", Vitality: "1.5"},
		"vitality NaN":            {Subsystem: "dream", Vitality: "NaN"},
		"bad json":                {Bardo: []byte(`{"quality":`)},
		"not an object":           {Bardo: []byte(`["risk"]`)},
		"unknown required":        {Bardo: []byte(`{"require":["telepathy"]}`)},
		"bad quality":             {Bardo: []byte(`{"quality":"ultra"}`)},
		"quality wrong type":      {Bardo: []byte(`{"quality":5}`)},
		"cost out of range":       {Bardo: []byte(`{"cost_sensitivity":1.5}`)},
		"negative latency":        {Bardo: []byte(`{"max_latency_ms":-1}`)},
		"bad security class":      {Bardo: []byte(`{"security_class":"secret"}`)},
		"require not a list":      {Bardo: []byte(`{"require":"tool_use"}`)},
		"subsystem not a string":  {Bardo: []byte(`{"subsystem":7}`)},
		"latency not an integer":  {Bardo: []byte(`{"max_latency_ms":1.5}`)},
		"cost sensitivity string": {Bardo: []byte(`{"cost_sensitivity":"low"}`)},
	} {
		if _, err := Build(&src); !errors.Is(err, ErrBadIntent) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBardoObject(t *testing.T) {
	extra := []byte(`{"user":"u1","bardo":{"subsystem":"risk","prefer":["citations"]},"metadata":{}}`)
	if got := string(BardoObject(extra)); got != `{"subsystem":"risk","prefer":["citations"]}` {
		t.Error(got)
	}
	for _, e := range []string{``, `{}`, `{"bardo":null}`, `{"x":{"bardo":{}}}`} {
		if got := BardoObject([]byte(e)); got != nil {
			t.Errorf("%s: %s", e, got)
		}
	}
}

func TestInferTask(t *testing.T) {
	cases := []struct {
		text  string
		tools []string
		want  Task
	}{
		{"hello, how are you?", nil, TaskChat},
		{"what's a good name for a cat", nil, TaskChat},
		{"Fix this:\n```go\nfunc main() {}\n```", nil, TaskCode},
		{"I get a Traceback when I run it", nil, TaskCode},
		{"please look at server.py", nil, TaskCode},
		{"anything", []string{"Bash", "Read"}, TaskCode},          // Claude Code
		{"anything", []string{"codebase_search"}, TaskCode},       // Cursor
		{"what's the weather", []string{"get_weather"}, TaskChat}, // tools, but not coding ones
		{"Summarise this thread", nil, TaskSummarize},
		{"TL;DR please", nil, TaskSummarize},
		{"Compare Aave and Compound for a stablecoin vault", nil, TaskAnalysis},
		{"Assess the trade-offs of this plan", nil, TaskAnalysis},
		{"Summarize this function", nil, TaskCode}, // code wins
	}
	for _, c := range cases {
		req := userText(c.text)
		for _, n := range c.tools {
			req.Tools = append(req.Tools, wire.Tool{Name: n})
		}
		if got := InferTask(req); got != c.want {
			t.Errorf("%q %v: %v, want %v", c.text, c.tools, got, c.want)
		}
	}
	// The last user message decides, not the assistant's or earlier ones.
	req := &wire.Request{Messages: []wire.Message{
		{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "```python\nprint(1)\n```"}}},
		{Role: "assistant", Content: []wire.Block{{Type: wire.BlockText, Text: "done"}}},
		{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "thanks! summarize what we did"}}},
	}}
	if got := InferTask(req); got != TaskSummarize {
		t.Errorf("last message: %v", got)
	}
	if InferTask(nil) != TaskChat || InferTask(&wire.Request{}) != TaskChat {
		t.Error("empty")
	}
	// Bounded: a cue beyond maxScan is not seen.
	long := userText(strings.Repeat("a", maxScan) + " summarize")
	if got := InferTask(long); got != TaskChat {
		t.Errorf("scan bound: %v", got)
	}
}

func TestEstimateTokens(t *testing.T) {
	req := userText(strings.Repeat("x", 4000))
	req.System = []wire.Block{{Type: wire.BlockText, Text: strings.Repeat("s", 400)}}
	in, out := EstimateTokens(req)
	if in < 1100 || in > 1110 || out != 0 {
		t.Errorf("%d %d", in, out)
	}
	req.Params.Set |= wire.HasMaxTokens
	req.Params.MaxTokens = 32000
	if _, out = EstimateTokens(req); out != maxOutputEstimate {
		t.Errorf("out %d", out)
	}
}

// catalogTOML is a provider described statically in TOML, as an operator
// (or a plugin's describe()) would: the SDK types decode with the host's
// TOML library, and nothing about models is compiled in.
const catalogTOML = `
# Specialists first: Venice takes only what wants privacy.
[[provider]]
id = "venice"
features = ["private"]
params = "venice"
[provider.traits]
private = true
payment = "diem"
[provider.policy]
serves = ["privacy", "tee", "e2ee"]
diem_funded = true

  [[provider.models]]
  id = "llama-3.3-70b"
  quality = "medium"
  features = ["tool_use"]
  input_price = 0.7
  output_price = 2.8
  latency_ms = 500

[[provider]]
id = "blockrun"
catalog_url = "https://api.blockrun.ai/v1/models"
[provider.traits]
context_engineering = true
payment = "x402"

  [[provider.models]]
  id = "gemini-3-flash"
  family = "google"
  quality = "low"
  features = ["tool_use", "structured_outputs", "low_effort", "vision"]
  input_price = 0.5
  output_price = 3.0
  latency_ms = 400

  [[provider.models]]
  id = "claude-opus-4-6"
  family = "anthropic"
  quality = "maximum"
  features = ["tool_use", "interleaved_thinking", "citations", "structured_outputs", "prompt_caching"]
  input_price = 5.0
  output_price = 25.0
  latency_ms = 2500
`

func TestEndToEnd(t *testing.T) {
	var cfg struct {
		Provider []route.ProviderDescription `toml:"provider"`
	}
	if _, err := toml.Decode(catalogTOML, &cfg); err != nil {
		t.Fatal(err)
	}
	ps := cfg.Provider
	if len(ps) != 2 || ps[0].Policy.Serves != route.Features(route.Privacy, route.TEE, route.E2EE) || !ps[0].Traits.Private ||
		ps[1].Models[1].Quality != route.Maximum || ps[1].Traits.Payment != route.PaymentX402 || ps[0].Params != route.StyleVenice {
		t.Fatalf("decoded %+v", ps)
	}

	// Claude Code with "auto": a coding task; tools make tool_use a hard
	// requirement; High quality → Opus.
	req := userText("refactor the handler")
	req.Tools = []wire.Tool{{Name: "Edit"}, {Name: "Bash"}}
	b, err := Build(&Sources{Model: "auto", Request: req, Tier: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := route.Resolve(&b.Intent, ps, nil)
	if err != nil || r.Provider != "blockrun" || r.Model != "claude-opus-4-6" || r.Pass != 1 {
		t.Fatalf("%+v %+v %v", b.Intent, r, err)
	}

	// An agent's daimon call goes private; a body that says so fails
	// closed when Venice is down.
	b, _ = Build(&Sources{Subsystem: "daimon"})
	if r, err = route.Resolve(&b.Intent, ps, nil); err != nil || r.Provider != "venice" {
		t.Fatalf("daimon: %+v %v", r, err)
	}
	b, _ = Build(&Sources{Subsystem: "curator", Bardo: []byte(`{"security_class":"private"}`)})
	_, err = route.Resolve(&b.Intent, ps, func(id string) bool { return id != "venice" })
	if !errors.Is(err, route.ErrUnhealthy) {
		t.Fatalf("private, venice down: %v", err)
	}
}

func BenchmarkBuild(b *testing.B) {
	req := userText("Assess the liquidation risk of this position given the last hour of prices")
	req.Tools = []wire.Tool{{Name: "get_price"}, {Name: "get_position"}}
	src := Sources{Model: "auto", Subsystem: "risk", Vitality: "0.6", Request: req,
		Bardo: []byte(`{"prefer":["citations"],"max_latency_ms":20000}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(&src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildPlain(b *testing.B) {
	req := userText(strings.Repeat("Please explain what this code does and whether it is correct. ", 40))
	req.Tools = []wire.Tool{{Name: "Read"}}
	src := Sources{Model: "auto", Request: req, Tier: "free"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(&src); err != nil {
			b.Fatal(err)
		}
	}
}
