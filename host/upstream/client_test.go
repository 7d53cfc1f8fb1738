package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// idleCloser is a loopback HTTP/1.1 server that closes a keep-alive
// connection once it has been idle for idle, as servers and load balancers
// do at their keep-alive timeout; with reset it closes with an RST (SO_LINGER
// 0), as some proxies do, instead of a FIN. It counts the requests it
// received, so a test can tell a retried request from a duplicated one.
type idleCloser struct {
	ln       net.Listener
	idle     time.Duration
	reset    bool
	requests atomic.Int64
	wg       sync.WaitGroup
}

func newIdleCloser(t *testing.T, idle time.Duration, reset bool) *idleCloser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &idleCloser{ln: ln, idle: idle, reset: reset}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c.(*net.TCPConn))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *idleCloser) serve(c *net.TCPConn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.idle))
		req, err := http.ReadRequest(br)
		if err != nil {
			if s.reset {
				_ = c.SetLinger(0)
			}
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		n := s.requests.Add(1)
		body := fmt.Sprintf(`{"n":%d}`, n)
		_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

func (s *idleCloser) url() string { return "http://" + s.ln.Addr().String() + "/v1/chat/completions" }

// TestIdleClosedConnections: after the upstream has closed every pooled
// connection at its keep-alive timeout, each request still succeeds on its
// first call, reaches the upstream exactly once, and never picks another
// dead pooled connection. The client's own idle timeout is left long (90 s,
// the old default) so the reuse path is what is tested.
func TestIdleClosedConnections(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			srv := newIdleCloser(t, 30*time.Millisecond, reset)
			c := NewClient(Config{Timeout: 10 * time.Second, IdleTimeout: 90 * time.Second})
			const conc, rounds = 8, 4
			var failed atomic.Int64
			sent := 0
			for round := range rounds {
				var wg sync.WaitGroup
				for range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, err := c.Do(context.Background(), &Request{Method: "POST", URL: srv.url(), Body: []byte(`{"model":"m"}`)})
						if err != nil {
							failed.Add(1)
							t.Errorf("round %d: %v", round, err)
							return
						}
						if resp.Status != 200 {
							t.Errorf("round %d: status %d", round, resp.Status)
						}
					}()
				}
				wg.Wait()
				sent += conc
				// Every pooled connection idles past the server's timeout.
				time.Sleep(120 * time.Millisecond)
			}
			if failed.Load() != 0 {
				t.Fatalf("%d of %d requests failed", failed.Load(), sent)
			}
			if got := srv.requests.Load(); got != int64(sent) {
				t.Fatalf("upstream received %d requests for %d sent", got, sent)
			}
		})
	}
}

// A request past the connection limit waits for a connection to free
// (a stream holds one to its end) and goes out on it; past ConnWait it
// fails as Saturated — the gateway's limit, said as such — not as an
// unreachable upstream.
func TestConnectionLimitWaitsThenSaturates(t *testing.T) {
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hold") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			fmt.Fprint(w, "data: {\"a\":1}\n\n")
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String() + "/v1/chat/completions"

	c := NewClient(Config{Timeout: 10 * time.Second, MaxConns: 1, ConnWait: 300 * time.Millisecond})
	held, err := c.Do(context.Background(), &Request{Method: "POST", URL: base + "?hold=1", Body: []byte(`{}`), Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Next(); err != nil {
		t.Fatal(err)
	}
	// The one connection is held: the next request waits, then is told so.
	_, err = c.Do(context.Background(), &Request{Method: "POST", URL: base, Body: []byte(`{}`)})
	if !Saturated(err) || Reason(err) != "is busy: every connection the gateway may open to it is in use" {
		t.Fatalf("past the limit: %v (%q)", err, Reason(err))
	}
	// Freed while a request waits: it goes out on the freed connection.
	done := make(chan error, 1)
	go func() {
		c2 := NewClient(Config{Timeout: 10 * time.Second, MaxConns: 1, ConnWait: 5 * time.Second})
		h, err := c2.Do(context.Background(), &Request{Method: "POST", URL: base + "?hold=1", Body: []byte(`{}`), Stream: true})
		if err != nil {
			done <- err
			return
		}
		h.Next()
		go func() {
			// The stream ends while the next request waits: its connection
			// goes back to the pool.
			time.Sleep(100 * time.Millisecond)
			close(release)
			for {
				if _, err := h.Next(); err != nil {
					break
				}
			}
			h.Close()
		}()
		resp, err := c2.Do(context.Background(), &Request{Method: "POST", URL: base, Body: []byte(`{}`)})
		if err == nil {
			resp.Close()
		}
		done <- err
	}()
	held.Abort()
	if err := <-done; err != nil {
		t.Fatalf("a request waiting for the freed connection: %v", err)
	}
}
