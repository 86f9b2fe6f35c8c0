package security

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/observe"
)

// baseYAML is what every attack's config extends: loopback listeners, no
// access log, no shutdown delay.
const baseYAML = `
listen: "127.0.0.1:0"
admin:
  listen: "127.0.0.1:0"
access_log:
  enabled: false
shutdown:
  delay: 0s
  drain_timeout: 5s
  idle_grace: 0s
`

// gw is a gateway running in this process on loopback.
type gw struct {
	*gateway.Gateway
	addr, admin string // host:port of the data and admin listeners
	base        string // "http://" + addr
	reg         *prometheus.Registry
	logs        *lockedBuffer
}

// startGateway starts a gateway from baseYAML+yamlText; it is shut down
// when the test ends.
func startGateway(t *testing.T, yamlText string) *gw {
	t.Helper()
	return startGatewayFile(t, filepath.Join(t.TempDir(), "gw.yaml"), baseYAML+yamlText)
}

// startGatewayFile is startGateway on a file the test can rewrite: path
// holds yamlText (the whole configuration) at start.
func startGatewayFile(t *testing.T, path, yamlText string) *gw {
	t.Helper()
	if err := os.WriteFile(path, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	reg := observe.NewRegistry()
	g, err := gateway.New(gateway.Options{
		Load:     func() (*config.Config, error) { return config.Load(path) },
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registry: reg,
	})
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return &gw{Gateway: g, addr: g.Addr(), admin: g.AdminAddr(), base: "http://" + g.Addr(), reg: reg, logs: logs}
}

// metric reads one series of the gateway's registry (0 when absent).
func (g *gw) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return testenv.MetricValue(t, g.reg, name, labels)
}

// rawResponse is what came back on a raw connection.
type rawResponse struct {
	status int
	header http.Header
	body   string
	err    error // reading the response failed (closed, reset, timed out)
}

// sendRaw writes raw bytes as they are (no client-side cleaning) on a new
// connection to addr and reads one HTTP/1.1 response, waiting at most
// within. The connection is closed afterwards.
func sendRaw(t *testing.T, addr, raw string, within time.Duration) rawResponse {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(within))
	if _, err := io.WriteString(c, raw); err != nil {
		return rawResponse{err: err}
	}
	return readRaw(c)
}

// readRaw reads one HTTP/1.1 response from c.
func readRaw(c net.Conn) rawResponse {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return rawResponse{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// demoProvider runs the demo Dubbo provider on loopback behind a
// recording proxy: the address returned is the proxy's, and rec holds
// every byte the gateway sent towards the provider.
func demoProvider(t *testing.T) (addr string, rec *recorder) {
	t.Helper()
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	pa, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	rec = &recorder{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); rec.closeAll(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p, err := net.Dial("tcp", pa.String())
			if err != nil {
				c.Close()
				continue
			}
			rec.track(c, p)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(p, io.TeeReader(c, rec)); p.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, p); c.Close() }()
		}
	}()
	return ln.Addr().String(), rec
}

// recorder keeps the bytes sent towards a provider.
type recorder struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	conns []net.Conn
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

// contains says whether s was ever sent towards the provider.
func (r *recorder) contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.buf.Bytes(), []byte(s))
}

func (r *recorder) track(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns = append(r.conns, cs...)
}

func (r *recorder) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
}

// lockedBuffer is a log sink safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// count says how many log lines contain s.
func (l *lockedBuffer) count(s string) int {
	return strings.Count(l.String(), s)
}
