package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// checker turns the decoded TOML tree into a Config, collecting problems.
//
// The tree is decoded into plain maps rather than structs on purpose:
// BurntSushi/toml matches struct fields case-insensitively and stops at the
// first type mismatch, while every problem in the file should be reported,
// with the exact key as written.
type checker struct {
	file     string
	dir      string
	pos      map[string]int
	problems []Problem
	named    []named // valid entry names, for the duplicate check
}

type named struct{ name, key string }

func (c *checker) line(key string) int {
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := c.pos[k]; ok {
			return l
		}
	}
	return 0
}

func (c *checker) errf(key, format string, args ...any) {
	c.problems = append(c.problems, Problem{
		File: c.file,
		Line: c.line(key),
		Key:  key,
		Msg:  fmt.Sprintf(format, args...),
	})
}

var (
	serverKeys = []string{
		"listen", "max_body_bytes", "read_timeout", "write_timeout", "idle_timeout",
		"upstream_timeout", "upstream_idle_timeout", "plugin_dir", "cache_dir", "log_level",
		"memory_limit", "kv_max_bytes", "idle_release",
	}
	commonKeys   = []string{"name", "plugin", "entry", "timeout", "memory", "pool", "trusted", "enabled", "config"}
	layerKeys    = append([]string{"phases", "on_error"}, commonKeys...)
	providerKeys = append(append([]string{"base_url", "credential", "models", "failover"}, providerRoutingKeys...), commonKeys...)
	topKeys      = []string{"server", "layer", "provider", "models", "model", "inference", "storage", "auth", "billing", "x402", "telemetry"}
)

func (c *checker) config(tree map[string]any) *Config {
	cfg := &Config{}
	c.unknownKeys(tree, "", topKeys)

	srv := map[string]any{}
	if v, ok := tree["server"]; ok {
		if t, ok := v.(map[string]any); ok {
			srv = t
		} else {
			c.errf("server", "must be a table ([server]), got %s", tomlType(v))
		}
	}
	cfg.Server = c.server(srv)
	cfg.Storage = c.storage(tree)
	cfg.Auth = c.auth(tree)
	cfg.Billing = c.billing(tree)
	cfg.X402 = c.x402(tree, cfg.Auth)
	cfg.Telemetry = c.telemetry(tree)

	for i, t := range c.entries(tree, "layer") {
		cfg.Layers = append(cfg.Layers, c.layer(indexKey("layer", i), t, cfg.Server.PluginDir))
	}
	for i, t := range c.entries(tree, "provider") {
		cfg.Providers = append(cfg.Providers, c.provider(indexKey("provider", i), t, cfg.Server.PluginDir))
	}
	c.duplicates()

	mt := map[string]any{}
	if v, ok := tree["models"]; ok {
		if t, ok := v.(map[string]any); ok {
			mt = t
		} else {
			c.errf("models", "must be a table ([models]), got %s", tomlType(v))
		}
	}
	cfg.Models = c.models(mt)
	for i, t := range c.entries(tree, "model") {
		cfg.ModelSpecs = append(cfg.ModelSpecs, c.model(indexKey("model", i), t, cfg.Models.Dir))
	}
	c.modelDuplicates(cfg.ModelSpecs)
	if v, ok := tree["inference"]; ok {
		c.inference(v, cfg)
	}
	return cfg
}

// entries returns the tables of the array of tables tree[key]. Elements that
// are not tables are reported and replaced by empty tables so indexes stay
// aligned with the file.
func (c *checker) entries(tree map[string]any, key string) []map[string]any {
	v, ok := tree[key]
	if !ok {
		return nil
	}
	switch a := v.(type) {
	case []map[string]any:
		return a
	case []any:
		out := make([]map[string]any, len(a))
		for i, e := range a {
			t, ok := e.(map[string]any)
			if !ok {
				c.errf(indexKey(key, i), "must be a table, got %s", tomlType(e))
				t = nil
			}
			out[i] = t
		}
		return out
	}
	c.errf(key, "must be an array of tables ([[%s]]), got %s", key, tomlType(v))
	return nil
}

func (c *checker) server(t map[string]any) Server {
	const p = "server"
	c.unknownKeys(t, p, serverKeys)
	s := Server{
		Listen:          DefaultListen,
		MaxBodyBytes:    DefaultMaxBodyBytes,
		ReadTimeout:     DefaultReadTimeout,
		WriteTimeout:    DefaultWriteTimeout,
		IdleTimeout:     DefaultIdleTimeout,
		UpstreamTimeout: DefaultUpstreamTimeout,
		LogLevel:        DefaultLogLevel,

		UpstreamIdleTimeout: DefaultUpstreamIdleTimeout,
	}
	c.memory(t, &s)
	if v, ok := c.str(t, p, "listen"); ok {
		if err := CheckListen(v); err != nil {
			c.errf(joinKey(p, "listen"), "%v", err)
		} else {
			s.Listen = v
		}
	}
	if n, ok := c.size(t, p, "max_body_bytes"); ok {
		if n <= 0 {
			c.errf(joinKey(p, "max_body_bytes"), "must be greater than zero")
		} else {
			s.MaxBodyBytes = n
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"read_timeout", &s.ReadTimeout},
		{"write_timeout", &s.WriteTimeout},
		{"idle_timeout", &s.IdleTimeout},
		{"upstream_timeout", &s.UpstreamTimeout},
	} {
		if v, ok := c.duration(t, p, d.key); ok {
			if v < 0 {
				c.errf(joinKey(p, d.key), "must not be negative (use \"0s\" for no limit)")
			} else {
				*d.dst = v
			}
		}
	}
	if v, ok := c.duration(t, p, "upstream_idle_timeout"); ok {
		if v <= 0 {
			c.errf(joinKey(p, "upstream_idle_timeout"), "must be greater than zero")
		} else {
			s.UpstreamIdleTimeout = v
		}
	}
	pluginDir := DefaultPluginDir
	if v, ok := c.str(t, p, "plugin_dir"); ok {
		pluginDir = v
	}
	s.PluginDir = c.abs(pluginDir)
	cacheDir := DefaultCacheDir
	if v, ok := c.str(t, p, "cache_dir"); ok {
		cacheDir = v
	}
	if cacheDir != "" {
		s.CacheDir = c.abs(cacheDir)
	}
	if v, ok := c.str(t, p, "log_level"); ok {
		switch v {
		case "debug":
			s.LogLevel = slog.LevelDebug
		case "info":
			s.LogLevel = slog.LevelInfo
		case "warn":
			s.LogLevel = slog.LevelWarn
		case "error":
			s.LogLevel = slog.LevelError
		default:
			c.errf(joinKey(p, "log_level"), `must be "debug", "info", "warn" or "error", got %q`, v)
		}
	}
	return s
}

func (c *checker) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.dir, p)
}

// duplicates reports every entry whose name an earlier entry (in file order,
// layers and providers together) already uses.
func (c *checker) duplicates() {
	sort.SliceStable(c.named, func(i, j int) bool {
		return c.line(c.named[i].key) < c.line(c.named[j].key)
	})
	first := map[string]string{}
	for _, n := range c.named {
		if f, ok := first[n.name]; ok {
			c.errf(joinKey(n.key, "name"), "duplicate name %q (already used by %s on line %d)", n.name, f, c.line(f))
			continue
		}
		first[n.name] = n.key
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9-]+$`)

// common fills the keys shared by layers and providers.
func (c *checker) common(p string, t map[string]any, pluginDir string, defTimeout time.Duration) PluginSpec {
	s := PluginSpec{
		Timeout: defTimeout,
		Memory:  DefaultMemory,
		Pool:    DefaultPool(),
		Enabled: true,
		Config:  []byte("{}"),
		Line:    c.line(p),
	}
	if v, ok := c.str(t, p, "name"); ok {
		if !nameRE.MatchString(v) {
			c.errf(joinKey(p, "name"), "must match [a-z0-9-]+, got %q", v)
		} else {
			c.named = append(c.named, named{v, p})
		}
		s.Name = v
	} else if _, present := t["name"]; !present {
		c.errf(joinKey(p, "name"), "required key is missing")
	}

	plugin, hasPlugin := c.str(t, p, "plugin")
	if hasPlugin && plugin == "" {
		c.errf(joinKey(p, "plugin"), "must not be empty")
		hasPlugin = false
	} else if _, present := t["plugin"]; !present {
		c.errf(joinKey(p, "plugin"), "required key is missing")
	}
	if hasPlugin {
		if filepath.IsAbs(plugin) {
			s.Plugin = filepath.Clean(plugin)
		} else {
			s.Plugin = filepath.Join(pluginDir, plugin)
		}
	}

	if v, ok := c.str(t, p, "entry"); ok {
		if v == "" {
			c.errf(joinKey(p, "entry"), "must not be empty (leave it out for a module's only plugin)")
		} else {
			s.Entry = v
		}
	}

	if v, ok := c.duration(t, p, "timeout"); ok {
		if v <= 0 {
			c.errf(joinKey(p, "timeout"), "must be greater than zero")
		} else {
			s.Timeout = v
		}
	}
	if n, ok := c.size(t, p, "memory"); ok {
		switch {
		case n <= 0:
			c.errf(joinKey(p, "memory"), "must be greater than zero")
		case n > MaxMemory:
			c.errf(joinKey(p, "memory"), "must be at most 4GiB, got %s", FormatSize(n))
		case n%wasmPage != 0:
			c.errf(joinKey(p, "memory"), "must be a multiple of 64KiB (the WebAssembly page size), got %d bytes", n)
		default:
			s.Memory = n
		}
	}
	if n, ok := c.integer(t, p, "pool"); ok {
		if n < 1 || n > MaxPool {
			c.errf(joinKey(p, "pool"), "must be between 1 and %d, got %d", MaxPool, n)
		} else {
			s.Pool = int(n)
		}
	}
	if v, ok := c.boolean(t, p, "trusted"); ok {
		s.Trusted = v
	}
	if v, ok := c.boolean(t, p, "enabled"); ok {
		s.Enabled = v
	}
	if v, ok := t["config"]; ok {
		k := joinKey(p, "config")
		if m, ok := v.(map[string]any); ok {
			if js, err := json.Marshal(m); err != nil {
				c.errf(k, "cannot be encoded as JSON for the plugin: %v", err)
			} else {
				s.Config = js
			}
		} else {
			c.errf(k, "must be a table, got %s", tomlType(v))
		}
	}

	// A disabled entry may name a plugin that is not built.
	if hasPlugin && s.Enabled {
		if fi, err := os.Stat(s.Plugin); err != nil {
			if os.IsNotExist(err) {
				c.errf(joinKey(p, "plugin"), "file not found: %s", s.Plugin)
			} else {
				c.errf(joinKey(p, "plugin"), "%v", err)
			}
		} else if !fi.Mode().IsRegular() {
			c.errf(joinKey(p, "plugin"), "not a regular file: %s", s.Plugin)
		}
	}
	return s
}

func (c *checker) layer(p string, t map[string]any, pluginDir string) Layer {
	if t == nil {
		return Layer{}
	}
	c.unknownKeys(t, p, layerKeys)
	l := Layer{
		PluginSpec: c.common(p, t, pluginDir, DefaultLayerTimeout),
		Phases:     PhaseAll,
		OnError:    FailClosed,
	}
	var ph Phase
	if n, ok := c.strings(t, p, "phases", func(k string, _ int, s string) {
		if v, ok := ParsePhase(s); ok {
			ph |= v
		} else {
			c.errf(k, `unknown phase %q: must be "request", "response" or "stream"`, s)
		}
	}); ok {
		if n == 0 {
			c.errf(joinKey(p, "phases"), "must list at least one phase (leave the key out for all three, or set enabled = false)")
		} else if ph != 0 {
			l.Phases = ph
		}
	}
	if v, ok := c.str(t, p, "on_error"); ok {
		switch v {
		case "fail-open":
			l.OnError = FailOpen
		case "fail-closed":
			l.OnError = FailClosed
		default:
			c.errf(joinKey(p, "on_error"), `must be "fail-open" or "fail-closed", got %q`, v)
		}
	}
	return l
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *checker) provider(p string, t map[string]any, pluginDir string) Provider {
	if t == nil {
		return Provider{}
	}
	c.unknownKeys(t, p, providerKeys)
	pr := Provider{PluginSpec: c.common(p, t, pluginDir, DefaultProviderTimeout)}
	if v, ok := c.str(t, p, "base_url"); ok {
		k := joinKey(p, "base_url")
		u, err := url.Parse(v)
		switch {
		case err != nil:
			c.errf(k, "invalid URL: %v", err)
		case u.Scheme != "http" && u.Scheme != "https":
			c.errf(k, "must be an http:// or https:// URL, got %q", v)
		case u.Host == "":
			c.errf(k, "URL has no host: %q", v)
		default:
			pr.BaseURL = v
		}
	}
	pr.Failover = true
	if v, ok := c.boolean(t, p, "failover"); ok {
		pr.Failover = v
	}
	if v, ok := c.str(t, p, "credential"); ok {
		if ref, err := normalizeCredential(v, c.dir); err != nil {
			c.errf(joinKey(p, "credential"), "%v", err)
		} else {
			pr.Credential = ref
		}
	}
	c.strings(t, p, "models", func(k string, _ int, m string) {
		if m == "" {
			c.errf(k, "must not be empty")
			return
		}
		if _, err := path.Match(m, ""); err != nil {
			c.errf(k, "invalid glob %q: %v", m, err)
			return
		}
		pr.Models = append(pr.Models, m)
	})
	c.providerRouting(p, t, &pr)
	return pr
}

// normalizeCredential checks a credential reference and makes file: paths
// absolute (relative to dir). The value is never echoed in errors: it may be
// a secret pasted by mistake.
func normalizeCredential(ref, dir string) (string, error) {
	switch {
	case ref == "":
		return "", nil
	case strings.HasPrefix(ref, "env:"):
		name := ref[len("env:"):]
		if !envNameRE.MatchString(name) {
			return "", fmt.Errorf("%q is not a valid environment variable name (want [A-Za-z_][A-Za-z0-9_]*)", name)
		}
		return ref, nil
	case strings.HasPrefix(ref, "file:"):
		p := ref[len("file:"):]
		if p == "" {
			return "", fmt.Errorf(`"file:" needs a path`)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return "file:" + filepath.Clean(p), nil
	}
	return "", errLiteralCredential
}

var errLiteralCredential = fmt.Errorf(`must be a reference "env:NAME" or "file:PATH"; ` +
	`literal secrets are refused so they never live in pipeline.toml (value not shown)`)

// unknownKeys reports every key of t not in allowed, in sorted order.
func (c *checker) unknownKeys(t map[string]any, p string, allowed []string) {
	var unknown []string
	for k := range t {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		msg := "unknown key"
		if s := suggest(k, allowed); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		c.errf(joinKey(p, k), "%s", msg)
	}
}

// suggest returns the allowed key closest to k, if it is close enough to be
// a likely typo.
func suggest(k string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if d := editDistance(strings.ToLower(k), a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case time.Time:
		return "datetime"
	case map[string]any:
		return "table"
	case []any, []map[string]any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// str returns t[key] if it is present and a string; a value of another type
// is reported.
func (c *checker) str(t map[string]any, p, key string) (string, bool) {
	v, ok := t[key]
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.errf(joinKey(p, key), "must be a string, got %s", tomlType(v))
	}
	return s, ok
}

func (c *checker) boolean(t map[string]any, p, key string) (bool, bool) {
	v, ok := t[key]
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		c.errf(joinKey(p, key), "must be true or false, got %s", tomlType(v))
	}
	return b, ok
}

func (c *checker) integer(t map[string]any, p, key string) (int64, bool) {
	v, ok := t[key]
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	if !ok {
		c.errf(joinKey(p, key), "must be an integer, got %s", tomlType(v))
	}
	return n, ok
}

func (c *checker) duration(t map[string]any, p, key string) (time.Duration, bool) {
	v, ok := t[key]
	if !ok {
		return 0, false
	}
	k := joinKey(p, key)
	s, ok := v.(string)
	if !ok {
		c.errf(k, `must be a duration string such as "50ms", "30s" or "2m", got %s`, tomlType(v))
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.errf(k, `invalid duration %q (want a number with a unit such as "50ms", "30s" or "2m")`, s)
		return 0, false
	}
	return d, true
}

func (c *checker) size(t map[string]any, p, key string) (int64, bool) {
	v, ok := t[key]
	if !ok {
		return 0, false
	}
	k := joinKey(p, key)
	switch x := v.(type) {
	case int64:
		if x < 0 {
			c.errf(k, "must not be negative, got %d", x)
			return 0, false
		}
		return x, true
	case string:
		n, err := ParseSize(x)
		if err != nil {
			c.errf(k, "%v", err)
			return 0, false
		}
		return n, true
	}
	c.errf(k, `must be a size such as "64MiB" or an integer number of bytes, got %s`, tomlType(v))
	return 0, false
}

// strings calls each, in order, for every string element of the array
// t[key]; elements of other types are reported and skipped. It returns the
// array's length and whether t[key] is present and an array.
func (c *checker) strings(t map[string]any, p, key string, each func(k string, i int, s string)) (int, bool) {
	v, ok := t[key]
	if !ok {
		return 0, false
	}
	k := joinKey(p, key)
	a, ok := v.([]any)
	if !ok {
		c.errf(k, "must be an array of strings, got %s", tomlType(v))
		return 0, false
	}
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			c.errf(indexKey(k, i), "must be a string, got %s", tomlType(e))
			continue
		}
		each(indexKey(k, i), i, s)
	}
	return len(a), true
}

// CheckListen reports whether addr is a usable listen address "host:port"
// (host may be empty for all interfaces; port is a number 0..65535).
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q: want host:port such as \"127.0.0.1:8080\" or \":8080\"", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > math.MaxUint16 {
		return fmt.Errorf("invalid listen address %q: port must be a number from 0 to 65535", addr)
	}
	return nil
}
