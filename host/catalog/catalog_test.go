package catalog

import (
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/routing"
)

func mustPrice(t testing.TB, s string) Price {
	t.Helper()
	p, err := ParsePrice(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMerge(t *testing.T) {
	static, err := FromTOML("venice", decodeModels(t, `
[[model]]
id = "llama-3.3-70b"
input_price = "0.5"          # negotiated: config wins
features = ["tool_use"]      # replaces the backend's list
quality = "medium"

[[model]]
id = "private-finetune"      # the backend does not list it
name = "Our fine-tune"
input_price = "0"
output_price = "0"
`))
	if err != nil {
		t.Fatal(err)
	}
	dynamic, err := Decode("venice", ShapeAuto, readTestdata(t, "venice_models.json"))
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalog("venice", Merge(static, dynamic.Models), time.Time{})
	if cat.Len() != 4 {
		t.Fatalf("%d models, want 3 dynamic + 1 static-only", cat.Len())
	}

	m, ok := cat.Lookup("llama-3.3-70b")
	if !ok {
		t.Fatal("merged model missing")
	}
	if m.Origin != OriginMerged ||
		m.Input.String() != "0.5" || // static
		m.Output.String() != "2.8" || // dynamic: static did not set it
		m.ContextWindow != 65536 || m.MaxOutput != 8192 || m.Name != "Llama 3.3 70B" ||
		m.Features != routing.Features(routing.ToolUse) || // static list replaced the dynamic one
		m.Quality != routing.Medium {
		t.Errorf("merged = %+v", *m)
	}
	if m.Set&FieldInputPrice == 0 || m.Set&FieldOutputPrice == 0 || m.Set&FieldQuality == 0 {
		t.Errorf("merged Set = %b", m.Set)
	}

	m, _ = cat.Lookup("private-finetune")
	if m.Origin != OriginStatic || m.Name != "Our fine-tune" || m.Input.String() != "0" {
		t.Errorf("static-only = %+v", *m)
	}
	m, _ = cat.Lookup("deepseek-r1-671b")
	if m.Origin != OriginDynamic || m.Input.String() != "3.5" {
		t.Errorf("dynamic-only = %+v", *m)
	}
	if _, ok := cat.Lookup("qwen3-4b"); ok {
		t.Error("offline model in the catalog")
	}
}

func TestNewCatalog(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	c := NewCatalog("p", []Model{
		{ID: "b", Input: mustPrice(t, "2")},
		{ID: "a"},
		{ID: "b", Input: mustPrice(t, "9")}, // duplicate: first wins
		{ID: ""},                            // no id: dropped
	}, at)
	if c.Provider() != "p" || c.Len() != 2 || !c.FetchedAt().Equal(at) {
		t.Fatalf("catalog %s len %d at %v", c.Provider(), c.Len(), c.FetchedAt())
	}
	if ms := c.Models(); ms[0].ID != "a" || ms[1].ID != "b" {
		t.Error("not sorted by id")
	}
	if m, ok := c.Lookup("b"); !ok || m.Input.String() != "2" {
		t.Error("duplicate handling")
	}
	if _, ok := c.Lookup("zzz"); ok {
		t.Error("found a missing model")
	}
	empty := NewCatalog("q", nil, time.Time{})
	if empty.Len() != 0 || len(empty.Models()) != 0 {
		t.Error("empty catalog")
	}
	if _, ok := empty.Lookup("a"); ok {
		t.Error("lookup in an empty catalog")
	}
}
