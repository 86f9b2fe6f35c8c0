package proxy

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTracedAttemptsReplaceClientTraceContext: with a tracer, each attempt
// is a client span below the span of the request's context, and the
// target receives that span's traceparent instead of the client's; a
// failed connect is an error span, the retry carries its resend count.
func TestTracedAttemptsReplaceClientTraceContext(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	b := newEchoBackend(t, "a")
	u, err := New("svc", &Config{Targets: targets(closedURL(t), b.URL), Policy: "round_robin"},
		NewMetrics(prometheus.NewRegistry()), nil, WithTracer(tp.Tracer("test")))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()

	parentCtx, parent := tp.Tracer("test").Start(context.Background(), "server", trace.WithSpanKind(trace.SpanKindServer))
	for i := range 2 { // round robin: requests start on the closed target
		req := httptest.NewRequest("GET", "http://gw/x", nil).WithContext(parentCtx)
		req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		req.Header.Set("Tracestate", "client=1")
		rec := httptest.NewRecorder()
		u.Handler(0).ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
		}
		e := decodeEcho(t, result{status: rec.Code, body: rec.Body.String()})
		got := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(e.Header))
		sc := trace.SpanContextFromContext(got)
		if sc.TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("request %d: target got trace %s, want the request span's %s", i, sc.TraceID(), parent.SpanContext().TraceID())
		}
		if strings.Contains(e.Header.Get("Tracestate"), "client") {
			t.Errorf("request %d: the client's tracestate reached the target", i)
		}
		ended := spans.Ended()
		last := ended[len(ended)-1]
		if last.SpanContext().SpanID() != sc.SpanID() || last.Parent().SpanID() != parent.SpanContext().SpanID() ||
			last.SpanKind() != trace.SpanKindClient {
			t.Errorf("request %d: the target's parent %s is not the last attempt's client span %s below the request span",
				i, sc.SpanID(), last.SpanContext().SpanID())
		}
	}
	parent.End()
	var failed, resent int
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "error.type" && kv.Value.AsString() == "connect_failure" {
				failed++
			}
			if kv.Key == "http.request.resend_count" && kv.Value.AsInt64() == 1 {
				resent++
			}
		}
	}
	if failed == 0 || failed != resent {
		t.Errorf("connect-failure spans %d, resent spans %d; want one resent attempt per failed one", failed, resent)
	}
}

// TestUntracedKeepsClientTraceContext: without a tracer the client's
// trace context goes upstream untouched.
func TestUntracedKeepsClientTraceContext(t *testing.T) {
	b := newEchoBackend(t, "a")
	u := newTestUpstream(t, TransportStandard, "svc", &Config{Targets: targets(b.URL)})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := httptest.NewRequest("GET", "http://gw/x", nil)
	req.Header.Set("Traceparent", tp)
	rec := httptest.NewRecorder()
	u.Handler(0).ServeHTTP(rec, req)
	if e := decodeEcho(t, result{status: rec.Code, body: rec.Body.String()}); e.Header.Get("Traceparent") != tp {
		t.Errorf("traceparent %q, want %q", e.Header.Get("Traceparent"), tp)
	}
}
