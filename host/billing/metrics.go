package billing

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bardoinference/bardo/host/store"
)

// MaxMetricAccounts bounds the accounts the meter's gauges describe: the
// metrics are for watching the active few, and an exposition must not grow
// with the number of callers. Past it, the accounts with the smallest ids
// are kept (a stable choice: the same series from one scrape to the next).
const MaxMetricAccounts = 1000

var (
	descAvailable = prometheus.NewDesc("bardo_account_available_usd",
		"What an account can spend now: its ledger balance less open holds and closed, not yet committed charges, in USD; accounts active since the gateway started.",
		[]string{"account"}, nil)
	descTokens = prometheus.NewDesc("bardo_account_remaining_tokens",
		"Tokens left of an account's hourly allowance (accounts whose tier has one), active since the gateway started.",
		[]string{"account"}, nil)
	descBudget = prometheus.NewDesc("bardo_budget_remaining_usd",
		"What is left of a spending budget this period (limit less charges and open holds), in USD, by scope (account, key), subject (account id or key id) and period (day, month).",
		[]string{"scope", "subject", "period"}, nil)
)

// Collector returns the meter's gauges — what each active account can
// still spend: its available balance, its hourly token allowance and each
// daily or monthly budget of it and its keys — read from the meter's live
// state at scrape time, so they agree with the admission that refuses at
// zero. Register it with the metrics registry; it reads no store.
func (m *Meter) Collector() prometheus.Collector { return meterCollector{m} }

type meterCollector struct{ m *Meter }

func (c meterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descAvailable
	ch <- descTokens
	ch <- descBudget
}

func (c meterCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	ids := make([]string, 0, len(m.accounts))
	for id := range m.accounts {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	slices.Sort(ids)
	if len(ids) > MaxMetricAccounts {
		ids = ids[:MaxMetricAccounts]
	}
	now := m.now()
	for _, id := range ids {
		m.mu.Lock()
		a := m.accounts[id]
		m.mu.Unlock()
		if a == nil {
			continue
		}
		select {
		case <-a.ready:
		default:
			continue // still loading: the next scrape has it
		}
		if a.err != nil {
			continue
		}
		a.mu.Lock()
		a.roll(nil, now)
		ch <- prometheus.MustNewConstMetric(descAvailable, prometheus.GaugeValue, usdFloat(a.available()), id)
		if left := a.remaining(m.tier(a.tier)); left >= 0 {
			ch <- prometheus.MustNewConstMetric(descTokens, prometheus.GaugeValue, float64(left), id)
		}
		for lk, limit := range a.limits {
			if limit <= 0 {
				continue
			}
			var s *spend
			switch {
			case lk.scope == store.ScopeAccount && lk.subject == id:
				s = periodSpend(&a.day, &a.month, lk.period)
			case lk.scope == store.ScopeKey:
				k := a.keys[lk.subject]
				if k == nil {
					continue // not used since the start: its spend is not loaded
				}
				a.roll(k, now)
				s = periodSpend(&k.day, &k.month, lk.period)
			}
			if s == nil {
				continue
			}
			ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue,
				usdFloat(max(limit-s.spent-s.held, 0)), string(lk.scope), lk.subject, string(lk.period))
		}
		a.mu.Unlock()
	}
}

// periodSpend picks the day's or the month's spend.
func periodSpend(day, month *spend, p store.BudgetPeriod) *spend {
	switch p {
	case store.PeriodDay:
		return day
	case store.PeriodMonth:
		return month
	}
	return nil
}

func usdFloat(micros int64) float64 { return float64(micros) / float64(store.MicroUSD) }
