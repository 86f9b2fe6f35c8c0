package tracing

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// metrics count spans through the pipeline. The export queue holds at
// most the queue limit: ended - exported - failed is what is queued or
// was dropped because the queue was full.
type metrics struct {
	spans      *prometheus.CounterVec
	ended      prometheus.Counter
	exported   prometheus.Counter
	failed     prometheus.Counter
	queueLimit prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		spans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_tracing_spans_total",
			Help: "Sampled spans by stage: ended, exported, export_failed (ended minus the others is queued or dropped).",
		}, []string{"stage"}),
		queueLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dubbogw_tracing_queue_limit",
			Help: "Spans the export queue holds at most; beyond, spans are dropped.",
		}),
	}
	m.ended = m.spans.WithLabelValues("ended")
	m.exported = m.spans.WithLabelValues("exported")
	m.failed = m.spans.WithLabelValues("export_failed")
	if reg != nil {
		reg.MustRegister(m.spans, m.queueLimit)
	}
	return m
}

// endCounter counts the sampled spans that end.
type endCounter struct{ m *metrics }

func (endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c endCounter) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		c.m.ended.Inc()
	}
}
func (endCounter) Shutdown(context.Context) error   { return nil }
func (endCounter) ForceFlush(context.Context) error { return nil }

// countingExporter counts what its exporter took and what failed.
type countingExporter struct {
	sdktrace.SpanExporter
	m *metrics
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.m.failed.Add(float64(len(spans)))
		return err
	}
	e.m.exported.Add(float64(len(spans)))
	return nil
}
