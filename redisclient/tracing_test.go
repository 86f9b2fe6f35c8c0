package redisclient_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/redisclient"
)

// TestGetSpans: with a tracer, every Get is a client span below the
// caller's span, saying whether the key was found and whether the
// client-side cache answered, and never holding the key (a token).
func TestGetSpans(t *testing.T) {
	addr := testenv.RedisAddr(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	c, err := redisclient.New(config.Redis{Address: addr, Timeout: functionalTimeout}, prometheus.NewRegistry(), nil, redisclient.WithTracer(tp.Tracer("test")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxTimeout(t, 10*time.Second)
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	raw := rawClient(t, addr)
	p := keyPrefix(t)
	must(t, raw.Do(ctx, raw.B().Set().Key(p+"secret-token").Value("v").Px(time.Minute).Build()))
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(p+"secret-token").Build()) })

	reqCtx, parent := tp.Tracer("test").Start(ctx, "request")
	for _, key := range []string{p + "secret-token", p + "secret-token", p + "missing"} {
		if _, _, _, err := c.Get(reqCtx, key); err != nil {
			t.Fatal(err)
		}
	}
	parent.End()
	type got struct{ hit, found bool }
	var seen []got
	for _, s := range spans.Ended() {
		if s.Name() != "GET" {
			continue
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("GET span is not a client span below the request span")
		}
		var g got
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "db.redis.cache_hit":
				g.hit = kv.Value.AsBool()
			case "db.redis.found":
				g.found = kv.Value.AsBool()
			case "db.system":
				if kv.Value.AsString() != "redis" {
					t.Errorf("db.system = %s", kv.Value.AsString())
				}
			}
			if strings.Contains(kv.Value.String(), "secret") {
				t.Errorf("the key leaked into %s", kv.Key)
			}
		}
		seen = append(seen, g)
	}
	want := []got{{hit: false, found: true}, {hit: true, found: true}, {hit: false, found: false}}
	if len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("GET spans (cache hit, found) = %+v, want %+v", seen, want)
	}
}
