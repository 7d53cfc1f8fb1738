package paywall_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/wire"
)

// perRequest is the exact price of admission(): 21600 micro-USD.
const perRequest = 21600

// budgetRig is a rig whose wallets have budgets (conf), on a clock the
// test moves; payments are signed valid around the clock.
type budgetRig struct {
	*rig
	clock time.Time
	n     int // request ids
}

func newBudgetRig(t *testing.T, conf func(*paywall.Config)) *budgetRig {
	r := newRig(t)
	b := &budgetRig{rig: r, clock: time.Now()}
	r.conf = func(c *paywall.Config) {
		c.Now = func() time.Time { return b.clock }
		c.Budgets = r.st
		conf(c)
	}
	r.open()
	return b
}

// pay admits a payment by key, signed valid around the rig's clock.
func (b *budgetRig) pay(t *testing.T, key *ecdsa.PrivateKey) (gateway.Caller, *wire.Error) {
	t.Helper()
	p := newPayment(t, b.rig, key)
	p.auth.ValidAfter, p.auth.ValidBefore = big.NewInt(b.clock.Unix()-60), big.NewInt(b.clock.Unix()+100)
	return b.keys.Admit(context.Background(), admission(p.headers(t)))
}

// serve closes c's tab with a served answer of its own request id.
func (b *budgetRig) serve(c gateway.Caller) {
	b.n++
	c.Tab.Close(&gateway.Settlement{RequestID: "budget-" + strconv.Itoa(b.n), Status: 200})
}

// payServe pays and serves n requests of key, failing on a refusal.
func (b *budgetRig) payServe(t *testing.T, key *ecdsa.PrivateKey, n int) {
	t.Helper()
	for i := range n {
		c, e := b.pay(t, key)
		if e != nil {
			t.Fatalf("request %d of %d: %+v", i+1, n, e)
		}
		b.serve(c)
	}
}

// refused checks that key's next payment gets the budget's 429: no tab,
// Retry-After to resets, the message naming the budget and the nonce.
func (b *budgetRig) refused(t *testing.T, key *ecdsa.PrivateKey, what string, resets time.Time) {
	t.Helper()
	settled := len(b.fac.Settlements())
	c, e := b.pay(t, key)
	if e == nil || e.Status != 429 || e.Kind != wire.ErrRateLimit || c.Tab != nil {
		t.Fatalf("over the %s budget: %+v (tab %v), want 429 and no tab", what, e, c.Tab)
	}
	if want := (resets.Sub(b.clock) + time.Millisecond - 1).Milliseconds(); e.RetryAfterMs != want {
		t.Errorf("Retry-After %d ms, want %d (to %s)", e.RetryAfterMs, want, resets)
	}
	for _, s := range []string{"wallet's " + what + " budget", "resets at " + resets.Format(time.RFC3339), "Nothing was charged", "sign a new one"} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message %q does not say %q", e.Message, s)
		}
	}
	if n := len(b.fac.Settlements()); n != settled {
		t.Errorf("a refused payment settled (%d -> %d)", settled, n)
	}
}

func tomorrow(t time.Time) time.Time {
	return time.Date(t.UTC().Year(), t.UTC().Month(), t.UTC().Day()+1, 0, 0, 0, 0, time.UTC)
}

func nextMonth(t time.Time) time.Time {
	return time.Date(t.UTC().Year(), t.UTC().Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

func tenantOf(key *ecdsa.PrivateKey) string {
	return "wallet:" + strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
}

// Over the day's budget: 429 with Retry-After to the next UTC midnight,
// nothing settled; another wallet is not affected; the next day serves
// again.
func TestWalletDayBudget(t *testing.T) {
	b := newBudgetRig(t, func(c *paywall.Config) { c.DayBudget = 2*perRequest + 100 })
	key, other := wallet(t), wallet(t)
	b.payServe(t, key, 2)
	b.refused(t, key, "daily", tomorrow(b.clock))
	b.payServe(t, other, 1)
	if n := len(b.fac.Settlements()); n != 3 {
		t.Fatalf("settled %d, want 3", n)
	}
	// The next day: its spend starts at 0. (Admitted, not served: the
	// local facilitator checks the authorization's window on the real
	// clock.)
	b.clock = tomorrow(b.clock).Add(time.Second)
	for i := range 2 {
		if _, e := b.pay(t, key); e != nil {
			t.Fatalf("the next day, request %d: %+v", i+1, e)
		}
	}
	b.refused(t, key, "daily", tomorrow(b.clock))
}

// The month's budget counts every day of the month; over both, the
// month's (which clears last) is named.
func TestWalletMonthBudget(t *testing.T) {
	b := newBudgetRig(t, func(c *paywall.Config) { c.MonthBudget = perRequest })
	key := wallet(t)
	b.payServe(t, key, 1)
	b.refused(t, key, "monthly", nextMonth(b.clock))

	b = newBudgetRig(t, func(c *paywall.Config) { c.DayBudget, c.MonthBudget = perRequest, perRequest })
	b.payServe(t, key, 1)
	b.refused(t, key, "monthly", nextMonth(b.clock))
	// A price over the whole budget: the message says to ask for less.
	b = newBudgetRig(t, func(c *paywall.Config) { c.DayBudget = perRequest - 1 })
	if _, e := b.pay(t, key); e == nil || e.Status != 429 || !strings.Contains(e.Message, "fewer output tokens") {
		t.Fatalf("a price over the whole budget: %+v", e)
	}
}

// Payments arriving at once cannot overshoot: 16 at once with room for 5
// admit exactly 5 (each held from admission until its tab closes).
func TestWalletBudgetConcurrent(t *testing.T) {
	b := newBudgetRig(t, func(c *paywall.Config) { c.DayBudget = 6 * perRequest })
	key := wallet(t)
	b.payServe(t, key, 1) // the wallet's state is loaded; 5 fit after it
	var hs []*payment
	for range 16 {
		p := newPayment(t, b.rig, key)
		p.auth.ValidAfter, p.auth.ValidBefore = big.NewInt(b.clock.Unix()-60), big.NewInt(b.clock.Unix()+100)
		hs = append(hs, p)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	callers := make([]gateway.Caller, 16)
	errs := make([]*wire.Error, 16)
	for i, p := range hs {
		h := p.headers(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			callers[i], errs[i] = b.keys.Admit(context.Background(), admission(h))
		}()
	}
	close(start)
	wg.Wait()
	admitted := 0
	for i, e := range errs {
		switch {
		case e == nil:
			admitted++
			b.serve(callers[i])
		case e.Status != 429:
			t.Errorf("payment %d: %+v, want 429", i, e)
		}
	}
	if admitted != 5 {
		t.Fatalf("admitted %d of 16 with room for 5", admitted)
	}
	if n := len(b.fac.Settlements()); n != 6 {
		t.Fatalf("settled %d, want 6", n)
	}
	b.refused(t, key, "daily", tomorrow(b.clock))
}

// A restart keeps the day's spend: it is summed from the wallet's usage
// records on its first request.
func TestWalletBudgetRestart(t *testing.T) {
	b := newBudgetRig(t, func(c *paywall.Config) { c.DayBudget = 3*perRequest - 1 })
	key := wallet(t)
	b.payServe(t, key, 2)
	b.open() // a restart
	b.refused(t, key, "daily", tomorrow(b.clock))
}

// A wallet's own budget (the store's, scope account, subject its tenant)
// overrides the default; one set later is read within the refresh.
func TestWalletBudgetOverride(t *testing.T) {
	b := newBudgetRig(t, func(c *paywall.Config) { c.DayBudget = perRequest })
	rich, plain := wallet(t), wallet(t)
	ctx := context.Background()
	if err := b.st.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: tenantOf(rich),
		Period: store.PeriodDay, Limit: 3 * perRequest}); err != nil {
		t.Fatal(err)
	}
	b.payServe(t, rich, 3)
	b.refused(t, rich, "daily", tomorrow(b.clock))
	b.payServe(t, plain, 1)
	b.refused(t, plain, "daily", tomorrow(b.clock))

	// The operator raises it: seen once the cached budgets are older
	// than the refresh (2 s).
	if err := b.st.SetBudget(ctx, store.SpendBudget{Scope: store.ScopeAccount, Subject: tenantOf(rich),
		Period: store.PeriodDay, Limit: 4 * perRequest}); err != nil {
		t.Fatal(err)
	}
	b.clock = b.clock.Add(3 * time.Second)
	b.payServe(t, rich, 1)
	b.refused(t, rich, "daily", tomorrow(b.clock))
}

// upto holds its maximum while in flight and counts what it settled.
func TestWalletBudgetUpto(t *testing.T) {
	r := newRig(t)
	r.conf = func(c *paywall.Config) { c.UptoFacilitator, c.DayBudget = r.fac.Address, 30000 }
	r.open()
	key := wallet(t)
	c, e := r.keys.Admit(context.Background(), admission(newUpto(t, r, key).headers(t)))
	if e != nil {
		t.Fatal(e)
	}
	// 21600 held of 30000: another maximum does not fit.
	if _, e := r.keys.Admit(context.Background(), admission(newUpto(t, r, key).headers(t))); e == nil || e.Status != 429 {
		t.Fatalf("second upto while the first is held: %+v", e)
	}
	c.Tab.Close(served(100, 50)) // 1260 settled
	c, e = r.keys.Admit(context.Background(), admission(newUpto(t, r, key).headers(t)))
	if e != nil {
		t.Fatalf("1260 spent + 21600 held fits 30000: %+v", e)
	}
	s := served(100, 50)
	s.RequestID = "req2"
	c.Tab.Close(s)
	// 2520 spent: 2520 + 21600 fits; 3 held would not.
	if n := len(r.fac.Settlements()); n != 2 {
		t.Fatalf("settled %d, want 2", n)
	}
}

// Through the daemon ([x402] wallet_day_budget): a payment over the
// wallet's day budget is the dialect's 429 with Retry-After, nothing
// served or settled, and both SDKs see a rate-limit error.
func TestGatewayWalletBudget(t *testing.T) {
	e := startE2EWith(t, t.TempDir(), "wallet_day_budget = \"0.002\"\n")
	ctx := t.Context()
	key := wallet(t)
	var resp *http.Response
	if _, err := e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithResponseInto(&resp)); err == nil {
		t.Fatal("served without payment")
	}
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatal(err)
	}
	price, _ := strconv.ParseInt(pr.Accepts[0].Amount, 10, 64)
	if price > 2000 || 2*price <= 2000 {
		t.Fatalf("the test wants one payment of %d to fit in 2000 and two not to", price)
	}
	if _, err := e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, sign(t, resp, key))); err != nil {
		t.Fatalf("first paid request: %v", err)
	}
	var refused *http.Response
	_, err = e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, sign(t, resp, key)),
		anthropicoption.WithResponseInto(&refused))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 || !strings.Contains(ae.Error(), "rate_limit_error") ||
		!strings.Contains(ae.Error(), "daily budget") {
		t.Fatalf("over the budget (Messages): %v", err)
	}
	ra, err := strconv.Atoi(refused.Header.Get("Retry-After"))
	if until := time.Until(tomorrow(time.Now())); err != nil || ra < 1 || time.Duration(ra)*time.Second > until+2*time.Second {
		t.Errorf("Retry-After %q, want the seconds to midnight UTC (%s)", refused.Header.Get("Retry-After"), until)
	}
	// Chat Completions' body is priced apart: its own 402 first.
	chat := openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5", MaxTokens: openai.Int(64),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	var oresp *http.Response
	if _, err := e.oa.Chat.Completions.New(ctx, chat, openaioption.WithResponseInto(&oresp)); err == nil {
		t.Fatal("served without payment")
	}
	var oe *openai.Error
	_, err = e.oa.Chat.Completions.New(ctx, chat, openaioption.WithHeader(x402.HeaderPaymentSignature, sign(t, oresp, key)))
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Type != "rate_limit_error" || !strings.Contains(oe.Message, "daily budget") {
		t.Fatalf("over the budget (Chat Completions): %v", err)
	}
	if n := len(e.fac.Settlements()); n != 1 {
		t.Fatalf("%d settlements, want 1", n)
	}
	// Another wallet is not affected.
	if _, err := e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, sign(t, resp, wallet(t)))); err != nil {
		t.Fatalf("another wallet: %v", err)
	}
}

// A wallet without budgets is not summed on first sight; a budget set for
// it later counts what it already spent today (from its usage records).
func TestWalletBudgetSetLater(t *testing.T) {
	b := newBudgetRig(t, func(*paywall.Config) {})
	key := wallet(t)
	b.payServe(t, key, 2)
	if err := b.st.SetBudget(context.Background(), store.SpendBudget{Scope: store.ScopeAccount, Subject: tenantOf(key),
		Period: store.PeriodDay, Limit: 3*perRequest - 1}); err != nil {
		t.Fatal(err)
	}
	b.clock = b.clock.Add(3 * time.Second)
	b.refused(t, key, "daily", tomorrow(b.clock))
}
