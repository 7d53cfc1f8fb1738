package telemetry

import (
	"math"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxPluginMetrics bounds the metric names one plugin (one pipeline.toml
// name) may report. Plugin metrics carry only the plugin label, so this caps
// a plugin's series too; the shipped layers name at most 20.
const MaxPluginMetrics = 64

const pluginPrefix = "bardo_plugin_"

// pluginCollector holds the metric host function's samples. Names are chosen
// by the guest at run time, so they cannot be declared up front: the
// collector is unchecked (Describe sends nothing) and writes const metrics
// at scrape time, one Desc per name so every plugin's series of that name
// share HELP, type and labels.
type pluginCollector struct {
	dropped *prometheus.CounterVec

	mu     sync.Mutex
	kinds  map[string]*pluginName              // name, unprefixed → its type; the first report wins
	series map[string]map[string]*pluginSeries // plugin → name → series
}

type pluginName struct {
	kind kind
	desc *prometheus.Desc
}

type pluginSeries struct {
	value  float64
	counts []uint64 // histogram: per bucket, not cumulative
	sum    float64
	n      uint64
}

func newPluginCollector(dropped *prometheus.CounterVec) *pluginCollector {
	return &pluginCollector{dropped: dropped, kinds: map[string]*pluginName{}, series: map[string]map[string]*pluginSeries{}}
}

func (c *pluginCollector) record(plugin string, k int, name string, v float64) {
	if k < 0 || k > 2 || math.IsNaN(v) || math.IsInf(v, 0) || (k == 0 && v < 0) {
		c.dropped.WithLabelValues("invalid").Inc()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pn := c.kinds[name]
	if pn == nil {
		pn = &pluginName{kind: kind(k), desc: prometheus.NewDesc(pluginPrefix+name,
			"Reported by a plugin through the metric host function; see the plugin's README for its meaning.",
			[]string{"plugin"}, nil)}
		c.kinds[name] = pn
	} else if pn.kind != kind(k) {
		c.dropped.WithLabelValues("kind_conflict").Inc()
		return
	}
	byName := c.series[plugin]
	if byName == nil {
		byName = map[string]*pluginSeries{}
		c.series[plugin] = byName
	}
	s := byName[name]
	if s == nil {
		if len(byName) >= MaxPluginMetrics {
			c.dropped.WithLabelValues("plugin_cap").Inc()
			return
		}
		s = &pluginSeries{}
		if pn.kind == histogram {
			s.counts = make([]uint64, len(Buckets))
		}
		byName[name] = s
	}
	switch pn.kind {
	case counter:
		s.value += v
	case gauge:
		s.value = v
	case histogram:
		if i := sort.SearchFloat64s(Buckets, v); i < len(Buckets) {
			s.counts[i]++
		}
		s.sum += v
		s.n++
	}
}

// Describe sends nothing: the collector is unchecked.
func (c *pluginCollector) Describe(chan<- *prometheus.Desc) {}

// Collect writes every plugin series as a const metric.
func (c *pluginCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for plugin, byName := range c.series {
		for name, s := range byName {
			pn := c.kinds[name]
			switch pn.kind {
			case counter:
				ch <- prometheus.MustNewConstMetric(pn.desc, prometheus.CounterValue, s.value, plugin)
			case gauge:
				ch <- prometheus.MustNewConstMetric(pn.desc, prometheus.GaugeValue, s.value, plugin)
			case histogram:
				cum := make(map[float64]uint64, len(Buckets))
				var n uint64
				for i, b := range Buckets {
					n += s.counts[i]
					cum[b] = n
				}
				ch <- prometheus.MustNewConstHistogram(pn.desc, s.n, s.sum, cum, plugin)
			}
		}
	}
}
