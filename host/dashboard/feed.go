package dashboard

import (
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/store"
)

// maxWait bounds a long poll of the feed: the page never waits on the
// gateway longer than this (it aborts its own fetch a little later).
const maxWait = 10 * time.Second

// feedLimit bounds one answer of the feed.
const feedLimit = 100

// inFeed keeps the routing decisions and degradations: the operator
// events, fallbacks, cache hits and failed requests — not the per-request
// start, token and successful end events, which would drown them.
func inFeed(e *eventlog.Event) bool {
	switch e.Type {
	case eventlog.InferenceStart, eventlog.InferenceToken:
		return false
	case eventlog.InferenceEnd:
		s, _ := e.Data["status"].(int)
		return s >= 400
	}
	return true
}

// feed is one answer of GET /dashboard/api/events.
type feed struct {
	Events []eventlog.Event `json:"events"`
	Next   uint64           `json:"next"`
	Missed uint64           `json:"missed"`
}

// events answers GET /dashboard/api/events?since=<seq>&wait=<duration>:
// the feed's events after since, waiting up to wait (at most 10 s) for one.
// since=0 starts at the newest events.
func (d *Dashboard) events(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	since, err := strconv.ParseUint(string(args.Peek("since")), 10, 64)
	if len(args.Peek("since")) == 0 {
		since, err = 0, nil
	}
	if err != nil {
		apiFail(ctx, 400, "since must be an event sequence number (the previous answer's next)")
		return
	}
	var wait time.Duration
	if v := args.Peek("wait"); len(v) > 0 {
		if wait, err = time.ParseDuration(string(v)); err != nil || wait < 0 || wait > maxWait {
			apiFail(ctx, 400, "wait must be a duration of at most 10s")
			return
		}
	}
	out := feed{Events: []eventlog.Event{}}
	if d.Events == nil {
		reply(ctx, 200, out)
		return
	}
	if since == 0 {
		// A page that opens sees the recent past, not the whole ring.
		if last := d.Events.Last(); last > feedLimit {
			since = last - feedLimit
		}
	}
	deadline := time.Now().Add(wait)
	for {
		var evs []eventlog.Event
		left := time.Until(deadline)
		if left > 0 {
			c, cancel := context.WithTimeout(context.Background(), left)
			evs, out.Next, out.Missed = d.Events.Wait(c, since, 4*feedLimit)
			cancel()
		} else {
			evs, out.Next, out.Missed = d.Events.Since(since, 4*feedLimit)
		}
		for i := range evs {
			if inFeed(&evs[i]) {
				out.Events = append(out.Events, evs[i])
			}
		}
		// Only filtered-out events came: wait on for a kept one.
		if len(out.Events) > 0 || len(evs) == 0 || time.Until(deadline) <= 0 {
			break
		}
		since = out.Next
	}
	if len(out.Events) > feedLimit {
		out.Missed += uint64(len(out.Events) - feedLimit)
		out.Events = out.Events[len(out.Events)-feedLimit:]
	}
	if out.Next == 0 {
		out.Next = since
	}
	reply(ctx, 200, out)
}

// maxAccounts bounds the accounts listed (the admin API pages the rest).
const maxAccounts = 500

type accountView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Tier      string    `json:"tier"`
	Balance   float64   `json:"balance"`
	Held      float64   `json:"held"`
	Available float64   `json:"available"`
	Disabled  bool      `json:"disabled"`
	Keys      []keyView `json:"keys"`
}

// keyView is a key's public record: its id (the token's non-secret
// prefix), never its hash.
type keyView struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	ReadOnly   bool    `json:"read_only"`
	SpendLimit float64 `json:"spend_limit"`
	RateLimit  int     `json:"rate_limit"`
	Expires    string  `json:"expires,omitempty"`
	State      string  `json:"state"` // active, disabled, revoked or expired
}

// accounts answers GET /dashboard/api/accounts: accounts with their
// balances and keys, read-only.
func (d *Dashboard) accounts(ctx *fasthttp.RequestCtx) {
	out := struct {
		Accounts  []accountView `json:"accounts"`
		Truncated bool          `json:"truncated"`
		Note      string        `json:"note,omitempty"`
	}{Accounts: []accountView{}}
	if d.Store == nil {
		out.Note = "no accounts: the gateway runs in open mode"
		reply(ctx, 200, out)
		return
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	as, err := d.Store.ListAccounts(c)
	if err == nil && len(as) > maxAccounts {
		as, out.Truncated = as[:maxAccounts], true
	}
	var ks []store.Key
	if err == nil {
		ks, err = d.Store.ListKeys(c, "")
	}
	if err != nil {
		if d.Log != nil {
			d.Log.Warn("dashboard: listing accounts", "err", err)
		}
		apiFail(ctx, 503, "the accounts could not be read; see the gateway's log")
		return
	}
	byAcct := map[string][]keyView{}
	now := d.now()
	for _, k := range ks {
		v := keyView{ID: k.ID, Name: k.Name, ReadOnly: k.ReadOnly, SpendLimit: usd(k.SpendLimit), RateLimit: k.RateLimit, State: "active"}
		if !k.Expires.IsZero() {
			v.Expires = k.Expires.UTC().Format(time.RFC3339)
		}
		switch {
		case !k.Revoked.IsZero():
			v.State = "revoked"
		case k.Disabled:
			v.State = "disabled"
		case !k.Expires.IsZero() && now.After(k.Expires):
			v.State = "expired"
		}
		byAcct[k.AccountID] = append(byAcct[k.AccountID], v)
	}
	for _, a := range as {
		keys := byAcct[a.ID]
		if keys == nil {
			keys = []keyView{}
		}
		out.Accounts = append(out.Accounts, accountView{ID: a.ID, Name: a.Name, Tier: string(a.Tier), Balance: usd(a.Balance),
			Held: usd(a.Held), Available: usd(a.Available()), Disabled: a.Disabled, Keys: keys})
	}
	reply(ctx, 200, out)
}
