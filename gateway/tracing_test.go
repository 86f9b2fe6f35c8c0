package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/observe"
)

// spanSink keeps the spans a gateway ends and signals each export, so a
// test waits for a span on a channel instead of sleeping.
type spanSink struct {
	*tracetest.InMemoryExporter
	exported chan struct{}
}

func newSpanSink() *spanSink {
	return &spanSink{InMemoryExporter: tracetest.NewInMemoryExporter(), exported: make(chan struct{}, 1)}
}

func (s *spanSink) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := s.InMemoryExporter.ExportSpans(ctx, spans)
	select {
	case s.exported <- struct{}{}:
	default:
	}
	return err
}

// wait returns the first span that matches, waiting up to 5s for it.
func (s *spanSink) wait(t *testing.T, what string, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		for _, sp := range s.GetSpans() {
			if match(sp) {
				return sp
			}
		}
		select {
		case <-s.exported:
		case <-deadline.C:
			t.Fatalf("no %s span within 5s; spans: %v", what, spanNames(s.GetSpans()))
		}
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, sp := range spans {
		out = append(out, sp.SpanKind.String()+" "+sp.Name)
	}
	return out
}

func serverSpan(name string) func(tracetest.SpanStub) bool {
	return func(sp tracetest.SpanStub) bool { return sp.SpanKind == trace.SpanKindServer && sp.Name == name }
}

func childOf(parent tracetest.SpanStub, kind trace.SpanKind) func(tracetest.SpanStub) bool {
	return func(sp tracetest.SpanStub) bool {
		return sp.SpanKind == kind && sp.Parent.SpanID() == parent.SpanContext.SpanID() &&
			sp.SpanContext.TraceID() == parent.SpanContext.TraceID()
	}
}

func attr(sp tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func wantAttrs(t *testing.T, sp tracetest.SpanStub, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got := attr(sp, k).AsInterface(); fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s span %q: %s = %v, want %v", sp.SpanKind, sp.Name, k, got, v)
		}
	}
}

// startTracedGW starts a gateway with tracing on, its spans going to the
// returned sink.
func startTracedGW(t *testing.T, yamlText string) (*testGW, *spanSink) {
	t.Helper()
	return startTracedGWRaw(t, baseYAML+yamlText)
}

// startTracedGWRaw is startTracedGW from a whole config file.
func startTracedGWRaw(t *testing.T, yamlText string) (*testGW, *spanSink) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte("tracing: {enabled: true}\n"+yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := newSpanSink()
	logs := &syncBuffer{}
	g, err := New(Options{
		Load:         func() (*config.Config, error) { return config.Load(path) },
		Logger:       slog.New(slog.NewJSONHandler(logs, nil)),
		Registry:     observe.NewRegistry(),
		SpanExporter: sink,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return &testGW{Gateway: g, path: path, base: "http://" + g.Addr(), admin: "http://" + g.AdminAddr(), logs: logs}, sink
}

// parseTraceparent splits a version-00 traceparent into trace and parent ids.
func parseTraceparent(t *testing.T, tp string) (trace.TraceID, trace.SpanID) {
	t.Helper()
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" {
		t.Fatalf("malformed traceparent %q", tp)
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		t.Fatalf("traceparent %q: %v", tp, err)
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		t.Fatalf("traceparent %q: %v", tp, err)
	}
	return tid, sid
}

// TestTracingHTTPRoute: a request through an HTTP route makes a server
// span and, below it, a client span per upstream attempt; the upstream
// receives the client span's trace context, never the client's own; an
// incoming traceparent is continued; a retried attempt is its own span.
func TestTracingHTTPRoute(t *testing.T) {
	echo := echoUpstream(t, "echo")
	var flaky atomic.Int64
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flaky.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	tg, sink := startTracedGW(t, fmt.Sprintf(`
upstreams:
  u: {targets: [{url: %q}]}
  two: {policy: round_robin, targets: [{url: %q}, {url: %q}], retry: {retries: 1, on: ["503"]}}
routes:
  - {name: items, match: {path: "/items/{id}"}, upstream: u}
  - {name: retried, match: {prefix: /retried}, upstream: two}
`, echo.URL, unavailable.URL, echo.URL))

	t.Run("new trace", func(t *testing.T) {
		a := do(t, "GET", tg.base+"/items/7", nil, "traceparent", "garbage", "tracestate", "evil=1")
		if a.status != 200 {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		srv := sink.wait(t, "server", serverSpan("GET /items/{id}"))
		if srv.Parent.IsValid() {
			t.Errorf("server span has a parent %v: a malformed traceparent must start a new trace", srv.Parent)
		}
		wantAttrs(t, srv, map[string]any{"http.request.method": "GET", "url.path": "/items/7", "http.route": "/items/{id}",
			"dubbogw.route": "items", "http.response.status_code": 200, "client.address": "127.0.0.1"})
		cl := sink.wait(t, "client", childOf(srv, trace.SpanKindClient))
		wantAttrs(t, cl, map[string]any{"server.address": "127.0.0.1", "http.response.status_code": 200, "http.request.method": "GET"})

		got := decodeEcho(t, a).Headers
		if len(got["Traceparent"]) != 1 {
			t.Fatalf("upstream got traceparent %q, want exactly one", got["Traceparent"])
		}
		tid, parent := parseTraceparent(t, got["Traceparent"][0])
		if tid != srv.SpanContext.TraceID() || parent != cl.SpanContext.SpanID() {
			t.Errorf("upstream traceparent %s: want trace %s parent %s (the client span)", got["Traceparent"][0],
				srv.SpanContext.TraceID(), cl.SpanContext.SpanID())
		}
		if ts := got["Tracestate"]; len(ts) != 0 {
			t.Errorf("upstream got the client's malformed-trace tracestate %q", ts)
		}
	})

	t.Run("continued trace", func(t *testing.T) {
		const in = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		a := do(t, "GET", tg.base+"/items/8", nil, "traceparent", in, "tracestate", "k=v")
		if a.status != 200 {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		srv := sink.wait(t, "continued server", func(sp tracetest.SpanStub) bool {
			return sp.SpanKind == trace.SpanKindServer && attr(sp, "url.path").AsString() == "/items/8"
		})
		if srv.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
			!srv.Parent.IsRemote() || srv.Parent.SpanID().String() != "00f067aa0ba902b7" {
			t.Errorf("server span trace %s parent %s (remote %v): want the incoming traceparent continued",
				srv.SpanContext.TraceID(), srv.Parent.SpanID(), srv.Parent.IsRemote())
		}
		cl := sink.wait(t, "client", childOf(srv, trace.SpanKindClient))
		got := decodeEcho(t, a).Headers
		tid, parent := parseTraceparent(t, got["Traceparent"][0])
		if tid != srv.SpanContext.TraceID() || parent != cl.SpanContext.SpanID() {
			t.Errorf("upstream traceparent %v: want trace %s parent %s", got["Traceparent"], tid, cl.SpanContext.SpanID())
		}
		if ts := got["Tracestate"]; len(ts) != 1 || ts[0] != "k=v" {
			t.Errorf("upstream tracestate %q, want the incoming k=v carried on", ts)
		}
	})

	t.Run("retry is a span of its own", func(t *testing.T) {
		// Round robin over [503, echo]: of two requests, one starts on the 503 target.
		for i := range 2 {
			if a := do(t, "GET", tg.base+"/retried/x", nil); a.status != 200 {
				t.Fatalf("request %d: status %d: %s", i, a.status, a.body)
			}
		}
		if flaky.Load() == 0 {
			t.Fatal("the 503 target was never tried")
		}
		retried := sink.wait(t, "retried client", func(sp tracetest.SpanStub) bool {
			return sp.SpanKind == trace.SpanKindClient && attr(sp, "http.request.resend_count").AsInt64() == 1
		})
		first := sink.wait(t, "failed attempt", func(sp tracetest.SpanStub) bool {
			return sp.SpanKind == trace.SpanKindClient && sp.Parent.SpanID() == retried.Parent.SpanID() &&
				attr(sp, "http.response.status_code").AsInt64() == 503
		})
		if first.SpanContext.SpanID() == retried.SpanContext.SpanID() {
			t.Error("both attempts share one span")
		}
		wantAttrs(t, retried, map[string]any{"http.response.status_code": 200})
	})

	t.Run("no route", func(t *testing.T) {
		if a := do(t, "GET", tg.base+"/nothing", nil); a.status != 404 {
			t.Fatalf("status %d", a.status)
		}
		srv := sink.wait(t, "unmatched server", serverSpan("HTTP GET"))
		wantAttrs(t, srv, map[string]any{"dubbogw.error_code": "NO_ROUTE", "http.response.status_code": 404, "url.path": "/nothing"})
	})
}

// TestTracingDubboRoute: the provider receives, as the traceparent
// attachment, the trace context of the gateway's Dubbo client span, whose
// parent is the request's server span.
func TestTracingDubboRoute(t *testing.T) {
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	s.Register(provider.Service{Interface: "com.example.Trace", Methods: map[string][]provider.Method{
		"traceparent": {{Func: func(ctx context.Context, _ []any) (any, error) {
			return fmt.Sprint(provider.Attachments(ctx)["traceparent"]), nil
		}}},
	}})
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	tg, sink := startTracedGW(t, fmt.Sprintf(`
registries: {r: {providers: {com.example.Trace: [%q]}}}
routes:
  - {name: tp, match: {path: /tp}, dubbo: {registry: r, interface: com.example.Trace, method: traceparent}}
`, addr.String()))

	const in = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	a := do(t, "GET", tg.base+"/tp", nil, "traceparent", in)
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var received string
	if err := json.Unmarshal([]byte(a.body), &received); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
	srv := sink.wait(t, "server", serverSpan("GET /tp"))
	cl := sink.wait(t, "dubbo client", childOf(srv, trace.SpanKindClient))
	tid, parent := parseTraceparent(t, received)
	if tid != srv.SpanContext.TraceID() || tid.String() != "4bf92f3577b34da6a3ce929d0e0e4736" || parent != cl.SpanContext.SpanID() {
		t.Errorf("provider got traceparent %q: want trace %s with the client span %s as parent",
			received, srv.SpanContext.TraceID(), cl.SpanContext.SpanID())
	}
	wantAttrs(t, cl, map[string]any{"rpc.system": "apache_dubbo", "rpc.service": "com.example.Trace",
		"rpc.method": "traceparent", "server.address": "127.0.0.1", "dubbogw.dubbo.provider": addr.String()})
	if cl.Name != "com.example.Trace/traceparent" {
		t.Errorf("client span name %q", cl.Name)
	}
}

// TestTracingRedisLookup: a token lookup in Redis is a client span below
// the request's server span, telling whether the client-side cache
// answered; the access log line carries the trace id.
func TestTracingRedisLookup(t *testing.T) {
	redisAddr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("test:tracing:%d:", time.Now().UnixNano())
	// A day: above the sliding threshold, so no renewal invalidates the cached value.
	redisDo(t, redisAddr, "SET", prefix+"tok", `{"userId":"u1"}`, "EX", "86400")
	t.Cleanup(func() { redisDo(t, redisAddr, "DEL", prefix+"tok") })
	echo := echoUpstream(t, "echo")
	logPath := filepath.Join(t.TempDir(), "access.log")
	withLog := strings.Replace(baseYAML, "access_log:\n  enabled: false", fmt.Sprintf("access_log:\n  output: %q", logPath), 1)
	tg, sink := startTracedGWRaw(t, withLog+fmt.Sprintf(`
redis: {address: %q, timeout: 5s}
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - {name: private, match: {prefix: /private}, upstream: u, filters: [{auth: {key_prefix: %q, timeout: 5s}}]}
`, redisAddr, echo.URL, prefix))

	var servers []tracetest.SpanStub
	for i := range 2 {
		path := fmt.Sprintf("/private/%d", i)
		if a := do(t, "GET", tg.base+path, nil, "Authorization", "Bearer tok"); a.status != 200 {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		srv := sink.wait(t, "server", func(sp tracetest.SpanStub) bool {
			return sp.SpanKind == trace.SpanKindServer && attr(sp, "url.path").AsString() == path
		})
		lookup := sink.wait(t, "redis", func(sp tracetest.SpanStub) bool {
			return childOf(srv, trace.SpanKindClient)(sp) && sp.Name == "GET"
		})
		wantAttrs(t, lookup, map[string]any{"db.system": "redis", "db.operation": "GET", "db.redis.found": true,
			"db.redis.cache_hit": i == 1})
		for _, kv := range lookup.Attributes {
			if strings.Contains(kv.Value.String(), "tok") {
				t.Errorf("the token leaked into span attribute %s=%s", kv.Key, kv.Value.String())
			}
		}
		servers = append(servers, srv)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.Shutdown(ctx); err != nil { // flushes the access log
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("access log has %d lines: %q", len(lines), b)
	}
	for i, line := range lines {
		var v struct {
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if want := servers[i].SpanContext.TraceID().String(); v.TraceID != want {
			t.Errorf("access log line %d trace_id = %q, want %s", i, v.TraceID, want)
		}
	}
}

// BenchmarkServeHTTPTraced is BenchmarkServeHTTP with tracing on and
// every request sampled, spans going to a discarding exporter: the cost
// of tracing, to compare with BenchmarkServeHTTP in the same run.
func BenchmarkServeHTTPTraced(b *testing.B) {
	var routes strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&routes, "  - {name: r%d, match: {path: \"/svc%d/items/{id}\", methods: [GET]}, upstream: b}\n", i, i)
	}
	path := filepath.Join(b.TempDir(), "gw.yaml")
	yml := "tracing: {enabled: true}\naccess_log: {enabled: false}\nupstreams:\n  b: {targets: [{url: \"http://127.0.0.1:1\"}]}\nroutes:\n" + routes.String()
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) },
		Logger: slog.New(slog.DiscardHandler), SpanExporter: discardExporter{}})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":42}`)
	for _, rt := range g.table.Load().routes {
		rt.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	}
	req := httptest.NewRequest("GET", "http://example.com/svc500/items/42", nil)
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		g.ServeHTTP(w, req)
	}
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// TestTracingAbortedResponse: a route that panics after its headers went
// out makes net/http close the connection; the request's server span still
// ends, marked as an error ("aborted").
func TestTracingAbortedResponse(t *testing.T) {
	tg, sink := startTracedGW(t, `
upstreams:
  a: {targets: [{url: "http://127.0.0.1:1"}]}
routes:
  - {name: boom, match: {path: /boom}, upstream: a}
`)
	tab := tg.table.Load()
	tab.routes[0].handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic("filter bug after the headers")
	})
	resp, err := http.Get(tg.base + "/boom")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("the aborted response read as complete")
	}
	sp := sink.wait(t, "the aborted request's span", serverSpan("GET /boom"))
	if sp.Status.Code != codes.Error || sp.Status.Description != "aborted" {
		t.Errorf("span status %+v, want error \"aborted\"", sp.Status)
	}
	wantAttrs(t, sp, map[string]any{"http.response.status_code": 200}) // the panic itself: logged and counted by the route
	if r := do(t, "GET", tg.base+"/other", nil); r.status != 404 {
		t.Errorf("process does not keep serving: %d", r.status)
	}
}
