package triple

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/observe"
)

// outcome classifies a finished call for dubbogw_triple_calls_total, with
// the dubbo client's names.
type outcome int

const (
	outcomeOK outcome = iota
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

var outcomeNames = [numOutcomes]string{
	"ok", "status_error", "timeout", "canceled", "overloaded", "connect_error",
	"connection_lost", "closed", "bad_request", "decode_error",
}

func (o outcome) String() string { return outcomeNames[o] }

func contextOutcome(err error) outcome {
	if errors.Is(err, context.DeadlineExceeded) {
		return outcomeTimeout
	}
	return outcomeCanceled
}

func outcomeOf(err error) outcome {
	switch {
	case errors.Is(err, dubbo.ErrClosed):
		return outcomeClosed
	case errors.Is(err, dubbo.ErrOverloaded):
		return outcomeOverloaded
	case errors.Is(err, dubbo.ErrConnect):
		return outcomeConnectError
	case errors.Is(err, dubbo.ErrConnectionLost):
		return outcomeConnectionLost
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	}
	return outcomeBadRequest
}

// metrics are the client's series: none is labelled by address, so their
// number does not grow with the registry. They are made by the first call
// (use), so a gateway that never calls a Triple provider exports none.
type metrics struct {
	once        sync.Once
	families    families
	calls       [numOutcomes]prometheus.Counter
	duration    prometheus.Observer
	inflight    prometheus.Gauge
	connections prometheus.Gauge
	dialErrors  prometheus.Counter
}

type families struct {
	calls       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	inflight    *prometheus.GaugeVec
	connections *prometheus.GaugeVec
	dialErrors  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := families{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_triple_calls_total",
			Help: "Triple calls by result (ok, status_error, timeout, canceled, overloaded, connect_error, connection_lost, closed, bad_request, decode_error).",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dubbogw_triple_call_duration_seconds",
			Help:    "Time from starting a Triple call to its result or error.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, nil),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_triple_pending_calls",
			Help: "Triple calls sent and waiting for their response.",
		}, nil),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_triple_connections",
			Help: "Open HTTP/2 connections to Triple providers.",
		}, nil),
		dialErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_triple_dial_errors_total",
			Help: "Failed attempts to connect to Triple providers.",
		}, nil),
	}
	if reg != nil {
		f.calls = observe.MustRegister(reg, f.calls)
		f.duration = observe.MustRegister(reg, f.duration)
		f.inflight = observe.MustRegister(reg, f.inflight)
		f.connections = observe.MustRegister(reg, f.connections)
		f.dialErrors = observe.MustRegister(reg, f.dialErrors)
	}
	return &metrics{families: f}
}

// use makes the series on the first call; every call runs it first.
func (m *metrics) use() *metrics {
	m.once.Do(func() {
		f := &m.families
		for o := range numOutcomes {
			m.calls[o] = f.calls.WithLabelValues(o.String())
		}
		m.duration = f.duration.WithLabelValues()
		m.inflight = f.inflight.WithLabelValues()
		m.connections = f.connections.WithLabelValues()
		m.dialErrors = f.dialErrors.WithLabelValues()
	})
	return m
}

func (m *metrics) observe(o outcome, took time.Duration) {
	m.calls[o].Inc()
	m.duration.Observe(took.Seconds())
}

// dialer counts the connections it makes, and the failed attempts.
type dialer struct {
	d *net.Dialer
	m *metrics
}

func (d dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.m.use()
	nc, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		d.m.dialErrors.Inc()
		return nil, err
	}
	d.m.connections.Inc()
	return &countedConn{Conn: nc, m: d.m}, nil
}

// countedConn decrements the connection gauge once, on its first Close.
type countedConn struct {
	net.Conn
	m    *metrics
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(c.m.connections.Dec)
	return c.Conn.Close()
}
