package billingtest

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
)

// directProvider is a provider the caller pays with its own key
// (X-Bardo-Upstream-Key): models direct/*.
func directProvider(fakeURL string) string {
	return `
[[provider]]
name = "mine"
plugin = "openai-compatible.wasm"
base_url = "` + fakeURL + `/v1"
models = ["direct/*"]
direct = true
traits = { payment = "api_key" }
trusted = true
`
}

// Every way a paid request can end is settled exactly once, through the
// real gateway: a served answer in each dialect, one answered in the other
// dialect (translated usage), an upstream that fails, a stream the
// upstream cuts, a stream whose client goes away, a direct provider
// (the caller's own key: no charge), count_tokens (free). Each has exactly
// one usage record; only what a provider served is charged; the ledger
// balances to the unit.
func TestEveryPathSettledOnce(t *testing.T) {
	const ownKey = "sk-caller-own-provider-key-42"
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	own := fakeupstream.New(fakeupstream.WithAPIKey(ownKey))
	t.Cleanup(own.Close)
	const topUp = 5 * store.MicroUSD
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_paths", store.TierGolem, topUp, auth.KeySpec{})
	})
	_ = gw.Rewrite(t, providersTOML(fake.URL())+directProvider(own.URL())+keysTOML(d.dir))
	client := httpClient(2)
	ctx := context.Background()

	type outcome struct {
		name    string
		a       answer
		charged bool // a provider served it: charged > 0
	}
	var outs []outcome
	run := func(name string, c call, charged bool, check func(a answer)) {
		t.Helper()
		a := send(ctx, client, gw.URL, acct.key, c)
		if a.id == "" {
			t.Errorf("%s: no request id (status %d, %v)", name, a.status, a.err)
			return
		}
		if check != nil {
			check(a)
		}
		outs = append(outs, outcome{name, a, charged})
	}
	ok := func(name string) func(a answer) {
		return func(a answer) {
			if a.status != 200 || a.err != nil {
				t.Errorf("%s: %d %v %.300s", name, a.status, a.err, a.body)
			}
		}
	}
	run("openai json", call{dialect: openAI, model: "gpt-4o-mini", prompt: "served in OpenAI"}, true, ok("openai json"))
	run("anthropic stream", call{dialect: anthropicD, model: "claude-haiku-4-5", prompt: "served in Anthropic", stream: true}, true, ok("anthropic stream"))
	run("openai caller, claude upstream", call{dialect: openAI, model: "claude-haiku-4-5", prompt: "translated fake:cached=40 fake:cache-write=8"}, true, ok("translated"))
	run("anthropic caller, openai upstream, stream", call{dialect: anthropicD, model: "gpt-4o-mini", prompt: "translated back fake:cached=16", stream: true}, true, ok("translated back"))
	run("upstream fails", call{dialect: openAI, model: "gpt-4o-mini", prompt: "fail fake:status=500"}, false, func(a answer) {
		if a.status < 500 {
			t.Errorf("upstream fails: status %d", a.status)
		}
	})
	run("direct provider", call{dialect: openAI, model: "direct/gpt-4o", prompt: "my own key", header: []string{"X-Bardo-Upstream-Key", ownKey}}, false, func(a answer) {
		if a.status != 200 || a.header.Get("X-Bardo-Cost") != "direct" {
			t.Errorf("direct: %d, X-Bardo-Cost %q: %.300s", a.status, a.header.Get("X-Bardo-Cost"), a.body)
		}
	})
	// A stream the upstream cuts after a few frames: the caller gets an
	// error event; whatever the engine decides to charge, it is settled
	// once and the ledger agrees.
	cut := send(ctx, client, gw.URL, acct.key, call{dialect: anthropicD, model: "claude-haiku-4-5", stream: true,
		prompt: "a long answer that breaks fake:cut=3"})
	if cut.id == "" || cut.status != 200 {
		t.Errorf("cut stream: %d %v", cut.status, cut.err)
	}

	// A client that goes away mid-stream.
	gone := goAway(t, gw.URL, acct.key, call{dialect: openAI, model: "gpt-4o-mini", stream: true,
		prompt: strings.Repeat("word ", 60) + "fake:drip=30ms"})

	// count_tokens: admitted, free.
	req, _ := http.NewRequest("POST", gw.URL+"/v1/messages/count_tokens",
		strings.NewReader(`{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"count me"}]}`))
	req.Header.Set("Authorization", "Bearer "+acct.key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("count_tokens: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// The records: the client that went away is settled when the gateway
	// notices, so wait for its record (bounded).
	var recs map[string][]store.Usage
	for deadline := time.Now().Add(10 * time.Second); ; {
		recs = d.usage(t, acct.id)
		if len(recs[gone]) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(recs[gone]); n != 1 {
		t.Errorf("the stream whose client went away has %d usage records", n)
	} else {
		t.Logf("client gone: status %d, charge %d, output tokens %d", recs[gone][0].Status, recs[gone][0].Charge, recs[gone][0].OutputTokens)
	}
	if rs := recs[cut.id]; len(rs) != 1 {
		t.Errorf("the cut stream has %d usage records", len(rs))
	} else {
		t.Logf("cut stream: status %d, charge %d, output tokens %d; shown %q", rs[0].Status, rs[0].Charge, rs[0].OutputTokens, cut.trailer.Cost)
		if cut.hasTrailer && cut.trailer.Cost != fmtUSD(rs[0].Charge) {
			t.Errorf("cut stream: shown %s, charged %s", cut.trailer.Cost, fmtUSD(rs[0].Charge))
		}
	}
	for _, o := range outs {
		rs := recs[o.a.id]
		if len(rs) != 1 {
			t.Errorf("%s: %d usage records", o.name, len(rs))
			continue
		}
		u := rs[0]
		if o.charged != (u.Charge > 0) {
			t.Errorf("%s: charged %d (status %d)", o.name, u.Charge, u.Status)
		}
		if o.charged {
			checkFigures(t, o.name, o.a, u)
		}
	}
	if rs := recs[outs[2].a.id]; len(rs) == 1 && (rs[0].CacheReadTokens != 40 || rs[0].CacheWriteTokens != 8) {
		t.Errorf("translated: cache read %d write %d, want 40 8", rs[0].CacheReadTokens, rs[0].CacheWriteTokens)
	}
	if rs := recs[outs[3].a.id]; len(rs) == 1 && rs[0].CacheReadTokens != 16 {
		t.Errorf("translated back: cache read %d, want 16", rs[0].CacheReadTokens)
	}
	l := d.ledger(t, acct.id)
	var recorded int64
	for id, rs := range recs {
		if len(rs) != 1 {
			t.Errorf("%s: %d records", id, len(rs))
		}
		recorded += rs[0].Charge
	}
	if recorded != l.charges || l.balance != topUp-l.charges {
		t.Errorf("records charge %d, ledger %d, balance %d of %d", recorded, l.charges, l.balance, topUp)
	}
}

// goAway starts a stream, reads its first event and closes the connection;
// it returns the request id.
func goAway(t *testing.T, base, key string, c call) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+c.dialect.path(), bytes.NewReader(c.body()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Bardo-Request-Id")
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "data: ") {
			break
		}
	}
	cancel()
	resp.Body.Close()
	return id
}
