// Command bardo is the Bardo Inference gateway.
//
//	bardo [serve] [--config FILE]
//	                     run the gateway (FILE, else $BARDO_CONFIG, else ./pipeline.toml)
//	bardo check [FILE]   validate a pipeline.toml and load its plugins, then exit
//	bardo accounts …     manage accounts and their ledger (accounts.go)
//	bardo keys …         manage API keys (accounts.go)
//	bardo usage …        list an account's usage records or daily sums (usage.go)
//	bardo plugins …      scaffold a plugin or check its contract (plugins.go)
//	bardo version        print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/daemon"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	cmd := "serve"
	args := os.Args[1:]
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "check":
		err = check(args)
	case "models":
		err = models(args)
	case "accounts":
		err = accountsCmd(context.Background(), args, os.Stdout, os.Stderr)
	case "keys":
		err = keysCmd(context.Background(), args, os.Stdout, os.Stderr)
	case "usage":
		err = usageCmd(context.Background(), args, os.Stdout, os.Stderr)
	case "plugins":
		err = pluginsCmd(context.Background(), args, os.Stdout, os.Stderr)
	case "version", "-v", "--version":
		fmt.Println("bardo", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "bardo: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bardo:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  bardo [serve] [--config FILE]
                       run the gateway (config: FILE, else $BARDO_CONFIG, else
                       ./pipeline.toml; listen address: [server].listen,
                       overridden by $BARDO_LISTEN)
  bardo check [FILE]   validate a pipeline.toml and load its plugins, then exit
  bardo models …       build the offline models, fetch production ones (bardo models)
  bardo accounts …     create, list, show, top up, adjust accounts; budgets (bardo accounts)
  bardo keys …         create, list, show, revoke API keys; rate limits, budgets (bardo keys)
  bardo usage …        an account's usage records, a page at a time, or daily sums
  bardo plugins …      scaffold a plugin, or check one's contract (bardo plugins)
  bardo version        print the version
`

func start(ctx context.Context, path string) (*daemon.Daemon, error) {
	// The log level is read from the config before anything is built, so
	// plugin and model load messages already use it.
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Server.LogLevel)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	var cache wazero.CompilationCache
	if dir := cfg.Server.CacheDir; dir != "" {
		if cache, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", dir, err)
		}
	}
	return daemon.New(ctx, path, daemon.Options{
		Log:   log,
		Cache: cache,
		// POST /admin/cache/flush and /admin/regime, only when a token is set.
		AdminToken: os.Getenv("BARDO_ADMIN_TOKEN"),
		// The wallet that pays x402 upstreams (BlockRun), when set.
		WalletKey: "env:BARDO_WALLET_KEY",
	})
}

// errUsage is a command line serve could not read; main exits 2 on it, as
// for an unknown command, after the flag package has said why.
var errUsage = errors.New("bad command line")

// serveFlags reads serve's command line: the config file, from --config
// or a single FILE argument (as check takes it), else the environment's.
// help is true when -h/--help asked only for the usage.
func serveFlags(args []string, stderr io.Writer) (path string, help bool, err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("config", "", "the pipeline.toml to serve (default $BARDO_CONFIG, else ./pipeline.toml)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: bardo serve [--config FILE]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", true, nil
		}
		return "", false, errUsage
	}
	path = *file
	switch {
	case fs.NArg() > 1, fs.NArg() == 1 && path != "":
		fmt.Fprintf(stderr, "bardo serve: one config file, not %q\n", fs.Args())
		fs.Usage()
		return "", false, errUsage
	case fs.NArg() == 1:
		path = fs.Arg(0)
	case path == "":
		path = config.DefaultPath(os.Getenv)
	}
	return path, false, nil
}

func serve(args []string) error {
	path, help, err := serveFlags(args, os.Stderr)
	if err != nil || help {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	d, err := start(ctx, path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Listen(""); err != nil {
		return err
	}
	d.Manager.Watch(ctx, 0)

	errc := make(chan error, 1)
	go func() { errc <- d.Serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	d.Log.Info("shutting down; waiting for open requests")
	return d.Shutdown(30 * time.Second)
}

func check(args []string) error {
	path := config.DefaultPath(os.Getenv)
	if len(args) > 0 {
		path = args[0]
	}
	d, err := start(context.Background(), path)
	if err != nil {
		var ve *config.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s is invalid:\n%w", path, err)
		}
		return err
	}
	defer d.Close()
	// Lazy models load on first use when serving; a check loads them all.
	if err := d.Models.LoadAll(); err != nil {
		return err
	}
	p := d.Manager.Peek()
	for _, w := range p.Config.Warnings {
		fmt.Fprintln(os.Stderr, "warning: "+w)
	}
	fmt.Printf("%s: ok — %d layers, %d models, providers %v\n", path, len(p.Layers), len(p.Config.ModelSpecs), p.EnabledProviders())
	return nil
}
