// Package daemon assembles a running gateway from a pipeline.toml: the
// plugins' key/value store, metrics, the compilation cache, the local models
// and the vector index, the pipeline manager, the gateway and its HTTP
// server. The bardo binary and the test gateway both start through it, so
// what tests run is what operators run.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/billing"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/models/registry"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/server"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/host/vectorindex"
	"github.com/bardoinference/bardo/host/x402"
)

// Options tune New. The zero value serves pipeline.toml as the binary does.
type Options struct {
	Log      *slog.Logger
	Cache    wazero.CompilationCache // nil: the [server] cache_dir's, or none
	Getenv   func(string) string     // credential lookup; nil: os.Getenv
	KVBytes  int64                   // the in-memory kv store's size; 0: [server] kv_max_bytes
	Upstream time.Duration           // upstream timeout; 0: [server] upstream_timeout
	// Heartbeat is the stream heartbeat interval (0: the gateway's default).
	Heartbeat time.Duration
	// AdminToken enables /admin/* ("" leaves them off).
	AdminToken string
	// WalletKey references the gateway's own wallet key ("env:NAME" or
	// "file:PATH"), which pays x402 upstreams; "" or an unset reference
	// leaves the gateway without a wallet.
	WalletKey string
	// PaymentPolicy bounds what the wallet pays (nil: x402.DefaultPolicy:
	// USDC on Base, at most 0.50 a request and 20 a day).
	PaymentPolicy *x402.Policy
	// Liveness tunes the /healthz canaries (zero: the server's defaults).
	Liveness server.LivenessConfig
	// Admitter identifies callers before any layer (gateway.Admitter);
	// nil: every caller is the anonymous tenant.
	Admitter gateway.Admitter
}

// Daemon is an assembled gateway, not yet listening.
type Daemon struct {
	Log     *slog.Logger
	Metrics *telemetry.Registry
	KV      *kvstore.Memory
	Models  *registry.Registry
	Health  *health.Tracker
	Events  *eventlog.Log
	Vectors *vectorindex.Spaces
	Manager *pipeline.Manager
	Gateway *gateway.Gateway
	Server  *server.Server
	// Live runs the canaries behind /healthz (LivenessChecks).
	Live *server.Liveness
	// Store is the [storage] SQLite store (keys, ledger, usage, stored
	// responses); nil until something needs it.
	Store *sqlite.Store
	// Meter bills admitted callers in keys mode (nil in open mode).
	Meter    *billing.Meter
	idle     *idleRelease // nil: [server] idle_release = "0s"
	began    time.Time
	closeAll []func()
	getenv   func(string) string // Options.Getenv (nil: os.Getenv), for [x402] settlement_key
}

// New loads path and builds everything (see the package doc). On an error
// whatever was built is closed.
func New(ctx context.Context, path string, opts Options) (_ *Daemon, err error) {
	d := &Daemon{Log: opts.Log, Metrics: telemetry.New(), began: time.Now(), getenv: opts.Getenv}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	// The kv store is sized once the configuration is read (below); the
	// plugins loading meanwhile may already write to it.
	d.KV = kvstore.NewMemory(config.DefaultKVMaxBytes)
	if err := d.Metrics.Register(d.KV.Collector()); err != nil {
		return nil, err
	}
	d.Models = registry.New(d.Log)
	d.closeAll = append(d.closeAll, d.Models.Close)

	// The gateway serves the plugins' internal completions, so it exists
	// before the pipeline; it gets the pipeline once that is built.
	d.Health, err = health.New(health.Config{OnChange: func(e health.Event) {
		d.Log.Warn("provider health changed", "provider", e.Backend, "from", e.From.String(), "to", e.To.String(), "reason", e.Reason)
		d.Metrics.Add("bardo_provider_health_changes_total", 1, "provider", e.Backend, "to", e.To.String())
	}})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d.Events = eventlog.New(0, d.Log.With("component", "events"))
	d.Gateway = &gateway.Gateway{Log: d.Log, Heartbeat: opts.Heartbeat, Health: d.Health, Events: d.Events, Admitter: opts.Admitter,
		Embedder: d.Models}
	d.Gateway.SetObserver(settlementMetrics{d.Metrics})
	if d.Gateway.Payer, err = payer(opts); err != nil {
		return nil, err
	}
	d.Vectors = vectorindex.NewSpaces(vectorindex.SpacesConfig{})
	d.closeAll = append(d.closeAll, d.Vectors.Close)
	cats := newCatalogs(d.Log, d.Metrics)
	d.closeAll = append(d.closeAll, cats.close)
	pings := newProbes(d.Health)
	d.closeAll = append(d.closeAll, pings.close)

	d.Manager, err = pipeline.NewManager(ctx, path, pipeline.Deps{
		Log:      d.Log,
		Cache:    opts.Cache,
		KV:       d.KV,
		Metrics:  d.Metrics,
		Models:   d.Models,
		Catalogs: cats,
		Watchers: []pipeline.ProviderWatcher{pings},
		Services: sandbox.Services{
			Models:    d.Models,
			Vectors:   d.Vectors,
			Completer: d.Gateway,
		},
		Getenv: opts.Getenv,
	})
	if err != nil {
		return nil, err
	}
	d.closeAll = append(d.closeAll, d.Manager.Close)
	cfg := d.Manager.Peek().Config
	d.Vectors.SetMaxEntries(cfg.Models.IndexMaxEntries)
	d.Vectors.SetMaxSpaces(cfg.Models.IndexMaxSpaces)
	d.boundMemory(cfg, opts)
	var keyAuth *auth.Authenticator
	if d.Gateway.Admitter == nil && cfg.Auth.Mode == config.AuthKeys {
		k, a, err := d.openKeys(ctx, cfg)
		if err != nil {
			return nil, err
		}
		d.Gateway.Admitter, keyAuth = k, a
		d.Gateway.Accounts = d.Meter
		if k.Identity != nil {
			d.Gateway.Identity = k.Identity
		}
		// What each active account can still spend, read at scrape time.
		if err := d.Metrics.Register(d.Meter.Collector()); err != nil {
			return nil, err
		}
	}
	if err := d.openResponses(ctx, cfg.Storage); err != nil {
		return nil, err
	}
	if err := d.openTracing(cfg.Telemetry, opts.Getenv); err != nil {
		return nil, err
	}

	timeout := opts.Upstream
	if timeout <= 0 {
		timeout = cfg.Server.UpstreamTimeout
	}
	d.Gateway.Pipelines = d.Manager
	d.Gateway.Upstream = upstream.NewClient(upstream.Config{Timeout: timeout, IdleTimeout: cfg.Server.UpstreamIdleTimeout})
	d.Gateway.Timeout = timeout
	d.Server = server.New(cfg.Server, d.Gateway, d.Metrics, d.Log)
	d.Server.Admin = &server.Admin{Token: opts.AdminToken, KV: d.KV, Vectors: d.Vectors, Health: d.Health, Events: d.Events}
	if d.Store != nil && keyAuth != nil {
		d.Server.Admin.Accounts, d.Server.Admin.KeyAuth = d.Store, keyAuth
		d.Server.Admin.Live, d.Server.Admin.OnAccountChange = d.Meter, d.Meter.Invalidate
	}
	if db := d.dashboard(opts.AdminToken); db != nil {
		d.Server.Dashboard = db
	}
	d.Live = server.NewLiveness(LivenessChecks(d), opts.Liveness)
	d.Server.SetLiveness(d.Live)
	d.Live.Start()
	d.closeAll = append(d.closeAll, d.Live.Close)
	if after := cfg.Server.IdleRelease; after > 0 {
		idle := newIdleRelease(after, d.Manager, d.Metrics)
		d.idle = idle
		d.Gateway.SetObserver(observers{settlementMetrics{d.Metrics}, idle})
		d.Manager.Reloaded = func(err error) {
			if err == nil {
				d.boundMemory(d.Manager.Peek().Config, opts)
				idle.loaded()
			}
		}
		idle.start()
		d.closeAll = append(d.closeAll, idle.close)
	} else {
		d.Manager.Reloaded = func(err error) {
			if err == nil {
				d.boundMemory(d.Manager.Peek().Config, opts)
			}
		}
	}
	return d, nil
}

// payer loads the wallet, if one is configured, and its policy.
func payer(opts Options) (*x402.Payer, error) {
	if opts.WalletKey == "" {
		return nil, nil
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	signer, err := x402.LoadKeySigner(opts.WalletKey, getenv)
	if errors.Is(err, x402.ErrNoKey) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	pol := x402.DefaultPolicy()
	if opts.PaymentPolicy != nil {
		pol = *opts.PaymentPolicy
	}
	p, err := x402.NewPayer(signer, pol)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return p, nil
}

// Listen binds addr, or the [server] listen address when addr is "".
// Without an Admitter (open mode) it refuses an address that is not
// loopback (ErrOpenNotLoopback).
func (d *Daemon) Listen(addr string) error {
	if addr == "" {
		addr = d.Manager.Peek().Config.Server.Listen
	}
	if err := d.checkOpen(addr); err != nil {
		return err
	}
	if err := d.Server.Listen(addr); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

// Serve serves until Shutdown; it logs the address and the startup time.
func (d *Daemon) Serve() error {
	d.Log.Info("bardo listening", "addr", "http://"+d.Server.Addr(), "startup", time.Since(d.began).Round(time.Millisecond))
	return d.Server.Serve()
}

// Shutdown stops the server, waiting up to timeout for open requests.
func (d *Daemon) Shutdown(timeout time.Duration) error { return d.Server.Shutdown(timeout) }

// Close releases the pipeline, the models and the index (after Shutdown).
func (d *Daemon) Close() {
	for i := len(d.closeAll) - 1; i >= 0; i-- {
		d.closeAll[i]()
	}
	d.closeAll = nil
}
