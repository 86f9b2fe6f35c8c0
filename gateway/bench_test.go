package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/config"
)

// BenchmarkGateway measures the whole data path — request id, admission,
// routing among 1,000 routes, a filter chain, the proxy, metrics and the
// access log (to a file) — against the same GET sent straight to the backend
// and through a plain httputil.ReverseProxy, in one run, over loopback with
// keep-alive connections.
func BenchmarkGateway(b *testing.B) {
	payload := []byte(`{"id":42,"name":"dubbogw","tags":["gateway","proxy"],"active":true}`)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(payload)))
		_, _ = w.Write(payload)
	}))
	defer backend.Close()
	backendURL, _ := url.Parse(backend.URL)
	plain := httptest.NewServer(httputil.NewSingleHostReverseProxy(backendURL))
	defer plain.Close()

	var routes strings.Builder
	for i := 0; i < 999; i++ {
		fmt.Fprintf(&routes, "  - {name: r%d, match: {path: \"/svc%d/items/{id}\", methods: [GET]}, upstream: b}\n", i, i)
	}
	// One gateway per HTTP/1.1 engine, the same configuration otherwise.
	start := func(engine string) *Gateway {
		dir := b.TempDir()
		yml := fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {output: %q}
shutdown: {delay: 0s}
server: {engine: %q}
upstreams:
  b: {targets: [{url: %q}]}
routes:
%s  - name: items
    match: {path: "/api/items/{id}", methods: [GET]}
    filters:
      - headers: {request: {set: {X-Tenant: blue}}, response: {set: {X-Gateway: dubbogw}}}
      - rewrite: {path: "/items/{id}"}
    upstream: b
`, filepath.Join(dir, "access.log"), engine, backend.URL, routes.String())
		path := filepath.Join(dir, "gw.yaml")
		if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
			b.Fatal(err)
		}
		g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		return g
	}
	g := start(config.EngineLoop)
	defer g.Shutdown(context.Background())
	gn := start(config.EngineNetHTTP)
	defer gn.Shutdown(context.Background())

	for _, bc := range []struct{ name, url string }{
		{"direct", backend.URL + "/items/42"},
		{"httputil", plain.URL + "/items/42"},
		{"dubbogw", "http://" + g.Addr() + "/api/items/42"},
		{"dubbogw-nethttp", "http://" + gn.Addr() + "/api/items/42"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 8}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			req, _ := http.NewRequest(http.MethodGet, bc.url, nil)
			b.ReportAllocs()
			for b.Loop() {
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK || n != int64(len(payload)) {
					b.Fatalf("got %d, %d bytes, %v", res.StatusCode, n, err)
				}
			}
		})
	}
}

// BenchmarkServeHTTP measures the gateway's own handler with an in-memory
// upstream handler swapped in, so the figure is the gateway's overhead alone
// (no sockets): routing among 1,000 routes, request id, metrics, access log.
func BenchmarkServeHTTP(b *testing.B) {
	var routes strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&routes, "  - {name: r%d, match: {path: \"/svc%d/items/{id}\", methods: [GET]}, upstream: b}\n", i, i)
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "gw.yaml")
	yml := fmt.Sprintf("access_log: {output: %q, enabled: false}\nupstreams:\n  b: {targets: [{url: \"http://127.0.0.1:1\"}]}\nroutes:\n%s",
		filepath.Join(dir, "access.log"), routes.String())
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":42}`)
	for _, rt := range g.table.Load().routes {
		rt.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	}
	req := httptest.NewRequest("GET", "http://example.com/svc500/items/42", nil)
	// What a browser or an HTTP client library sends.
	req.Header = http.Header{"Connection": {"keep-alive"}, "User-Agent": {"Mozilla/5.0"}, "Accept": {"application/json"},
		"Accept-Encoding": {"gzip, deflate, br"}, "Accept-Language": {"en-US,en;q=0.9"}, "Cookie": {"session=abc"}}
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		delete(req.Header, "X-Request-Id") // as each new request comes without one
		g.ServeHTTP(w, req)
	}
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkServeHTTPDubbo measures one HTTP→Dubbo request through the
// gateway's handler (no HTTP socket) to the in-process demo provider over
// loopback: routing, parameter mapping, the generic call, JSON rendering
// and the access log. Allocations include the provider's.
func BenchmarkServeHTTPDubbo(b *testing.B) {
	provider := startProvider(b)
	dir := b.TempDir()
	path := filepath.Join(dir, "gw.yaml")
	yml := fmt.Sprintf(`access_log: {output: %q}
registries:
  demo: {type: static, providers: {com.example.demo.UserService: [%q]}}
routes:
  - name: get-user
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: getUser
      params: [{type: java.lang.String, from: path, name: id}]
`, filepath.Join(dir, "access.log"), provider)
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	req := httptest.NewRequest("GET", "http://example.com/api/users/42", nil)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"id":"42"`) {
		b.Fatalf("first call: %d %s", rec.Code, rec.Body)
	}
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		g.ServeHTTP(w, req)
	}
}

// BenchmarkServeHTTPDubboPassthrough measures one POST through the generic
// pass-through to the demo provider: reading the body, the envelope, the
// client's types, the arguments and the call.
func BenchmarkServeHTTPDubboPassthrough(b *testing.B) {
	provider := startProvider(b)
	dir := b.TempDir()
	path := filepath.Join(dir, "gw.yaml")
	yml := fmt.Sprintf(`access_log: {output: %q}
registries:
  demo: {type: static, providers: {com.example.demo.UserService: [%q]}}
routes:
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: demo
      passthrough: {allow: [com.example.demo.*]}
`, filepath.Join(dir, "access.log"), provider)
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	body := `{"types":["com.example.demo.User"],"args":[{"id":"7","name":"Ada","age":36,"email":"ada@example.com"}]}`
	serve := func(w http.ResponseWriter) {
		req := httptest.NewRequest("POST", "http://example.com/dubbo/com.example.demo.UserService/createUser", strings.NewReader(body))
		g.ServeHTTP(w, req)
	}
	rec := httptest.NewRecorder()
	serve(rec)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"name":"Ada"`) {
		b.Fatalf("first call: %d %s", rec.Code, rec.Body)
	}
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		serve(w)
	}
}
