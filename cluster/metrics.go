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
//
// Their number is bounded by the routes, not by the providers, unless
// MetricsOptions.PerProvider asks for a series per provider breaker.
type Metrics struct {
	// perProvider exports each provider breaker: its state, and its
	// transitions keyed by its address.
	perProvider bool
	// breakerState is dubbogw_cluster_breaker_state{route,scope,key}:
	// 0 closed, 1 open, 2 half-open; scope "route" (key: the route) or,
	// with perProvider, "provider" (key: the provider address).
	breakerState *prometheus.GaugeVec
	// transitions is dubbogw_cluster_breaker_transitions_total{route,scope,key,to};
	// scope "provider" has key "" unless perProvider.
	transitions *prometheus.CounterVec
	// retries is dubbogw_cluster_retries_total{route}: failover attempts after the first.
	retries *prometheus.CounterVec
	// selections is dubbogw_cluster_selections_total{route,policy}: providers chosen.
	selections *prometheus.CounterVec
	// serviceOpen is dubbogw_cluster_service_breakers_open{route}: the
	// route's service breakers (Options.ServiceBreaker) not closed. Their
	// transitions count in transitions with scope "service" and key "".
	serviceOpen *prometheus.GaugeVec
	// providerOpen is dubbogw_cluster_provider_breakers_open{route}: the
	// route's provider breakers not closed, whatever perProvider says.
	providerOpen *prometheus.GaugeVec

	mu   sync.Mutex
	refs map[seriesKey]int
}

// seriesKey names the series of a route (scope and key empty), of its
// policy (scope "policy", key the policy name), of one of its breakers, or
// those counting its service or provider breakers (scope "service" or
// "providers", key empty).
type seriesKey struct{ route, scope, key string }

// Scopes of seriesKey that name no breaker scope.
const (
	scopePolicy    = "policy"
	scopeProviders = "providers"
)

// MetricsOptions configure NewMetrics.
type MetricsOptions struct {
	// PerProvider exports the state of each provider breaker
	// (dubbogw_cluster_breaker_state, scope "provider", key the address)
	// and counts its transitions under its address: series grow with
	// routes × provider addresses. Default false: a route's provider
	// breakers are counted in dubbogw_cluster_provider_breakers_open and
	// their transitions in the route's series of key "".
	PerProvider bool
}

// NewMetrics creates the cluster metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer, opts MetricsOptions) *Metrics {
	m := &Metrics{
		perProvider: opts.PerProvider,
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
		providerOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_cluster_provider_breakers_open",
			Help: "Provider circuit breakers (one per provider address a route calls) open or half-open.",
		}, []string{"route"}),
		refs: make(map[seriesKey]int),
	}
	if reg != nil {
		reg.MustRegister(m.breakerState, m.transitions, m.retries, m.selections, m.serviceOpen, m.providerOpen)
	}
	return m
}

// routeSeries are the resolved per-route series.
type routeSeries struct {
	retries    prometheus.Counter
	selections prometheus.Counter
}

// acquireRoute takes a reference on the series of route and its policy;
// release them with release(route, "", "") and release(route, "policy",
// policy). The series themselves are made at the route's first call
// (routeSeries): a route nobody calls exports none.
func (m *Metrics) acquireRoute(route, policy string) {
	m.mu.Lock()
	m.refs[seriesKey{route: route}]++
	m.refs[seriesKey{route, scopePolicy, policy}]++
	m.mu.Unlock()
}

// routeSeries resolves the series of route and its policy.
func (m *Metrics) routeSeries(route, policy string) *routeSeries {
	return &routeSeries{
		retries:    m.retries.WithLabelValues(route),
		selections: m.selections.WithLabelValues(route, policy),
	}
}

// acquireBreaker takes a reference on a breaker's series and shows it closed
// unless another user of the series holds it already. A provider breaker
// has series of its own only with PerProvider; release it all the same.
func (m *Metrics) acquireBreaker(route, scope, key string) {
	if scope == ScopeProvider && !m.perProvider {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := seriesKey{route, scope, key}
	// A route's breaker state is exported from its first change (a route
	// nobody calls exports none); a provider's, asked for with
	// PerProvider, from the start.
	if m.refs[k]++; m.refs[k] == 1 && scope == ScopeProvider {
		m.breakerState.WithLabelValues(route, scope, key).Set(float64(BreakerClosed))
	}
}

// acquireServiceBreakers takes a reference on the series of route's
// service breakers; release them with release(route, ScopeService, "").
func (m *Metrics) acquireServiceBreakers(route string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refs[seriesKey{route, ScopeService, ""}]++ // exported from the first breaker's change
}

// acquireProviderBreakers takes a reference on the series counting route's
// provider breakers; release them with release(route, scopeProviders, "").
func (m *Metrics) acquireProviderBreakers(route string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refs[seriesKey{route, scopeProviders, ""}]++ // exported from the first breaker's change
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

// providerBreakerChanged records a transition of one of route's provider
// breakers (one still counted: not detached): opened or closed move the
// count of those not closed; with PerProvider, its own series show it.
func (m *Metrics) providerBreakerChanged(route, addr string, opened, closed bool, to BreakerState) {
	switch {
	case opened:
		m.providerOpen.WithLabelValues(route).Inc()
	case closed:
		m.providerOpen.WithLabelValues(route).Dec()
	}
	if !m.perProvider {
		m.transitions.WithLabelValues(route, ScopeProvider, "", to.String()).Inc()
		return
	}
	m.breakerChanged(route, ScopeProvider, addr, to)
}

// providerBreakerDropped stops counting an open provider breaker that
// leaves its cluster.
func (m *Metrics) providerBreakerDropped(route string) {
	m.providerOpen.WithLabelValues(route).Dec()
}

// breakerChanged records a breaker transition.
func (m *Metrics) breakerChanged(route, scope, key string, to BreakerState) {
	m.breakerState.WithLabelValues(route, scope, key).Set(float64(to))
	m.transitions.WithLabelValues(route, scope, key, to.String()).Inc()
}

// release drops a reference taken by acquireRoute, acquireBreaker,
// acquireServiceBreakers or acquireProviderBreakers, and deletes the
// series nobody uses any more.
func (m *Metrics) release(route, scope, key string) {
	if scope == ScopeProvider && !m.perProvider {
		return // acquireBreaker took nothing
	}
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
	case scopeProviders:
		m.providerOpen.DeleteLabelValues(route)
		if !m.perProvider {
			m.transitions.DeletePartialMatch(prometheus.Labels{"route": route, "scope": ScopeProvider, "key": ""})
		}
		return
	}
	m.breakerState.DeleteLabelValues(route, scope, key)
	m.transitions.DeletePartialMatch(prometheus.Labels{"route": route, "scope": scope, "key": key})
}
