package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Environment variables read by this package's helpers.
const (
	EnvConfig = "BARDO_CONFIG" // path of pipeline.toml (DefaultPath)
	EnvListen = "BARDO_LISTEN" // overrides server.listen (ApplyEnv)
)

// DefaultPath returns the configuration file to load: $BARDO_CONFIG if set
// and not empty, else "./pipeline.toml".
func DefaultPath(getenv func(string) string) string {
	if p := getenv(EnvConfig); p != "" {
		return p
	}
	return "./pipeline.toml"
}

// ApplyEnv applies environment overrides to cfg: BARDO_LISTEN, when set and
// not empty, replaces Server.Listen. An invalid value is reported and leaves
// cfg unchanged. Call it after every Load, including reloads.
func ApplyEnv(cfg *Config, getenv func(string) string) error {
	if v := getenv(EnvListen); v != "" {
		if err := CheckListen(v); err != nil {
			return fmt.Errorf("%s: %w", EnvListen, err)
		}
		cfg.Server.Listen = v
	}
	return nil
}

// ResolveCredential resolves a provider credential reference:
//
//   - "" means the provider needs no credential: ("", true, nil).
//   - "env:NAME" reads the environment variable NAME; unset or empty gives
//     ok == false with no error.
//   - "file:PATH" reads the file, dropping trailing blanks and newlines; a
//     missing or empty file gives ok == false with no error, any other read
//     failure is an error.
//
// Anything else is refused with an error that does not repeat the value,
// which may be a literal secret. ok == false means the provider cannot be
// used and should be disabled, not that the configuration is wrong.
// Config.Providers[i].Credential already holds file: paths made absolute.
func ResolveCredential(ref string, getenv func(string) string) (secret string, ok bool, err error) {
	switch {
	case ref == "":
		return "", true, nil
	case strings.HasPrefix(ref, "env:"):
		name := ref[len("env:"):]
		if !envNameRE.MatchString(name) {
			return "", false, fmt.Errorf("credential: %q is not a valid environment variable name", name)
		}
		v := getenv(name)
		return v, v != "", nil
	case strings.HasPrefix(ref, "file:"):
		p := ref[len("file:"):]
		if p == "" {
			return "", false, errors.New(`credential: "file:" needs a path`)
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("credential: %w", err)
		}
		s := strings.TrimRight(string(b), " \t\r\n")
		return s, s != "", nil
	}
	return "", false, fmt.Errorf("credential %w", errLiteralCredential)
}
