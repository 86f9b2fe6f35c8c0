// Package tracing sets up the gateway's OpenTelemetry tracing: the tracer
// provider with its sampler and bounded batch span processor, and the
// OTLP/HTTP exporter spans go to. Everything else (which spans exist, what
// they carry) is done where the work is: gateway, proxy, dubboroute and
// redisclient take the trace.Tracer of a Provider, nil when tracing is off.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/config"
)

// InstrumentationName names the tracer of the gateway's spans.
const InstrumentationName = "github.com/dubbogw/dubbogw"

// tracesPath is where an OTLP/HTTP collector takes traces.
const tracesPath = "/v1/traces"

// Options are what a Provider is made with besides its configuration.
type Options struct {
	// Exporter, when set, replaces the OTLP/HTTP exporter and receives each
	// span synchronously as it ends (tests: sdk/trace/tracetest).
	Exporter sdktrace.SpanExporter
	// Registerer receives the tracing metrics; none when nil.
	Registerer prometheus.Registerer
}

// Provider owns the tracer provider of the process. A nil or disabled
// Provider has a nil Tracer, and its methods do nothing.
type Provider struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	metrics *metrics
}

// New builds the provider cfg describes. With tracing disabled it returns
// a Provider whose Tracer is nil: callers then skip tracing entirely, so
// the request path neither allocates nor looks anything up for it.
func New(cfg config.Tracing, opts Options) (*Provider, error) {
	if !cfg.Enabled {
		return &Provider{}, nil
	}
	ratio := config.DefaultTracingSampleRatio
	if cfg.SampleRatio != nil {
		ratio = *cfg.SampleRatio
	}
	if ratio < 0 || ratio > 1 {
		return nil, fmt.Errorf("tracing sample_ratio must be from 0 to 1, got %g", ratio)
	}
	service := cfg.ServiceName
	if service == "" {
		service = config.DefaultTracingService
	}
	queue := cfg.MaxQueueSize
	if queue <= 0 {
		queue = config.DefaultTracingQueueSize
	}
	timeout := cfg.Timeout.D()
	if timeout <= 0 {
		timeout = config.DefaultTracingTimeout.D()
	}

	m := newMetrics(opts.Registerer)
	m.queueLimit.Set(float64(queue))
	var processor sdktrace.SpanProcessor
	if opts.Exporter != nil {
		processor = sdktrace.NewSimpleSpanProcessor(&countingExporter{SpanExporter: opts.Exporter, m: m})
	} else {
		exp, err := newOTLPExporter(cfg.Endpoint, timeout)
		if err != nil {
			return nil, err
		}
		// Never WithBlocking: a full queue drops spans instead of holding requests.
		processor = sdktrace.NewBatchSpanProcessor(&countingExporter{SpanExporter: exp, m: m},
			sdktrace.WithMaxQueueSize(queue),
			sdktrace.WithMaxExportBatchSize(min(queue, 512)),
			sdktrace.WithExportTimeout(timeout))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
		sdktrace.WithSpanProcessor(endCounter{m: m}),
		sdktrace.WithSpanProcessor(processor),
	)
	return &Provider{tp: tp, tracer: tp.Tracer(InstrumentationName), metrics: m}, nil
}

// newOTLPExporter makes the OTLP/HTTP exporter of endpoint (a base URL;
// /v1/traces is appended unless it is already there). It connects lazily.
func newOTLPExporter(endpoint string, timeout time.Duration) (sdktrace.SpanExporter, error) {
	if endpoint == "" {
		endpoint = config.DefaultTracingEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tracing endpoint %q is not an http(s) URL", endpoint)
	}
	if !strings.HasSuffix(u.Path, tracesPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(u.String()),
		otlptracehttp.WithTimeout(timeout),
		// Retries stay within one export's time: a collector that is down
		// must not keep the queue full for a minute.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: timeout,
		}))
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP/HTTP exporter for %s: %w", u, err)
	}
	return exp, nil
}

// Tracer is the gateway's tracer, or nil when tracing is off.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil || p.tracer == nil {
		return nil
	}
	return p.tracer
}

// Enabled reports whether spans are made.
func (p *Provider) Enabled() bool { return p != nil && p.tp != nil }

// ForceFlush exports the spans that have ended, within ctx.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("flushing spans: %w", err)
	}
	return nil
}

// Shutdown exports the queued spans within ctx, then stops the exporter
// and the batch processor's goroutine. Spans ended later are dropped.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	err := p.tp.Shutdown(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutting down tracing: %w", err)
	}
	return err
}
