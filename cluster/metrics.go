package cluster

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the cluster metrics. Create it once per process with
// NewMetrics and pass it to every New.
//
// Series are shared by route: a config reload that builds the new cluster
// of a route before closing the old one keeps counting into the same
// series, and a series is deleted only when its last user is gone.
type Metrics struct {
	// breakerState is dubbogw_cluster_breaker_state{route,scope,key}:
	// 0 closed, 1 open, 2 half-open; scope "route" (key: the route) or
	// "provider" (key: the provider address).
	breakerState *prometheus.GaugeVec
	// transitions is dubbogw_cluster_breaker_transitions_total{route,scope,key,to}.
	transitions *prometheus.CounterVec
	// retries is dubbogw_cluster_retries_total{route}: failover attempts after the first.
	retries *prometheus.CounterVec
	// selections is dubbogw_cluster_selections_total{route,policy}: providers chosen.
	selections *prometheus.CounterVec
	// serviceOpen is dubbogw_cluster_service_breakers_open{route}: the
	// route's service breakers (Options.ServiceBreaker) not closed. Their
	// transitions count in transitions with scope "service" and key "".
	serviceOpen *prometheus.GaugeVec

	mu   sync.Mutex
	refs map[seriesKey]int
}

// seriesKey names the series of a route (scope and key empty), of its
// policy (scope "policy", key the policy name) or of one of its breakers.
type seriesKey struct{ route, scope, key string }

const scopePolicy = "policy"

// NewMetrics creates the cluster metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_cluster_breaker_state",
			Help: "Circuit breaker state: 0 closed, 1 open, 2 half-open.",
		}, []string{"route", "scope", "key"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_cluster_breaker_transitions_total",
			Help: "Circuit breaker state changes, by the state entered.",
		}, []string{"route", "scope", "key", "to"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_cluster_retries_total",
			Help: "Dubbo call attempts retried on another provider.",
		}, []string{"route"}),
		selections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_cluster_selections_total",
			Help: "Providers chosen by the load-balancing policy.",
		}, []string{"route", "policy"}),
		serviceOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_cluster_service_breakers_open",
			Help: "Service circuit breakers (one per service a pass-through route calls) open or half-open.",
		}, []string{"route"}),
		refs: make(map[seriesKey]int),
	}
	if reg != nil {
		reg.MustRegister(m.breakerState, m.transitions, m.retries, m.selections, m.serviceOpen)
	}
	return m
}

// routeSeries are the resolved per-route series.
type routeSeries struct {
	retries    prometheus.Counter
	selections prometheus.Counter
}

// acquireRoute resolves the series of route and its policy and takes a
// reference on them; release them with release(route, "", "") and
// release(route, "policy", policy).
func (m *Metrics) acquireRoute(route, policy string) routeSeries {
	m.mu.Lock()
	m.refs[seriesKey{route: route}]++
	m.refs[seriesKey{route, scopePolicy, policy}]++
	m.mu.Unlock()
	return routeSeries{
		retries:    m.retries.WithLabelValues(route),
		selections: m.selections.WithLabelValues(route, policy),
	}
}

// acquireBreaker takes a reference on a breaker's series and shows it closed
// unless another user of the series holds it already.
func (m *Metrics) acquireBreaker(route, scope, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := seriesKey{route, scope, key}
	if m.refs[k]++; m.refs[k] == 1 {
		m.breakerState.WithLabelValues(route, scope, key).Set(float64(BreakerClosed))
	}
}

// acquireServiceBreakers takes a reference on the series of route's
// service breakers; release them with release(route, ScopeService, "").
func (m *Metrics) acquireServiceBreakers(route string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := seriesKey{route, ScopeService, ""}
	if m.refs[k]++; m.refs[k] == 1 {
		m.serviceOpen.WithLabelValues(route).Set(0)
	}
}

// serviceBreakerChanged records a transition of one of route's service
// breakers: opened or closed move the count of those not closed.
func (m *Metrics) serviceBreakerChanged(route string, opened, closed bool, to BreakerState) {
	switch {
	case opened:
		m.serviceOpen.WithLabelValues(route).Inc()
	case closed:
		m.serviceOpen.WithLabelValues(route).Dec()
	}
	m.transitions.WithLabelValues(route, ScopeService, "", to.String()).Inc()
}

// breakerChanged records a breaker transition.
func (m *Metrics) breakerChanged(route, scope, key string, to BreakerState) {
	m.breakerState.WithLabelValues(route, scope, key).Set(float64(to))
	m.transitions.WithLabelValues(route, scope, key, to.String()).Inc()
}

// release drops a reference taken by acquireRoute or acquireBreaker, and
// deletes the series nobody uses any more.
func (m *Metrics) release(route, scope, key string) {
	k := seriesKey{route, scope, key}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs[k]--; m.refs[k] > 0 {
		return
	}
	delete(m.refs, k)
	switch scope {
	case "":
		m.retries.DeleteLabelValues(route)
		return
	case scopePolicy:
		m.selections.DeleteLabelValues(route, key)
		return
	case ScopeService:
		m.serviceOpen.DeleteLabelValues(route)
		m.transitions.DeletePartialMatch(prometheus.Labels{"route": route, "scope": scope})
		return
	}
	m.breakerState.DeleteLabelValues(route, scope, key)
	m.transitions.DeletePartialMatch(prometheus.Labels{"route": route, "scope": scope, "key": key})
}
