package admission

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the metrics Metrics exports; deploy/ scales on MetricSaturation.
const (
	MetricInFlight     = "dubbogw_inflight"
	MetricLimit        = "dubbogw_inflight_limit"
	MetricSaturation   = "dubbogw_saturation"
	MetricRejected     = "dubbogw_admission_rejected_total"
	MetricLimitChanges = "dubbogw_admission_limit_changes_total"
)

// ScopeGlobal is the scope of the gateway-wide limiter; routes use their name.
const ScopeGlobal = "global"

// Metrics exports the state of limiters, read at scrape time so the request
// path does no metric work. Every series has the label scope.
type Metrics struct {
	inFlight, limit, saturation, rejected, limitChanges *prometheus.Desc

	mu     sync.RWMutex
	scopes map[string]*observed
}

// observed is the limiter of one scope.
type observed struct {
	limiter Limiter
	// carried are the counters of the scope's earlier limiters (replaced on
	// a reload), so its counters never go back.
	carried Stats
}

// NewMetrics registers the admission metrics with reg and returns them; it
// panics if they are registered already, like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	scope := []string{"scope"}
	m := &Metrics{
		inFlight: prometheus.NewDesc(MetricInFlight,
			"Requests admitted and not yet finished, by scope (\"global\" or the route).", scope, nil),
		limit: prometheus.NewDesc(MetricLimit,
			"The in-flight limit, static or learned from latency (0 = unlimited).", scope, nil),
		saturation: prometheus.NewDesc(MetricSaturation,
			"In-flight requests divided by the in-flight limit (0 when unlimited): scale on this, not on CPU.", scope, nil),
		rejected: prometheus.NewDesc(MetricRejected,
			"Requests refused at once because the in-flight limit was reached.", scope, nil),
		limitChanges: prometheus.NewDesc(MetricLimitChanges,
			"Changes of the in-flight limit, by direction (up, down); only adaptive limits change.", []string{"scope", "direction"}, nil),
		scopes: make(map[string]*observed),
	}
	reg.MustRegister(m)
	return m
}

// Observe exports l under scope, replacing the scope's previous limiter
// (whose counts carry over); a nil l is Forget.
func (m *Metrics) Observe(scope string, l Limiter) {
	if l == nil {
		m.Forget(scope)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, ok := m.scopes[scope]
	if !ok {
		m.scopes[scope] = &observed{limiter: l}
		return
	}
	if prev.limiter == l {
		return
	}
	m.scopes[scope] = &observed{limiter: l, carried: prev.total()}
}

// Forget stops exporting scope (a route that left the configuration).
func (m *Metrics) Forget(scope string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.scopes, scope)
}

func (o *observed) total() Stats {
	s := o.limiter.Stats()
	return Stats{
		Rejected:       o.carried.Rejected + s.Rejected,
		LimitIncreases: o.carried.LimitIncreases + s.LimitIncreases,
		LimitDecreases: o.carried.LimitDecreases + s.LimitDecreases,
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.inFlight
	ch <- m.limit
	ch <- m.saturation
	ch <- m.rejected
	ch <- m.limitChanges
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for scope, o := range m.scopes {
		inFlight, limit := float64(o.limiter.InFlight()), float64(o.limiter.Limit())
		saturation := 0.0
		if limit > 0 {
			saturation = inFlight / limit
		}
		s := o.total()
		ch <- prometheus.MustNewConstMetric(m.inFlight, prometheus.GaugeValue, inFlight, scope)
		ch <- prometheus.MustNewConstMetric(m.limit, prometheus.GaugeValue, limit, scope)
		ch <- prometheus.MustNewConstMetric(m.saturation, prometheus.GaugeValue, saturation, scope)
		ch <- prometheus.MustNewConstMetric(m.rejected, prometheus.CounterValue, float64(s.Rejected), scope)
		ch <- prometheus.MustNewConstMetric(m.limitChanges, prometheus.CounterValue, float64(s.LimitIncreases), scope, "up")
		ch <- prometheus.MustNewConstMetric(m.limitChanges, prometheus.CounterValue, float64(s.LimitDecreases), scope, "down")
	}
}
