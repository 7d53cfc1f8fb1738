package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// TestX402OnChain: [x402] settle = "chain" with rpc_url and a settlement
// key reference starts against the simulated Base (its chain ID checked,
// the key read through Options.Getenv and named only by its address in
// the log); an rpc_url on another chain, or a key that is not set, stops
// the start with an error that does not repeat the URL's secret.
func TestX402OnChain(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{HTTP: true})
	other := chaintest.New(t, chaintest.Options{HTTP: true, ChainID: 1337})
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BARDO_SETTLEMENT_KEY": hexutil.Encode(crypto.FromECDSA(key))}
	start := func(rpcURL, keyRef string) (string, error) {
		dir := t.TempDir()
		path := filepath.Join(dir, "pipeline.toml")
		toml := "[server]\nplugin_dir = \"\"\ncache_dir = \"\"\n[auth]\nmode = \"keys\"\n[storage]\ndata_dir = \"" + dir + "\"\n" +
			"[x402]\nenabled = true\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\nsettle = \"chain\"\n" +
			"rpc_url = \"" + rpcURL + "\"\nsettlement_key = \"" + keyRef + "\"\n"
		if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		buf := &syncBuf{}
		d, err := New(context.Background(), path, Options{Log: slog.New(slog.NewTextHandler(buf, nil)), Getenv: func(k string) string { return env[k] }})
		if err == nil {
			d.Close()
		}
		return buf.String(), err
	}

	log, err := start(c.RPCURL, "env:BARDO_SETTLEMENT_KEY")
	if err != nil {
		t.Fatal(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
	if !strings.Contains(log, "settling on chain") || !strings.Contains(log, addr) || strings.Contains(log, env["BARDO_SETTLEMENT_KEY"][2:]) {
		t.Fatalf("log: %s", log)
	}
	if _, err := start(other.RPCURL, "env:BARDO_SETTLEMENT_KEY"); err == nil || !strings.Contains(err.Error(), "serves chain 1337") {
		t.Fatalf("wrong chain: %v", err)
	}
	if _, err := start(c.RPCURL+"/v2/secretpath", "env:BARDO_SETTLEMENT_KEY"); err == nil || strings.Contains(err.Error(), "secretpath") {
		t.Fatalf("a path the node does not serve: %v", err)
	}
	if _, err := start(c.RPCURL, "env:UNSET_KEY"); err == nil || !strings.Contains(err.Error(), "settlement_key") {
		t.Fatalf("unset key: %v", err)
	}
}
