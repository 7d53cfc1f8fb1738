// Command bardo is the Bardo Inference gateway.
//
//	bardo [serve]        run the gateway (reads ./pipeline.toml or $BARDO_CONFIG)
//	bardo check [FILE]   validate a pipeline.toml and load its plugins, then exit
//	bardo version        print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/server"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/upstream"
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
		err = serve()
	case "check":
		err = check(args)
	case "version", "-v", "--version":
		fmt.Println("bardo", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "bardo: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bardo:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  bardo [serve]        run the gateway (config: $BARDO_CONFIG or ./pipeline.toml;
                       listen address: [server].listen, overridden by $BARDO_LISTEN)
  bardo check [FILE]   validate a pipeline.toml and load its plugins, then exit
  bardo version        print the version
`

// runtime bundles what serve and check share.
type runtime struct {
	log     *slog.Logger
	metrics *telemetry.Registry
	cache   wazero.CompilationCache
	mgr     *pipeline.Manager
	kv      *kvstore.Memory
}

func start(ctx context.Context, path string) (*runtime, error) {
	// The log level is known only after the config is read; read it first
	// without building plugins so plugin load messages use it.
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Server.LogLevel)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	rt := &runtime{log: log, metrics: telemetry.New(), kv: kvstore.NewMemory(64 << 20)}
	if dir := cfg.Server.CacheDir; dir != "" {
		if rt.cache, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", dir, err)
		}
	}
	rt.mgr, err = pipeline.NewManager(ctx, path, pipeline.Deps{
		Log:     log,
		Cache:   rt.cache,
		KV:      rt.kv,
		Metrics: rt.metrics,
	})
	if err != nil {
		return nil, err
	}
	return rt, nil
}

func serve() error {
	began := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rt, err := start(ctx, config.DefaultPath(os.Getenv))
	if err != nil {
		return err
	}
	defer rt.mgr.Close()
	cfg := rt.mgr.Peek().Config

	gw := &gateway.Gateway{
		Pipelines: rt.mgr,
		Upstream:  upstream.New(cfg.Server.UpstreamTimeout),
		Log:       rt.log,
		Timeout:   cfg.Server.UpstreamTimeout,
	}
	srv := server.New(cfg.Server, gw, rt.metrics, rt.log)
	// POST /admin/cache/flush, only when an admin token is set.
	srv.Admin = &server.Admin{Token: os.Getenv("BARDO_ADMIN_TOKEN"), KV: rt.kv}
	if err := srv.Listen(cfg.Server.Listen); err != nil {
		return err
	}
	rt.mgr.Watch(ctx, 0)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	rt.log.Info("bardo listening", "addr", "http://"+srv.Addr(), "version", version,
		"startup", time.Since(began).Round(time.Millisecond))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	rt.log.Info("shutting down; waiting for open requests")
	if err := srv.Shutdown(30 * time.Second); err != nil {
		return err
	}
	return nil
}

func check(args []string) error {
	path := config.DefaultPath(os.Getenv)
	if len(args) > 0 {
		path = args[0]
	}
	rt, err := start(context.Background(), path)
	if err != nil {
		var ve *config.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s is invalid:\n%w", path, err)
		}
		return err
	}
	p := rt.mgr.Peek()
	fmt.Printf("%s: ok — %d layers, providers %v\n", path, len(p.Layers), p.EnabledProviders())
	p.Close()
	return nil
}
