package dubbo

import (
	"slices"
	"sync"
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

// metrics are the client's metric families. With perAddr every family is
// labelled by provider address (series grow with the providers called);
// without, the families have no addr label and every provider counts into
// the same series, so their number does not depend on the registry.
type metrics struct {
	perAddr     bool
	sharedOnce  sync.Once
	shared      *addrMetrics // the series every address uses, made on first use; nil with perAddr
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

func newMetrics(reg prometheus.Registerer, perAddr bool) *metrics {
	var addr []string // the labels of every family but calls
	if perAddr {
		addr = []string{"addr"}
	}
	m := &metrics{
		perAddr: perAddr,
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_dubbo_connections",
			Help: "Open connections to Dubbo providers.",
		}, addr),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_dubbo_pending_calls",
			Help: "Calls sent to Dubbo providers and waiting for their response.",
		}, addr),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_calls_total",
			Help: "Dubbo calls by result (ok, business_error, status_error, timeout, canceled, overloaded, connect_error, connection_lost, closed, bad_request, decode_error).",
		}, append(slices.Clone(addr), "result")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_dubbo_call_duration_seconds",
			Help:    "Time from starting a Dubbo call to its result or error.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, addr),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_reconnects_total",
			Help: "Connections to Dubbo providers re-established after a loss or a failed dial.",
		}, addr),
		dialErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_dial_errors_total",
			Help: "Failed attempts to connect to Dubbo providers.",
		}, addr),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_heartbeats_total",
			Help: "Heartbeats sent to Dubbo providers on idle connections.",
		}, addr),
		idleCloses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_heartbeat_timeouts_total",
			Help: "Connections closed because the provider sent nothing for three heartbeat intervals.",
		}, addr),
		readonly: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_readonly_events_total",
			Help: "Readonly events (provider shutting down) received from Dubbo providers.",
		}, addr),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_dubbo_late_responses_total",
			Help: "Responses dropped because their call had already ended (deadline, cancellation).",
		}, addr),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_dubbo_write_batch_frames",
			Help:    "Frames written to a Dubbo connection per flush (write queue drained per syscall).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}, addr),
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

// addrMetrics are the series of one provider address (or, without
// per-address series, of every address), resolved once so the hot path
// never looks labels up.
type addrMetrics struct {
	parent      *metrics
	addr        string // "" for the shared series
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

// forAddr returns the series addr counts into: its own with per-address
// series, else the shared ones (made by the first call, so a gateway
// without Dubbo routes exports none).
func (m *metrics) forAddr(addr string) *addrMetrics {
	if !m.perAddr {
		m.sharedOnce.Do(func() { m.shared = m.resolve("") })
		return m.shared
	}
	return m.resolve(addr)
}

// resolve looks up the series labelled addr ("": the unlabelled ones).
func (m *metrics) resolve(addr string) *addrMetrics {
	var lv []string
	if m.perAddr {
		lv = []string{addr}
	}
	am := &addrMetrics{
		parent:      m,
		addr:        addr,
		connections: m.connections.WithLabelValues(lv...),
		pending:     m.pending.WithLabelValues(lv...),
		duration:    m.duration.WithLabelValues(lv...),
		reconnects:  m.reconnects.WithLabelValues(lv...),
		dialErrors:  m.dialErrors.WithLabelValues(lv...),
		heartbeats:  m.heartbeats.WithLabelValues(lv...),
		idleCloses:  m.idleCloses.WithLabelValues(lv...),
		readonly:    m.readonly.WithLabelValues(lv...),
		late:        m.late.WithLabelValues(lv...),
		batch:       m.batch.WithLabelValues(lv...),
	}
	for o := range numOutcomes {
		am.calls[o] = m.calls.WithLabelValues(append(slices.Clip(lv), o.String())...)
	}
	return am
}

// forget deletes the address's series: a provider gone from the registry
// must not leave label values behind for ever. The shared series stay:
// they belong to no one address.
func (am *addrMetrics) forget() {
	m := am.parent
	if !m.perAddr {
		return
	}
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
