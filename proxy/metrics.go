package proxy

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the upstream metrics. Create it once per process with
// NewMetrics and pass it to every New.
//
// Series are shared by name: a config reload that builds the new "users"
// upstream before closing the old one keeps counting into the same series,
// and a series is deleted only when the last Upstream using it is closed.
type Metrics struct {
	// requests is dubbogw_upstream_requests_total{upstream,target,code}:
	// attempts sent to a target (retries included), by response status code,
	// or code="error" when no response arrived (connect failure, timeout, reset).
	requests *prometheus.CounterVec
	// duration is dubbogw_upstream_request_duration_seconds{upstream}: time
	// from sending an attempt to receiving its response headers (or its error).
	duration *prometheus.HistogramVec
	// retries is dubbogw_upstream_retries_total{upstream}: attempts that were
	// retried on another target.
	retries *prometheus.CounterVec
	// ejections is dubbogw_upstream_ejections_total{upstream,target}: times a
	// target was ejected by passive health checking, failed probes included.
	ejections *prometheus.CounterVec
	// healthy is dubbogw_upstream_target_healthy{upstream,target}: 1 while the
	// target takes traffic, 0 while it is ejected (probing included).
	healthy *prometheus.GaugeVec
	// inFlight is dubbogw_upstream_in_flight{upstream,target}: attempts sent to
	// the target whose response body is not closed yet.
	inFlight *prometheus.GaugeVec
	// panics is dubbogw_upstream_panic_selections_total{upstream}: targets
	// picked while every target was ejected (panic mode).
	panics *prometheus.CounterVec
	// grpcCalls is dubbogw_upstream_grpc_calls_total{upstream,method,status}:
	// gRPC calls a target answered, by method (the first
	// maxGRPCMethods of each upstream; the rest count as "other") and
	// grpc-status.
	grpcCalls *prometheus.CounterVec

	mu   sync.Mutex
	refs map[seriesKey]int // users of each upstream (target "") and upstream target

	// direct are the pools of upstreams using transport: direct, read at
	// scrape time as dubbogw_upstream_direct_connections{upstream,state}.
	direct *directPools
}

// directPools reports the connection pools of direct transports.
type directPools struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	pools map[*directTransport]string // → upstream name
}

func (d *directPools) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *directPools) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sums := map[string]poolStats{} // an upstream replaced by a reload may briefly have two
	for t, name := range d.pools {
		st, sum := t.stats(), sums[name]
		sums[name] = poolStats{open: sum.open + st.open, idle: sum.idle + st.idle, waiting: sum.waiting + st.waiting}
	}
	for name, st := range sums {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(st.open), name, "open")
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(st.idle), name, "idle")
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(st.waiting), name, "waiting")
	}
}

func (d *directPools) add(t *directTransport, upstream string) {
	d.mu.Lock()
	d.pools[t] = upstream
	d.mu.Unlock()
}

func (d *directPools) remove(t *directTransport) {
	d.mu.Lock()
	delete(d.pools, t)
	d.mu.Unlock()
}

// seriesKey names the series of an upstream (target empty) or of one of its targets.
type seriesKey struct{ upstream, target string }

// NewMetrics creates the upstream metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		direct: &directPools{
			desc: prometheus.NewDesc("dubbogw_upstream_direct_connections",
				"Connections of upstreams using transport: direct, by state: open (in use, idle or dialing), idle, waiting (requests waiting for a slot under max_per_target).",
				[]string{"upstream", "state"}, nil),
			pools: map[*directTransport]string{},
		},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_upstream_requests_total",
			Help: "Attempts sent to upstream targets, by response status code or \"error\".",
		}, []string{"upstream", "target", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_upstream_request_duration_seconds",
			Help:    "Time from sending an upstream attempt to its response headers or error.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"upstream"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_upstream_retries_total",
			Help: "Upstream attempts retried on another target.",
		}, []string{"upstream"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_upstream_ejections_total",
			Help: "Upstream targets ejected by passive health checking, failed probes included.",
		}, []string{"upstream", "target"}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_upstream_target_healthy",
			Help: "1 while an upstream target takes traffic, 0 while it is ejected.",
		}, []string{"upstream", "target"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_upstream_in_flight",
			Help: "Upstream attempts whose response body is not closed yet.",
		}, []string{"upstream", "target"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_upstream_panic_selections_total",
			Help: "Targets picked while every target of the upstream was ejected.",
		}, []string{"upstream"}),
		grpcCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_upstream_grpc_calls_total",
			Help: "gRPC calls answered by upstream targets, by method (the first 100 of each upstream; then \"other\") and grpc-status.",
		}, []string{"upstream", "method", "status"}),
		refs: make(map[seriesKey]int),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.retries, m.ejections, m.healthy, m.inFlight, m.panics, m.grpcCalls, m.direct)
	}
	return m
}

// upstreamSeries are the resolved per-upstream series.
type upstreamSeries struct {
	duration prometheus.Observer
	retries  prometheus.Counter
	panics   prometheus.Counter
}

// targetSeries are the resolved per-target series; status code counters are
// resolved on first use, then read with one atomic load.
type targetSeries struct {
	requests  *prometheus.CounterVec
	upstream  string
	target    string
	codes     [500]atomic.Pointer[prometheus.Counter] // status 100..599
	errors    prometheus.Counter
	ejections prometheus.Counter
	healthy   prometheus.Gauge
	inFlight  prometheus.Gauge
}

// acquireUpstream resolves the series of upstream name and takes a reference on them.
func (m *Metrics) acquireUpstream(name string) upstreamSeries {
	m.mu.Lock()
	m.refs[seriesKey{upstream: name}]++
	m.mu.Unlock()
	return upstreamSeries{
		duration: m.duration.WithLabelValues(name),
		retries:  m.retries.WithLabelValues(name),
		panics:   m.panics.WithLabelValues(name),
	}
}

// initTarget resolves the series of one target into s and takes a reference on them.
func (m *Metrics) initTarget(s *targetSeries, upstream, target string) {
	m.mu.Lock()
	m.refs[seriesKey{upstream, target}]++
	m.mu.Unlock()
	s.requests = m.requests
	s.upstream, s.target = upstream, target
	s.errors = m.requests.WithLabelValues(upstream, target, "error")
	s.ejections = m.ejections.WithLabelValues(upstream, target)
	s.healthy = m.healthy.WithLabelValues(upstream, target)
	s.inFlight = m.inFlight.WithLabelValues(upstream, target)
}

// release drops a reference taken by acquireUpstream or initTarget (target ""
// for the upstream's own series) and deletes the series nobody uses any more.
func (m *Metrics) release(upstream, target string) {
	key := seriesKey{upstream, target}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refs[key]--
	if m.refs[key] > 0 {
		return
	}
	delete(m.refs, key)
	if target == "" {
		m.duration.DeleteLabelValues(upstream)
		m.retries.DeleteLabelValues(upstream)
		m.panics.DeleteLabelValues(upstream)
		m.grpcCalls.DeletePartialMatch(prometheus.Labels{"upstream": upstream})
		return
	}
	m.requests.DeletePartialMatch(prometheus.Labels{"upstream": upstream, "target": target})
	m.ejections.DeleteLabelValues(upstream, target)
	m.healthy.DeleteLabelValues(upstream, target)
	m.inFlight.DeleteLabelValues(upstream, target)
}

// maxGRPCMethods bounds the methods an upstream's gRPC calls are counted
// under: clients choose the paths, and each method is a series per status.
const maxGRPCMethods = 100

// grpcMethods names the methods of one upstream's gRPC calls in its
// metrics: the first maxGRPCMethods seen, then "other".
type grpcMethods struct {
	known sync.Map // method → struct{}
	n     atomic.Int32
}

// label is the method label of path.
func (g *grpcMethods) label(path string) string {
	if _, ok := g.known.Load(path); ok {
		return path
	}
	if !grpcMethodPath(path) || g.n.Load() >= maxGRPCMethods {
		return "other"
	}
	if _, loaded := g.known.LoadOrStore(path, struct{}{}); !loaded {
		g.n.Add(1)
	}
	return path
}

// grpcMethodPath reports whether path looks like a gRPC method,
// "/package.Service/Method", short and printable.
func grpcMethodPath(path string) bool {
	if len(path) < 4 || len(path) > 128 || path[0] != '/' {
		return false
	}
	slash := 0
	for i := 1; i < len(path); i++ {
		switch c := path[i]; {
		case c == '/':
			slash++
		case c <= ' ' || c > '~':
			return false
		}
	}
	return slash == 1
}

// countStatus counts one attempt answered with status code.
func (s *targetSeries) countStatus(code int) {
	if code < 100 || code > 599 {
		s.requests.WithLabelValues(s.upstream, s.target, strconv.Itoa(code)).Inc()
		return
	}
	slot := &s.codes[code-100]
	if c := slot.Load(); c != nil {
		(*c).Inc()
		return
	}
	c := s.requests.WithLabelValues(s.upstream, s.target, strconv.Itoa(code))
	slot.Store(&c)
	c.Inc()
}
