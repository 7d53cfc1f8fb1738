package billingtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
)

// Exactly N of M concurrent requests pass a key's rate limit of N a
// minute; the others are refused with 429, Retry-After and their dialect's
// rate-limit error, and reach no upstream. Another key of the same account
// has its own window.
func TestRateLimitExactlyN(t *testing.T) {
	const n, m = 5, 24
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey),
		fakeupstream.WithDefaultBehaviour(fakeupstream.Latency(50*time.Millisecond)))
	t.Cleanup(fake.Close)
	var acct account
	var other string
	gw, _ := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_rl", store.TierPro, 10*store.MicroUSD, auth.KeySpec{RateLimit: n})
		tok, _, err := d.auth.Create(context.Background(), acct.id, auth.KeySpec{Name: "other", RateLimit: n})
		if err != nil {
			t.Fatal(err)
		}
		other = tok
	})
	client := httpClient(m)
	answers := make([]answer, m)
	var wg sync.WaitGroup
	for i := range m {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := call{dialect: dialect(i % 2), stream: i%3 == 0, maxTokens: 64, prompt: fmt.Sprintf("rate %d", i)}
			c.model = "gpt-4o-mini"
			if c.dialect == anthropicD {
				c.model = "claude-haiku-4-5"
			}
			answers[i] = send(context.Background(), client, gw.URL, acct.key, c)
		}()
	}
	wg.Wait()
	passed := 0
	for i, a := range answers {
		d := dialect(i % 2)
		switch a.status {
		case 200:
			passed++
		case 429:
			ra, err := strconv.Atoi(a.header.Get("Retry-After"))
			if err != nil || ra < 1 || ra > 60 {
				t.Errorf("%s: Retry-After %q", a.id, a.header.Get("Retry-After"))
			}
			typ := "rate_limit_error"
			if d == openAI {
				typ = "" // OpenAI's type for a 429 varies (requests, tokens); the object is checked
			}
			checkDialectError(t, "rate limited", d, a, typ)
		default:
			t.Errorf("%s: status %d: %.200s", a.id, a.status, a.body)
		}
	}
	if passed != n {
		t.Errorf("%d of %d concurrent requests passed a limit of %d a minute", passed, m, n)
	}
	if got := fake.Count("/v1/messages") + fake.Count("/v1/chat/completions"); got != n {
		t.Errorf("the upstream served %d requests, want %d", got, n)
	}
	// The account's other key is not limited by this one's window.
	if a := send(context.Background(), client, gw.URL, other, call{dialect: openAI, model: "gpt-4o-mini", prompt: "other key"}); a.status != 200 {
		t.Errorf("another key of the account: %d %.200s", a.status, a.body)
	}
}

// A key's daily budget: a request whose estimate would pass it is
// downgraded to a cheaper model of the same family (X-Bardo-Degraded
// budget-downgrade:…, served by that model, charged at its price), and
// once no model can serve within the budget the request is blocked with
// 429 and a Retry-After to the next reset (the next UTC midnight). The
// key never spends past its budget.
func TestBudgetDowngradeThenBlock(t *testing.T) {
	// ~1,000 output tokens an answer, so each request spends about what it
	// reserves and the budget runs out in a few requests.
	long := strings.Repeat("A budget is a promise. ", 174)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey),
		fakeupstream.WithDefaultBehaviour(fakeupstream.Reply(long)))
	t.Cleanup(fake.Close)
	// Opus holds ⌈(in×15 + 1000×75) × 1.15⌉ ≈ $0.0863 — more than the whole
	// budget; Sonnet ≈ $0.0173, Haiku ≈ $0.0058 (pro).
	const budget = 45_000 // $0.045 a day: two Sonnet answers, one Haiku, then nothing fits
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_budget", store.TierPro, 10*store.MicroUSD, auth.KeySpec{RateLimit: 1000})
		if err := d.st.SetBudget(context.Background(), store.SpendBudget{
			Scope: store.ScopeKey, Subject: acct.keyID, Period: store.PeriodDay, Limit: budget}); err != nil {
			t.Fatal(err)
		}
	})
	client := httpClient(1)
	var served []string // the model that served each request, in order
	blocked := false
	for i := 0; i < 12 && !blocked; i++ {
		c := call{dialect: dialect(i % 2), stream: i%4 >= 2, maxTokens: 1000, model: "claude-opus-4-1",
			prompt: fmt.Sprintf("budget request %d", i)}
		a := send(context.Background(), client, gw.URL, acct.key, c)
		switch a.status {
		case 200:
			model := a.header.Get("X-Bardo-Model")
			served = append(served, model)
			want := "budget-downgrade:claude-opus-4-1->" + model
			if deg := a.header.Get("X-Bardo-Degraded"); !strings.Contains(deg, want) {
				t.Errorf("request %d served by %s: X-Bardo-Degraded %q, want %q", i, model, deg, want)
			}
			last := fake.Last()
			if !strings.Contains(string(last.Body), `"model":"`+model+`"`) {
				t.Errorf("request %d: the upstream was asked for %.200s, not %s", i, last.Body, model)
			}
			if rs := d.usage(t, acct.id)[a.id]; len(rs) != 1 || rs[0].Model != model {
				t.Errorf("request %d: records %+v, want one for %s", i, rs, model)
			} else {
				checkFigures(t, "downgraded", a, rs[0])
			}
		case 429:
			blocked = true
			ra, err := strconv.Atoi(a.header.Get("Retry-After"))
			now := time.Now().UTC()
			untilMidnight := int(now.Truncate(24*time.Hour).Add(24*time.Hour).Sub(now).Seconds()) + 1
			if err != nil || ra < untilMidnight-120 || ra > untilMidnight+120 {
				t.Errorf("blocked: Retry-After %q, want about %d s (the next UTC midnight)", a.header.Get("Retry-After"), untilMidnight)
			}
			checkDialectError(t, "blocked", c.dialect, a, "")
		default:
			t.Fatalf("request %d: status %d: %.300s", i, a.status, a.body)
		}
	}
	t.Logf("served by %v, then blocked %v", served, blocked)
	if !blocked {
		t.Fatal("the budget never blocked")
	}
	if len(served) == 0 || served[0] != "claude-sonnet-4-5" {
		t.Errorf("the first request was served by %v, want a downgrade to claude-sonnet-4-5", served)
	}
	if !strings.Contains(strings.Join(served, ","), "claude-haiku-4-5") {
		t.Errorf("never downgraded to claude-haiku-4-5 before blocking: %v", served)
	}
	for i := 1; i < len(served); i++ {
		if served[i] == "claude-sonnet-4-5" && served[i-1] == "claude-haiku-4-5" {
			t.Errorf("back to a dearer model after a cheaper one: %v", served)
		}
	}
	l := d.ledger(t, acct.id)
	if l.charges > budget {
		t.Errorf("the key spent %s of a %s budget", fmtUSD(l.charges), fmtUSD(budget))
	}
}

// The account's hourly token allowance ([billing.tiers.free]
// tokens_per_hour): every answer shows X-Remaining-Tokens, the allowance
// less the tokens of the hour's usage records; once it is used up the next
// request is refused with 429 and a Retry-After to the next hour, in its
// dialect, before the upstream.
func TestHourlyAllowance(t *testing.T) {
	const allowance = 3000
	// ~1,000 output tokens an answer.
	long := strings.Repeat("Tokens are counted. ", 200)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithDefaultBehaviour(fakeupstream.Reply(long)))
	t.Cleanup(fake.Close)
	var acct account
	gw, d := inProcess(t, fake, "\n[billing.tiers.free]\ntokens_per_hour = "+strconv.Itoa(allowance)+"\n", func(d *data) {
		acct = d.newAccount(t, "acct_allowance", store.TierFree, 10*store.MicroUSD, auth.KeySpec{})
	})
	client := httpClient(1)
	for i := 0; i < 8; i++ {
		c := call{dialect: dialect(i % 2), stream: i%4 >= 2, maxTokens: 1000, prompt: fmt.Sprintf("allowance %d", i)}
		c.model = "gpt-4o-mini"
		if c.dialect == anthropicD {
			c.model = "claude-haiku-4-5"
		}
		n := fake.Count(c.dialect.path())
		a := send(context.Background(), client, gw.URL, acct.key, c)
		var used int64
		for _, rs := range d.usage(t, acct.id) {
			for _, u := range rs {
				used += u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
			}
		}
		if a.status == 429 {
			if used < allowance {
				t.Errorf("refused with %d of %d tokens used", used, allowance)
			}
			ra, err := strconv.Atoi(a.header.Get("Retry-After"))
			if err != nil || ra < 1 || ra > 3600 {
				t.Errorf("Retry-After %q, want up to the next hour", a.header.Get("Retry-After"))
			}
			checkDialectError(t, "allowance", c.dialect, a, "")
			if fake.Count(c.dialect.path()) != n {
				t.Error("a refused request reached the upstream")
			}
			if got := a.header.Get("X-Remaining-Tokens"); got != "0" {
				t.Errorf("refused: X-Remaining-Tokens %q, want 0", got)
			}
			return
		}
		if a.status != 200 || a.err != nil {
			t.Fatalf("request %d: %d %v %.200s", i, a.status, a.err, a.body)
		}
		rem := a.header.Get("X-Remaining-Tokens")
		if c.stream {
			rem = a.trailer.RemainingTokens
		}
		if want := strconv.FormatInt(max(allowance-used, 0), 10); rem != want {
			t.Errorf("request %d (stream %v): remaining tokens %q, want %s (%d used)", i, c.stream, rem, want, used)
		}
	}
	t.Fatal("the allowance never ran out")
}

// 64 concurrent requests against a key's daily budget, twice: holds count
// against the budget while requests run, so concurrency cannot overspend
// it — some are served by the model asked, some downgraded to its cheaper
// sibling once the dearer one no longer fits, the rest refused with 429
// and a Retry-After; the key's charges never pass the budget.
func TestBudgetUnderConcurrency(t *testing.T) {
	long := strings.Repeat("Budgets hold under load. ", 80) // ~500 tokens
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey),
		fakeupstream.WithDefaultBehaviour(fakeupstream.Behaviour{Text: long, Latency: 100 * time.Millisecond}))
	t.Cleanup(fake.Close)
	const budget = 30_000 // about five gpt-4o answers
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_budget_load", store.TierPro, 10*store.MicroUSD, auth.KeySpec{RateLimit: 100_000})
		if err := d.st.SetBudget(context.Background(), store.SpendBudget{
			Scope: store.ScopeKey, Subject: acct.keyID, Period: store.PeriodDay, Limit: budget}); err != nil {
			t.Fatal(err)
		}
	})
	client := httpClient(64)
	byModel := map[string]int{}
	refused := 0
	for round := range 2 {
		answers := make([]answer, 64)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = send(context.Background(), client, gw.URL, acct.key, call{dialect: dialect(i % 2), stream: i%4 >= 2,
					model: "gpt-4o", maxTokens: 500, prompt: fmt.Sprintf("budget round %d request %d", round, i)})
			}()
		}
		wg.Wait()
		for _, a := range answers {
			switch a.status {
			case 200:
				byModel[a.header.Get("X-Bardo-Model")]++
			case 429:
				refused++
				if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 {
					t.Errorf("%s: Retry-After %q", a.id, a.header.Get("Retry-After"))
				}
			default:
				t.Errorf("%s: %d %.200s", a.id, a.status, a.body)
			}
		}
	}
	l := d.ledger(t, acct.id)
	t.Logf("served %v, refused %d; charged %s of a %s budget", byModel, refused, fmtUSD(l.charges), fmtUSD(budget))
	if l.charges > budget {
		t.Errorf("the key spent %s of a %s budget", fmtUSD(l.charges), fmtUSD(budget))
	}
	if byModel["gpt-4o"] == 0 || refused == 0 {
		t.Errorf("want requests served and refused: %v, %d refused", byModel, refused)
	}
	recs := d.usage(t, acct.id)
	if len(recs) != 128 {
		t.Errorf("%d usage records for 128 requests", len(recs))
	}
}

// A key's lifetime spend limit (`bardo keys create -spend-limit`): once no
// model fits what is left of it, 402 (only the operator can lift it, so no
// Retry-After), and the key never spends past it. Another key of the same
// account still works.
func TestKeySpendLimit(t *testing.T) {
	long := strings.Repeat("Spend limits are for life. ", 150) // ~1,000 tokens
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithDefaultBehaviour(fakeupstream.Reply(long)))
	t.Cleanup(fake.Close)
	const limit = 20_000
	var acct account
	var other string
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_spend_limit", store.TierPro, 10*store.MicroUSD, auth.KeySpec{SpendLimit: limit})
		tok, _, err := d.auth.Create(context.Background(), acct.id, auth.KeySpec{Name: "unlimited"})
		if err != nil {
			t.Fatal(err)
		}
		other = tok
	})
	client := httpClient(1)
	served := 0
	for i := 0; i < 10; i++ {
		c := call{dialect: dialect(i % 2), maxTokens: 1000, model: "claude-haiku-4-5", prompt: fmt.Sprintf("spend %d", i)}
		a := send(context.Background(), client, gw.URL, acct.key, c)
		if a.status == 200 {
			served++
			continue
		}
		if a.status != 402 {
			t.Fatalf("request %d: %d %.300s", i, a.status, a.body)
		}
		if ra := a.header.Get("Retry-After"); ra != "" {
			t.Errorf("a lifetime limit is not retried, yet Retry-After %q", ra)
		}
		checkDialectError(t, "spend limit", c.dialect, a, "")
		break
	}
	l := d.ledger(t, acct.id)
	t.Logf("%d served, then 402; charged %s of %s", served, fmtUSD(l.charges), fmtUSD(limit))
	if served == 0 || served == 10 || l.charges > limit {
		t.Errorf("%d served, charged %s of a %s limit", served, fmtUSD(l.charges), fmtUSD(limit))
	}
	if a := send(context.Background(), client, gw.URL, other, call{dialect: openAI, model: "claude-haiku-4-5", maxTokens: 1000, prompt: "other key"}); a.status != 200 {
		t.Errorf("the account's other key: %d %.200s", a.status, a.body)
	}
}
