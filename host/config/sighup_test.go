//go:build unix

package config

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
)

func TestNotifySIGHUP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	done := make(chan struct{}, 4)
	NotifySIGHUP(ctx, func() { n.Add(1); done <- struct{}{} })

	for want := int32(1); want <= 2; want++ {
		// signal.Notify is active once NotifySIGHUP returns, so this does
		// not kill the test process.
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitCount(&n, want)
		if got := n.Load(); got != want {
			t.Fatalf("onSignal called %d times after %d SIGHUPs", got, want)
		}
		<-done
	}
}
