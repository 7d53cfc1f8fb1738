package agenttest

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

// startBardoInference builds cmd/bardo-inference and runs it in front of
// gatewayURL, paying from a fresh wallet; it returns its address.
func startBardoInference(t *testing.T, gatewayURL string) string {
	t.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bardo-inference")
	build := exec.Command("go", "build", "-o", bin, "./cmd/bardo-inference")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build bardo-inference: %v\n%s", err, out)
	}
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "BARDO_GATEWAY_URL="+gatewayURL, "BARDO_INFERENCE_LISTEN="+addr,
		"BARDO_WALLET_KEY=env:AGENT_WALLET", "AGENT_WALLET="+hex.EncodeToString(crypto.FromECDSA(key)))
	var log lockedLog
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("bardo-inference:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("bardo-inference did not listen on %s:\n%s", addr, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Claude Code pays per request with a wallet and no account: pointed with
// its two environment variables at bardo-inference, which pays the x402
// gateway (keys mode, the shipped layers, settling through the local
// facilitator). Every answer it got was paid and settled once, and its own
// API key never reached the gateway.
func TestClaudeCodePaysPerRequest(t *testing.T) {
	paysPerRequest(t, claudeCode, "What is a health factor on a lending market? Answer in one sentence.", true)
}

// Current Codex pays the same way over the Responses API (store's default:
// the answer is kept under the paying wallet). Codex itself tries GitHub
// and chatgpt.com at start (its own suite does not judge that either):
// the trap refuses them, and they are only logged here.
func TestCodexPaysPerRequest(t *testing.T) {
	paysPerRequest(t, codexResponses, "What is a health factor on a lending market? Answer in one sentence.", false)
}

// paysPerRequest runs agent a once through bardo-inference in front of an
// x402 gateway; strictNetwork fails the test on any attempt to leave
// 127.0.0.1.
func paysPerRequest(t *testing.T, a agent, prompt string, strictNetwork bool) {
	bin := agentBin(t, a.bin)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	fac := x402test.NewFacilitator(nil)
	t.Cleanup(fac.Close)
	gw := testgateway.Start(t, shippedPipeline(t, fake.URL())+`
[auth]
mode = "keys"

[storage]
data_dir = "`+t.TempDir()+`"

[x402]
enabled = true
pay_to = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
facilitator = "`+fac.URL+`"
facilitator_address = "`+fac.Address.Hex()+`"
`, testgateway.Options{Env: map[string]string{"OPENAI_API_KEY": upKey, "ANTHROPIC_API_KEY": upKey}})
	e := &env{gw: gw, fake: fake, fr: newFront(t, gw.URL), esc: newEscapes(t)}
	proxy := startBardoInference(t, e.fr.srv.URL)

	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "tmp"), 0o755)
	// The agent is configured as in its own test, with the proxy (behind a
	// recording front of its own) where the gateway would be.
	toProxy := &env{gw: gw, fake: fake, fr: newFront(t, "http://"+proxy), esc: e.esc}
	r := e.runAgent(t, t.TempDir(), home, bin, a.setup(t, toProxy, t.TempDir()), a.args(prompt)...)
	text, failed := a.answer(r)
	ex := e.fr.exchanges()
	if failed != "" {
		for i, x := range ex {
			t.Logf("request %d: %s %s -> %d %s", i, x.Method, x.Path, x.Status, truncate(gatewayError(x), 300))
		}
		e.dumpLog(t)
		t.Fatalf("%s through bardo-inference: %s", a.name, truncate(failed, 600))
	}
	if !strings.Contains(text, "health factor") {
		t.Errorf("answer %q", truncate(text, 300))
	}
	paid := 0
	for _, x := range ex {
		if k := x.Header.Get("X-Api-Key") + x.Header.Get("Authorization"); k != "" {
			t.Errorf("%s %s carried the tool's credential %q to the gateway", x.Method, x.Path, k)
		}
		if x.Header.Get(x402.HeaderPaymentSignature) != "" && x.Status == http.StatusOK {
			paid++
		}
	}
	if paid == 0 {
		t.Fatalf("no paid request among %d", len(ex))
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(fac.Settlements()) < paid && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(fac.Settlements()); n != paid {
		t.Errorf("%d settlements for %d paid answers", n, paid)
	}
	if esc := e.esc.seen(); len(esc) > 0 {
		if strictNetwork {
			t.Errorf("%s tried to reach %v", a.name, esc)
		} else {
			t.Logf("%s tried to reach %v (refused)", a.name, esc)
		}
	}
	t.Logf("%d requests, %d paid and settled", len(ex), paid)
}

// lockedLog collects a child process's stderr.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
