package billingtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
)

// Top-ups made by the operator's CLI (another writer of the same SQLite
// file) while paid requests settle: the gateway picks them up (within its
// refresh interval) without counting a charge twice or missing one. Once
// the load stops, the balance a request shows is the ledger's to the
// micro-dollar, and the ledger is the top-ups less the charges.
func TestTopUpWhileServing(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey),
		fakeupstream.WithDefaultBehaviour(fakeupstream.Latency(20*time.Millisecond)))
	t.Cleanup(fake.Close)
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_topup", store.TierFree, 20_000, auth.KeySpec{RateLimit: 100_000})
	})
	client := httpClient(16)
	var stop atomic.Bool
	var served, refused atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && i < 10_000; i++ {
				c := call{dialect: dialect(w % 2), stream: w%4 >= 2, maxTokens: 200, prompt: fmt.Sprintf("top-up %d/%d", w, i)}
				c.model = "gpt-4o"
				if c.dialect == anthropicD {
					c.model = "claude-sonnet-4-5"
				}
				a := send(context.Background(), client, gw.URL, acct.key, c)
				switch {
				case a.status == 200 && a.err == nil:
					served.Add(1)
				case a.status == 402:
					refused.Add(1)
					time.Sleep(5 * time.Millisecond)
				default:
					t.Errorf("%s: %d %v %.200s", a.id, a.status, a.err, a.body)
					return
				}
			}
		}()
	}
	// Four top-ups of $0.02, 400 ms apart, through the store as `bardo
	// accounts topup` writes them.
	var topUps int64 = 20_000
	for range 4 {
		time.Sleep(400 * time.Millisecond)
		if _, err := d.st.TopUp(context.Background(), acct.id, 20_000, "cli top-up"); err != nil {
			t.Fatal(err)
		}
		topUps += 20_000
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d served, %d refused", served.Load(), refused.Load())
	if served.Load() == 0 {
		t.Fatal("nothing served")
	}

	l := d.ledger(t, acct.id)
	if l.topUps != topUps || l.balance != topUps-l.charges {
		t.Errorf("top-ups %d (made %d), charges %d, balance %d", l.topUps, topUps, l.charges, l.balance)
	}
	var recorded int64
	for id, rs := range d.usage(t, acct.id) {
		if len(rs) != 1 {
			t.Errorf("%s: %d records", id, len(rs))
		}
		recorded += rs[0].Charge
	}
	if recorded != l.charges {
		t.Errorf("records charge %d, the ledger %d", recorded, l.charges)
	}
	// Quiet now: past the refresh interval, the balance shown is the
	// ledger's (less this request's own charge, in its figures).
	time.Sleep(2500 * time.Millisecond)
	a := send(context.Background(), client, gw.URL, acct.key, call{dialect: openAI, model: "gpt-4o", maxTokens: 10, prompt: "balance?"})
	if a.status != 200 {
		t.Fatalf("%d %.200s", a.status, a.body)
	}
	rs := d.usage(t, acct.id)[a.id]
	if len(rs) != 1 {
		t.Fatalf("%d records", len(rs))
	}
	if got, want := a.header.Get("X-Bardo-Balance"), fmtUSD(l.balance-rs[0].Charge); got != want {
		t.Errorf("X-Bardo-Balance %s, the ledger says %s", got, want)
	}
	if l2 := d.ledger(t, acct.id); l2.balance != l.balance-rs[0].Charge {
		t.Errorf("ledger balance %d after a charge of %d from %d", l2.balance, rs[0].Charge, l.balance)
	}
}
