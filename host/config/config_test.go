package config

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/routing"
)

// workdir makes a temporary directory holding the plugin files the tests
// refer to, changes into it and returns its absolute path.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"build/plugins/pii.wasm",
		"build/plugins/a.wasm",
		"build/plugins/b.wasm",
		"build/plugins/openai-compatible.wasm",
		"plugins/pii.wasm",
		"plugins/openai-compatible.wasm",
		"plugins/notafile.wasm/x",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wd, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, p), []byte("\x00asm"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return wd
}

const fullConfig = `# A complete pipeline.
[server]
listen = "0.0.0.0:9090"
max_body_bytes = "2MiB"
read_timeout = "5s"
write_timeout = "1m"
idle_timeout = "0s"
upstream_timeout = "90s"
plugin_dir = "plugins"
cache_dir = ""
log_level = "debug"

[[layer]]
name = "pii"
plugin = "pii.wasm"
phases = ["request", "stream"]
on_error = "fail-open"
timeout = "50ms"
memory = "32MiB"
pool = 4
trusted = true
[layer.config]
suffix = "x"
nested = { list = [1, 2], flag = true }

[[layer]]
name = "audit-2"
plugin = "ABSPATH/not-built.wasm"
enabled = false

[[provider]]
name = "openai"
plugin = "openai-compatible.wasm"
base_url = "https://api.openai.com/v1"
credential = "env:OPENAI_API_KEY"
models = ["gpt-4o", "gpt-4o-*"]
memory = 1048576
timeout = "3s"
[provider.config]
organization = "org-1"

[[provider]]
name = "local"
plugin = "openai-compatible.wasm"
credential = "file:secrets/local.key"
`

func TestParseFull(t *testing.T) {
	dir := workdir(t)
	src := strings.ReplaceAll(fullConfig, "ABSPATH", dir)
	cfg, err := Parse([]byte(src), "pipeline.toml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	pool := DefaultPool()
	want := &Config{
		Path:        filepath.Join(dir, "pipeline.toml"),
		Dir:         dir,
		Fingerprint: FingerprintBytes([]byte(src)),
		Storage:     Storage{Driver: "sqlite", DataDir: filepath.Join(dir, "data")},
		Server: Server{
			Listen:          "0.0.0.0:9090",
			MaxBodyBytes:    2 << 20,
			ReadTimeout:     5 * time.Second,
			WriteTimeout:    time.Minute,
			IdleTimeout:     0,
			UpstreamTimeout: 90 * time.Second,
			PluginDir:       filepath.Join(dir, "plugins"),

			UpstreamIdleTimeout: DefaultUpstreamIdleTimeout,
			CacheDir:            "",
			LogLevel:            slog.LevelDebug,
			MemoryLimit:         DefaultMemoryLimit,
			KVMaxBytes:          DefaultKVMaxBytes,
			IdleRelease:         DefaultIdleRelease,
		},
		Layers: []Layer{
			{
				PluginSpec: PluginSpec{
					Name:    "pii",
					Plugin:  filepath.Join(dir, "plugins", "pii.wasm"),
					Timeout: 50 * time.Millisecond,
					Memory:  32 << 20,
					Pool:    4,
					Trusted: true,
					Enabled: true,
					Config:  []byte(`{"nested":{"flag":true,"list":[1,2]},"suffix":"x"}`),
					Line:    13,
				},
				Phases:  PhaseRequest | PhaseStream,
				OnError: FailOpen,
			},
			{
				PluginSpec: PluginSpec{
					Name:    "audit-2",
					Plugin:  filepath.Join(dir, "not-built.wasm"),
					Timeout: 100 * time.Millisecond,
					Memory:  64 << 20,
					Pool:    pool,
					Trusted: false,
					Enabled: false,
					Config:  []byte(`{}`),
					Line:    26,
				},
				Phases:  PhaseAll,
				OnError: FailClosed,
			},
		},
		Providers: []Provider{
			{
				PluginSpec: PluginSpec{
					Name:    "openai",
					Plugin:  filepath.Join(dir, "plugins", "openai-compatible.wasm"),
					Timeout: 3 * time.Second,
					Memory:  1 << 20,
					Pool:    pool,
					Enabled: true,
					Config:  []byte(`{"organization":"org-1"}`),
					Line:    31,
				},
				BaseURL:    "https://api.openai.com/v1",
				Credential: "env:OPENAI_API_KEY",
				Models:     []string{"gpt-4o", "gpt-4o-*"},
				Failover:   true,
			},
			{
				PluginSpec: PluginSpec{
					Name:    "local",
					Plugin:  filepath.Join(dir, "plugins", "openai-compatible.wasm"),
					Timeout: 10 * time.Second,
					Memory:  64 << 20,
					Pool:    pool,
					Enabled: true,
					Config:  []byte(`{}`),
					Line:    42,
				},
				Credential: "file:" + filepath.Join(dir, "secrets", "local.key"),
				Failover:   true,
			},
		},
		Models: Models{
			Dir:             filepath.Join(dir, DefaultModelsDir),
			Threads:         DefaultModelThreads,
			IndexMaxEntries: DefaultIndexMaxEntries,
			IndexMaxSpaces:  DefaultIndexMaxSpaces,
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Parse mismatch\n got: %+v\nwant: %+v", *cfg, *want)
		if !reflect.DeepEqual(cfg.Server, want.Server) {
			t.Errorf("server\n got %+v\nwant %+v", cfg.Server, want.Server)
		}
		for i := range min(len(cfg.Layers), len(want.Layers)) {
			if !reflect.DeepEqual(cfg.Layers[i], want.Layers[i]) {
				t.Errorf("layer[%d]\n got %+v (config %s)\nwant %+v (config %s)", i, cfg.Layers[i], cfg.Layers[i].Config, want.Layers[i], want.Layers[i].Config)
			}
		}
		for i := range min(len(cfg.Providers), len(want.Providers)) {
			if !reflect.DeepEqual(cfg.Providers[i], want.Providers[i]) {
				t.Errorf("provider[%d]\n got %+v (config %s)\nwant %+v (config %s)", i, cfg.Providers[i], cfg.Providers[i].Config, want.Providers[i], want.Providers[i].Config)
			}
		}
	}

	if got := cfg.Layers[0].MemoryPages(); got != 512 {
		t.Errorf("MemoryPages = %d, want 512", got)
	}
	if cfg.Layer("pii") != &cfg.Layers[0] || cfg.Layer("nope") != nil {
		t.Error("Config.Layer lookup wrong")
	}
	if cfg.Provider("local") != &cfg.Providers[1] || cfg.Provider("pii") != nil {
		t.Error("Config.Provider lookup wrong")
	}
	op := cfg.Provider("openai")
	for model, want := range map[string]bool{"gpt-4o": true, "gpt-4o-mini": true, "gpt-4": false, "claude": false} {
		if got := op.Serves(model); got != want {
			t.Errorf("openai.Serves(%q) = %v, want %v", model, got, want)
		}
	}
	if !cfg.Provider("local").Serves("anything") {
		t.Error("provider without models should serve every model")
	}
}

func TestParseDefaults(t *testing.T) {
	dir := workdir(t)
	src := "[[layer]]\nname = \"pii\"\nplugin = \"pii.wasm\"\n"
	cfg, err := Parse([]byte(src), "pipeline.toml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wantServer := Server{
		Listen:          "127.0.0.1:8080",
		MaxBodyBytes:    10 << 20,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    10 * time.Minute,
		IdleTimeout:     2 * time.Minute,
		UpstreamTimeout: 10 * time.Minute,
		PluginDir:       filepath.Join(dir, "build", "plugins"),

		UpstreamIdleTimeout: 30 * time.Second,
		CacheDir:            filepath.Join(dir, ".cache", "wazero"),
		LogLevel:            slog.LevelInfo,
		MemoryLimit:         DefaultMemoryLimit,
		KVMaxBytes:          DefaultKVMaxBytes,
		IdleRelease:         DefaultIdleRelease,
	}
	if cfg.Server != wantServer {
		t.Errorf("server defaults\n got %+v\nwant %+v", cfg.Server, wantServer)
	}
	wantLayer := Layer{
		PluginSpec: PluginSpec{
			Name: "pii", Plugin: filepath.Join(dir, "build", "plugins", "pii.wasm"),
			Timeout: 100 * time.Millisecond, Memory: 64 << 20, Pool: DefaultPool(),
			Enabled: true, Config: []byte("{}"), Line: 1,
		},
		Phases: PhaseAll, OnError: FailClosed,
	}
	if len(cfg.Layers) != 1 || !reflect.DeepEqual(cfg.Layers[0], wantLayer) {
		t.Errorf("layer defaults\n got %+v\nwant %+v", cfg.Layers, wantLayer)
	}
	if len(cfg.Providers) != 0 {
		t.Errorf("providers = %+v, want none", cfg.Providers)
	}
	if p := DefaultPool(); p < 1 || p > 256 {
		t.Errorf("DefaultPool() = %d", p)
	}
}

func TestLoad(t *testing.T) {
	dir := workdir(t)
	// The config lives in a sub-directory: relative paths follow the file,
	// not the working directory.
	sub := filepath.Join(dir, "etc")
	if err := os.MkdirAll(filepath.Join(sub, "build", "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "build", "plugins", "x.wasm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := "[[provider]]\nname = \"x\"\nplugin = \"x.wasm\"\ncredential = \"file:key\"\n"
	path := filepath.Join(sub, "pipeline.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Path != path || cfg.Dir != sub {
		t.Errorf("Path, Dir = %q, %q; want %q, %q", cfg.Path, cfg.Dir, path, sub)
	}
	if got, want := cfg.Providers[0].Plugin, filepath.Join(sub, "build", "plugins", "x.wasm"); got != want {
		t.Errorf("plugin = %q, want %q", got, want)
	}
	if got, want := cfg.Providers[0].Credential, "file:"+filepath.Join(sub, "key"); got != want {
		t.Errorf("credential = %q, want %q", got, want)
	}
	if fp, err := FingerprintFile(path); err != nil || fp != cfg.Fingerprint {
		t.Errorf("FingerprintFile = %v, %v; want %v", fp, err, cfg.Fingerprint)
	}

	_, err = Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want not-exist", err)
	}
}

type prob struct {
	line int
	key  string
	msg  string
}

func TestValidationErrors(t *testing.T) {
	dir := workdir(t)
	cases := []struct {
		name string
		src  string
		want []prob
	}{
		{
			name: "on_error typo",
			src: `[[layer]]
name = "a"
plugin = "a.wasm"

[[layer]]
name = "b"
plugin = "b.wasm"
on_error = "fail-opn"
`,
			want: []prob{{8, "layer[1].on_error", `must be "fail-open" or "fail-closed", got "fail-opn"`}},
		},
		{
			name: "duplicate name across layers and providers",
			src: `[[layer]]
name = "a"
plugin = "a.wasm"
[[provider]]
name = "a"
plugin = "b.wasm"
`,
			want: []prob{{5, "provider[0].name", `duplicate name "a" (already used by layer[0] on line 1)`}},
		},
		{
			name: "unknown phase in a multi-line array",
			src: `[[layer]]
name = "a"
plugin = "a.wasm"
phases = [
  "request",
  "respons",
]
`,
			want: []prob{{6, "layer[0].phases[1]", `unknown phase "respons": must be "request", "response" or "stream"`}},
		},
		{
			name: "empty phases",
			src:  "[[layer]]\nname = \"a\"\nplugin = \"a.wasm\"\nphases = []\n",
			want: []prob{{4, "layer[0].phases", "must list at least one phase (leave the key out for all three, or set enabled = false)"}},
		},
		{
			name: "missing plugin file",
			src:  "[[layer]]\nname = \"a\"\nplugin = \"missing.wasm\"\n",
			want: []prob{{3, "layer[0].plugin", "file not found: " + filepath.Join(dir, "build", "plugins", "missing.wasm")}},
		},
		{
			name: "plugin is a directory",
			src:  "[server]\nplugin_dir = \"plugins\"\n[[layer]]\nname = \"a\"\nplugin = \"notafile.wasm\"\n",
			want: []prob{{5, "layer[0].plugin", "not a regular file: " + filepath.Join(dir, "plugins", "notafile.wasm")}},
		},
		{
			name: "missing name and plugin",
			src:  "[[layer]]\nname = \"a\"\nplugin = \"a.wasm\"\n\n[[layer]]\ntimeout = \"1s\"\n",
			want: []prob{
				{5, "layer[1].name", "required key is missing"},
				{5, "layer[1].plugin", "required key is missing"},
			},
		},
		{
			name: "bad name",
			src:  "[[layer]]\nname = \"PII_filter\"\nplugin = \"a.wasm\"\n",
			want: []prob{{2, "layer[0].name", `must match [a-z0-9-]+, got "PII_filter"`}},
		},
		{
			name: "bad durations",
			src: `[server]
read_timeout = "fast"
write_timeout = 30
idle_timeout = "-1s"
upstream_idle_timeout = "0s"
[[layer]]
name = "a"
plugin = "a.wasm"
timeout = "0s"
`,
			want: []prob{
				{2, "server.read_timeout", `invalid duration "fast" (want a number with a unit such as "50ms", "30s" or "2m")`},
				{3, "server.write_timeout", `must be a duration string such as "50ms", "30s" or "2m", got integer`},
				{4, "server.idle_timeout", `must not be negative (use "0s" for no limit)`},
				{5, "server.upstream_idle_timeout", "must be greater than zero"},
				{9, "layer[0].timeout", "must be greater than zero"},
			},
		},
		{
			name: "bad sizes",
			src: `[server]
max_body_bytes = "10MB"
[[layer]]
name = "a"
plugin = "a.wasm"
memory = 100000
[[layer]]
name = "b"
plugin = "b.wasm"
memory = "8GiB"
[[provider]]
name = "c"
plugin = "a.wasm"
memory = 1.5
`,
			want: []prob{
				{2, "server.max_body_bytes", `invalid size "10MB": unknown unit "MB" (use B, KiB, MiB or GiB)`},
				{6, "layer[0].memory", "must be a multiple of 64KiB (the WebAssembly page size), got 100000 bytes"},
				{10, "layer[1].memory", "must be at most 4GiB, got 8GiB"},
				{14, "provider[0].memory", `must be a size such as "64MiB" or an integer number of bytes, got float`},
			},
		},
		{
			name: "pool range",
			src: `[[layer]]
name = "a"
plugin = "a.wasm"
pool = 0
[[layer]]
name = "b"
plugin = "b.wasm"
pool = 257
[[provider]]
name = "c"
plugin = "a.wasm"
pool = "4"
`,
			want: []prob{
				{4, "layer[0].pool", "must be between 1 and 256, got 0"},
				{8, "layer[1].pool", "must be between 1 and 256, got 257"},
				{12, "provider[0].pool", "must be an integer, got string"},
			},
		},
		{
			name: "credential formats",
			src: `[[provider]]
name = "a"
plugin = "a.wasm"
credential = "sk-live-SECRET123"
[[provider]]
name = "b"
plugin = "a.wasm"
credential = "env:OPENAI-KEY"
[[provider]]
name = "c"
plugin = "a.wasm"
credential = "file:"
`,
			want: []prob{
				{4, "provider[0].credential", `must be a reference "env:NAME" or "file:PATH"; literal secrets are refused so they never live in pipeline.toml (value not shown)`},
				{8, "provider[1].credential", `"OPENAI-KEY" is not a valid environment variable name (want [A-Za-z_][A-Za-z0-9_]*)`},
				{12, "provider[2].credential", `"file:" needs a path`},
			},
		},
		{
			name: "listen addresses",
			src:  "[server]\nlisten = \"localhost\"\n",
			want: []prob{{2, "server.listen", `invalid listen address "localhost": want host:port such as "127.0.0.1:8080" or ":8080"`}},
		},
		{
			name: "listen port out of range",
			src:  "[server]\n\n\nlisten = \"127.0.0.1:99999\"\n",
			want: []prob{{4, "server.listen", `invalid listen address "127.0.0.1:99999": port must be a number from 0 to 65535`}},
		},
		{
			name: "unknown keys with their lines",
			src: `[servr]
listen = ":80"

[server]
listn = ":80"

[[layer]]
name = "a"
plugin = "a.wasm"
on_eror = "fail-open"
colour = "blue"

[[provider]]
name = "p"
plugin = "a.wasm"
phases = ["request"]
`,
			want: []prob{
				{1, "servr", `unknown key (did you mean "server"?)`},
				{5, "server.listn", `unknown key (did you mean "listen"?)`},
				{10, "layer[0].on_eror", `unknown key (did you mean "on_error"?)`},
				{11, "layer[0].colour", "unknown key"},
				{16, "provider[0].phases", "unknown key"},
			},
		},
		{
			name: "keys are case-sensitive",
			src:  "[[layer]]\nname = \"a\"\nplugin = \"a.wasm\"\nTrusted = true\n",
			want: []prob{{4, "layer[0].Trusted", `unknown key (did you mean "trusted"?)`}},
		},
		{
			name: "wrong types",
			src: `[server]
log_level = "verbose"
cache_dir = false
[[layer]]
name = "a"
plugin = "a.wasm"
trusted = "yes"
phases = "request"
config = "x"
`,
			want: []prob{
				{2, "server.log_level", `must be "debug", "info", "warn" or "error", got "verbose"`},
				{3, "server.cache_dir", "must be a string, got boolean"},
				{7, "layer[0].trusted", "must be true or false, got string"},
				{8, "layer[0].phases", "must be an array of strings, got string"},
				{9, "layer[0].config", "must be a table, got string"},
			},
		},
		{
			name: "layer written as a plain table",
			src:  "[layer]\nname = \"a\"\n",
			want: []prob{{1, "layer", "must be an array of tables ([[layer]]), got table"}},
		},
		{
			name: "provider URL and model globs",
			src: `[[provider]]
name = "a"
plugin = "a.wasm"
base_url = "ftp://example.com"
models = ["gpt-4o", "gpt-[", "", 7]
`,
			want: []prob{
				{4, "provider[0].base_url", `must be an http:// or https:// URL, got "ftp://example.com"`},
				{5, "provider[0].models[1]", `invalid glob "gpt-[": syntax error in pattern`},
				{5, "provider[0].models[2]", "must not be empty"},
				{5, "provider[0].models[3]", "must be a string, got integer"},
			},
		},
		{
			// A multi-line string holding TOML-looking text must not
			// confuse the line finder.
			name: "lines after a multi-line string",
			src: `[[layer]]
name = "a"
plugin = "a.wasm"
[layer.config]
text = """
[[layer]]
on_error = "x"
"""
[[layer]]
name = "b"
plugin = "b.wasm"
on_error = "nope"
`,
			want: []prob{{12, "layer[1].on_error", `must be "fail-open" or "fail-closed", got "nope"`}},
		},
		{
			name: "inline tables and arrays of inline tables",
			src: `layer = [
  { name = "a", plugin = "a.wasm" },
  { name = "b", plugin = "b.wasm",
    pool = -1 },
]
`,
			want: []prob{{4, "layer[1].pool", "must be between 1 and 256, got -1"}},
		},
		{
			name: "all problems are collected, in line order",
			src: `[[provider]]
name = "dup"
plugin = "a.wasm"
timeout = "soon"
[server]
listen = "nope"
[[layer]]
name = "dup"
plugin = "nope.wasm"
`,
			want: []prob{
				{4, "provider[0].timeout", `invalid duration "soon" (want a number with a unit such as "50ms", "30s" or "2m")`},
				{6, "server.listen", `invalid listen address "nope": want host:port such as "127.0.0.1:8080" or ":8080"`},
				{8, "layer[0].name", `duplicate name "dup" (already used by provider[0] on line 1)`},
				{9, "layer[0].plugin", "file not found: " + filepath.Join(dir, "build", "plugins", "nope.wasm")},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.src), "pipeline.toml")
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse error = %v (cfg %+v), want *ValidationError", err, cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config with an error")
			}
			var got []prob
			for _, p := range ve.Problems {
				if p.File != "pipeline.toml" {
					t.Errorf("problem file = %q", p.File)
				}
				got = append(got, prob{p.Line, p.Key, p.Msg})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %+v\nwant %+v", got, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET123") {
				t.Errorf("error message leaks the literal credential: %v", err)
			}
		})
	}
}

func TestValidationErrorFormat(t *testing.T) {
	workdir(t)
	src := "[[layer]]\nname = \"a\"\nplugin = \"a.wasm\"\n\n[[layer]]\nname = \"b\"\nplugin = \"b.wasm\"\non_error = \"fail-opn\"\npool = 0\n"
	_, err := Parse([]byte(src), "pipeline.toml")
	want := `pipeline.toml:8: layer[1].on_error: must be "fail-open" or "fail-closed", got "fail-opn"` + "\n" +
		`pipeline.toml:9: layer[1].pool: must be between 1 and 256, got 0`
	if err == nil || err.Error() != want {
		t.Errorf("Error() =\n%v\nwant\n%s", err, want)
	}
	if got := (Problem{File: "f", Key: "k", Msg: "m"}).String(); got != "f: k: m" {
		t.Errorf("Problem without line = %q", got)
	}
}

func TestSyntaxError(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
	}{
		{"[server]\nlisten = \n", 2},
		{"[server]\nlisten = \":80\"\n\n[[layer]\nname = \"a\"\n", 4},
		{"[server]\nlisten = \":80\"\nlisten = \":81\"\n", 3},
	} {
		_, err := Parse([]byte(tc.src), "conf/pipeline.toml")
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 {
			t.Fatalf("Parse(%q) error = %#v, want one problem", tc.src, err)
		}
		p := ve.Problems[0]
		if p.File != "conf/pipeline.toml" || p.Line != tc.line || p.Key != "" {
			t.Errorf("Parse(%q) problem = %+v, want line %d", tc.src, p, tc.line)
		}
		prefix := "conf/pipeline.toml:" + strconv.Itoa(tc.line) + ": TOML syntax error: "
		if !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("Error() = %q, want prefix %q", err.Error(), prefix)
		}
	}
}

func TestLocate(t *testing.T) {
	src := `top = 1
"quoted.key" = 2
a.b.c = 3   # comment [[x]]
s = 'lit # not a comment'
[t]
inline = { x = 1, y = { z = [
  1,
  2 ] } }
[[arr]]
k = 1
[[arr]]
k = """a
b"""
[arr.sub]
m = 1
[[arr.list]]
n = 1
`
	want := map[string]int{
		"top":              1,
		`"quoted.key"`:     2,
		"a":                3,
		"a.b.c":            3,
		"s":                4,
		"t":                5,
		"t.inline":         6,
		"t.inline.y.z":     6,
		"t.inline.y.z[1]":  8,
		"arr":              9,
		"arr[0]":           9,
		"arr[0].k":         10,
		"arr[1]":           11,
		"arr[1].k":         12,
		"arr[1].sub":       14,
		"arr[1].sub.m":     15,
		"arr[1].list":      16,
		"arr[1].list[0]":   16,
		"arr[1].list[0].n": 17,
	}
	got := locate(src)
	for k, line := range want {
		if got[k] != line {
			t.Errorf("line of %s = %d, want %d", k, got[k], line)
		}
	}
	for _, k := range []string{"x", "arr[2]", "arr[0].sub"} {
		if _, ok := got[k]; ok {
			t.Errorf("unexpected key %s at line %d", k, got[k])
		}
	}
	if p := parentKey(`a."b.c[1]".d[2]`); p != `a."b.c[1]".d` {
		t.Errorf("parentKey = %q", p)
	}
	if p := parentKey(`a."b.c[1]"`); p != "a" {
		t.Errorf("parentKey = %q", p)
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"512", 512, true},
		{"512B", 512, true},
		{"64KiB", 64 << 10, true},
		{"10 MiB", 10 << 20, true},
		{"4GiB", 4 << 30, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"-1", 0, false},
		{"1.5MiB", 0, false},
		{"10MB", 0, false},
		{"10mib", 0, false},
		{"99999999999999999999", 0, false},
		{"9999999999GiB", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, n := range []int64{0, 1, 1023, 1024, 65536, 10 << 20, 3 << 30, 5<<30 + 1} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d)=%q) = %d, %v", n, FormatSize(n), got, err)
		}
	}
	if s := FormatSize(64 << 20); s != "64MiB" {
		t.Errorf("FormatSize(64MiB) = %q", s)
	}
}

func TestPhaseAndOnError(t *testing.T) {
	if s := (PhaseRequest | PhaseStream).String(); s != "request|stream" {
		t.Errorf("String = %q", s)
	}
	if s := Phase(0).String(); s != "none" {
		t.Errorf("String = %q", s)
	}
	if !PhaseAll.Has(PhaseResponse) || PhaseRequest.Has(PhaseRequest|PhaseStream) {
		t.Error("Has wrong")
	}
	// Same bit values as sdk/wire.Phase.
	if PhaseRequest != 1 || PhaseResponse != 2 || PhaseStream != 4 {
		t.Error("phase bits changed")
	}
	if p, ok := ParsePhase("response"); !ok || p != PhaseResponse {
		t.Error("ParsePhase(response)")
	}
	if _, ok := ParsePhase("Response"); ok {
		t.Error("ParsePhase is case-sensitive")
	}
	if FailOpen.String() != "fail-open" || FailClosed.String() != "fail-closed" || OnError(0) != FailClosed {
		t.Error("OnError strings or zero value wrong")
	}
}

func TestParseModels(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"m/glove", "abs-model"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := `
[models]
runtime = "lib/libonnxruntime.so.1"
dir = "m"
threads = 2
index_max_entries = 5000

[[model]]
name = "embed"
kind = "glove"
path = "glove"
load = "lazy"

[[model]]
name = "guard"
kind = "bert-classifier"
path = "` + filepath.Join(dir, "abs-model") + `"
max_batch = 8
batch_wait = "1ms"
`
	cfg, err := Parse([]byte(src), filepath.Join(dir, "pipeline.toml"))
	if err != nil {
		t.Fatal(err)
	}
	wantModels := Models{Runtime: filepath.Join(dir, "lib/libonnxruntime.so.1"), Dir: filepath.Join(dir, "m"), Threads: 2, IndexMaxEntries: 5000, IndexMaxSpaces: DefaultIndexMaxSpaces}
	if cfg.Models != wantModels {
		t.Errorf("models = %+v, want %+v", cfg.Models, wantModels)
	}
	want := []Model{
		{Name: "embed", Kind: "glove", Path: filepath.Join(dir, "m/glove"), MaxBatch: DefaultModelMaxBatch, BatchWait: DefaultModelBatchWait, Lazy: true, Line: 8},
		{Name: "guard", Kind: "bert-classifier", Path: filepath.Join(dir, "abs-model"), MaxBatch: 8, BatchWait: time.Millisecond, Line: 14},
	}
	if !reflect.DeepEqual(cfg.ModelSpecs, want) {
		t.Errorf("model specs\n got %+v\nwant %+v", cfg.ModelSpecs, want)
	}
	if cfg.Model("guard") == nil || cfg.Model("nope") != nil {
		t.Error("Config.Model lookup is wrong")
	}
}

func TestParseModelProblems(t *testing.T) {
	dir := t.TempDir()
	src := `
[models]
threads = 0

[[model]]
name = "Embed"
kind = "word2vec"
path = "missing"
batch_wait = "1s"
load = "later"

[[model]]
kind = "glove"

[[model]]
name = "dup"
kind = "glove"
path = "missing"

[[model]]
name = "dup"
kind = "glove"
path = "missing"
`
	_, err := Parse([]byte(src), filepath.Join(dir, "pipeline.toml"))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a ValidationError", err)
	}
	msg := ve.Error()
	for _, want := range []string{
		"models.threads: must be between 1 and 64",
		"model[0].name: must match [a-z0-9-]+",
		`model[0].kind: unknown kind "word2vec"`,
		"model[0].path: model directory not found",
		"run `make models`",
		"model[0].batch_wait: must be between 0s and 100ms",
		`model[0].load: must be "start" (load with the pipeline) or "lazy" (on first use), got "later"`,
		"model[1].name: required key is missing",
		"model[1].path: required key is missing",
		`model[3].name: duplicate model name "dup"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
}

func TestProviderRoutingKeys(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "build", "plugins"), 0o755)
	os.WriteFile(filepath.Join(dir, "build", "plugins", "p.wasm"), []byte("x"), 0o644)
	good := `
[[provider]]
name = "a"
plugin = "p.wasm"
base_url = "https://example.com/v1"
catalog_refresh = "2h"
catalog_shape = "openrouter"
subsystems = ["heartbeat_t0"]
traits = { private = true, payment = "x402" }
[[provider.model]]
id = "m-1"
quality = "high"
features = ["tool_use", "private"]
input_price = "0.5"
`
	cfg, err := Parse([]byte(good), filepath.Join(dir, "pipeline.toml"))
	if err != nil {
		t.Fatal(err)
	}
	pr := cfg.Providers[0]
	if pr.CatalogRefresh != 2*time.Hour || pr.CatalogShape != "openrouter" || !pr.Traits.Private || pr.Traits.Payment.String() != "x402" ||
		len(pr.Catalog) != 1 || pr.Catalog[0].ID != "m-1" || len(pr.Subsystems) != 1 {
		t.Fatalf("%+v", pr)
	}
	d := pr.Overlay(routing.ProviderDescription{}) // what a plugin without describe() is known by
	if d.ID != "a" || len(d.Models) != 1 || d.Models[0].InputPrice != 0.5 {
		t.Fatalf("description %+v", d)
	}
	bad := `
[[provider]]
name = "a"
plugin = "p.wasm"
catalog_refresh = "10s"
catalog_shape = "gopher"
subsystems = ["napping"]
traits = { payment = "barter", shiny = true }
[[provider.model]]
quality = "legendary"
features = ["teleport"]
`
	_, err = Parse([]byte(bad), filepath.Join(dir, "pipeline.toml"))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"catalog_refresh: must be at least 1m", "catalog_shape", `unknown subsystem "napping"`,
		`unknown payment mode "barter"`, "shiny", "teleport", "legendary"} {
		if !strings.Contains(ve.Error(), want) {
			t.Errorf("problems lack %q:\n%s", want, ve.Error())
		}
	}
}

// TestOverlay: an entry's traits keys, static catalog, globs and subsystems
// override a plugin's own description; what the entry leaves unsaid (other
// traits, policy, style, catalog URL) stays the plugin's.
func TestOverlay(t *testing.T) {
	workdir(t)
	cfg, err := Parse([]byte(`
[[provider]]
name = "vault"
plugin = "openai-compatible.wasm"
models = ["venice/*"]
subsystems = ["dream"]
traits = { payment = "diem" }
[[provider.model]]
id = "deepseek-r1"
quality = "high"
features = ["visible_thinking"]
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	pr := cfg.Providers[0]
	described := routing.ProviderDescription{
		ID:         "venice",
		Traits:     routing.Traits{Private: true, Payment: routing.PaymentAPIKey},
		Params:     routing.StyleVenice,
		CatalogURL: "/models?type=text",
		Models:     []routing.ModelInfo{{ID: "llama-3.3-70b"}},
		Policy:     routing.Policy{Serves: routing.Features(routing.Privacy), Subsystems: []string{"daimon"}},
	}
	d := pr.Overlay(described)
	if d.ID != "vault" || !d.Traits.Private || d.Traits.Payment != routing.PaymentDiem {
		t.Errorf("id/traits: %+v", d)
	}
	if d.Params != routing.StyleVenice || d.CatalogURL != "/models?type=text" || d.Policy.Serves != routing.Features(routing.Privacy) {
		t.Errorf("the plugin's style, catalog URL and policy must stay: %+v", d)
	}
	if len(d.Models) != 1 || d.Models[0].ID != "deepseek-r1" || len(d.ModelPatterns) != 1 || d.ModelPatterns[0] != "venice/*" {
		t.Errorf("models: %+v patterns %v", d.Models, d.ModelPatterns)
	}
	if len(d.Policy.Subsystems) != 1 || d.Policy.Subsystems[0] != "dream" {
		t.Errorf("subsystems: %v", d.Policy.Subsystems)
	}
	if len(described.Models) != 1 || described.Models[0].ID != "llama-3.3-70b" {
		t.Error("Overlay changed the plugin's description")
	}
	// An entry without those keys leaves the description alone.
	bare := Provider{PluginSpec: PluginSpec{Name: "venice"}}
	if d := bare.Overlay(described); d.Traits != described.Traits || len(d.Models) != 1 || d.Policy.Subsystems[0] != "daimon" {
		t.Errorf("bare entry: %+v", d)
	}
}

// TestInferenceProfiles: [inference.profiles.<subsystem>] overrides lay
// over the defaults; a locked profile's override loads with a warning and
// is ignored; unknown profiles and keys are errors with their line.
func TestInferenceProfiles(t *testing.T) {
	workdir(t)
	cfg, err := Parse([]byte(`
[inference.profiles.curator]
temperature = 0.05
reasoning_effort = "high"

[inference.profiles.risk]
temperature = 0.9
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	cur, ok := cfg.Profile("curator")
	def, _ := routing.DefaultProfile("curator")
	if !ok || cur.Temperature != 0.05 || cur.ReasoningEffort != routing.EffortHigh || cur.TopP != def.TopP {
		t.Errorf("curator: %+v", cur)
	}
	risk, _ := cfg.Profile("risk")
	if defRisk, _ := routing.DefaultProfile("risk"); risk.Temperature != defRisk.Temperature {
		t.Errorf("a locked profile took the override: %v", risk.Temperature)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "pipeline.toml:6: inference.profiles.risk") ||
		!strings.Contains(cfg.Warnings[0], "locked") {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	if p, ok := cfg.Profile("dream_rem"); !ok || p.Temperature != 0.9 {
		t.Errorf("an untouched profile: %+v %v", p, ok)
	}

	_, err = Parse([]byte(`
[inference.profiles.no_such]
temperature = 0.1

[inference.profiles.curator]
temprature = 0.1
`), "pipeline.toml")
	if err == nil || !strings.Contains(err.Error(), `pipeline.toml:2: inference.profiles.no_such: unknown inference profile "no_such"`) ||
		!strings.Contains(err.Error(), "pipeline.toml:5: inference.profiles.curator") {
		t.Errorf("errors: %v", err)
	}
}

// TestUpstreamIdleTimeout: the key sets the upstream pool's idle timeout.
func TestUpstreamIdleTimeout(t *testing.T) {
	cfg, err := Parse([]byte("[server]\nupstream_idle_timeout = \"5s\"\n"), "/x/pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.UpstreamIdleTimeout != 5*time.Second {
		t.Fatalf("upstream idle timeout %v, want 5s", cfg.Server.UpstreamIdleTimeout)
	}
}
