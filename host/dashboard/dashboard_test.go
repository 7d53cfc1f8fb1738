package dashboard

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func request(d *Dashboard, method, uri, cookie, body string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	if cookie != "" {
		ctx.Request.Header.SetCookie(CookieName, cookie)
	}
	if body != "" {
		ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
		ctx.Request.SetBodyString(body)
	}
	if !d.Handle(&ctx) {
		return nil
	}
	return &ctx
}

func sessionOf(ctx *fasthttp.RequestCtx) string {
	var c fasthttp.Cookie
	c.SetKey(CookieName)
	if !ctx.Response.Header.Cookie(&c) {
		return ""
	}
	return string(c.Value())
}

// A session lasts SessionTTL, logins cannot grow the session table past
// maxSessions, and wrong tokens are limited per minute.
func TestSessions(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	d := &Dashboard{Token: "tok", Now: func() time.Time { return now }}
	ctx := request(d, "POST", "/dashboard/login", "", "token=tok")
	id := sessionOf(ctx)
	if ctx.Response.StatusCode() != 303 || id == "" {
		t.Fatalf("login: %d %q", ctx.Response.StatusCode(), id)
	}
	if request(d, "GET", "/dashboard/api/live", id, "").Response.StatusCode() != 200 {
		t.Fatal("a fresh session refused")
	}
	now = now.Add(SessionTTL + time.Second)
	if request(d, "GET", "/dashboard/api/live", id, "").Response.StatusCode() != 401 {
		t.Fatal("an expired session accepted")
	}
	for range maxSessions + 50 {
		request(d, "POST", "/dashboard/login", "", "token=tok")
	}
	if n := d.Sessions(); n != maxSessions {
		t.Fatalf("%d sessions kept", n)
	}

	for range maxFailures {
		if c := request(d, "POST", "/dashboard/login", "", "token=guess").Response.StatusCode(); c != 303 {
			t.Fatalf("a wrong token: %d", c)
		}
	}
	if c := request(d, "POST", "/dashboard/login", "", "token=tok").Response.StatusCode(); c != 429 {
		t.Fatalf("past %d wrong tokens a minute: %d", maxFailures, c)
	}
	now = now.Add(time.Minute)
	if c := request(d, "POST", "/dashboard/login", "", "token=tok").Response.StatusCode(); c != 303 {
		t.Fatalf("the next minute: %d", c)
	}
}

// Only the embedded assets are served, whatever the path says, and
// other paths are not the dashboard's.
func TestAssets(t *testing.T) {
	d := &Dashboard{Token: "tok"}
	for uri, want := range map[string]int{
		"/dashboard/assets/app.js":                   200,
		"/dashboard/assets/vendor/uPlot.iife.min.js": 200,
		"/dashboard/assets/index.html":               404, // the page only with a session
		"/dashboard/assets/../dashboard.go":          404,
		"/dashboard/assets/%2e%2e/live.go":           404,
		"/dashboard/nope":                            404,
	} {
		ctx := request(d, "GET", uri, "", "")
		if ctx.Response.StatusCode() != want {
			t.Errorf("%s: %d, want %d", uri, ctx.Response.StatusCode(), want)
		}
		if want == 200 && !strings.Contains(string(ctx.Response.Header.ContentType()), "javascript") {
			t.Errorf("%s: content type %s", uri, ctx.Response.Header.ContentType())
		}
	}
	if request(d, "GET", "/dashboardx", "", "") != nil || request(d, "GET", "/v1/models", "", "") != nil {
		t.Fatal("a path outside /dashboard handled")
	}
}

// Quantile interpolates inside the bucket as PromQL's
// histogram_quantile does.
func TestQuantile(t *testing.T) {
	bounds := []float64{0.1, 0.2, 0.4, math.Inf(1)}
	for _, c := range []struct {
		q    float64
		cum  []float64
		want float64
	}{
		{0.5, []float64{0, 10, 10, 10}, 0.15},
		{0.99, []float64{0, 10, 10, 10}, 0.199},
		{0.75, []float64{10, 10, 10, 20}, 0.4}, // in +Inf: the highest finite bound
		{0.5, []float64{0, 0, 0, 0}, 0},
		{0.25, []float64{4, 8, 12, 16}, 0.1},
	} {
		if got := Quantile(c.q, bounds, c.cum); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%v of %v: %v, want %v", c.q, c.cum, got, c.want)
		}
	}
}
