//go:build !wasip1

package dashboard_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/dashboard"
)

// The login hands out a session cookie (httpOnly, Secure, SameSite=Strict,
// a random id, not the token); the page and the API refuse without it or
// the bearer token; logout ends it.
func TestLoginGuardsPageAndAPI(t *testing.T) {
	e := start(t)
	u := e.g.URL

	resp, err := noRedirect.Get(u + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 303 || !strings.HasSuffix(resp.Header.Get("Location"), "/dashboard/login") {
		t.Fatalf("anonymous /dashboard: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, api := range []string{"live", "history", "events", "accounts"} {
		if code := getJSON(t, noRedirect, u+"/dashboard/api/"+api, nil, nil); code != 401 {
			t.Fatalf("anonymous api/%s: %d", api, code)
		}
		if code := getJSON(t, noRedirect, u+"/dashboard/api/"+api, map[string]string{"Cookie": dashboard.CookieName + "=forged"}, nil); code != 401 {
			t.Fatalf("forged cookie api/%s: %d", api, code)
		}
	}
	if code := getJSON(t, noRedirect, u+"/dashboard/api/live", map[string]string{"Authorization": "Bearer " + adminToken}, nil); code != 200 {
		t.Fatalf("bearer api/live: %d", code)
	}

	bad := e.login(t, noRedirect, "wrong")
	if bad.StatusCode != 303 || !strings.Contains(bad.Header.Get("Location"), "failed") || len(bad.Cookies()) != 0 {
		t.Fatalf("wrong token: %d %q cookies %v", bad.StatusCode, bad.Header.Get("Location"), bad.Cookies())
	}
	ok := e.login(t, noRedirect, adminToken)
	var c *http.Cookie
	for _, k := range ok.Cookies() {
		if k.Name == dashboard.CookieName {
			c = k
		}
	}
	if ok.StatusCode != 303 || c == nil {
		t.Fatalf("login: %d, cookies %v", ok.StatusCode, ok.Cookies())
	}
	if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/dashboard" || c.MaxAge <= 0 {
		t.Fatalf("cookie attributes: %+v", c)
	}
	if strings.Contains(c.Value, adminToken) || len(c.Value) < 40 {
		t.Fatalf("cookie value %q is not a random session id", c.Value)
	}
	cookie := map[string]string{"Cookie": c.Name + "=" + c.Value}
	for _, api := range []string{"live", "history?range=24h", "events", "accounts"} {
		if code := getJSON(t, noRedirect, u+"/dashboard/api/"+api, cookie, nil); code != 200 {
			t.Fatalf("logged-in api/%s: %d", api, code)
		}
	}
	req, _ := http.NewRequest("GET", u+"/dashboard", nil)
	req.Header.Set("Cookie", cookie["Cookie"])
	page, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(page.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("page: %d, CSP %q", page.StatusCode, page.Header.Get("Content-Security-Policy"))
	}
	if code := getJSON(t, noRedirect, u+"/dashboard/api/history?range=1y", cookie, nil); code != 400 {
		t.Fatalf("bad range: %d", code)
	}

	req, _ = http.NewRequest("POST", u+"/dashboard/logout", nil)
	req.Header.Set("Cookie", cookie["Cookie"])
	out, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if code := getJSON(t, noRedirect, u+"/dashboard/api/live", cookie, nil); code != 401 {
		t.Fatalf("after logout: %d", code)
	}
}

// After a scripted load the dashboard's figures equal what /metrics
// exposes, and the history's rollups hold every billed request.
func TestFiguresAgreeWithMetrics(t *testing.T) {
	e := start(t)
	for range 2 {
		e.load(t)
	}
	bearer := map[string]string{"Authorization": "Bearer " + adminToken}
	// Streams settle once their writer is done, and usage is group-
	// committed: wait (bounded) until both have caught up.
	// Providers are health snapshots, whose state reads back as text.
	var live struct {
		dashboard.Live
		Providers []map[string]any `json:"providers"`
	}
	eventually(t, 10*time.Second, "metrics and page agree", func() error {
		mfs := e.scrape(t)
		if getJSON(t, noRedirect, e.g.URL+"/dashboard/api/live", bearer, &live) != 200 {
			return fmt.Errorf("api/live refused")
		}
		for _, c := range []struct {
			what       string
			page, want float64
		}{
			{"requests", live.Requests.Total, sum(mfs, "bardo_requests_total")},
			{"errors", live.Errors.Total, sum(mfs, "bardo_errors_total")},
			{"cost", live.Money.Cost, sum(mfs, "bardo_cost_usd_total")},
			{"charge", live.Money.Charge, sum(mfs, "bardo_charge_usd_total")},
			{"direct", live.Money.Direct, sum(mfs, "bardo_direct_cost_usd_total")},
			{"answers", live.Latency.Count, sum(mfs, "bardo_answer_seconds")},
			{"ttft", live.TTFT.Count, sum(mfs, "bardo_first_byte_seconds")},
			{"cache verdicts", live.Cache.Total, sum(mfs, "bardo_cache_answers_total")},
			{"streams", live.Streams["ended"], sum(mfs, "bardo_streams_total")},
		} {
			if math.Abs(c.page-c.want) > 1e-9 {
				return fmt.Errorf("%s: page %v, /metrics %v", c.what, c.page, c.want)
			}
		}
		if live.Requests.Total != 12 || live.TTFT.Count != 4 || live.Money.Charge <= 0 {
			return fmt.Errorf("not settled yet: %d requests, %v streams timed, charge %v", int(live.Requests.Total), live.TTFT.Count, live.Money.Charge)
		}
		return nil
	})
	if live.Latency.P50 <= 0 || live.Latency.P99 < live.Latency.P50 || live.TTFT.P50 <= 0 {
		t.Fatalf("quantiles: latency %v/%v ttft %v", live.Latency.P50, live.Latency.P99, live.TTFT.P50)
	}
	var hash *dashboard.CacheLayer
	for i, l := range live.Cache.Layers {
		if l.Result == "hash-hit" {
			hash = &live.Cache.Layers[i]
		}
	}
	if hash == nil || hash.Hits != 2 || hash.Layer != "hashcache" {
		t.Fatalf("cache layers: %+v", live.Cache.Layers)
	}
	if len(live.Failovers) == 0 || live.Failovers[0].Provider != "up" {
		t.Fatalf("failovers: %+v", live.Failovers)
	}
	if len(live.Accounts) == 0 || len(live.Models) < 3 {
		t.Fatalf("accounts %+v models %+v", live.Accounts, live.Models)
	}

	// The history: every billed request in the minute rollups, its charge
	// the metrics' to the micro-dollar.
	var h dashboard.History
	eventually(t, 10*time.Second, "history holds the load", func() error {
		if getJSON(t, noRedirect, e.g.URL+"/dashboard/api/history?range=1h", bearer, &h) != 200 {
			return fmt.Errorf("api/history refused")
		}
		var req int64
		var charge float64
		for i := range h.Buckets {
			req, charge = req+h.Requests[i], charge+h.Charge[i]
		}
		if req != 12 || math.Abs(charge-live.Money.Charge) > 1e-6 {
			return fmt.Errorf("history: %d requests, charge %v (metrics %v)", req, charge, live.Money.Charge)
		}
		return nil
	})
	if !slices.Equal(h.By["provider"].Names, []string{"claude", "up", "backup", "(a layer answered)"}) || len(h.By["account"].Names) != 1 {
		t.Fatalf("breakdowns: %+v", h.By)
	}

	var accts struct {
		Accounts []struct {
			Balance float64
			Keys    []struct{ ID string }
		}
	}
	if getJSON(t, noRedirect, e.g.URL+"/dashboard/api/accounts", bearer, &accts) != 200 || len(accts.Accounts) != 1 ||
		len(accts.Accounts[0].Keys) != 1 || !strings.HasPrefix(e.key, "bardo_sk_"+accts.Accounts[0].Keys[0].ID) &&
		!strings.Contains(e.key, accts.Accounts[0].Keys[0].ID) {
		t.Fatalf("accounts: %+v", accts)
	}
	var f struct {
		Events []struct{ Type string }
		Next   uint64
	}
	if getJSON(t, noRedirect, e.g.URL+"/dashboard/api/events?wait=1s", bearer, &f) != 200 {
		t.Fatal("events refused")
	}
	types := map[string]int{}
	for _, ev := range f.Events {
		types[ev.Type]++
	}
	if types["inference.cache_hit"] != 2 || types["inference.provider_fallback"] != 2 || types["inference.token"] != 0 || types["inference.start"] != 0 {
		t.Fatalf("feed: %v", types)
	}
}

// No secret reaches the page: the caller's key appears in no answer.
func TestNoSecretInAPI(t *testing.T) {
	e := start(t)
	e.load(t)
	bearer := map[string]string{"Authorization": "Bearer " + adminToken}
	for _, api := range []string{"live", "history", "events", "accounts"} {
		req, _ := http.NewRequest("GET", e.g.URL+"/dashboard/api/"+api, nil)
		req.Header.Set("Authorization", bearer["Authorization"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), e.key) || strings.Contains(string(b), adminToken) {
			t.Fatalf("api/%s carries a secret", api)
		}
	}
}
