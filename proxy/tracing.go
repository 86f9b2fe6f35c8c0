package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Option changes how New builds an Upstream.
type Option func(*Upstream)

// WithTracer makes a client span of every attempt, a child of the span in
// the request's context, and sends its W3C trace context (traceparent,
// tracestate) upstream in place of whatever the client sent. A nil tracer
// (tracing off) leaves requests as they are and costs nothing.
func WithTracer(t trace.Tracer) Option {
	return func(u *Upstream) { u.tracer = t }
}

// targetAttributes are the span attributes of an attempt on a target.
func targetAttributes(upstream string, t *target) []attribute.KeyValue {
	host, port := t.url.Host, 0
	if h, p, err := net.SplitHostPort(t.url.Host); err == nil {
		host = h
		port, _ = strconv.Atoi(p)
	}
	if port == 0 {
		port = 80
		if t.url.Scheme == "https" {
			port = 443
		}
	}
	return []attribute.KeyValue{
		attribute.String("server.address", host),
		attribute.Int("server.port", port),
		attribute.String("dubbogw.upstream", upstream),
		attribute.String("dubbogw.target", t.url.String()),
	}
}

// startAttempt starts the client span of an attempt on t and writes its
// trace context into out's headers, replacing the client's. out's header
// map must be out's own.
func (u *Upstream) startAttempt(ctx context.Context, out *http.Request, t *target, attempt int) trace.Span {
	ctx, span := u.tracer.Start(ctx, out.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.spanAttrs...),
		trace.WithAttributes(attribute.String("http.request.method", out.Method)))
	if attempt > 1 {
		span.SetAttributes(attribute.Int("http.request.resend_count", attempt-1))
	}
	out.Header.Del("Traceparent")
	out.Header.Del("Tracestate")
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(out.Header))
	return span
}

// endAttemptError ends the span of an attempt that got no response.
func endAttemptError(span trace.Span, err error) {
	if span == nil {
		return
	}
	kind := "error"
	if errors.As(err, new(*connectError)) {
		kind = "connect_failure"
	} else if errors.Is(err, context.DeadlineExceeded) {
		kind = "timeout"
	} else if errors.Is(err, context.Canceled) {
		kind = "canceled"
	}
	span.SetAttributes(attribute.String("error.type", kind))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.End()
}

// attemptStatus records the response status on the span of an attempt.
func attemptStatus(span trace.Span, code int) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", code))
	if code >= 500 {
		span.SetAttributes(attribute.String("error.type", strconv.Itoa(code)))
		span.SetStatus(codes.Error, "")
	}
}
