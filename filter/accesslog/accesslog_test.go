package accesslog

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func BenchmarkLog(b *testing.B) {
	l := NewWriter(io.Discard, nil)
	defer l.Close()
	r := httptest.NewRequest("GET", "/users/7", nil)
	e := &Entry{Request: r, Info: &exchange.Info{RequestID: "x", Route: "users"}, Status: 200}
	b.ReportAllocs()
	for b.Loop() {
		l.Log(context.Background(), e)
	}
}
