package redisclient

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/observe"
)

// result classifies a finished command for the command histogram; the error
// results are also the kinds of dubbogw_redis_errors_total.
type result int

const (
	resultOK          result = iota
	resultNil                // the key does not exist (redis nil): not an error
	resultTimeout            // the deadline passed and Redis had answered nothing for as long
	resultLate               // the deadline passed while Redis kept answering: a late caller, not a failing Redis
	resultUnavailable        // not connected (yet), or the client is closed
	resultBreakerOpen        // the breaker failed it at once
	resultOverloaded         // no pending slot before the deadline
	resultRedis              // Redis answered with an error reply
	resultConnection         // the connection failed
	resultCanceled           // the caller gave up (its context was canceled)
	numResults
)

func (r result) String() string {
	switch r {
	case resultOK:
		return "ok"
	case resultNil:
		return "nil"
	case resultTimeout:
		return "timeout"
	case resultLate:
		return "late"
	case resultUnavailable:
		return "unavailable"
	case resultBreakerOpen:
		return "breaker_open"
	case resultOverloaded:
		return "overloaded"
	case resultRedis:
		return "redis"
	case resultConnection:
		return "connection"
	case resultCanceled:
		return "canceled"
	}
	return "unknown"
}

// Breaker states, as the dubbogw_redis_breaker_state gauge shows them.
const (
	stateClosed  = 0
	stateOpen    = 1
	stateProbing = 2
)

// metrics are the client's metric families. Several clients registered on
// one registry (a configuration reload) share them.
type metrics struct {
	duration     *prometheus.HistogramVec
	errors       *prometheus.CounterVec
	pending      prometheus.Gauge
	pendingLimit prometheus.Gauge
	pendingWait  prometheus.Histogram
	breakerState prometheus.Gauge
	cacheHits    prometheus.Counter
	cacheMisses  prometheus.Counter
	cacheEntries *prometheus.GaugeVec // by kind: found, absent
	cacheBytes   *prometheus.GaugeVec
	connected    prometheus.Gauge

	errorsByResult [numResults]prometheus.Counter // nil for ok and nil
	cache          cacheGauges                    // the children of cacheEntries and cacheBytes
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_redis_command_duration_seconds",
			Help:    "Time from calling a Redis command to its result, by command and result (ok, nil, timeout, unavailable, breaker_open, overloaded, redis, connection, canceled); its _count is the number of commands.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"command", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_redis_errors_total",
			Help: "Failed Redis commands by kind (timeout, unavailable, breaker_open, overloaded, redis, connection, canceled).",
		}, []string{"kind"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_redis_pending_commands",
			Help: "Redis commands holding a pending slot (sent or about to be sent, not yet answered).",
		}),
		pendingLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_redis_pending_limit",
			Help: "The most Redis commands that may be pending at once (redis.max_pending).",
		}),
		pendingWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dubbogw_redis_pending_wait_seconds",
			Help:    "Time commands that found every pending slot taken waited for one (until a slot or their deadline).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1},
		}),
		breakerState: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_redis_breaker_state",
			Help: "The Redis circuit breaker: 0 closed, 1 open (commands fail at once), 2 half-open (one probe in flight).",
		}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dubbogw_redis_client_cache_hits_total",
			Help: "GETs answered from the client-side cache.",
		}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dubbogw_redis_client_cache_misses_total",
			Help: "GETs that went to Redis because the client-side cache did not hold the key.",
		}),
		cacheEntries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_redis_client_cache_entries",
			Help: "Replies held by the client-side cache, by kind: found (the key exists) or absent (the key does not; kept apart, in 1/16 of client_cache.max_bytes).",
		}, []string{"kind"}),
		cacheBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_redis_client_cache_bytes",
			Help: "Approximate memory of the client-side cache's replies, by kind (found, absent).",
		}, []string{"kind"}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_redis_connected",
			Help: "1 when the Redis client is connected (its last command reached Redis), else 0.",
		}),
	}
	if reg != nil {
		m.duration = observe.MustRegister(reg, m.duration)
		m.errors = observe.MustRegister(reg, m.errors)
		m.pending = observe.MustRegister(reg, m.pending)
		m.pendingLimit = observe.MustRegister(reg, m.pendingLimit)
		m.pendingWait = observe.MustRegister(reg, m.pendingWait)
		m.breakerState = observe.MustRegister(reg, m.breakerState)
		m.cacheHits = observe.MustRegister(reg, m.cacheHits)
		m.cacheMisses = observe.MustRegister(reg, m.cacheMisses)
		m.cacheEntries = observe.MustRegister(reg, m.cacheEntries)
		m.cacheBytes = observe.MustRegister(reg, m.cacheBytes)
		m.connected = observe.MustRegister(reg, m.connected)
	}
	for i, kind := range [...]string{partFound: "found", partAbsent: "absent"} {
		m.cache.entries[i] = m.cacheEntries.WithLabelValues(kind)
		m.cache.bytes[i] = m.cacheBytes.WithLabelValues(kind)
	}
	for r := resultTimeout; r < numResults; r++ {
		m.errorsByResult[r] = m.errors.WithLabelValues(r.String())
	}
	return m
}

// commandMetrics are one command's series, resolved once so that a command
// never looks labels up.
type commandMetrics struct {
	name     string
	duration [numResults]prometheus.Observer
}

func (m *metrics) command(name string) *commandMetrics {
	cm := &commandMetrics{name: name}
	for r := range numResults {
		cm.duration[r] = m.duration.WithLabelValues(name, r.String())
	}
	return cm
}
