// Package dashboard serves the operator dashboard at /dashboard: one page
// (embedded assets, uPlot vendored from npm, no CDN) and the read-only JSON
// API it polls.
//
// Access is the admin token's: a login form posts it once and is answered
// with a session cookie (httpOnly, Secure, SameSite=Strict) holding a random
// id the server keeps with an expiry — never the token. The API also takes
// the token as a bearer, for scripts. Nothing secret reaches the page: keys
// by their public id, accounts by id.
//
// The figures are read from the same places /metrics and the store are:
// the live ones from the Prometheus registry's gathered families
// (live.go), the history from the store's per-minute and per-hour usage
// rollups (history.go), the feed from the event log. So the page and the
// metrics cannot disagree.
package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"io/fs"
	"log/slog"
	"mime"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/telemetry"
)

//go:embed assets
var assets embed.FS

// CookieName is the session cookie's name.
const CookieName = "bardo_dashboard"

// SessionTTL is how long a login lasts.
const SessionTTL = 12 * time.Hour

// maxSessions bounds the sessions kept: a login past it evicts the one
// closest to expiry, so logins cannot grow memory.
const maxSessions = 256

// Dashboard serves /dashboard. Token must be set; the other sources may be
// nil (their panels then say so).
type Dashboard struct {
	Token   string
	Metrics *telemetry.Registry
	Events  *eventlog.Log
	Health  *health.Tracker
	// Store gives the history and the accounts and keys (nil in open mode,
	// where nothing is billed).
	Store Store
	Log   *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex
	sessions map[string]time.Time // id → expiry
	// failed counts wrong tokens since failedAt's minute began: past
	// maxFailures a minute, the form answers 429 until the next minute,
	// so the token cannot be guessed at network speed.
	failed   int
	failedAt time.Time
}

// maxFailures bounds wrong tokens a minute, for every caller together.
const maxFailures = 10

func (d *Dashboard) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Prefix is the path the dashboard owns.
const Prefix = "/dashboard"

// Handle serves a request under /dashboard; false: the path is not the
// dashboard's.
func (d *Dashboard) Handle(ctx *fasthttp.RequestCtx) bool {
	p := string(ctx.Path())
	if p != Prefix && !strings.HasPrefix(p, Prefix+"/") {
		return false
	}
	security(ctx)
	rest := strings.TrimPrefix(p, Prefix)
	switch {
	case rest == "" || rest == "/":
		if !d.session(ctx) {
			ctx.Redirect(Prefix+"/login", fasthttp.StatusSeeOther)
			return true
		}
		d.file(ctx, "assets/index.html")
	case rest == "/login":
		d.login(ctx)
	case rest == "/logout":
		d.logout(ctx)
	case strings.HasPrefix(rest, "/assets/"):
		// Code and style only: the login page needs them, and they hold
		// nothing an anonymous reader could use.
		name := path.Clean(rest[1:])
		if !strings.HasPrefix(name, "assets/") || strings.HasSuffix(name, ".html") {
			apiFail(ctx, 404, "no such asset")
			return true
		}
		d.file(ctx, name)
	case strings.HasPrefix(rest, "/api/"):
		if !d.session(ctx) && !d.bearer(ctx) {
			apiFail(ctx, 401, "log in at /dashboard/login, or send Authorization: Bearer <admin token>")
			return true
		}
		if !ctx.IsGet() {
			ctx.Response.Header.Set("Allow", "GET")
			apiFail(ctx, 405, "the dashboard API is read-only: use GET")
			return true
		}
		ctx.Response.Header.Set("Cache-Control", "no-store")
		switch rest {
		case "/api/live":
			d.live(ctx)
		case "/api/history":
			d.history(ctx)
		case "/api/events":
			d.events(ctx)
		case "/api/accounts":
			d.accounts(ctx)
		default:
			apiFail(ctx, 404, "no such dashboard API: "+rest)
		}
	default:
		apiFail(ctx, 404, "no such dashboard page")
	}
	return true
}

// security sets the headers every dashboard answer carries: the page runs
// only its own scripts and talks only to its own origin.
func security(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func (d *Dashboard) file(ctx *fasthttp.RequestCtx, name string) {
	b, err := fs.ReadFile(assets, name)
	if err != nil {
		apiFail(ctx, 404, "no such asset")
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	ctx.SetContentType(ct)
	if strings.HasSuffix(name, ".html") {
		ctx.Response.Header.Set("Cache-Control", "no-store")
	}
	ctx.SetBody(b)
}

func (d *Dashboard) bearer(ctx *fasthttp.RequestCtx) bool {
	return d.Token != "" && subtle.ConstantTimeCompare(ctx.Request.Header.Peek("Authorization"), []byte("Bearer "+d.Token)) == 1
}

// session reports whether the request carries a live session cookie.
func (d *Dashboard) session(ctx *fasthttp.RequestCtx) bool {
	id := string(ctx.Request.Header.Cookie(CookieName))
	if id == "" {
		return false
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	exp, ok := d.sessions[id]
	if ok && now.After(exp) {
		delete(d.sessions, id)
		ok = false
	}
	return ok
}

// newSession stores a fresh random session id.
func (d *Dashboard) newSession() string {
	var b [32]byte
	rand.Read(b[:]) // crypto/rand: never fails on supported platforms
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sessions == nil {
		d.sessions = map[string]time.Time{}
	}
	for k, exp := range d.sessions {
		if now.After(exp) {
			delete(d.sessions, k)
		}
	}
	if len(d.sessions) >= maxSessions {
		var oldest string
		for k, exp := range d.sessions {
			if oldest == "" || exp.Before(d.sessions[oldest]) {
				oldest = k
			}
		}
		delete(d.sessions, oldest)
	}
	d.sessions[id] = now.Add(SessionTTL)
	return id
}

// Sessions returns the number of live sessions (tests, status).
func (d *Dashboard) Sessions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.sessions)
}

func setCookie(ctx *fasthttp.RequestCtx, value string, maxAge int) {
	var c fasthttp.Cookie
	c.SetKey(CookieName)
	c.SetValue(value)
	c.SetPath(Prefix)
	c.SetHTTPOnly(true)
	c.SetSecure(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	if maxAge > 0 {
		c.SetMaxAge(maxAge)
	} else {
		c.SetExpire(fasthttp.CookieExpireDelete)
	}
	ctx.Response.Header.SetCookie(&c)
}

// login serves the form (GET) and checks the token it posts (POST).
func (d *Dashboard) login(ctx *fasthttp.RequestCtx) {
	switch {
	case ctx.IsGet():
		if d.session(ctx) {
			ctx.Redirect(Prefix, fasthttp.StatusSeeOther)
			return
		}
		d.file(ctx, "assets/login.html")
	case ctx.IsPost():
		if !d.mayTry() {
			ctx.Response.Header.Set("Retry-After", "60")
			apiFail(ctx, 429, "too many wrong tokens this minute; try again in a minute")
			return
		}
		tok := ctx.PostArgs().Peek("token")
		if d.Token == "" || subtle.ConstantTimeCompare(tok, []byte(d.Token)) != 1 {
			d.mu.Lock()
			d.failed++
			d.mu.Unlock()
			if d.Log != nil {
				d.Log.Warn("dashboard login refused", "remote", ctx.RemoteIP().String())
			}
			ctx.Redirect(Prefix+"/login?failed=1", fasthttp.StatusSeeOther)
			return
		}
		setCookie(ctx, d.newSession(), int(SessionTTL/time.Second))
		ctx.Redirect(Prefix, fasthttp.StatusSeeOther)
	default:
		ctx.Response.Header.Set("Allow", "GET, POST")
		apiFail(ctx, 405, "use GET or POST on /dashboard/login")
	}
}

// mayTry reports whether a login may be checked now.
func (d *Dashboard) mayTry() bool {
	now := d.now().Truncate(time.Minute)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !now.Equal(d.failedAt) {
		d.failed, d.failedAt = 0, now
	}
	return d.failed < maxFailures
}

// logout forgets the session (POST).
func (d *Dashboard) logout(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		apiFail(ctx, 405, "use POST on /dashboard/logout")
		return
	}
	if id := string(ctx.Request.Header.Cookie(CookieName)); id != "" {
		d.mu.Lock()
		delete(d.sessions, id)
		d.mu.Unlock()
	}
	setCookie(ctx, "", -1)
	ctx.Redirect(Prefix+"/login", fasthttp.StatusSeeOther)
}
