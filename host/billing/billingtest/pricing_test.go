package billingtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
)

// hashcacheLayer is the exact cache, so a repeat is a cache hit.
const hashcacheLayer = `
[[layer]]
name = "hashcache"
plugin = "hashcache.wasm"
on_error = "fail-open"
timeout = "2s"
trusted = true
`

// Cache-aware pricing through the gateway: host/pricing/README.md's two
// worked examples, with the fake upstream reporting exactly their usage
// and the providers' static prices set to theirs, streamed and not. What
// the caller is shown (X-Bardo-Cost and X-Bardo-Savings, or the stream's
// trailer) and what the usage record holds are the hand-computed figures.
// No layer removes tokens here, so savings are the direct price less the
// charge (the spread makes them negative), except for a cache hit, which
// is charged nothing and saves the whole call.
func TestCacheAwarePricing(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	const topUp = 10 * store.MicroUSD
	var pro, free account
	gw, d := inProcess(t, fake, hashcacheLayer, func(d *data) {
		pro = d.newAccount(t, "acct_pro", store.TierPro, topUp, auth.KeySpec{})
		free = d.newAccount(t, "acct_free", store.TierFree, topUp, auth.KeySpec{})
	})
	client := httpClient(1)

	// The fake counts ceil(bytes/4) tokens: a 4,800-byte prompt is 1,200
	// input tokens, a 1,400-byte answer 350 output tokens.
	for _, c := range []struct {
		name        string
		acct        account
		call        call
		cached      fakeupstream.Behaviour
		in, out     int
		read, write int64
		cost        int64 // µUSD, rounded up once
		charge      int64
		savings     int64
	}{
		{
			// Claude Sonnet $3 / $15, reads $0.30, writes $3.75, pro (15 %):
			// cost = 1200×3 + 350×15 + 8000×0.30 + 2000×3.75 = 18,750
			// charge = ⌈18,750 × 1.15⌉ = 21,563; direct = 18,750
			name: "anthropic", acct: pro,
			call:   call{dialect: anthropicD, model: "claude-sonnet-4-5", maxTokens: 1000},
			cached: fakeupstream.Cached(8000, 2000), in: 1200, out: 350, read: 8000, write: 2000,
			cost: 18_750, charge: 21_563, savings: 18_750 - 21_563,
		},
		{
			// gpt-4o-mini $0.15 / $0.60, cached $0.075, free (25 %):
			// prompt_tokens 2048 of which cached 1024; 300 output
			// cost = 1024×0.15 + 300×0.60 + 1024×0.075 = 410.4 → 411
			// charge = ⌈410.4 × 1.25⌉ = 513; direct = ⌈410.4⌉ = 411
			name: "openai", acct: free,
			call:   call{dialect: openAI, model: "gpt-4o-mini"},
			cached: fakeupstream.Cached(1024, 0), in: 1024, out: 300, read: 1024,
			cost: 411, charge: 513, savings: 411 - 513,
		},
	} {
		balance := int64(topUp)
		for _, stream := range []bool{false, true} {
			name := c.name + map[bool]string{false: "/json", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				cl := c.call
				cl.stream = stream
				// A distinct prompt per case, exactly 4·in bytes.
				cl.prompt = padTo(name+": price this request. ", 4*c.in)
				fake.Script(fakeupstream.Combine(fakeupstream.Reply(padTo("Priced: ", 4*c.out)), c.cached))
				a := send(context.Background(), client, gw.URL, c.acct.key, cl)
				if a.err != nil || a.status != 200 {
					t.Fatalf("status %d %v: %.300s", a.status, a.err, a.body)
				}
				balance -= c.charge
				cost, savings, bal := a.cost()
				if stream && (!a.hasTrailer || !a.trailerBefore) {
					t.Errorf("trailer %v, before the terminal event %v: %s", a.hasTrailer, a.trailerBefore, a.body)
				}
				if cost != fmtUSD(c.charge) || savings != fmtUSD(c.savings) || bal != fmtUSD(balance) {
					t.Errorf("shown cost %s savings %s balance %s; want %s %s %s", cost, savings, bal,
						fmtUSD(c.charge), fmtUSD(c.savings), fmtUSD(balance))
				}
				rs := d.usage(t, c.acct.id)[a.id]
				if len(rs) != 1 {
					t.Fatalf("%d usage records for %s", len(rs), a.id)
				}
				u := rs[0]
				if u.InputTokens != int64(c.in) || u.OutputTokens != int64(c.out) || u.CacheReadTokens != c.read || u.CacheWriteTokens != c.write {
					t.Errorf("record tokens in %d out %d read %d write %d; want %d %d %d %d",
						u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, c.in, c.out, c.read, c.write)
				}
				if u.Cost != c.cost || u.Charge != c.charge || u.Savings != c.savings {
					t.Errorf("record cost %d charge %d savings %d; want %d %d %d", u.Cost, u.Charge, u.Savings, c.cost, c.charge, c.savings)
				}
			})
		}
		// The same JSON request again: an exact-cache hit, charged nothing,
		// saving the whole call at the provider's price (no spread).
		t.Run(c.name+"/cache-hit", func(t *testing.T) {
			cl := c.call
			cl.prompt = padTo(c.name+"/json: price this request. ", 4*c.in)
			n := fake.Count(cl.dialect.path())
			a := send(context.Background(), client, gw.URL, c.acct.key, cl)
			if a.status != 200 || a.header.Get("X-Bardo-Cache") != "hash-hit" || fake.Count(cl.dialect.path()) != n {
				t.Fatalf("status %d, cache %q: %.200s", a.status, a.header.Get("X-Bardo-Cache"), a.body)
			}
			cost, savings, bal := a.cost()
			if cost != fmtUSD(0) || savings != fmtUSD(c.cost) || bal != fmtUSD(balance) {
				t.Errorf("hit: shown cost %s savings %s balance %s; want %s %s %s", cost, savings, bal, fmtUSD(0), fmtUSD(c.cost), fmtUSD(balance))
			}
			if rs := d.usage(t, c.acct.id)[a.id]; len(rs) != 1 || rs[0].Charge != 0 || rs[0].Savings != c.cost || rs[0].Cache != "hash-hit" {
				t.Errorf("hit's records %+v", rs)
			}
		})
		l := d.ledger(t, c.acct.id)
		if l.balance != balance || l.charges != 2*c.charge {
			t.Errorf("%s: ledger balance %s charges %s; want %s %s", c.name, fmtUSD(l.balance), fmtUSD(l.charges), fmtUSD(balance), fmtUSD(2*c.charge))
		}
	}
}

// padTo pads s with words to exactly n bytes.
func padTo(s string, n int) string {
	const filler = " lorem ipsum dolor sit amet"
	for len(s) < n {
		s += filler
	}
	return strings.TrimRight(s[:n-1], " ") + strings.Repeat(".", n-len(strings.TrimRight(s[:n-1], " ")))
}

// The OpenAI worked example again, asked through the Responses API
// (POST /v1/responses, issue 16's third caller dialect, to a Chat
// upstream): the same figures in X-Bardo-Cost, and in a stream the
// trailer just before its terminal event, response.completed.
func TestResponsesDialectPriced(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_responses", store.TierFree, 10*store.MicroUSD, auth.KeySpec{})
	})
	for _, stream := range []bool{false, true} {
		fake.Script(fakeupstream.Combine(fakeupstream.Reply(padTo("Priced: ", 4*300)), fakeupstream.Cached(1024, 0)))
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": stream,
			"input": padTo(fmt.Sprintf("responses stream=%v: price this. ", stream), 4*1024)})
		a := sendRaw(t, gw.URL, acct.key, "/v1/responses", body)
		if a.status != 200 || a.err != nil {
			t.Fatalf("stream %v: %d %v %.300s", stream, a.status, a.err, a.body)
		}
		cost := a.header.Get("X-Bardo-Cost")
		if stream {
			tr := bytes.Index(a.body, []byte("\n: bardo cost="))
			end := bytes.Index(a.body, []byte("event: response.completed"))
			if tr < 0 || end < 0 || tr > end {
				t.Fatalf("trailer at %d, response.completed at %d", tr, end)
			}
			line, _, _ := strings.Cut(string(a.body[tr+1:]), "\n")
			f, ok := pricing.ParseTrailer(line)
			if !ok {
				t.Fatalf("trailer %q", line)
			}
			cost = f.Cost
		}
		if cost != fmtUSD(513) {
			t.Errorf("stream %v: cost %q, want %s", stream, cost, fmtUSD(513))
		}
		if rs := d.usage(t, acct.id)[a.id]; len(rs) != 1 || rs[0].Charge != 513 || rs[0].CacheReadTokens != 1024 || rs[0].InputTokens != 1024 || rs[0].OutputTokens != 300 {
			t.Errorf("stream %v: records %+v", stream, rs)
		}
	}
}

// A tier's spread set in pipeline.toml ([billing.tiers.pro]
// spread_percent = 12.5) prices the Anthropic example: charge
// ⌈18,750 × 1.125⌉ = 21,094 µUSD, on the header and the record.
func TestTierSpreadFromConfig(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	var pro account
	gw, d := inProcess(t, fake, "\n[billing.tiers.pro]\nspread_percent = 12.5\n", func(d *data) {
		pro = d.newAccount(t, "acct_spread", store.TierPro, 10*store.MicroUSD, auth.KeySpec{})
	})
	fake.Script(fakeupstream.Combine(fakeupstream.Reply(padTo("Priced: ", 4*350)), fakeupstream.Cached(8000, 2000)))
	a := send(context.Background(), httpClient(1), gw.URL, pro.key, call{dialect: anthropicD, model: "claude-sonnet-4-5",
		maxTokens: 1000, prompt: padTo("spread: price this request. ", 4*1200)})
	if a.status != 200 {
		t.Fatalf("%d %.300s", a.status, a.body)
	}
	if got := a.header.Get("X-Bardo-Cost"); got != fmtUSD(21_094) {
		t.Errorf("X-Bardo-Cost %s, want %s", got, fmtUSD(21_094))
	}
	if rs := d.usage(t, pro.id)[a.id]; len(rs) != 1 || rs[0].Cost != 18_750 || rs[0].Charge != 21_094 {
		t.Errorf("records %+v", rs)
	}
}
