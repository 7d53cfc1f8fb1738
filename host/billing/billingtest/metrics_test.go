package billingtest

import (
	"context"
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

// metricValue reads one sample of the gateway's /metrics (the line that
// starts with series, e.g. `bardo_account_available_usd{account="a"}`).
func metricValue(t *testing.T, base, series string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// The remaining-money gauges on /metrics agree with what the caller's own
// /v1/balance says after paid requests: the available balance, and the
// key's daily budget less what it spent.
func TestRemainingMetricsAgreeWithBalance(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	var acct account
	gw, d := inProcess(t, fake, "", func(d *data) {
		acct = d.newAccount(t, "acct_metrics", store.TierPro, 5*store.MicroUSD, auth.KeySpec{})
	})
	const budget = 3 * store.MicroUSD
	keys, err := d.st.ListKeys(context.Background(), acct.id)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys: %v %v", keys, err)
	}
	if err := d.st.SetBudget(context.Background(), store.SpendBudget{Scope: store.ScopeKey, Subject: keys[0].ID, Period: store.PeriodDay, Limit: budget}); err != nil {
		t.Fatal(err)
	}
	gw.Daemon.Meter.Invalidate(acct.id)
	client := httpClient(1)
	for i := 0; i < 4; i++ {
		c := call{dialect: dialect(i % 2), maxTokens: 200, model: "claude-haiku-4-5", prompt: fmt.Sprintf("metrics %d", i)}
		if a := send(context.Background(), client, gw.URL, acct.key, c); a.status != 200 {
			t.Fatalf("request %d: %d %.300s", i, a.status, a.body)
		}
	}
	var bal struct {
		Available int64 `json:"available_micros"`
		Today     int64 `json:"spent_today_micros"`
	}
	getJSON(t, gw.URL+"/v1/balance", acct.key, &bal) // waits for the commits
	if bal.Today == 0 {
		t.Fatal("nothing spent")
	}
	usd := func(m int64) float64 { return float64(m) / float64(store.MicroUSD) }
	got, ok := metricValue(t, gw.URL, `bardo_account_available_usd{account="acct_metrics"}`)
	if !ok || got != usd(bal.Available) {
		t.Errorf("available: /metrics %v (found %v), /v1/balance %v", got, ok, usd(bal.Available))
	}
	got, ok = metricValue(t, gw.URL, `bardo_budget_remaining_usd{period="day",scope="key",subject="`+keys[0].ID+`"}`)
	if !ok || got != usd(budget-bal.Today) {
		t.Errorf("key's day budget left: /metrics %v (found %v), want %v", got, ok, usd(budget-bal.Today))
	}
}
