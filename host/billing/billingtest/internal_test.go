package billingtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
)

// compressLayer folds any conversation over ~1,000 tokens, with
// gpt-4o-mini as the summariser: an internal completion on every long
// request.
const compressLayer = `
[[layer]]
name = "compress"
plugin = "compress.wasm"
phases = ["request"]
on_error = "fail-open"
timeout = "30s"
trusted = true
[layer.config]
budget_tokens = 1000
target_tokens = 500
limit_tokens = 1000
chunk_tokens = 400
summary_max_tokens = 100
keep_recent_turns = 2
model = "gpt-4o-mini"
`

// milliPrice is a model's prices in thousandths of a micro-USD per token
// (USD per million tokens × 1000), as providersTOML sets them.
var milliPrice = map[string]struct{ in, read, out int64 }{
	"gpt-4o":      {2500, 1250, 10000},
	"gpt-4o-mini": {150, 75, 600},
}

// A layer's internal completion (compress's summary, on gpt-4o-mini) is
// charged to the caller whose request caused it, on that request's one
// usage record: the record's tokens are every upstream call's, its cost
// the sum of each call at its own model's prices, its charge that sum with
// the tier's spread rounded up once — the fake upstream's own bill of each
// call (WithPromptCaching) is the reference.
func TestInternalCompletionCharged(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithPromptCaching(nil))
	t.Cleanup(fake.Close)
	var acct account
	gw, d := inProcess(t, fake, compressLayer, func(d *data) {
		acct = d.newAccount(t, "acct_internal", store.TierPro, 10*store.MicroUSD, auth.KeySpec{})
	})
	// A 14-turn conversation of ~8,400 tokens, then a question.
	msgs := []map[string]string{{"role": "system", "content": "You are a careful ledger assistant."}}
	for i := range 14 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role,
			"content": fmt.Sprintf("Turn %d: ", i) + strings.Repeat("the ledger posted entry number seven and balanced. ", 48)})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": "So what is the balance now?"})
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "max_tokens": 200, "messages": msgs})

	before := len(fake.Bills())
	a := sendRaw(t, gw.URL, acct.key, "/v1/chat/completions", body)
	if a.status != 200 {
		t.Fatalf("%d %.300s", a.status, a.body)
	}
	bills := fake.Bills()[before:]
	var summaries int
	var costMilli, in, out, read int64
	for _, b := range bills {
		p, ok := milliPrice[b.Model]
		if !ok {
			t.Fatalf("a call to %s, which this test does not price", b.Model)
		}
		if b.Model == "gpt-4o-mini" {
			summaries++
		}
		costMilli += int64(b.Input)*p.in + int64(b.CacheRead)*p.read + int64(b.Output)*p.out
		in, read, out = in+int64(b.Input), read+int64(b.CacheRead), out+int64(b.Output)
	}
	if summaries == 0 {
		t.Fatalf("no summary was made (compress %q %q); calls %+v", a.header.Get("X-Bardo-Compress"), a.header.Get("X-Bardo-Compress-Reason"), bills)
	}
	rs := d.usage(t, acct.id)[a.id]
	if len(rs) != 1 {
		t.Fatalf("%d usage records", len(rs))
	}
	u := rs[0]
	cost := (costMilli + 999) / 1000
	charge := (costMilli*11500 + 10_000_000 - 1) / 10_000_000 // pro: +15 %, rounded up once
	t.Logf("%d upstream calls (%d summaries): in %d, cached %d, out %d; cost %d, charge %d µUSD", len(bills), summaries, in, read, out, cost, charge)
	if u.InputTokens != in || u.CacheReadTokens != read || u.OutputTokens != out {
		t.Errorf("record tokens in %d cached %d out %d; the upstream billed %d %d %d", u.InputTokens, u.CacheReadTokens, u.OutputTokens, in, read, out)
	}
	if u.Cost != cost || u.Charge != charge {
		t.Errorf("record cost %d charge %d; want %d %d", u.Cost, u.Charge, cost, charge)
	}
	// Savings: the direct price is the answer's call with the removed
	// history put back as input at gpt-4o's price, plus the summary at
	// its own cost (so the savings are net of it), less the charge.
	saved, err := strconv.ParseInt(a.header.Get("X-Bardo-Compress-Saved-Tokens"), 10, 64)
	if err != nil || saved <= 0 {
		t.Fatalf("X-Bardo-Compress-Saved-Tokens %q", a.header.Get("X-Bardo-Compress-Saved-Tokens"))
	}
	direct := (costMilli + saved*milliPrice["gpt-4o"].in + 999) / 1000
	if u.Savings != direct-charge {
		t.Errorf("record savings %d; want direct %d − charge %d = %d (%d tokens folded)", u.Savings, direct, charge, direct-charge, saved)
	}
	checkFigures(t, "compressed", a, u)
	if l := d.ledger(t, acct.id); l.charges != u.Charge {
		t.Errorf("the ledger charged %d, the record %d", l.charges, u.Charge)
	}
}

// sendRaw posts a prepared JSON body with key and reads the answer.
func sendRaw(t *testing.T, base, key, path string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := httpClient(1).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, id: resp.Header.Get("X-Bardo-Request-Id")}
	a.body, a.err = io.ReadAll(resp.Body)
	return a
}
