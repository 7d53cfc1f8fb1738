// Package telemetry keeps the gateway's Prometheus metrics: request counts and
// latencies, and the metrics plugins report through the metric host function.
// It writes the Prometheus text exposition format itself rather than pulling
// in a client library: the set of metric shapes is small and fixed.
package telemetry

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
)

// Registry holds every metric series. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	series map[string]*series // key: name + rendered labels
}

type kind int

const (
	counter kind = iota
	gauge
	histogram
)

var buckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

type series struct {
	name   string
	labels string
	kind   kind
	value  float64
	counts []uint64 // histogram buckets
	sum    float64
	n      uint64
}

// New returns an empty registry.
func New() *Registry { return &Registry{series: map[string]*series{}} }

func renderLabels(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", kv[i], kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func (r *Registry) get(name string, k kind, labels []string) *series {
	l := renderLabels(labels)
	key := name + l
	s, ok := r.series[key]
	if !ok {
		s = &series{name: name, labels: l, kind: k}
		if k == histogram {
			s.counts = make([]uint64, len(buckets))
		}
		r.series[key] = s
	}
	return s
}

// Add adds v to a counter. labels are name/value pairs.
func (r *Registry) Add(name string, v float64, labels ...string) {
	r.mu.Lock()
	r.get(name, counter, labels).value += v
	r.mu.Unlock()
}

// Set sets a gauge.
func (r *Registry) Set(name string, v float64, labels ...string) {
	r.mu.Lock()
	r.get(name, gauge, labels).value = v
	r.mu.Unlock()
}

// Observe records v (seconds, or any unit the name says) in a histogram.
func (r *Registry) Observe(name string, v float64, labels ...string) {
	r.mu.Lock()
	s := r.get(name, histogram, labels)
	for i, b := range buckets {
		if v <= b {
			s.counts[i]++
		}
	}
	s.sum += v
	s.n++
	r.mu.Unlock()
}

// PluginMetric records a plugin's sample as bardo_plugin_<name>{plugin="..."}.
func (r *Registry) PluginMetric(plugin string, k int, name string, v float64) {
	full := "bardo_plugin_" + name
	switch k {
	case 0:
		if v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			r.Add(full, v, "plugin", plugin)
		}
	case 1:
		r.Set(full, v, "plugin", plugin)
	case 2:
		r.Observe(full, v, "plugin", plugin)
	}
}

// Value returns a counter or gauge's value (for tests and status pages).
func (r *Registry) Value(name string, labels ...string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.series[name+renderLabels(labels)]; ok {
		return s.value
	}
	return 0
}

// WriteTo writes the Prometheus text exposition of every series.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	keys := make([]string, 0, len(r.series))
	for k := range r.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	typed := map[string]bool{}
	for _, k := range keys {
		s := r.series[k]
		if !typed[s.name] {
			typed[s.name] = true
			fmt.Fprintf(&b, "# TYPE %s %s\n", s.name, [...]string{"counter", "gauge", "histogram"}[s.kind])
		}
		switch s.kind {
		case histogram:
			for i, le := range buckets {
				fmt.Fprintf(&b, "%s_bucket%s %d\n", s.name, withLabel(s.labels, "le", fmt.Sprint(le)), s.counts[i])
			}
			fmt.Fprintf(&b, "%s_bucket%s %d\n", s.name, withLabel(s.labels, "le", "+Inf"), s.n)
			fmt.Fprintf(&b, "%s_sum%s %g\n%s_count%s %d\n", s.name, s.labels, s.sum, s.name, s.labels, s.n)
		default:
			fmt.Fprintf(&b, "%s%s %g\n", s.name, s.labels, s.value)
		}
	}
	r.mu.Unlock()
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func withLabel(labels, k, v string) string {
	l := fmt.Sprintf("%s=%q", k, v)
	if labels == "" {
		return "{" + l + "}"
	}
	return labels[:len(labels)-1] + "," + l + "}"
}
