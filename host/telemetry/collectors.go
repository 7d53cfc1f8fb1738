package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Register adds a collector whose metrics are read at scrape time from a
// component's live state (the billing meter's remaining balances and
// budgets), beside the catalog's. Its metric names must not collide with
// the catalog's; each such collector documents its own metrics and bounds
// its own series.
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }
