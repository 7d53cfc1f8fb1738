package billingtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// inProcess starts a gateway in keys mode over a fresh data directory in
// front of fake, with head (TOML: layers, a [billing] table; may be empty)
// before the priced providers; setup creates the accounts before the
// gateway opens them.
func inProcess(t *testing.T, fake *fakeupstream.Server, head string, setup func(d *data)) (*testgateway.Gateway, *data) {
	t.Helper()
	dir := t.TempDir()
	d := openData(t, dir)
	setup(d)
	gw := testgateway.Start(t, head+providersTOML(fake.URL())+keysTOML(dir),
		testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	d.sync = gw.Daemon.Meter.Sync
	return gw, d
}

// Ledger invariants under 64 concurrent requests on one small balance,
// through the gateway: both dialects, streamed and not, each request
// reserving more than it will cost (max_tokens), so that once the balance
// is held or spent the rest are refused with 402 in their dialect. Round
// after round until the balance cannot cover one more estimate:
//   - the balance never goes below zero (the ledger's running sum, the
//     account row, store.Audit);
//   - the charges sum to the balance's change, to the micro-dollar, and the
//     usage records' charges to the ledger's charge entries;
//   - every request (served or refused) has exactly one usage record,
//     under its X-Bardo-Request-Id;
//   - what each caller was shown (X-Bardo-Cost / the stream's trailer)
//     is its record's charge.
func TestLedgerUnder64Concurrent(t *testing.T) {
	const clients = 64
	// ~100 output tokens an answer against a hold for 1,000: a request
	// holds ten times what it costs, so each round admits what the balance
	// can hold at once, spends a little of it, and the balance drains over
	// many rounds of settlements racing new holds.
	long := strings.Repeat("The ledger balances to the unit. ", 12)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey),
		fakeupstream.WithDefaultBehaviour(fakeupstream.Behaviour{Text: long, Latency: 150 * time.Millisecond}))
	t.Cleanup(fake.Close)
	const topUp = 100_000 // $0.10: about six requests' holds at once
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_small", store.TierFree, topUp, auth.KeySpec{RateLimit: 100_000})
	})
	client := httpClient(clients)

	var (
		mu      sync.Mutex
		answers []answer
		calls   []call
	)
	served, refused := 0, 0
	for round := 0; round < 40; round++ {
		var wg sync.WaitGroup
		for i := range clients {
			c := call{dialect: dialect(i % 2), stream: i%4 >= 2, maxTokens: 1000,
				prompt: fmt.Sprintf("round %d request %d: what does the ledger say?", round, i)}
			c.model = "gpt-4o"
			if c.dialect == anthropicD {
				c.model = "claude-sonnet-4-5"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				a := send(ctx, client, gw.URL, acct.key, c)
				mu.Lock()
				answers, calls = append(answers, a), append(calls, c)
				mu.Unlock()
			}()
		}
		wg.Wait()
		roundServed := 0
		for _, a := range answers[len(answers)-clients:] {
			switch a.status {
			case 200:
				served++
				roundServed++
			case 402:
				refused++
			}
		}
		if roundServed == 0 {
			break
		}
	}
	t.Logf("%d requests: %d served, %d refused with 402", len(answers), served, refused)
	if served == 0 || refused == 0 {
		t.Fatalf("want both served and refused requests: %d served, %d refused", served, refused)
	}

	// What the callers saw.
	for i, a := range answers {
		c := calls[i]
		what := fmt.Sprintf("%s stream=%v", c.dialect, c.stream)
		switch {
		case a.err != nil:
			t.Errorf("%s %s: %v", what, a.id, a.err)
		case a.id == "":
			t.Errorf("%s: status %d without X-Bardo-Request-Id", what, a.status)
		case a.status == 200:
			if c.stream && (!a.hasTrailer || !a.trailerBefore) {
				t.Errorf("%s %s: trailer %v, before the terminal event %v", what, a.id, a.hasTrailer, a.trailerBefore)
			}
			if !strings.HasPrefix(a.text, "The ledger balances") {
				t.Errorf("%s %s: answer %.80q", what, a.id, a.text)
			}
		case a.status == 402:
			checkDialectError(t, what, c.dialect, a, "")
		default:
			t.Errorf("%s %s: status %d: %.300s", what, a.id, a.status, a.body)
		}
	}

	// What the ledger says.
	l := d.ledger(t, acct.id)
	recs := d.usage(t, acct.id)
	if l.topUps != topUp || l.balance != l.topUps-l.charges {
		t.Errorf("balance %d, top-ups %d, charges %d: the balance is not top-ups − charges", l.balance, l.topUps, l.charges)
	}
	var recorded int64
	for id, rs := range recs {
		if len(rs) != 1 {
			t.Errorf("request %s has %d usage records", id, len(rs))
		}
		for _, u := range rs {
			recorded += u.Charge
		}
	}
	if recorded != l.charges {
		t.Errorf("usage records charge %d, the ledger's charge entries %d", recorded, l.charges)
	}
	for i, a := range answers {
		if a.id == "" {
			continue
		}
		rs := recs[a.id]
		if len(rs) != 1 {
			t.Errorf("%s (status %d) has %d usage records", a.id, a.status, len(rs))
			continue
		}
		u := rs[0]
		if u.Status != a.status {
			t.Errorf("%s: record status %d, answered %d", a.id, u.Status, a.status)
		}
		if a.status == 200 {
			checkFigures(t, calls[i].dialect.String(), a, u)
			// The balance shown is one the ledger was in (after the commit
			// of this request's batch), never a figure of the meter's own.
			if _, _, bal := a.cost(); !l.states[usdMicros(t, bal)] {
				t.Errorf("%s: shown balance %s is no state of the ledger", a.id, bal)
			}
			if u.Charge <= 0 || u.OutputTokens == 0 {
				t.Errorf("%s: a served answer recorded charge %d, %d output tokens", a.id, u.Charge, u.OutputTokens)
			}
		} else if u.Charge != 0 {
			t.Errorf("%s: a refusal (%d) was charged %d", a.id, a.status, u.Charge)
		}
	}
	if len(recs) != len(answers) {
		t.Errorf("%d usage records for %d requests", len(recs), len(answers))
	}
	// The balance left cannot cover one more estimate: the next request is
	// refused before it reaches the upstream.
	n := fake.Count("/v1/messages") + fake.Count("/v1/chat/completions")
	a := send(context.Background(), client, gw.URL, acct.key, call{dialect: anthropicD, model: "claude-sonnet-4-5", maxTokens: 1000, prompt: "one more?"})
	if a.status != 402 {
		t.Errorf("with %s left: status %d, want 402: %.300s", fmtUSD(l.balance), a.status, a.body)
	}
	checkDialectError(t, "last", anthropicD, a, "")
	if m := fake.Count("/v1/messages") + fake.Count("/v1/chat/completions"); m != n {
		t.Errorf("a refused request reached the upstream")
	}
	t.Logf("balance left %s of %s; %d ledger entries", fmtUSD(l.balance), fmtUSD(topUp), l.entries)
}

// checkDialectError checks an error answer is its dialect's error object
// (of kind typ, when set).
func checkDialectError(t *testing.T, what string, d dialect, a answer, typ string) {
	t.Helper()
	body := string(a.body)
	switch d {
	case anthropicD:
		if !strings.Contains(body, `"type":"error"`) || typ != "" && !strings.Contains(body, `"type":"`+typ+`"`) {
			t.Errorf("%s %s: not an Anthropic %s error: %.300s", what, a.id, typ, body)
		}
	default:
		if !strings.Contains(body, `"error":{`) || typ != "" && !strings.Contains(body, `"type":"`+typ+`"`) {
			t.Errorf("%s %s: not an OpenAI %s error: %.300s", what, a.id, typ, body)
		}
	}
}

// An upstream that reports far more usage than any estimate allowed for
// (here 5M cache-read tokens, ~$1.73 on Sonnet, against a $0.05 balance),
// eight requests at once: each is charged at most what the account still
// had when it closed, the rest is a shortfall on its record, the balance
// ends at zero and never below, and the shown cost is the charged one.
func TestOverrunNeverNegative(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithDefaultBehaviour(fakeupstream.Behaviour{
		CacheRead: 5_000_000, Latency: 50 * time.Millisecond}))
	t.Cleanup(fake.Close)
	const topUp = 50_000
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_overrun", store.TierPro, topUp, auth.KeySpec{})
	})
	client := httpClient(8)
	answers := make([]answer, 8)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = send(context.Background(), client, gw.URL, acct.key, call{dialect: dialect(i % 2), stream: i >= 4,
				model: "claude-sonnet-4-5", maxTokens: 64, prompt: fmt.Sprintf("overrun %d", i)})
		}()
	}
	wg.Wait()
	l := d.ledger(t, acct.id)
	recs := d.usage(t, acct.id)
	var shortfall int64
	served := 0
	for _, a := range answers {
		if a.status != 200 {
			checkDialectError(t, "overrun", anthropicD, a, "") // refused: the balance is held or gone
			if a.status != 402 {
				t.Errorf("%s: status %d", a.id, a.status)
			}
			continue
		}
		served++
		rs := recs[a.id]
		if len(rs) != 1 {
			t.Errorf("%s: %d records", a.id, len(rs))
			continue
		}
		u := rs[0]
		checkFigures(t, "overrun", a, u)
		if u.CacheReadTokens != 5_000_000 {
			t.Errorf("%s: cache read %d", a.id, u.CacheReadTokens)
		}
		// Pro's spread on the provider cost, rounded up once, is what was
		// due; what the balance could not pay is the record's shortfall.
		due := (u.Cost*115 + 99) / 100
		if u.Charge+u.Shortfall != due {
			t.Errorf("%s: charged %d + shortfall %d, due %d (cost %d)", a.id, u.Charge, u.Shortfall, due, u.Cost)
		}
		shortfall += u.Shortfall
	}
	if served == 0 || l.balance != 0 || l.charges != topUp {
		t.Errorf("%d served: balance %d, charged %d of %d", served, l.balance, l.charges, topUp)
	}
	t.Logf("%d served, charged %s, %s unpaid (shortfall)", served, fmtUSD(l.charges), fmtUSD(shortfall))
}
