package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/models/registry"
	"github.com/bardoinference/bardo/host/plugincheck"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/vectorindex"
)

const pluginsUsage = `usage:
  bardo plugins new layer|provider NAME [-dir DIR] [-sdk DIR] [-gomod=false]
      scaffold a plugin folder (README.md, main.go, main_test.go, go.mod) in DIR/NAME
      (default ./NAME); go.mod requires the sdk module and replaces it with -sdk
      (default: found above the current directory); -gomod=false for a folder
      inside a module that has the sdk already (plugins/layers/ in this repository)
  bardo plugins test PATH.wasm [-config k=v]... [-probe TEXT]... [-entry NAME]
                     [-calls N] [-timeout D] [-memory BYTES] [-max-p50 D] [-pipeline FILE]
      load the plugin the way the gateway does and check its contract; prints a
      report and exits 1 when a check fails
`

// pluginsCmd is `bardo plugins …`: the conformance kit (host/plugincheck).
// It returns errFailed when a plugin failed its checks (exit status 1
// without a second message).
func pluginsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginsUsage)
		return errors.New("plugins: a subcommand is required")
	}
	switch args[0] {
	case "new":
		return pluginsNew(args[1:], stdout, stderr)
	case "test":
		return pluginsTest(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, pluginsUsage)
		return nil
	}
	fmt.Fprint(stderr, pluginsUsage)
	return fmt.Errorf("plugins: unknown subcommand %q", args[0])
}

// errFailed: the report said it all.
var errFailed = errors.New("plugin failed its checks")

// parseInterleaved parses flags that may come before or after the
// positional arguments (flag.FlagSet stops at the first of those).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// configFlag builds the plugin's config object from k=v pairs; a value that
// is valid JSON (a number, true, an array) is taken as JSON, anything else
// as a string. -config '{"a":1}' sets the whole object.
type configFlag map[string]json.RawMessage

func (c configFlag) String() string {
	b, _ := json.Marshal(map[string]json.RawMessage(c))
	return string(b)
}

func (c configFlag) Set(v string) error {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			return fmt.Errorf("config object: %w", err)
		}
		for k, x := range obj {
			c[k] = x
		}
		return nil
	}
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	if json.Valid([]byte(val)) && val != "" {
		c[k] = json.RawMessage(val)
	} else {
		b, _ := json.Marshal(val)
		c[k] = b
	}
	return nil
}

func pluginsTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := configFlag{}
	var probes listFlag
	fs.Var(cfg, "config", "a config member as key=value (repeatable), or a JSON object")
	entry := fs.String("entry", "", "check only this plugin of a bundle module (default: every one)")
	fs.Var(&probes, "probe", "also send a request whose last user message is `TEXT` (repeatable)")
	calls := fs.Int("calls", 10_000, "calls of the memory and time checks")
	timeout := fs.Duration("timeout", time.Second, "per call; the plugin runs untrusted and is interrupted at it")
	memory := fs.Int64("memory", 64<<20, "linear memory cap per instance, bytes")
	maxP50 := fs.Duration("max-p50", 0, "fail when the time per call (p50) is over this (0: report only)")
	pipeline := fs.String("pipeline", "", "take the plugin's config from this pipeline.toml's entry, and serve its [[model]]s (embed, classify, vectors)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, pluginsUsage)
		return errors.New("plugins test: one .wasm file is required")
	}
	opts := plugincheck.Options{Path: pos[0], Entry: *entry, Probes: probes, Calls: *calls, Timeout: *timeout, MemoryLimit: *memory}
	if len(cfg) > 0 {
		opts.Config, _ = json.Marshal(map[string]json.RawMessage(cfg))
	}
	if *pipeline != "" {
		cfg, err := config.Load(*pipeline)
		if err != nil {
			return err
		}
		svc, closeFn, err := pipelineServices(*pipeline, cfg)
		if err != nil {
			return err
		}
		defer closeFn()
		opts.Services = svc
		opts.Configs = pipelineConfigs(cfg)
	}
	reports := plugincheck.Run(ctx, opts)
	for i, rep := range reports {
		if *maxP50 > 0 && rep.P50 > *maxP50 {
			rep.Checks = append(rep.Checks, plugincheck.Check{Name: "max-p50",
				Detail: fmt.Sprintf("p50 %s is over %s", rep.P50.Round(time.Microsecond), *maxP50)})
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		rep.Write(stdout)
	}
	if !plugincheck.AllOK(reports) {
		return errFailed
	}
	return nil
}

// pipelineServices loads the local models a pipeline.toml declares, as the
// daemon does, so layers that embed or classify can be checked with them.
func pipelineServices(path string, cfg *config.Config) (sandbox.Services, func(), error) {
	reg := registry.New(nil)
	if err := reg.Sync(cfg.Models, cfg.ModelSpecs); err != nil {
		reg.Close()
		return sandbox.Services{}, nil, fmt.Errorf("models of %s: %w", path, err)
	}
	vs := vectorindex.NewSpaces(vectorindex.SpacesConfig{MaxEntries: cfg.Models.IndexMaxEntries})
	return sandbox.Services{Models: reg, Vectors: vs}, func() { vs.Close(); reg.Close() }, nil
}

// pipelineConfigs are the config tables of a pipeline's entries by plugin
// name: a bundle entry's name, else the module's file name (the first
// entry wins when several use one plugin).
func pipelineConfigs(cfg *config.Config) map[string][]byte {
	out := map[string][]byte{}
	add := func(s config.PluginSpec) {
		name := s.Entry
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(s.Plugin), ".wasm")
		}
		if _, ok := out[name]; !ok {
			out[name] = s.Config
		}
	}
	for _, l := range cfg.Layers {
		add(l.PluginSpec)
	}
	for _, p := range cfg.Providers {
		add(p.PluginSpec)
	}
	return out
}

func pluginsNew(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "the folder to create the plugin's folder in")
	sdk := fs.String("sdk", "", "the sdk module's folder (default: found above the current directory)")
	gomod := fs.Bool("gomod", true, "write a go.mod (false: the folder is inside a module that requires the sdk, e.g. plugins/layers/ here)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fmt.Fprint(stderr, pluginsUsage)
		return errors.New("plugins new: want a kind (layer or provider) and a name")
	}
	sdkDir := *sdk
	if sdkDir == "" && *gomod {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if sdkDir, err = plugincheck.FindSDK(wd); err != nil {
			return fmt.Errorf("plugins new: %w (give it with -sdk)", err)
		}
	}
	out, err := plugincheck.Scaffold(plugincheck.ScaffoldOptions{Kind: pos[0], Name: pos[1], Dir: *dir, SDK: sdkDir, NoGoMod: !*gomod})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created %s\nnext:\n  cd %s && go test ./... && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o %s.wasm .\n  bardo plugins test %s/%s.wasm\n",
		out, out, pos[1], out, pos[1])
	return nil
}
