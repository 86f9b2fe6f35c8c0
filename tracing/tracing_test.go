package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dubbogw/dubbogw/config"
)

func enabled(endpoint string) config.Tracing {
	c := config.Config{Tracing: config.Tracing{Enabled: true, Endpoint: endpoint}}
	config.Defaults(&c)
	return c.Tracing
}

func TestDisabledHasNoTracer(t *testing.T) {
	p, err := New(config.Tracing{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tracer() != nil || p.Enabled() {
		t.Fatal("a disabled provider has a tracer")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var nilProvider *Provider
	if nilProvider.Tracer() != nil || nilProvider.ForceFlush(context.Background()) != nil {
		t.Fatal("a nil provider is not off")
	}
}

// TestShutdownFlushesToCollector: spans ended before Shutdown reach an
// OTLP/HTTP collector at <endpoint>/v1/traces when Shutdown returns.
func TestShutdownFlushesToCollector(t *testing.T) {
	posts := make(chan *http.Request, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if len(body) == 0 {
			t.Errorf("empty export body")
		}
		posts <- r
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	reg := prometheus.NewRegistry()
	p, err := New(enabled(collector.URL), Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, span := p.Tracer().Start(context.Background(), "op")
		span.End()
	}
	select {
	case r := <-posts:
		t.Fatalf("exported before the batch timeout or a flush: %s", r.URL.Path)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-posts:
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("export went to %s as %s", r.URL.Path, r.Header.Get("Content-Type"))
		}
	default:
		t.Fatal("Shutdown returned before the spans were exported")
	}
	if got := testutil.ToFloat64(p.metrics.exported); got != 3 {
		t.Errorf("exported spans = %v, want 3", got)
	}
	if got := testutil.ToFloat64(p.metrics.ended); got != 3 {
		t.Errorf("ended spans = %v, want 3", got)
	}
}

// TestShutdownIsBounded: a collector that never answers does not hold
// Shutdown past its context.
func TestShutdownIsBounded(t *testing.T) {
	release := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer collector.Close()
	defer close(release)
	p, err := New(enabled(collector.URL), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer().Start(context.Background(), "op")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want the deadline's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown ignored its deadline")
	}
}

func TestSampleRatioZeroRecordsNothing(t *testing.T) {
	c := enabled("http://127.0.0.1:1")
	zero := 0.0
	c.SampleRatio = &zero
	p, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	_, span := p.Tracer().Start(context.Background(), "op")
	defer span.End()
	if span.IsRecording() || !span.SpanContext().IsValid() {
		t.Errorf("ratio 0: recording %v, valid %v; want a valid, unrecorded span", span.IsRecording(), span.SpanContext().IsValid())
	}
}

func TestBadEndpoint(t *testing.T) {
	if _, err := New(enabled("ftp://x"), Options{}); err == nil {
		t.Fatal("ftp endpoint accepted")
	}
}
