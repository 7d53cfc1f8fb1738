package daemon

import (
	"github.com/bardoinference/bardo/host/dashboard"
)

// dashboard builds /dashboard behind the admin token (none: no dashboard),
// reading the registry /metrics exposes, the event log, provider health and,
// in keys mode, the store's usage rollups, accounts and keys.
func (d *Daemon) dashboard(token string) *dashboard.Dashboard {
	if token == "" {
		return nil
	}
	db := &dashboard.Dashboard{Token: token, Metrics: d.Metrics, Events: d.Events, Health: d.Health,
		Log: d.Log.With("component", "dashboard")}
	if d.Store != nil {
		db.Store = d.Store
	}
	return db
}
