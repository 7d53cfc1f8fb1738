package loadtest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// IdleProxy is a TCP proxy on 127.0.0.1 that closes a connection once it
// has been idle (no byte either way) for a set time, as load balancers and
// many servers do with keep-alive connections (commonly after 60 s; shorter
// here, so a test meets it within seconds).
type IdleProxy struct {
	ln     net.Listener
	target string
	idle   time.Duration
	closed atomic.Int64
	wg     sync.WaitGroup
}

// NewIdleProxy forwards 127.0.0.1:<port> to target (host:port); tb.Cleanup
// stops it.
func NewIdleProxy(tb testing.TB, target string, idle time.Duration) *IdleProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &IdleProxy{ln: ln, target: target, idle: idle}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *IdleProxy) Addr() string { return p.ln.Addr().String() }

// Closed is how many connections the proxy closed for being idle.
func (p *IdleProxy) Closed() int64 { return p.closed.Load() }

func (p *IdleProxy) accept() {
	defer p.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			p.serve(c)
		}()
	}
}

// serve copies both ways; every byte pushes the idle deadline of both
// sides forward, and when it passes both are closed.
func (p *IdleProxy) serve(c net.Conn) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	tick := time.NewTicker(p.idle / 20)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if time.Since(time.Unix(0, last.Load())) >= p.idle {
				p.closed.Add(1)
				c.Close()
				up.Close()
				<-done
				<-done
				return
			}
		}
	}
}
