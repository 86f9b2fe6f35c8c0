package dubboroute

import (
	"context"
	"maps"
	"net"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo"
)

// invokeTraced calls p inside a client span, a child of the request's
// span, and sends that span's W3C trace context as the traceparent and
// tracestate attachments, so a provider with OpenTelemetry continues the
// trace under this attempt.
func (h *Handler) invokeTraced(ctx context.Context, p *cluster.Provider, inv *dubbo.Invocation) (any, error) {
	host, port := p.Addr, 0
	if hs, ps, err := net.SplitHostPort(p.Addr); err == nil {
		host = hs
		port, _ = strconv.Atoi(ps)
	}
	ctx, span := h.tracer.Start(ctx, inv.Interface+"/"+inv.Method,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("rpc.system", "apache_dubbo"),
			attribute.String("rpc.service", inv.Interface),
			attribute.String("rpc.method", inv.Method),
			attribute.String("server.address", host),
			attribute.Int("server.port", port),
			attribute.String("dubbogw.dubbo.provider", p.Addr),
			attribute.String("dubbogw.dubbo.version", inv.Version),
			attribute.String("dubbogw.dubbo.group", inv.Group),
		))
	defer span.End()

	// The attempt's own attachments: attempts may go to other providers
	// under other spans, and the invocation is shared between them.
	attempt := *inv
	attempt.Attachments = maps.Clone(inv.Attachments)
	if attempt.Attachments == nil {
		attempt.Attachments = make(map[string]string, 2)
	}
	delete(attempt.Attachments, "traceparent")
	delete(attempt.Attachments, "tracestate")
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(attempt.Attachments))

	res, err := h.invoke(ctx, p, &attempt)
	if err != nil {
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return res, err
}

// errorType names a failed call for the error.type span attribute.
func errorType(err error) string {
	switch classify(err) {
	case cluster.Business:
		return "business_exception"
	case cluster.Canceled:
		return "canceled"
	case cluster.NotExecuted:
		return "not_executed"
	}
	return "error"
}
