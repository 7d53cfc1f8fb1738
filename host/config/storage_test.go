package config

import (
	"errors"
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
