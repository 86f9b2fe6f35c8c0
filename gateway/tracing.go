package gateway

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/exchange"
)

// startServerSpan starts the server span of a request, continuing the W3C
// trace context the client sent (traceparent, tracestate), if any. It is
// named "HTTP <method>" until a route matches (nameServerSpan).
func startServerSpan(ctx context.Context, tracer trace.Tracer, r *http.Request, info *exchange.Info) (context.Context, trace.Span) {
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path),
		attribute.String("url.scheme", scheme(r)),
		attribute.String("network.protocol.version", protocolVersion(r)),
		attribute.String("dubbogw.request_id", info.RequestID),
	}
	if info.ClientIP.IsValid() {
		attrs = append(attrs, attribute.String("client.address", info.ClientIP.String()))
	}
	return tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// nameServerSpan names the request's span after the route that matched.
func nameServerSpan(r *http.Request, rt *route) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetName(r.Method + " " + rt.pattern)
	span.SetAttributes(attribute.String("http.route", rt.pattern), attribute.String("dubbogw.route", rt.name))
}

// endServerSpan records how the request ended and ends its span.
func endServerSpan(span trace.Span, info *exchange.Info, status int) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if info.Upstream != "" {
			span.SetAttributes(attribute.String("dubbogw.upstream", info.Upstream))
		}
		if info.ErrorCode != "" {
			span.SetAttributes(attribute.String("dubbogw.error_code", info.ErrorCode))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, info.ErrorCode)
		}
	}
	span.End()
}

// abortServerSpan ends the span of a request whose handling panicked
// (net/http closes the connection): status error "aborted", with what the
// panic carried unless it is net/http's own abort signal.
func abortServerSpan(span trace.Span, info *exchange.Info, status int, v any) {
	if span.IsRecording() {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		if info.Upstream != "" {
			span.SetAttributes(attribute.String("dubbogw.upstream", info.Upstream))
		}
		if v != http.ErrAbortHandler {
			span.SetAttributes(attribute.String("dubbogw.panic", fmt.Sprint(v)))
		}
		span.SetStatus(codes.Error, "aborted")
	}
	span.End()
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func protocolVersion(r *http.Request) string {
	switch r.ProtoMajor {
	case 2:
		return "2"
	case 3:
		return "3"
	}
	return "1.1"
}
