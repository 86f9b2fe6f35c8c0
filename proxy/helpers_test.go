package proxy

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// testUpstream is an Upstream under test with its metrics registry.
type testUpstream struct {
	*Upstream
	reg *prometheus.Registry
}

// forEachTransport runs test as a subtest per transport.
func forEachTransport(t *testing.T, test func(t *testing.T, transport string)) {
	t.Helper()
	for _, transport := range []string{TransportStandard, TransportDirect} {
		t.Run(transport, func(t *testing.T) { test(t, transport) })
	}
}

// newTestUpstream builds the upstream name from cfg sending through transport.
func newTestUpstream(t *testing.T, transport, name string, cfg *Config) testUpstream {
	t.Helper()
	if cfg != nil {
		cfg.Transport = transport
	}
	reg := prometheus.NewRegistry()
	u, err := New(name, cfg, NewMetrics(reg), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(u.Close)
	return testUpstream{u, reg}
}

// metric returns the value of the series name{labels}, and whether it exists.
func (tu testUpstream) metric(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	v := testenv.MetricValue(t, tu.reg, name, labels)
	return v, v != -1 // the series here are counts, never negative
}

func (tu testUpstream) mustMetric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := tu.metric(t, name, labels)
	if !ok {
		t.Fatalf("no series %s%v", name, labels)
	}
	return v
}

// backend is an upstream test server that counts its requests and names itself in X-Target.
type backend struct {
	*httptest.Server
	name   string
	hits   atomic.Int64
	status atomic.Int64
}

// newBackend starts a backend answering status with body "from <name>"; then, when not nil, runs extra.
func newBackend(t *testing.T, name string, status int, extra func(w http.ResponseWriter, r *http.Request)) *backend {
	t.Helper()
	b := &backend{name: name}
	b.status.Store(int64(status))
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		if extra != nil {
			extra(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Target", name)
		w.WriteHeader(int(b.status.Load()))
		_, _ = io.WriteString(w, "from "+name)
	}))
	t.Cleanup(b.Close)
	return b
}

// closedURL returns the URL of a port nobody listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func targets(urls ...string) []Target {
	out := make([]Target, len(urls))
	for i, u := range urls {
		out[i].URL = u
	}
	return out
}

func intPtr(n int) *int { return &n }

// serveProxy serves h on a loopback test server; each request carries an
// exchange.Info, sent on the returned channel once the handler returned.
func serveProxy(t *testing.T, h http.Handler) (*httptest.Server, <-chan *exchange.Info) {
	t.Helper()
	infos := make(chan *exchange.Info, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &exchange.Info{Route: "test-route", RequestID: "req-1"}
		h.ServeHTTP(w, r.WithContext(exchange.WithInfo(r.Context(), info)))
		select {
		case infos <- info:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return srv, infos
}

func nextInfo(t *testing.T, infos <-chan *exchange.Info) *exchange.Info {
	t.Helper()
	select {
	case info := <-infos:
		return info
	case <-time.After(5 * time.Second):
		t.Fatal("no exchange info within 5s")
		return nil
	}
}

// testClient is a client with a deadline on every exchange.
func testClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// result is a response read whole.
type result struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, c *http.Client, req *http.Request) result {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return result{res.StatusCode, res.Header, string(b)}
}

func get(t *testing.T, c *http.Client, url string) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, c, req)
}

// errorBody is the gateway's JSON error body.
type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Route     string `json:"route"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

func decodeError(t *testing.T, r result) errorBody {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type = %q, want application/json (body %q)", ct, r.body)
	}
	var e errorBody
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e
}
