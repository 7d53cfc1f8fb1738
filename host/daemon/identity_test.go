package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// TestIdentityStart: [auth.identity] dials rpc_url and checks its chain
// id at start (a wrong one stops the start without repeating the URL's
// secret), and the gateway serves /v1/identity/link only with it.
func TestIdentityStart(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{HTTP: true})
	const reg = "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432"
	start := func(rpcURL, chainID string) (*Daemon, string, error) {
		dir := t.TempDir()
		path := filepath.Join(dir, "pipeline.toml")
		toml := "[server]\nplugin_dir = \"\"\ncache_dir = \"\"\n[auth]\nmode = \"keys\"\n[storage]\ndata_dir = \"" + dir + "\"\n" +
			"[auth.identity]\nrpc_url = \"" + rpcURL + "\"\nchain_id = " + chainID + "\nidentity_registry = \"" + reg + "\"\n"
		if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		buf := &syncBuf{}
		d, err := New(context.Background(), path, Options{Log: slog.New(slog.NewTextHandler(buf, nil))})
		if err == nil {
			t.Cleanup(func() { d.Close() })
		}
		return d, buf.String(), err
	}
	d, log, err := start(c.RPCURL, "8453")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "accepting ERC-8004 delegations") || d.Gateway.Identity == nil {
		t.Fatalf("identity not wired: %s", log)
	}
	if _, _, err := start(c.RPCURL+"/v2/secretpath", "1337"); err == nil || strings.Contains(err.Error(), "secretpath") {
		t.Fatalf("wrong chain: %v", err)
	}
	if _, _, err := start(c.RPCURL, "1337"); err == nil || !strings.Contains(err.Error(), "auth.identity") {
		t.Fatalf("wrong chain: %v", err)
	}
}
