// Package telemetry keeps the gateway's Prometheus metrics on
// github.com/prometheus/client_golang: the host's metrics, declared once with
// their HELP text and label names (catalog.go), the metrics plugins report
// through the metric host function, and the Go runtime and process collectors.
//
// Cardinality is bounded twice: host metrics take only the labels they
// declare, each metric holds at most MaxSeries label sets, and each plugin
// may name at most MaxPluginMetrics metrics. A sample past a bound is
// dropped and counted in bardo_telemetry_dropped_total, never an error.
package telemetry

import (
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// MaxSeries bounds the label sets of one host metric: a label fed by a
// caller-visible value (a layer name in an admin call, a model name in a
// response header) cannot grow the exposition without limit.
const MaxSeries = 1000

// Registry holds every metric. It is safe for concurrent use.
type Registry struct {
	reg     *prometheus.Registry
	metrics map[string]*metric // read-only after New
	plugins *pluginCollector
	dropped *prometheus.CounterVec
}

type kind int

const (
	counter kind = iota
	gauge
	histogram
)

// metric is one declared host metric with a cache of its series, so a hot
// sample is a read-locked map lookup rather than the vec's label hashing.
type metric struct {
	name   string
	kind   kind
	labels []string
	vec    interface {
		prometheus.Collector
		GetMetricWithLabelValues(...string) (prometheus.Metric, error)
	}
	mu     sync.RWMutex
	series map[string]prometheus.Metric
}

// New returns a registry with the catalog's metrics, the Go runtime and
// process collectors, and the plugins' metrics registered.
func New() *Registry {
	r := &Registry{
		reg:     prometheus.NewRegistry(),
		metrics: make(map[string]*metric, len(Catalog)),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bardo_telemetry_dropped_total",
			Help: "Metric samples dropped: reason is undeclared (a name or label set the catalog does not hold), series_cap (a metric at MaxSeries label sets), plugin_cap (a plugin past MaxPluginMetrics names), kind_conflict (a plugin metric reported as another type) or invalid (a negative or non-finite counter increment).",
		}, []string{"reason"}),
	}
	for _, reason := range []string{"undeclared", "series_cap", "plugin_cap", "kind_conflict", "invalid"} {
		r.dropped.WithLabelValues(reason) // exposed at 0, so an alert sees it rise
	}
	r.plugins = newPluginCollector(r.dropped)
	r.reg.MustRegister(r.dropped, r.plugins,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, d := range Catalog {
		m := &metric{name: d.Name, labels: d.Labels, series: map[string]prometheus.Metric{}}
		switch d.Type {
		case "counter":
			m.kind, m.vec = counter, counterVec{prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)}
		case "gauge":
			m.kind, m.vec = gauge, gaugeVec{prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)}
		case "histogram":
			b := d.Buckets
			if b == nil {
				b = Buckets
			}
			m.kind, m.vec = histogram, histogramVec{prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help, Buckets: b}, d.Labels)}
		default:
			panic("telemetry: " + d.Name + ": unknown type " + d.Type)
		}
		r.metrics[d.Name] = m
		r.reg.MustRegister(m.vec)
	}
	return r
}

// The vec types return their children as prometheus.Metric so one metric
// type serves all three kinds.
type counterVec struct{ *prometheus.CounterVec }

func (v counterVec) GetMetricWithLabelValues(l ...string) (prometheus.Metric, error) {
	return v.CounterVec.GetMetricWithLabelValues(l...)
}

type gaugeVec struct{ *prometheus.GaugeVec }

func (v gaugeVec) GetMetricWithLabelValues(l ...string) (prometheus.Metric, error) {
	return v.GaugeVec.GetMetricWithLabelValues(l...)
}

type histogramVec struct{ *prometheus.HistogramVec }

func (v histogramVec) GetMetricWithLabelValues(l ...string) (prometheus.Metric, error) {
	o, err := v.HistogramVec.GetMetricWithLabelValues(l...)
	if err != nil {
		return nil, err
	}
	return o.(prometheus.Metric), nil
}

// Buckets are the default histogram buckets, in seconds: half a millisecond
// (a layer call) to a minute (a long completion).
var Buckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// child returns name's series for the name/value pairs kv, or nil (counted)
// when the name or labels are not the declared ones or the metric is full.
func (r *Registry) child(name string, k kind, kv []string) prometheus.Metric {
	m := r.metrics[name]
	if m == nil || m.kind != k || len(kv) != 2*len(m.labels) {
		r.dropped.WithLabelValues("undeclared").Inc()
		return nil
	}
	// The series key is built on the stack and looked up without a copy;
	// only a new series allocates.
	var buf [256]byte
	kb := buf[:0]
	for i, l := range m.labels {
		if kv[2*i] != l {
			r.dropped.WithLabelValues("undeclared").Inc()
			return nil
		}
		kb = append(append(kb, kv[2*i+1]...), 0xff)
	}
	m.mu.RLock()
	s := m.series[string(kb)]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	return r.newChild(m, string(kb), kv)
}

func (r *Registry) newChild(m *metric, key string, kv []string) prometheus.Metric {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.series[key]; s != nil {
		return s
	}
	if len(m.series) >= MaxSeries {
		r.dropped.WithLabelValues("series_cap").Inc()
		return nil
	}
	lv := make([]string, len(m.labels))
	for i := range lv {
		lv[i] = kv[2*i+1]
	}
	s, err := m.vec.GetMetricWithLabelValues(lv...)
	if err != nil { // invalid UTF-8 in a label value
		r.dropped.WithLabelValues("undeclared").Inc()
		return nil
	}
	m.series[key] = s
	return s
}

// Add adds v to a declared counter. labels are the declared name/value pairs,
// in declared order.
func (r *Registry) Add(name string, v float64, labels ...string) {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		r.dropped.WithLabelValues("invalid").Inc()
		return
	}
	if c, _ := r.child(name, counter, labels).(prometheus.Counter); c != nil {
		c.Add(v)
	}
}

// Set sets a declared gauge.
func (r *Registry) Set(name string, v float64, labels ...string) {
	if g, _ := r.child(name, gauge, labels).(prometheus.Gauge); g != nil {
		g.Set(v)
	}
}

// Observe records v (seconds, or the unit the name says) in a declared
// histogram.
func (r *Registry) Observe(name string, v float64, labels ...string) {
	if o, _ := r.child(name, histogram, labels).(prometheus.Observer); o != nil {
		o.Observe(v)
	}
}

// Observer returns a declared histogram's series for labels, bound once:
// a caller that records into the same series again and again (the
// sandbox, every plugin call) skips the lookup. The series is made now.
// nil: Observe would drop the samples (counted), so the caller keeps
// calling Observe.
func (r *Registry) Observer(name string, labels ...string) func(float64) {
	if o, _ := r.child(name, histogram, labels).(prometheus.Observer); o != nil {
		return o.Observe
	}
	return nil
}

// PluginMetric records a plugin's sample as bardo_plugin_<name>{plugin="..."}:
// k is the metric host function's kind (0 counter, 1 gauge, 2 histogram).
func (r *Registry) PluginMetric(plugin string, k int, name string, v float64) {
	r.plugins.record(plugin, k, name, v)
}

// Value returns a counter or gauge's value, or a histogram's sample count
// (for tests and status pages); 0 when the series does not exist.
func (r *Registry) Value(name string, labels ...string) float64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !sameLabels(m.GetLabel(), labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func sameLabels(have []*dto.LabelPair, kv []string) bool {
	if 2*len(have) != len(kv) {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, p := range have {
			if p.GetName() == kv[i] && p.GetValue() == kv[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Gatherer returns the underlying registry (for promhttp and testutil).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// ContentType is the exposition's media type, as WriteTo writes it.
var ContentType = string(expfmt.NewFormat(expfmt.TypeTextPlain))

// WriteTo writes the Prometheus text exposition of every metric. A metric
// that fails to gather is left out, and the others still written, as
// promhttp's ContinueOnError does.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	mfs, gerr := r.reg.Gather()
	cw := &countingWriter{w: w}
	enc := expfmt.NewEncoder(cw, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return cw.n, err
		}
	}
	if gerr != nil {
		return cw.n, fmt.Errorf("telemetry: gather: %w", gerr)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
