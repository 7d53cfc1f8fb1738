package routing

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestFeatureNames(t *testing.T) {
	seen := map[string]bool{}
	for f := Feature(0); f < numFeatures; f++ {
		n := f.String()
		if n == "" || seen[n] {
			t.Errorf("feature %d: name %q", f, n)
		}
		seen[n] = true
		if g, ok := ParseFeature(n); !ok || g != f {
			t.Errorf("%q parses to %v", n, g)
		}
	}
	if numFeatures > 64 {
		t.Fatalf("%d features do not fit a FeatureSet", numFeatures)
	}
	for in, want := range map[string]Feature{
		"private": Privacy, "Privacy": Privacy, "no_log": Privacy, "tee_attested": TEE,
		"response_schema": StructuredOutputs, "interleaved-thinking": InterleavedThinking,
		"function_calling": ToolUse, "predicted_output": PredictedOutputs,
		// host/catalog's former names and aliases.
		"zero_retention": Privacy, "batch": BatchAPI, "thinking": Reasoning, "caching": PromptCaching,
		"tools": ToolUse, "structured_output": StructuredOutputs,
	} {
		if got, ok := ParseFeature(in); !ok || got != want {
			t.Errorf("%q: %v %v", in, got, ok)
		}
	}
	if AllFeatures.Len() != int(numFeatures) || !AllFeatures.Has(numFeatures-1) || AllFeatures.Has(numFeatures) {
		t.Errorf("AllFeatures = %b", AllFeatures)
	}
	if names := AllFeatures.AppendNames(nil); len(names) != int(numFeatures) || names[0] != "interleaved_thinking" || names[len(names)-1] != Feature(numFeatures-1).String() {
		t.Errorf("AllFeatures names = %v", names)
	}
	if _, ok := ParseFeature("telepathy"); ok {
		t.Error("telepathy parsed")
	}
	s, unknown := ParseFeatures([]string{"visible_thinking", "private", "telepathy"})
	if s != Features(VisibleThinking, Privacy) || len(unknown) != 1 || unknown[0] != "telepathy" {
		t.Errorf("%v %v", s, unknown)
	}
	if got := Features(Privacy, InterleavedThinking, Citations).String(); got != "interleaved_thinking,citations,privacy" {
		t.Error(got)
	}
}

func TestFeatureSetCodecs(t *testing.T) {
	m := ModelInfo{ID: "m", Quality: High, Features: Features(ToolUse, VisibleThinking)}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"id":"m","quality":"high","features":["visible_thinking","tool_use"]}` {
		t.Errorf("%s", b)
	}
	var back ModelInfo
	if err := json.Unmarshal([]byte(`{"id":"m","quality":"HIGH","features":[ "tool_use" , "visible-thinking"]}`), &back); err != nil || back.Features != m.Features || back.Quality != High {
		t.Errorf("%+v %v", back, err)
	}
	var fs FeatureSet
	for _, bad := range []string{`["telepathy"]`, `"tool_use"`, `["tool_use"`, `[1]`} {
		if err := json.Unmarshal([]byte(bad), &fs); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	var ne *NameError
	if err := json.Unmarshal([]byte(`["telepathy"]`), &fs); !errors.As(err, &ne) || !errors.Is(err, ErrUnknownFeature) {
		t.Errorf("%v", err)
	}
	if err := json.Unmarshal([]byte(`null`), &fs); err != nil || fs != 0 {
		t.Errorf("null: %v %v", fs, err)
	}
	if err := fs.UnmarshalTOML([]any{"privacy", "tee"}); err != nil || fs != Features(Privacy, TEE) {
		t.Errorf("toml: %v %v", fs, err)
	}
	if err := fs.UnmarshalTOML([]any{"privacy", 3}); err == nil {
		t.Error("toml: no error for a number")
	}
}

func TestEnumNames(t *testing.T) {
	for s, want := range map[string]Quality{"minimum": Minimum, "Low": Low, "medium": Medium, "high": High, "maximum": Maximum, "max": Maximum, "min": Minimum} {
		if q, err := ParseQuality(s); err != nil || q != want {
			t.Errorf("%q: %v %v", s, q, err)
		}
	}
	if _, err := ParseQuality("ultra"); !errors.Is(err, ErrUnknownName) {
		t.Error(err)
	}
	for s, want := range map[string]SecurityClass{"": Standard, "public": Standard, "private": Private, "TEE": TEEOnly, "e2ee": E2EEOnly} {
		if c, err := ParseSecurityClass(s); err != nil || c != want {
			t.Errorf("%q: %v %v", s, c, err)
		}
	}
	if _, err := ParseSecurityClass("secret"); err == nil {
		t.Error("secret parsed")
	}
	var tr Traits
	if err := json.Unmarshal([]byte(`{"private":true,"payment":"diem"}`), &tr); err != nil || !tr.Private || tr.Payment != PaymentDiem {
		t.Errorf("%+v %v", tr, err)
	}
	if Maximum.Downgrade() != High || Low.Downgrade() != Low || Minimum.Downgrade() != Minimum {
		t.Error("downgrade")
	}
}

// TestDescriptionJSON: a provider's describe() answer survives JSON both
// ways (the plugin ABI can carry it as is).
func TestDescriptionJSON(t *testing.T) {
	for _, p := range append(fullStack(), ProviderDescription{ID: "bare"}) {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back ProviderDescription
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v\n%s", p.ID, err, b)
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) {
			t.Errorf("%s: round trip\n%s\n%s", p.ID, b, b2)
		}
	}
}
