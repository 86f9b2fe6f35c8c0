package accesslog

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
)

func TestLogLine(t *testing.T) {
	var buf bytes.Buffer
	l := NewWriter(&buf, nil)
	r := httptest.NewRequest("GET", "http://api.example.com/users/7?token=secret", nil)
	info := &exchange.Info{RequestID: "rid-1", Route: "users", Upstream: "users http://127.0.0.1:1",
		ClientIP: netip.MustParseAddr("192.0.2.1")}
	l.Log(context.Background(), &Entry{Request: r, Info: info, Status: 200, BytesIn: 3, BytesOut: 42, Duration: 1500 * time.Microsecond})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %v: %q", err, buf.String())
	}
	want := map[string]any{"msg": "access", "request_id": "rid-1", "route": "users", "method": "GET",
		"path": "/users/7", "status": 200.0, "duration_ms": 1.5, "upstream": "users http://127.0.0.1:1",
		"bytes_in": 3.0, "bytes_out": 42.0, "client_ip": "192.0.2.1", "host": "api.example.com"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v", k, line[k], v)
		}
	}
	if bytes.Contains(buf.Bytes(), []byte("secret")) {
		t.Errorf("query string leaked into the log: %s", buf.String())
	}
}

func TestDisabledAndFile(t *testing.T) {
	off := false
	l, err := New(config.AccessLog{Enabled: &off})
	if err != nil || l != nil {
		t.Fatalf("disabled: got %v, %v", l, err)
	}
	l.Log(context.Background(), nil) // nil logger is a no-op
	path := filepath.Join(t.TempDir(), "access.log")
	l, err = New(config.AccessLog{Output: path})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/x", nil)
	l.Log(context.Background(), &Entry{Request: r, Info: &exchange.Info{}, Status: 404})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(`"status":404`)) || !bytes.Contains(b, []byte(`"route":"-"`)) {
		t.Fatalf("file log = %q", b)
	}
}

func TestFlushedWithinInterval(t *testing.T) {
	pr, pw := io.Pipe()
	l := NewWriter(pw, nil)
	defer l.Close()
	l.Log(context.Background(), &Entry{Request: httptest.NewRequest("GET", "/x", nil), Info: &exchange.Info{}, Status: 200})
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 4096)
		n, _ := pr.Read(b)
		got <- string(b[:n])
	}()
	select {
	case line := <-got:
		if !strings.Contains(line, `"status":200`) {
			t.Fatalf("flushed %q", line)
		}
	case <-time.After(FlushInterval + 5*time.Second):
		t.Fatal("line not flushed without Close")
	}
}

// BenchmarkLog compares the hand-appended line with log/slog's JSON handler
// writing the same fields (the baseline it replaced), in one run.
func BenchmarkLog(b *testing.B) {
	r := httptest.NewRequest("GET", "/users/7", nil)
	info := &exchange.Info{RequestID: "0123456789abcdef0123456789abcdef", Route: "users", Upstream: "users http://127.0.0.1:8080",
		ClientIP: netip.MustParseAddr("192.0.2.1")}
	e := &Entry{Request: r, Info: info, Status: 200, BytesOut: 61, Duration: 1840 * time.Microsecond}
	b.Run("append", func(b *testing.B) {
		l := NewWriter(io.Discard, nil)
		defer l.Close()
		b.ReportAllocs()
		for b.Loop() {
			l.Log(context.Background(), e)
		}
	})
	b.Run("slog-baseline", func(b *testing.B) {
		sl := slog.New(slog.NewJSONHandler(io.Discard, nil))
		b.ReportAllocs()
		for b.Loop() {
			sl.LogAttrs(context.Background(), slog.LevelInfo, "access",
				slog.String("request_id", info.RequestID), slog.String("route", info.Route), slog.String("method", r.Method),
				slog.String("host", r.Host), slog.String("path", r.URL.Path), slog.String("proto", r.Proto),
				slog.Int("status", e.Status), slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000),
				slog.String("upstream", info.Upstream), slog.Int64("bytes_in", e.BytesIn), slog.Int64("bytes_out", e.BytesOut),
				slog.String("client_ip", info.ClientIP.String()), slog.String("error_code", info.ErrorCode),
				slog.String("user_agent", r.UserAgent()))
		}
	})
}

// TestLineMatchesSlogShape: the hand-written line parses as JSON with the
// same keys and values slog wrote, including escapes.
func TestLineMatchesSlogShape(t *testing.T) {
	var buf bytes.Buffer
	l := NewWriter(&buf, nil)
	r := httptest.NewRequest("GET", "/a\"b", nil)
	r.Header.Set("User-Agent", "agent \"x\"\n<y>")
	info := &exchange.Info{RequestID: "id", Route: "r\"1", ErrorCode: "TIMEOUT"}
	l.Log(context.Background(), &Entry{Request: r, Info: info, Status: 504, Duration: 2500 * time.Microsecond})
	_ = l.Close()
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf.String())
	}
	if m["user_agent"] != "agent \"x\"\n<y>" || m["route"] != "r\"1" || m["path"] != "/a\"b" || m["duration_ms"] != 2.5 ||
		m["client_ip"] != "" || m["level"] != "INFO" || m["status"] != 504.0 {
		t.Errorf("line %v", m)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
		t.Errorf("time %v: %v", m["time"], err)
	}
}

// TestTraceID: the line carries trace_id when the span in the context is
// recording, or the request carried a traceparent (tracing off: its trace
// id); otherwise the field is left out.
func TestTraceID(t *testing.T) {
	const in = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	recording, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	unsampled, uspan := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("t").Start(context.Background(), "s")
	defer uspan.End()

	cases := []struct {
		name        string
		ctx         context.Context
		traceparent string
		want        string // "" = no field
	}{
		{"untraced", context.Background(), "", ""},
		{"incoming traceparent, tracing off", context.Background(), in, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"malformed traceparent", context.Background(), "00-xyz-00f067aa0ba902b7-01", ""},
		{"all-zero trace id", context.Background(), "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"recording span", recording, "", span.SpanContext().TraceID().String()},
		{"unsampled span, no traceparent", unsampled, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := NewWriter(&buf, nil)
			r := httptest.NewRequest("GET", "/x", nil)
			if tc.traceparent != "" {
				r.Header.Set("traceparent", tc.traceparent)
			}
			l.Log(tc.ctx, &Entry{Request: r, Info: &exchange.Info{}, Status: 200})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not JSON: %q", buf.String())
			}
			got, present := line["trace_id"]
			if tc.want == "" {
				if present {
					t.Errorf("trace_id = %v, want none", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("trace_id = %v, want %s", got, tc.want)
			}
		})
	}
}

func BenchmarkLogTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	l := NewWriter(io.Discard, nil)
	defer l.Close()
	r := httptest.NewRequest("GET", "/x", nil)
	e := &Entry{Request: r, Info: &exchange.Info{RequestID: "rid"}, Status: 200}
	b.ReportAllocs()
	for b.Loop() {
		l.Log(ctx, e)
	}
}

// writes records each Write its output gets.
type writes struct{ calls [][]byte }

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, bytes.Clone(p))
	return len(p), nil
}

// TestWritesEndAtLineEnds: a buffer fills up with lines of any length,
// but every write to the output ends at a line's end, so another writer of
// the same file (stderr to the same file as stdout) never splits a line;
// a line longer than the whole buffer is written whole.
func TestWritesEndAtLineEnds(t *testing.T) {
	out := &writes{}
	l := NewWriter(out, nil)
	for i := range 3000 {
		ua := strings.Repeat("u", i*37%900)
		if i == 1500 {
			ua = strings.Repeat("x", 100<<10) // one line longer than the buffer
		}
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header.Set("User-Agent", ua)
		l.Log(context.Background(), &Entry{Request: r, Info: &exchange.Info{}, Status: 200})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var all []byte
	for i, c := range out.calls {
		if len(c) == 0 || c[len(c)-1] != '\n' {
			t.Fatalf("write %d of %d (%d bytes) ends mid-line: ...%q", i, len(out.calls), len(c), c[max(0, len(c)-40):])
		}
		all = append(all, c...)
	}
	if n := bytes.Count(all, []byte("\n")); n != 3000 {
		t.Errorf("%d lines written, want 3000", n)
	}
	if len(out.calls) < 10 {
		t.Errorf("%d writes: the test should have filled the buffer many times", len(out.calls))
	}
}
