package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestApplyEnv(t *testing.T) {
	cfg := &Config{Server: Server{Listen: DefaultListen}}
	if err := ApplyEnv(cfg, env(nil)); err != nil || cfg.Server.Listen != DefaultListen {
		t.Errorf("unset: listen %q, err %v", cfg.Server.Listen, err)
	}
	if err := ApplyEnv(cfg, env(map[string]string{"BARDO_LISTEN": ""})); err != nil || cfg.Server.Listen != DefaultListen {
		t.Errorf("empty: listen %q, err %v", cfg.Server.Listen, err)
	}
	if err := ApplyEnv(cfg, env(map[string]string{"BARDO_LISTEN": ":9999"})); err != nil || cfg.Server.Listen != ":9999" {
		t.Errorf("set: listen %q, err %v", cfg.Server.Listen, err)
	}
	err := ApplyEnv(cfg, env(map[string]string{"BARDO_LISTEN": "nonsense"}))
	if err == nil || !strings.HasPrefix(err.Error(), "BARDO_LISTEN: invalid listen address") {
		t.Errorf("invalid: err %v", err)
	}
	if cfg.Server.Listen != ":9999" {
		t.Errorf("invalid value changed listen to %q", cfg.Server.Listen)
	}
}

func TestDefaultPath(t *testing.T) {
	if p := DefaultPath(env(nil)); p != "./pipeline.toml" {
		t.Errorf("DefaultPath = %q", p)
	}
	if p := DefaultPath(env(map[string]string{"BARDO_CONFIG": "/etc/bardo.toml"})); p != "/etc/bardo.toml" {
		t.Errorf("DefaultPath = %q", p)
	}
}

func TestResolveCredential(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := env(map[string]string{"OPENAI_API_KEY": "sk-from-env", "EMPTY": ""})
	for _, tc := range []struct {
		ref     string
		secret  string
		ok      bool
		wantErr bool
	}{
		{"", "", true, false},
		{"env:OPENAI_API_KEY", "sk-from-env", true, false},
		{"env:UNSET", "", false, false},
		{"env:EMPTY", "", false, false},
		{"env:BAD-NAME", "", false, true},
		{"file:" + keyFile, "sk-from-file", true, false},
		{"file:" + emptyFile, "", false, false},
		{"file:" + filepath.Join(dir, "missing"), "", false, false},
		{"file:" + dir, "", false, true}, // a directory: a real error
		{"file:", "", false, true},
		{"sk-literal-SECRET", "", false, true},
		{"ENV:OPENAI_API_KEY", "", false, true},
	} {
		secret, ok, err := ResolveCredential(tc.ref, getenv)
		if secret != tc.secret || ok != tc.ok || (err != nil) != tc.wantErr {
			t.Errorf("ResolveCredential(%q) = %q, %v, %v; want %q, %v, err=%v", tc.ref, secret, ok, err, tc.secret, tc.ok, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error leaks the literal: %v", err)
		}
	}
}
