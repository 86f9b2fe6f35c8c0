package gateway

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the data-plane and lifecycle metric families, created once per
// process: they outlive route tables, which come and go with reloads.
type metrics struct {
	requests      *prometheus.CounterVec   // dubbogw_http_requests_total{route,code}
	duration      *prometheus.HistogramVec // dubbogw_http_request_duration_seconds{route}
	errors        *prometheus.CounterVec   // dubbogw_errors_total{code}
	panics        *prometheus.CounterVec   // dubbogw_filter_panics_total{route}
	reloads       *prometheus.CounterVec   // dubbogw_config_reloads_total{result}
	reloadTime    prometheus.Gauge         // dubbogw_config_last_reload_success_timestamp_seconds
	reloadOK      prometheus.Gauge         // dubbogw_config_last_reload_successful
	routes        prometheus.Gauge         // dubbogw_routes
	errorCounters sync.Map                 // code → prometheus.Counter, a few entries
	edge          edgeCounters             // dubbogw_edge_total{action}

	// The edge: what clients do to the gateway's listener.
	bodyErrors        *prometheus.CounterVec // dubbogw_request_body_errors_total{reason}
	bodyErrorCounters *bodyErrorCounters     // its children, by exchange.BodyErrorKind
	connections       prometheus.Gauge       // dubbogw_connections
	connRejected      *prometheus.CounterVec // dubbogw_connections_rejected_total{reason}
	h2Errors          *prometheus.CounterVec // dubbogw_http2_errors_total{type}
}

// noRoute labels requests that matched no route.
const noRoute = "none"

func newMetrics(reg prometheus.Registerer, ready func() float64) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_http_requests_total",
			Help: "Requests answered on the data plane, by route (\"none\" when no route matched) and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_http_request_duration_seconds",
			Help:    "Time from accepting a request to the end of its response, by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_errors_total",
			Help: "Responses the gateway produced itself, by error code (NO_ROUTE, SHED, TIMEOUT, ...).",
		}, []string{"code"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_filter_panics_total",
			Help: "Panics recovered in a route's filter chain or upstream, by route.",
		}, []string{"route"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_config_reloads_total",
			Help: "Configuration reload attempts, by result: success; rejected (read, and refused for its problems); failure (could not be read).",
		}, []string{"result"}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load.",
		}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_config_last_reload_successful",
			Help: "1 when the last configuration reload succeeded, 0 when it was refused.",
		}),
		routes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_routes",
			Help: "Routes in the active route table.",
		}),
	}
	m.bodyErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_request_body_errors_total",
		Help: "Request bodies the client failed to deliver, by reason (malformed, truncated, too_slow, timeout, aborted).",
	}, []string{"reason"})
	m.bodyErrorCounters = newBodyErrorCounters(m.bodyErrors)
	m.connections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "dubbogw_connections",
		Help: "Data-plane connections open (upgraded ones included).",
	})
	m.connRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_connections_rejected_total",
		Help: "Data-plane connections refused at accept, by the cap they hit (per_ip, total).",
	}, []string{"reason"})
	m.h2Errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_http2_errors_total",
		Help: "HTTP/2 protocol errors of clients, by type as net/http names them (over_max_streams, ...).",
	}, []string{"type"})
	reg.MustRegister(m.bodyErrors, m.connections, m.connRejected, m.h2Errors)
	reg.MustRegister(m.requests, m.duration, m.errors, m.panics, m.reloads, m.reloadTime, m.reloadOK, m.routes,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dubbogw_ready",
			Help: "1 while the gateway reports ready (config loaded, not draining).",
		}, ready),
	)
	m.edge = newEdgeCounters(reg)
	return m
}

// errorCounter returns the counter for code, creating it once.
func (m *metrics) errorCounter(code string) prometheus.Counter {
	if c, ok := m.errorCounters.Load(code); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.errorCounters.LoadOrStore(code, m.errors.WithLabelValues(code))
	return c.(prometheus.Counter)
}

// routeMetrics are one route's metric children, resolved once so the
// request path does no label lookups. They are made at the route's first
// request, not when the table is built: a route nobody calls exports no
// series (at 5,000 routes its 19 lines each were 90% of a scrape).
type routeMetrics struct {
	name   string
	parent *metrics
	series atomic.Pointer[routeSeries]   // nil until the first request
	codes  atomic.Pointer[[]codeCounter] // copy-on-write: statuses seen so far
	mu     sync.Mutex
}

// routeSeries are a route's series made at its first request.
type routeSeries struct {
	duration prometheus.Observer
	panics   prometheus.Counter
}

type codeCounter struct {
	code int
	c    prometheus.Counter
}

func (m *metrics) forRoute(name string) *routeMetrics {
	rm := &routeMetrics{name: name, parent: m}
	rm.codes.Store(&[]codeCounter{})
	return rm
}

// resolved returns the route's series, making them at the first call.
func (rm *routeMetrics) resolved() *routeSeries {
	if s := rm.series.Load(); s != nil {
		return s
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if s := rm.series.Load(); s != nil {
		return s
	}
	s := &routeSeries{
		duration: rm.parent.duration.WithLabelValues(rm.name),
		panics:   rm.parent.panics.WithLabelValues(rm.name),
	}
	rm.series.Store(s)
	return s
}

// observe records how long one request took.
func (rm *routeMetrics) observe(d time.Duration) { rm.resolved().duration.Observe(d.Seconds()) }

// panicked counts a panic recovered in the route.
func (rm *routeMetrics) panicked() { rm.resolved().panics.Inc() }

// count records one answered request with status code.
func (rm *routeMetrics) count(code int) {
	for _, cc := range *rm.codes.Load() {
		if cc.code == code {
			cc.c.Inc()
			return
		}
	}
	rm.mu.Lock()
	old := *rm.codes.Load()
	for _, cc := range old {
		if cc.code == code {
			rm.mu.Unlock()
			cc.c.Inc()
			return
		}
	}
	next := make([]codeCounter, len(old), len(old)+1)
	copy(next, old)
	c := rm.parent.requests.WithLabelValues(rm.name, strconv.Itoa(code))
	next = append(next, codeCounter{code, c})
	rm.codes.Store(&next)
	rm.mu.Unlock()
	c.Inc()
}

// forget deletes the series of a route that left the route table.
func (m *metrics) forget(route string) {
	m.requests.DeletePartialMatch(prometheus.Labels{"route": route})
	m.duration.DeleteLabelValues(route)
	m.panics.DeleteLabelValues(route)
}
