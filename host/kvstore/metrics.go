package kvstore

import "github.com/prometheus/client_golang/prometheus"

var (
	descEntries = prometheus.NewDesc("bardo_kv_entries",
		"Entries the in-memory kv store holds, by the plugin that wrote them (a cache layer's: its cached answers and memos).",
		[]string{"plugin"}, nil)
	descBytes = prometheus.NewDesc("bardo_kv_bytes",
		"Bytes accounted to a plugin's kv entries (keys, values and the per-entry overhead), against bardo_kv_capacity_bytes.",
		[]string{"plugin"}, nil)
	descEvicted = prometheus.NewDesc("bardo_kv_evictions_total",
		"A plugin's kv entries evicted, least recently used first, to make room within the store's capacity ([server] kv_max_bytes).",
		[]string{"plugin"}, nil)
	descCapacity = prometheus.NewDesc("bardo_kv_capacity_bytes",
		"The in-memory kv store's byte budget ([server] kv_max_bytes).", nil, nil)
)

// Collector returns the store's gauges, read at scrape time: entries,
// bytes and evictions per plugin (the key's namespace), and the capacity.
// Plugin names come from the pipeline's configuration, so the series are
// bounded by it.
func (m *Memory) Collector() prometheus.Collector { return memoryCollector{m} }

type memoryCollector struct{ m *Memory }

func (c memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descEntries
	ch <- descBytes
	ch <- descEvicted
	ch <- descCapacity
}

func (c memoryCollector) Collect(ch chan<- prometheus.Metric) {
	for name, u := range c.m.Spaces() {
		if name == "" {
			name = "-" // keys outside any plugin's namespace
		}
		ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(u.Entries), name)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(u.Bytes), name)
		ch <- prometheus.MustNewConstMetric(descEvicted, prometheus.CounterValue, float64(u.Evicted), name)
	}
	_, capacity := c.m.Used()
	ch <- prometheus.MustNewConstMetric(descCapacity, prometheus.GaugeValue, float64(capacity))
}
