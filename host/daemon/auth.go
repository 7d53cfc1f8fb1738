package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/auth/admit"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/store/sqlite"
)

// ErrOpenNotLoopback refuses to serve unauthenticated callers on an
// address other machines can reach.
var ErrOpenNotLoopback = errors.New(`daemon: refusing to serve without API keys on a non-loopback address: set [auth] mode = "keys" (and create a key with bardo keys create), or listen on 127.0.0.1`)

// openKeys opens the [storage] store and returns the admitter that checks
// every request's bardo_sk_ key against it ([auth] mode = "keys").
func (d *Daemon) openKeys(ctx context.Context, st config.Storage) (*admit.Keys, error) {
	if err := os.MkdirAll(st.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: [storage] data_dir: %w", err)
	}
	secret, err := auth.LoadSecret(st.DataDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(st.DataDir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d.closeAll = append(d.closeAll, func() { s.Close() })
	return &admit.Keys{Auth: auth.New(s, secret, auth.Options{Accounts: s}), Log: d.Log.With("component", "auth")}, nil
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
