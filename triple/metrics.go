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
// number does not grow with the registry.
type metrics struct {
	calls       [numOutcomes]prometheus.Counter
	duration    prometheus.Observer
	inflight    prometheus.Gauge
	connections prometheus.Gauge
	dialErrors  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_triple_calls_total",
		Help: "Triple calls by result (ok, status_error, timeout, canceled, overloaded, connect_error, connection_lost, closed, bad_request, decode_error).",
	}, []string{"result"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "dubbogw_triple_call_duration_seconds",
		Help:    "Time from starting a Triple call to its result or error.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	inflight := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "dubbogw_triple_pending_calls",
		Help: "Triple calls sent and waiting for their response.",
	})
	connections := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "dubbogw_triple_connections",
		Help: "Open HTTP/2 connections to Triple providers.",
	})
	dialErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dubbogw_triple_dial_errors_total",
		Help: "Failed attempts to connect to Triple providers.",
	})
	if reg != nil {
		calls = observe.MustRegister(reg, calls)
		duration = observe.MustRegister(reg, duration)
		inflight = observe.MustRegister(reg, inflight)
		connections = observe.MustRegister(reg, connections)
		dialErrors = observe.MustRegister(reg, dialErrors)
	}
	m := &metrics{duration: duration, inflight: inflight, connections: connections, dialErrors: dialErrors}
	for o := range numOutcomes {
		m.calls[o] = calls.WithLabelValues(o.String())
	}
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
