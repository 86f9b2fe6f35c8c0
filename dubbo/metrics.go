package dubbo

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/observe"
)

// outcome classifies a finished call for dubbogw_dubbo_calls_total.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeBusinessError
	outcomeStatusError
	outcomeTimeout
	outcomeCanceled
	outcomeOverloaded
	outcomeConnectError
	outcomeConnectionLost
	outcomeClosed
	outcomeBadRequest
	outcomeDecodeError
	numOutcomes
)

func (o outcome) String() string {
	switch o {
	case outcomeOK:
		return "ok"
	case outcomeBusinessError:
		return "business_error"
	case outcomeStatusError:
		return "status_error"
	case outcomeTimeout:
		return "timeout"
	case outcomeCanceled:
		return "canceled"
	case outcomeOverloaded:
		return "overloaded"
	case outcomeConnectError:
		return "connect_error"
	case outcomeConnectionLost:
		return "connection_lost"
	case outcomeClosed:
		return "closed"
	case outcomeBadRequest:
		return "bad_request"
	case outcomeDecodeError:
		return "decode_error"
	}
	return "unknown"
}

// metrics are the client's metric families, all labelled by provider
// address (bounded by the providers the registry knows).
type metrics struct {
	connections *prometheus.GaugeVec
	pending     *prometheus.GaugeVec
	calls       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	reconnects  *prometheus.CounterVec
	dialErrors  *prometheus.CounterVec
	heartbeats  *prometheus.CounterVec
	idleCloses  *prometheus.CounterVec
	readonly    *prometheus.CounterVec
	late        *prometheus.CounterVec
	batch       *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_dubbo_connections",
			Help: "Open connections to a Dubbo provider.",
		}, []string{"addr"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_dubbo_pending_calls",
			Help: "Calls sent to a Dubbo provider and waiting for their response.",
		}, []string{"addr"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_calls_total",
			Help: "Dubbo calls by provider and result (ok, business_error, status_error, timeout, canceled, overloaded, connect_error, connection_lost, closed, bad_request, decode_error).",
		}, []string{"addr", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_dubbo_call_duration_seconds",
			Help:    "Time from starting a Dubbo call to its result or error.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"addr"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_reconnects_total",
			Help: "Connections to a Dubbo provider re-established after a loss or a failed dial.",
		}, []string{"addr"}),
		dialErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_dial_errors_total",
			Help: "Failed attempts to connect to a Dubbo provider.",
		}, []string{"addr"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_heartbeats_total",
			Help: "Heartbeats sent to a Dubbo provider on idle connections.",
		}, []string{"addr"}),
		idleCloses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_heartbeat_timeouts_total",
			Help: "Connections closed because the provider sent nothing for three heartbeat intervals.",
		}, []string{"addr"}),
		readonly: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_readonly_events_total",
			Help: "Readonly events (provider shutting down) received from a Dubbo provider.",
		}, []string{"addr"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_late_responses_total",
			Help: "Responses dropped because their call had already ended (deadline, cancellation).",
		}, []string{"addr"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_dubbo_write_batch_frames",
			Help:    "Frames written to a Dubbo connection per flush (write queue drained per syscall).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}, []string{"addr"}),
	}
	if reg != nil {
		m.connections = observe.MustRegister(reg, m.connections)
		m.pending = observe.MustRegister(reg, m.pending)
		m.calls = observe.MustRegister(reg, m.calls)
		m.duration = observe.MustRegister(reg, m.duration)
		m.reconnects = observe.MustRegister(reg, m.reconnects)
		m.dialErrors = observe.MustRegister(reg, m.dialErrors)
		m.heartbeats = observe.MustRegister(reg, m.heartbeats)
		m.idleCloses = observe.MustRegister(reg, m.idleCloses)
		m.readonly = observe.MustRegister(reg, m.readonly)
		m.late = observe.MustRegister(reg, m.late)
		m.batch = observe.MustRegister(reg, m.batch)
	}
	return m
}

// addrMetrics are the series of one provider address, resolved once so the
// hot path never looks labels up.
type addrMetrics struct {
	parent      *metrics
	addr        string
	connections prometheus.Gauge
	pending     prometheus.Gauge
	calls       [numOutcomes]prometheus.Counter
	duration    prometheus.Observer
	reconnects  prometheus.Counter
	dialErrors  prometheus.Counter
	heartbeats  prometheus.Counter
	idleCloses  prometheus.Counter
	readonly    prometheus.Counter
	late        prometheus.Counter
	batch       prometheus.Observer
}

func (m *metrics) forAddr(addr string) *addrMetrics {
	am := &addrMetrics{
		parent:      m,
		addr:        addr,
		connections: m.connections.WithLabelValues(addr),
		pending:     m.pending.WithLabelValues(addr),
		duration:    m.duration.WithLabelValues(addr),
		reconnects:  m.reconnects.WithLabelValues(addr),
		dialErrors:  m.dialErrors.WithLabelValues(addr),
		heartbeats:  m.heartbeats.WithLabelValues(addr),
		idleCloses:  m.idleCloses.WithLabelValues(addr),
		readonly:    m.readonly.WithLabelValues(addr),
		late:        m.late.WithLabelValues(addr),
		batch:       m.batch.WithLabelValues(addr),
	}
	for o := range numOutcomes {
		am.calls[o] = m.calls.WithLabelValues(addr, o.String())
	}
	return am
}

// forget deletes the address's series: a provider gone from the registry
// must not leave label values behind for ever.
func (am *addrMetrics) forget() {
	m := am.parent
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.connections, m.pending, m.duration, m.reconnects, m.dialErrors, m.heartbeats, m.idleCloses,
		m.readonly, m.late, m.batch, m.calls} {
		v.DeletePartialMatch(prometheus.Labels{"addr": am.addr})
	}
}

func (am *addrMetrics) observe(o outcome, took time.Duration) {
	am.calls[o].Inc()
	am.duration.Observe(took.Seconds())
}
