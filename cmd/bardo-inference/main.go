// Command bardo-inference is a local proxy that lets a terminal tool — Claude
// Code, Codex, opencode, an SDK script — use a Bardo gateway with per-request
// x402 payments from the user's own wallet, with two environment variables
// and no account:
//
//	BARDO_WALLET_KEY=0x… bardo-inference &            # listens on 127.0.0.1:8402
//	ANTHROPIC_BASE_URL=http://127.0.0.1:8402 claude   # or OPENAI_BASE_URL=…/v1
//
// Each request goes to the gateway (BARDO_GATEWAY_URL); its 402 challenge is
// paid with an EIP-3009 USDC authorization signed by the wallet, within the
// limits set below, and the request is sent again with the payment. The
// answer, streamed or not, comes back as the gateway sent it, with its
// X-Bardo-* and PAYMENT-RESPONSE headers. Credentials the tool sends (its own
// provider key) are dropped: the wallet is the identity.
//
// Settings (environment):
//
//	BARDO_GATEWAY_URL        the gateway (default http://127.0.0.1:8080)
//	BARDO_WALLET_KEY         the wallet's private key, hex; or a reference
//	                         "env:NAME" / "file:PATH" (never logged)
//	BARDO_INFERENCE_LISTEN   where to listen (default 127.0.0.1:8402; loopback only)
//	BARDO_MAX_PER_REQUEST    most USDC one request may cost (default 0.50)
//	BARDO_MAX_PER_DAY        most USDC signed in 24 hours (default 20)
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bardoinference/bardo/host/x402"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(context.Background(), os.Getenv, log); err != nil {
		fmt.Fprintln(os.Stderr, "bardo-inference:", err)
		os.Exit(1)
	}
}

// settings are the proxy's environment, checked.
type settings struct {
	gateway *url.URL
	listen  string
	signer  *x402.KeySigner
	policy  x402.Policy
}

func load(getenv func(string) string) (settings, error) {
	var s settings
	raw := getenv("BARDO_GATEWAY_URL")
	if raw == "" {
		raw = "http://127.0.0.1:8080"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("BARDO_GATEWAY_URL %q is not an http(s) URL", raw)
	}
	s.gateway = u
	s.listen = getenv("BARDO_INFERENCE_LISTEN")
	if s.listen == "" {
		s.listen = "127.0.0.1:8402"
	}
	host, _, err := net.SplitHostPort(s.listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		// Anyone who reaches the proxy spends the wallet.
		return s, fmt.Errorf("BARDO_INFERENCE_LISTEN %q must be a loopback address (127.0.0.1:PORT)", s.listen)
	}
	ref := getenv("BARDO_WALLET_KEY")
	if ref == "" {
		return s, errors.New("BARDO_WALLET_KEY is not set: the wallet that pays (a hex private key, env:NAME or file:PATH)")
	}
	if strings.HasPrefix(ref, "env:") || strings.HasPrefix(ref, "file:") {
		s.signer, err = x402.LoadKeySigner(ref, getenv)
	} else {
		s.signer, err = x402.NewKeySigner(ref)
	}
	if err != nil {
		return s, fmt.Errorf("BARDO_WALLET_KEY: %w", err)
	}
	s.policy = x402.DefaultPolicy()
	for _, lim := range []struct {
		name string
		dst  *uint64
	}{{"BARDO_MAX_PER_REQUEST", &s.policy.MaxPerRequest}, {"BARDO_MAX_PER_DAY", &s.policy.SpendCap}} {
		v := getenv(lim.name)
		if v == "" {
			continue
		}
		atomic, err := usdc(v)
		if err != nil {
			return s, fmt.Errorf("%s: %w", lim.name, err)
		}
		*lim.dst = atomic
	}
	if err := s.policy.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// usdc parses an amount of USDC ("0.25") into atomic units (6 decimals),
// exactly: money is never a float.
func usdc(v string) (uint64, error) {
	r, ok := new(big.Rat).SetString(v)
	if !ok || r.Sign() <= 0 {
		return 0, fmt.Errorf("%q is not a positive amount of USDC", v)
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	if !r.IsInt() || !r.Num().IsUint64() {
		return 0, fmt.Errorf("%q has more than 6 decimals or is too large", v)
	}
	return r.Num().Uint64(), nil
}

func run(ctx context.Context, getenv func(string) string, log *slog.Logger) error {
	s, err := load(getenv)
	if err != nil {
		return err
	}
	payer, err := x402.NewPayer(s.signer, s.policy)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		return err
	}
	p := &Proxy{Gateway: s.gateway, Payer: payer, Log: log}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Info("bardo-inference listening", "addr", "http://"+ln.Addr().String(), "gateway", s.gateway.Redacted(),
		"wallet", payer.Address().Hex(), "max_per_request_usdc", float64(s.policy.MaxPerRequest)/1e6,
		"max_per_day_usdc", float64(s.policy.SpendCap)/1e6)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
