package redisclient

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Option changes how New builds a Client.
type Option func(*Client)

// WithTracer makes a client span of every Get (the token lookups), a
// child of the span in the caller's context. The key is never recorded:
// it holds the token. A nil tracer (tracing off) costs nothing.
func WithTracer(t trace.Tracer) Option {
	return func(c *Client) { c.tracer = t }
}

// getAttributes are the constant attributes of a GET span.
var getAttributes = trace.WithAttributes(
	attribute.String("db.system", "redis"),
	attribute.String("db.system.name", "redis"),
	attribute.String("db.operation", "GET"),
	attribute.String("db.operation.name", "GET"),
)

// getTraced is Get inside a client span saying whether the key was found
// and whether the client-side cache answered.
func (c *Client) getTraced(ctx context.Context, key string, timeout time.Duration) (string, time.Duration, bool, error) {
	ctx, span := c.tracer.Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindClient), getAttributes)
	defer span.End()
	value, pttl, found, hit, err := c.getValue(ctx, key, timeout)
	span.SetAttributes(
		attribute.Bool("db.redis.cache_hit", hit),
		attribute.Bool("db.redis.found", found),
	)
	if err != nil {
		kind := "error"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			kind = "timeout"
		case errors.Is(err, ErrBreakerOpen):
			kind = "breaker_open"
		case errors.Is(err, ErrOverloaded):
			kind = "overloaded"
		case errors.Is(err, ErrUnavailable):
			kind = "unavailable"
		}
		span.SetAttributes(attribute.String("error.type", kind))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return value, pttl, found, err
}
