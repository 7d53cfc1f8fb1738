package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStorage(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "pipeline.toml")
	cfg, err := Parse([]byte(""), name)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Storage.Driver != "sqlite" || cfg.Storage.DataDir != filepath.Join(dir, "data") {
		t.Fatalf("defaults: %+v", cfg.Storage)
	}
	cfg, err = Parse([]byte("[storage]\ndriver = \"sqlite\"\ndata_dir = \"/var/lib/bardo\"\n"), name)
	if err != nil || cfg.Storage.DataDir != "/var/lib/bardo" {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, src := range []string{
		"[storage]\ndriver = \"postgres\"\n",
		"[storage]\ndata_dir = \"\"\n",
		"[storage]\ndatadir = \"x\"\n",
		"storage = 1\n",
	} {
		_, err := Parse([]byte(src), name)
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "storage") {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// The CLI reads [storage] from a file whose plugins are not built.
func TestLoadStorage(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "pipeline.toml")
	src := "[storage]\ndata_dir = \"state\"\n\n[[layer]]\nname = \"pii\"\nplugin = \"missing.wasm\"\n"
	if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(name); err == nil {
		t.Fatal("Load accepted a missing plugin")
	}
	s, err := LoadStorage(name)
	if err != nil || s.DataDir != filepath.Join(dir, "state") {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = LoadStorage(filepath.Join(dir, "absent.toml"))
	if err != nil || s.DataDir != filepath.Join(dir, "data") {
		t.Fatalf("absent file: %+v %v", s, err)
	}
	os.WriteFile(name, []byte("[storage]\ndriver = \"pg\"\n"), 0o644)
	if _, err := LoadStorage(name); err == nil || !strings.Contains(err.Error(), "driver") {
		t.Fatalf("bad driver: %v", err)
	}
}
