package config

import (
	"errors"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	for src, want := range map[string]string{
		"":                          "",
		"[auth]\n":                  "",
		"[auth]\nmode = \"keys\"\n": AuthKeys,
		"[auth]\nmode = \"open\"\n": AuthOpen,
	} {
		cfg, err := Parse([]byte(src), "pipeline.toml")
		if err != nil || cfg.Auth.Mode != want {
			t.Errorf("%q: mode %q, %v; want %q", src, cfg.Auth.Mode, err, want)
		}
	}
	for _, src := range []string{"[auth]\nmode = \"none\"\n", "[auth]\nmod = \"keys\"\n", "auth = 1\n"} {
		_, err := Parse([]byte(src), "pipeline.toml")
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "auth") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
