package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/auth/admit"
	"github.com/bardoinference/bardo/host/billing"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/ethereum/go-ethereum/common"
)

// ErrOpenNotLoopback refuses to serve unauthenticated callers on an
// address other machines can reach.
var ErrOpenNotLoopback = errors.New(`daemon: refusing to serve without API keys on a non-loopback address: set [auth] mode = "keys" (and create a key with bardo keys create), or listen on 127.0.0.1`)

// openStore opens the [storage] SQLite store once, for everything the
// daemon keeps in it (keys, the ledger, stored responses): one handle, so
// one writer pool, per process.
func (d *Daemon) openStore(ctx context.Context, st config.Storage) (*sqlite.Store, error) {
	if d.Store != nil {
		return d.Store, nil
	}
	if err := os.MkdirAll(st.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: [storage] data_dir: %w", err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(st.DataDir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d.closeAll = append(d.closeAll, func() { s.Close() })
	d.Store = s
	return s, nil
}

// openKeys returns the admitter that checks every request's bardo_sk_ key
// against the store, then meters it: limits, budgets, the reservation, and
// the tab its settlement closes ([auth] mode = "keys"). It also gives the
// caller's account endpoints and the admin API their stores.
func (d *Daemon) openKeys(ctx context.Context, cfg *config.Config) (*admit.Keys, *auth.Authenticator, error) {
	s, err := d.openStore(ctx, cfg.Storage)
	if err != nil {
		return nil, nil, err
	}
	secret, err := auth.LoadSecret(cfg.Storage.DataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}
	bc := billing.FromConfig(cfg.Billing, s)
	bc.Log = d.Log.With("component", "billing")
	if cfg.Billing.JournalOn() {
		bc.JournalDir = cfg.Storage.DataDir // replayed by billing.New, before serving
	}
	m, err := billing.New(bc)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}
	// Registered after the store's close, so it runs before it: the
	// meter commits what is queued while the store is still open.
	d.closeAll = append(d.closeAll, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			d.Log.Error("closing the billing meter", "err", err)
		}
	})
	d.Meter = m
	a := auth.New(s, secret, auth.Options{Accounts: s})
	k := &admit.Keys{Auth: a, Meter: m, Log: d.Log.With("component", "auth")}
	if cfg.Auth.Privy != nil {
		pv, err := d.openPrivy(cfg.Auth.Privy, s)
		if err != nil {
			return nil, nil, err
		}
		k.Privy = pv
	}
	if cfg.Auth.Identity != nil {
		svc, err := d.openIdentity(ctx, cfg.Auth.Identity, s)
		if err != nil {
			return nil, nil, err
		}
		k.Identity = svc
	}
	if cfg.X402.Enabled {
		pw, err := d.openPaywall(ctx, cfg.X402, s)
		if err != nil {
			return nil, nil, err
		}
		k.Payments = pw
	}
	return k, a, nil
}

// openPaywall accepts x402 payments ([x402] enabled): the paywall, and a
// loop that retries owed settlements and forgets expired nonces until the
// daemon closes.
func (d *Daemon) openPaywall(ctx context.Context, xc config.X402, s *sqlite.Store) (*paywall.Paywall, error) {
	tok := x402.USDCBase
	if xc.Network == x402.NetworkBaseSepolia {
		tok = x402.USDCBaseSepolia
	}
	pc := paywall.Config{PayTo: common.HexToAddress(xc.PayTo), Token: tok, MaxTimeout: xc.MaxTimeout, MinAmount: xc.MinAmount,
		RequestsPerMinute: xc.RequestsPerMinute, ResourceBase: xc.ResourceBase,
		DayBudget: xc.WalletDayBudget, MonthBudget: xc.WalletMonthBudget, Budgets: s,
		Settler: &x402.Facilitator{URL: xc.Facilitator}, Nonces: s, Owed: s, Usage: s, Log: d.Log.With("component", "x402")}
	if xc.FacilitatorAddress != "" {
		pc.UptoFacilitator = common.HexToAddress(xc.FacilitatorAddress)
	}
	if xc.SpreadBps != nil {
		pc.Spread = pricing.Spread(*xc.SpreadBps)
	}
	if err := d.x402Chain(ctx, xc, tok, &pc); err != nil {
		return nil, err
	}
	pw, err := paywall.New(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("daemon: [x402]: %w", err)
	}
	loop, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case now := <-t.C:
				pw.Retry(loop, "")
				if _, err := s.PruneNonces(loop, now); err != nil && loop.Err() == nil {
					d.Log.Error("x402: pruning nonces", "err", err)
				}
			}
		}
	}()
	// Registered after the store's close, so it runs before it.
	d.closeAll = append(d.closeAll, func() { stop(); <-done })
	d.Log.Info("accepting x402 payments", "network", tok.Network, "pay_to", pc.PayTo.Hex())
	return pw, nil
}

// openPrivy admits Privy access tokens ([auth.privy]): the verifier, and a
// loop that fetches the app's key set at start and every jwks_refresh
// until the daemon closes (a token also triggers a fetch when the set is
// stale or names an unknown key).
func (d *Daemon) openPrivy(pc *config.Privy, s *sqlite.Store) (*auth.Privy, error) {
	pv, err := auth.NewPrivy(auth.PrivyConfig{AppID: pc.AppID, JWKSURL: pc.JWKSURL, Issuer: pc.Issuer, Leeway: pc.Leeway,
		Refresh: pc.JWKSRefresh, MinRefetch: pc.JWKSMinRefetch, AutoProvision: pc.AutoProvision, Accounts: s})
	if err != nil {
		return nil, fmt.Errorf("daemon: [auth.privy]: %w", err)
	}
	every := pc.JWKSRefresh
	if every <= 0 {
		every = auth.DefaultPrivyRefresh
	}
	log := d.Log.With("component", "privy")
	loop, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if err := pv.Refresh(loop); err != nil && loop.Err() == nil {
				log.Warn("privy: fetching the app's key set", "url", pc.JWKSURL, "err", err)
			}
			select {
			case <-loop.Done():
				return
			case <-t.C:
			}
		}
	}()
	d.closeAll = append(d.closeAll, func() { stop(); <-done })
	d.Log.Info("accepting Privy access tokens", "app_id", pc.AppID, "auto_provision", pc.AutoProvision)
	return pv, nil
}

// checkOpen is Listen's guard in open mode (no Admitter): only a loopback
// address may serve callers without a key, and it is announced loudly.
func (d *Daemon) checkOpen(addr string) error {
	if d.Gateway.Admitter != nil {
		return nil
	}
	if !Loopback(addr) {
		return fmt.Errorf("%w (listen %q)", ErrOpenNotLoopback, addr)
	}
	d.Log.Warn(`NOTICE: open mode: requests are served without an API key, as the anonymous tenant, on this loopback address only; set [auth] mode = "keys" to require bardo_sk_ keys`, "addr", addr)
	return nil
}

// Loopback reports whether the listen address host:port only accepts
// connections from this machine: "localhost" or a loopback IP. An empty
// host or an unspecified address (0.0.0.0, ::) listens everywhere.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
