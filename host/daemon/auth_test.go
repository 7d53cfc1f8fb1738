package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.1.2.3:0": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "192.168.1.5:8080": false,
		"example.com:8080": false, "127.0.0.1": false, "[::ffff:127.0.0.1]:80": true,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v", addr, got)
		}
	}
}

// syncBuf is a log sink written by the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newDaemon builds a daemon over a pipeline with no plugins.
func newDaemon(t *testing.T, toml string) (*Daemon, *syncBuf) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "pipeline.toml")
	if err := os.WriteFile(path, []byte("[server]\nplugin_dir = \"\"\ncache_dir = \"\"\n"+toml), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := &syncBuf{}
	d, err := New(context.Background(), path, Options{Log: slog.New(slog.NewTextHandler(buf, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d, buf
}

// Without keys the gateway serves only a loopback address, and says so.
func TestOpenModeLoopbackOnly(t *testing.T) {
	for _, toml := range []string{"", "[auth]\nmode = \"open\"\n"} {
		d, log := newDaemon(t, toml)
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
			if err := d.Listen(addr); !errors.Is(err, ErrOpenNotLoopback) {
				t.Fatalf("%q: open mode on %s: %v", toml, addr, err)
			}
		}
		if err := d.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "NOTICE: open mode") {
			t.Errorf("open mode not announced: %s", log)
		}
		done := make(chan error, 1)
		go func() { done <- d.Serve() }()
		c := &http.Client{Timeout: 10 * time.Second}
		r, err := c.Get("http://" + d.Server.Addr() + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("open mode, no key: %d", r.StatusCode)
		}
		if err := d.Shutdown(5 * time.Second); err != nil {
			t.Error(err)
		}
		<-done
	}
}

// In keys mode the daemon opens [storage] and refuses keyless callers.
func TestKeysMode(t *testing.T) {
	data := t.TempDir()
	d, log := newDaemon(t, "[auth]\nmode = \"keys\"\n[storage]\ndata_dir = \""+data+"\"\n")
	if d.Gateway.Admitter == nil {
		t.Fatal("keys mode without an admitter")
	}
	if err := d.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "NOTICE") {
		t.Errorf("keys mode announced as open: %s", log)
	}
	done := make(chan error, 1)
	go func() { done <- d.Serve() }()
	defer func() { d.Shutdown(5 * time.Second); <-done }()
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Get("http://" + d.Server.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 {
		t.Errorf("keys mode, no key: %d", r.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(data, "bardo.db")); err != nil {
		t.Errorf("store not opened: %v", err)
	}
}
