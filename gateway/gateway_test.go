package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/observe"
)

// testGW is a gateway started in-process on loopback from a YAML config file.
type testGW struct {
	*Gateway
	path  string
	base  string // data plane, http://127.0.0.1:port
	admin string // admin listener
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// base config every test extends: loopback listeners, no access log to stdout.
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

func startGW(t *testing.T, yamlText string) *testGW {
	t.Helper()
	return startGWRaw(t, baseYAML+yamlText)
}

// startGWRaw starts a gateway from a whole config file.
func startGWRaw(t *testing.T, yamlText string) *testGW {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	g, err := New(Options{
		Load:     func() (*config.Config, error) { return config.Load(path) },
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registry: observe.NewRegistry(),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	tg := &testGW{Gateway: g, path: path, base: "http://" + g.Addr(), admin: "http://" + g.AdminAddr(), logs: logs}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return tg
}

// rewrite replaces the config file (the next Reload reads it).
func (tg *testGW) rewrite(t *testing.T, yamlText string) {
	t.Helper()
	if err := os.WriteFile(tg.path, []byte(baseYAML+yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url string, body io.Reader, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// errorBody decodes the gateway's JSON error body.
func errorBody(t *testing.T, a answer) (code, message, route, requestID string) {
	t.Helper()
	var v struct {
		Error struct {
			Code, Message, Route string
			RequestID            string `json:"request_id"`
		}
	}
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("error body is not JSON: %q", a.body)
	}
	if a.header.Get("Content-Type") != "application/json" {
		t.Errorf("error Content-Type = %q", a.header.Get("Content-Type"))
	}
	return v.Error.Code, v.Error.Message, v.Error.Route, v.Error.RequestID
}

// echoUpstream answers with its name, the path and query it received, and the request headers.
func echoUpstream(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", name)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"upstream": name, "path": r.URL.Path, "query": r.URL.RawQuery, "host": r.Host,
			"headers": r.Header, "body_bytes": n,
		})
	}))
	t.Cleanup(s.Close)
	return s
}

type echoed struct {
	Upstream  string              `json:"upstream"`
	Path      string              `json:"path"`
	Query     string              `json:"query"`
	Host      string              `json:"host"`
	Headers   map[string][]string `json:"headers"`
	BodyBytes int64               `json:"body_bytes"`
}

func decodeEcho(t *testing.T, a answer) echoed {
	t.Helper()
	var e echoed
	if err := json.Unmarshal([]byte(a.body), &e); err != nil {
		t.Fatalf("upstream answer not JSON (status %d): %q", a.status, a.body)
	}
	return e
}

func TestRoutingPrecedence(t *testing.T) {
	a, b, c, d, e := echoUpstream(t, "a"), echoUpstream(t, "b"), echoUpstream(t, "c"), echoUpstream(t, "d"), echoUpstream(t, "e")
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  a: {targets: [{url: %q}]}
  b: {targets: [{url: %q}]}
  c: {targets: [{url: %q}]}
  d: {targets: [{url: %q}]}
  e: {targets: [{url: %q}]}
routes:
  - {name: prefix-api, match: {prefix: /api}, upstream: a}
  - {name: user-pattern, match: {path: "/api/users/{id}", methods: [GET]}, upstream: b}
  - {name: user-me, match: {path: /api/users/me}, upstream: c}
  - {name: files, match: {path: "/files/{path...}"}, upstream: d}
  - {name: host-api, match: {host: "*.example.com", prefix: /api}, upstream: e}
`, a.URL, b.URL, c.URL, d.URL, e.URL))

	cases := []struct {
		method, path, host string
		upstream, route    string
		gotPath            string
	}{
		{"GET", "/api/users/me", "", "c", "user-me", "/api/users/me"},      // exact beats pattern
		{"GET", "/api/users/42", "", "b", "user-pattern", "/api/users/42"}, // pattern beats prefix
		{"POST", "/api/users/42", "", "a", "prefix-api", "/api/users/42"},  // method mismatch falls to prefix
		{"GET", "/api/orders", "", "a", "prefix-api", "/api/orders"},       // prefix
		{"GET", "/api", "", "a", "prefix-api", "/api"},                     // prefix matches itself
		{"GET", "/files/a/b/c.txt", "", "d", "files", "/files/a/b/c.txt"},  // catch-all
		{"GET", "/api/users/42", "shop.example.com", "e", "host-api", ""},  // host beats any-host
		{"GET", "/api/x/../users/me", "", "c", "user-me", "/api/users/me"}, // cleaned before matching
	}
	for _, tc := range cases {
		hdr := []string{"X-Request-Id", "req-" + tc.route}
		if tc.host != "" {
			hdr = append(hdr, "Host", tc.host)
		}
		resp := do(t, tc.method, tg.base+tc.path, nil, hdr...)
		if resp.status != 200 {
			t.Errorf("%s %s host=%q: status %d body %s", tc.method, tc.path, tc.host, resp.status, resp.body)
			continue
		}
		got := decodeEcho(t, resp)
		if got.Upstream != tc.upstream {
			t.Errorf("%s %s host=%q went to %s, want %s", tc.method, tc.path, tc.host, got.Upstream, tc.upstream)
		}
		if tc.gotPath != "" && got.Path != tc.gotPath {
			t.Errorf("%s %s: upstream saw path %q, want %q", tc.method, tc.path, got.Path, tc.gotPath)
		}
		if id := resp.header.Get("X-Request-Id"); id != "req-"+tc.route {
			t.Errorf("%s %s: X-Request-Id %q not kept", tc.method, tc.path, id)
		}
		if got.Headers["X-Request-Id"][0] != "req-"+tc.route {
			t.Errorf("request id not sent upstream: %v", got.Headers["X-Request-Id"])
		}
	}

	// Nothing matches: 404 JSON with a generated request id.
	resp := do(t, "GET", tg.base+"/nothing/here", nil)
	code, msg, _, id := errorBody(t, resp)
	if resp.status != 404 || code != "NO_ROUTE" || !strings.Contains(msg, "/nothing/here") {
		t.Errorf("miss: %d %s %q", resp.status, code, msg)
	}
	if id == "" || resp.header.Get("X-Request-Id") != id {
		t.Errorf("404 request id: body %q header %q", id, resp.header.Get("X-Request-Id"))
	}
	// "/apix" is not under the "/api" prefix.
	if resp := do(t, "GET", tg.base+"/apix", nil); resp.status != 404 {
		t.Errorf("/apix: %d", resp.status)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	a := echoUpstream(t, "a")
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  a: {targets: [{url: %q}]}
routes:
  - {name: read, match: {path: /items, methods: [GET, HEAD]}, upstream: a}
  - {name: write, match: {path: /items, methods: [POST]}, upstream: a}
`, a.URL))
	resp := do(t, "DELETE", tg.base+"/items", nil)
	code, _, _, _ := errorBody(t, resp)
	if resp.status != 405 || code != "METHOD_NOT_ALLOWED" {
		t.Fatalf("DELETE: %d %s", resp.status, code)
	}
	for _, m := range []string{"GET", "HEAD", "POST"} {
		if !strings.Contains(resp.header.Get("Allow"), m) {
			t.Errorf("Allow %q lacks %s", resp.header.Get("Allow"), m)
		}
	}
}

func TestFiltersEndToEnd(t *testing.T) {
	a := echoUpstream(t, "a")
	tg := startGW(t, fmt.Sprintf(`
server:
  trusted_proxies: ["127.0.0.1/32"]
default_filters:
  - headers:
      response:
        set: {X-Gateway: dubbogw}
upstreams:
  a: {targets: [{url: %q}]}
routes:
  - name: users
    match: {path: "/api/users/{id}", methods: [GET]}
    filters:
      - cors: {allow_origins: ["https://*.example.com"], allow_headers: ["*"], max_age: 10m}
      - headers:
          request:
            set: {X-Tenant: blue}
            remove: [X-Secret]
          response:
            remove: [X-Upstream]
      - rewrite: {path: "/v2/users/{id}"}
    upstream: a
  - name: legacy
    match: {prefix: /legacy}
    filters:
      - rewrite: {strip_prefix: /legacy, add_prefix: /old}
    upstream: a
  - name: internal
    match: {prefix: /internal}
    filters:
      - ip: {allow: ["10.0.0.0/8"]}
    upstream: a
`, a.URL))

	resp := do(t, "GET", tg.base+"/api/users/7?x=1", nil, "X-Secret", "s3cret", "Origin", "https://shop.example.com")
	if resp.status != 200 {
		t.Fatalf("users: %d %s", resp.status, resp.body)
	}
	got := decodeEcho(t, resp)
	if got.Path != "/v2/users/7" || got.Query != "x=1" {
		t.Errorf("rewrite: upstream saw %q ? %q", got.Path, got.Query)
	}
	if got.Headers["X-Tenant"] == nil || got.Headers["X-Secret"] != nil {
		t.Errorf("request header ops: %v", got.Headers)
	}
	if got.Headers["X-Forwarded-For"] == nil || got.Headers["X-Forwarded-Proto"][0] != "http" {
		t.Errorf("X-Forwarded-*: %v", got.Headers)
	}
	if resp.header.Get("X-Gateway") != "dubbogw" || resp.header.Get("X-Upstream") != "" {
		t.Errorf("response header ops: %v", resp.header)
	}
	if resp.header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" {
		t.Errorf("CORS on actual request: %v", resp.header)
	}

	// Preflight for GET on a GET-only route is answered by the CORS filter.
	pre := do(t, "OPTIONS", tg.base+"/api/users/7", nil, "Origin", "https://shop.example.com",
		"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "X-Custom")
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" ||
		!strings.Contains(strings.ToLower(pre.header.Get("Access-Control-Allow-Headers")), "x-custom") ||
		pre.header.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d %v", pre.status, pre.header)
	}
	bad := do(t, "OPTIONS", tg.base+"/api/users/7", nil, "Origin", "https://evil.test", "Access-Control-Request-Method", "GET")
	if code, _, route, _ := errorBody(t, bad); bad.status != 403 || code != "FORBIDDEN" || route != "users" {
		t.Errorf("preflight from a foreign origin: %d %s %s", bad.status, code, route)
	}

	if got := decodeEcho(t, do(t, "GET", tg.base+"/legacy/a/b", nil)); got.Path != "/old/a/b" {
		t.Errorf("strip+add prefix: %q", got.Path)
	}

	// IP rules: the peer 127.0.0.1 is a trusted proxy, so X-Forwarded-For decides.
	if r := do(t, "GET", tg.base+"/internal/x", nil, "X-Forwarded-For", "10.1.2.3"); r.status != 200 {
		t.Errorf("allowed client via trusted proxy: %d %s", r.status, r.body)
	}
	denied := do(t, "GET", tg.base+"/internal/x", nil, "X-Forwarded-For", "192.0.2.9")
	if code, _, _, _ := errorBody(t, denied); denied.status != 403 || code != "FORBIDDEN" {
		t.Errorf("denied client: %d %s", denied.status, code)
	}
	// A forged leftmost entry does not help: the rightmost untrusted hop is the client.
	if r := do(t, "GET", tg.base+"/internal/x", nil, "X-Forwarded-For", "10.1.2.3, 192.0.2.9"); r.status != 403 {
		t.Errorf("forged X-Forwarded-For: %d", r.status)
	}
}

func TestBodyLimit(t *testing.T) {
	a := echoUpstream(t, "a")
	tg := startGW(t, fmt.Sprintf(`
server: {max_body_bytes: 1KiB}
upstreams:
  a: {targets: [{url: %q}]}
routes:
  - {name: small, match: {prefix: /small}, upstream: a, max_body_bytes: 100B}
  - {name: default, match: {prefix: /}, upstream: a}
`, a.URL))
	// Declared length over the limit: refused before reading.
	r := do(t, "POST", tg.base+"/small", strings.NewReader(strings.Repeat("x", 101)))
	if code, _, route, _ := errorBody(t, r); r.status != 413 || code != "PAYLOAD_TOO_LARGE" || route != "small" {
		t.Errorf("declared: %d %s %s", r.status, code, route)
	}
	// Exactly the limit passes.
	if r := do(t, "POST", tg.base+"/small", strings.NewReader(strings.Repeat("x", 100))); r.status != 200 || decodeEcho(t, r).BodyBytes != 100 {
		t.Errorf("at limit: %d %s", r.status, r.body)
	}
	// Chunked (unknown length) body over the server default: stopped while streaming.
	r = do(t, "POST", tg.base+"/big", io.MultiReader(strings.NewReader(strings.Repeat("y", 2000))))
	if code, _, _, _ := errorBody(t, r); r.status != 413 || code != "PAYLOAD_TOO_LARGE" {
		t.Errorf("chunked: %d %s", r.status, r.body)
	}
	// The gateway keeps serving.
	if r := do(t, "GET", tg.base+"/x", nil); r.status != 200 {
		t.Errorf("after 413s: %d", r.status)
	}
}

// closedURL is an http URL where nothing listens.
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

func TestRetryAndEjection(t *testing.T) {
	a := echoUpstream(t, "a")
	dead := closedURL(t)
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  pair:
    policy: round_robin
    targets: [{url: %q}, {url: %q}]
    passive_health: {max_failures: 2, ejection: 1m}
routes:
  - {name: r, match: {prefix: /}, upstream: pair}
`, dead, a.URL))
	for i := 0; i < 6; i++ {
		if r := do(t, "GET", tg.base+"/x", nil); r.status != 200 {
			t.Fatalf("GET %d with one dead target: %d %s", i, r.status, r.body)
		}
	}
	var ups struct {
		Upstreams []struct {
			Name    string
			Targets []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(do(t, "GET", tg.admin+"/admin/upstreams", nil).body), &ups); err != nil {
		t.Fatal(err)
	}
	blob, _ := json.Marshal(ups)
	if len(ups.Upstreams) != 1 || !strings.Contains(string(blob), "eject") {
		t.Errorf("dead target not shown ejected: %s", blob)
	}
	// POST is not idempotent: it is not retried, so one of two lands on the dead target.
	codes := map[int]int{}
	for i := 0; i < 4; i++ {
		codes[do(t, "POST", tg.base+"/x", strings.NewReader("{}")).status]++
	}
	if codes[200] == 0 {
		t.Errorf("POST statuses %v", codes)
	}
}

func TestWebSocketThroughGateway(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			_ = c.WriteMessage(mt, append([]byte("echo:"), msg...))
		}
	}))
	t.Cleanup(up.Close)
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  ws: {targets: [{url: %q}], timeout: 300ms}
routes:
  - {name: ws, match: {path: /ws}, upstream: ws}
`, up.URL))
	c, resp, err := websocket.DefaultDialer.Dial("ws://"+tg.Addr()+"/ws", nil)
	if err != nil {
		t.Fatalf("dial through gateway: %v", err)
	}
	defer c.Close()
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("upgrade response has no request id")
	}
	for i := 0; i < 3; i++ {
		msg := fmt.Sprintf("hello %d", i)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.ReadMessage()
		if err != nil || string(got) != "echo:"+msg {
			t.Fatalf("read %q, %v", got, err)
		}
		// Outlive the upstream timeout: it bounds the handshake, not the connection.
		time.Sleep(150 * time.Millisecond)
	}
}

func TestShedding(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	tg := startGW(t, fmt.Sprintf(`
server: {max_in_flight: 1}
upstreams:
  s: {targets: [{url: %q}]}
routes:
  - {name: s, match: {prefix: /}, upstream: s}
`, slow.URL))
	go func() {
		resp, err := client.Get(tg.base + "/slow")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	r := do(t, "GET", tg.base+"/second", nil)
	if code, _, _, _ := errorBody(t, r); r.status != 503 || code != "SHED" || r.header.Get("Retry-After") == "" {
		t.Fatalf("second request: %d %s %v", r.status, code, r.header)
	}
	// The admin listener is not subject to the data-plane limit.
	if r := do(t, "GET", tg.admin+"/livez", nil); r.status != 200 {
		t.Fatalf("livez while saturated: %d", r.status)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_errors_total{code="SHED"} 1`, `dubbogw_saturation{scope="global"} 1`, `dubbogw_inflight{scope="global"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestAdminAndMetrics(t *testing.T) {
	a := echoUpstream(t, "a")
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  a: {targets: [{url: %q}]}
routes:
  - {name: users, match: {path: "/users/{id}", methods: [GET]}, upstream: a, timeout: 3s}
`, a.URL))
	for i := 0; i < 3; i++ {
		do(t, "GET", tg.base+"/users/1", nil)
	}
	do(t, "GET", tg.base+"/missing", nil)

	if r := do(t, "GET", tg.admin+"/livez", nil); r.status != 200 || r.body != "ok\n" {
		t.Errorf("livez: %d %q", r.status, r.body)
	}
	if r := do(t, "GET", tg.admin+"/readyz", nil); r.status != 200 || !strings.Contains(r.body, `"ready"`) {
		t.Errorf("readyz: %d %q", r.status, r.body)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{
		`dubbogw_http_requests_total{code="200",route="users"} 3`,
		`dubbogw_http_requests_total{code="404",route="none"} 1`,
		`dubbogw_errors_total{code="NO_ROUTE"} 1`,
		`dubbogw_http_request_duration_seconds_count{route="users"} 3`,
		`dubbogw_inflight{scope="global"} 0`,
		`dubbogw_routes 1`,
		`dubbogw_ready 1`,
		`dubbogw_upstream_requests_total{`,
		`go_goroutines`,
		`dubbogw_build_info{`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	var routes struct{ Routes []routeView }
	if err := json.Unmarshal([]byte(do(t, "GET", tg.admin+"/admin/routes", nil).body), &routes); err != nil {
		t.Fatal(err)
	}
	if len(routes.Routes) != 1 || routes.Routes[0].Name != "users" || routes.Routes[0].Path != "/users/{id}" || routes.Routes[0].Timeout != "3s" {
		t.Errorf("admin/routes: %+v", routes)
	}
	if r := do(t, "GET", tg.admin+"/admin/reload", nil); r.status != 405 {
		t.Errorf("GET /admin/reload: %d", r.status)
	}
}

func TestReload(t *testing.T) {
	a, b := echoUpstream(t, "a"), echoUpstream(t, "b")
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "slow done")
	}))
	t.Cleanup(slow.Close)
	v1 := fmt.Sprintf(`
upstreams:
  a: {targets: [{url: %q}]}
  slow: {targets: [{url: %q}]}
routes:
  - {name: one, match: {path: /one}, upstream: a}
  - {name: slow, match: {path: /slow}, upstream: slow}
`, a.URL, slow.URL)
	tg := startGW(t, v1)

	// A request in flight when the table changes finishes on the table it started with.
	slowDone := make(chan answer, 1)
	go func() {
		resp, err := client.Get(tg.base + "/slow")
		if err != nil {
			slowDone <- answer{status: -1, body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slowDone <- answer{status: resp.StatusCode, body: string(b)}
	}()
	<-entered

	tg.rewrite(t, fmt.Sprintf(`
upstreams:
  b: {targets: [{url: %q}]}
routes:
  - {name: two, match: {path: /two}, upstream: b}
`, b.URL))
	r := do(t, "POST", tg.admin+"/admin/reload", nil)
	if r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", tg.base+"/two", nil); r.status != 200 || decodeEcho(t, r).Upstream != "b" {
		t.Errorf("new route: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", tg.base+"/one", nil); r.status != 404 {
		t.Errorf("removed route: %d", r.status)
	}
	close(release)
	if got := <-slowDone; got.status != 200 || got.body != "slow done" {
		t.Errorf("in-flight request across reload: %d %q", got.status, got.body)
	}

	// A bad config is refused with the offending key; the current one keeps serving.
	tg.rewrite(t, `
upstreams:
  b: {targets: [{url: "http://127.0.0.1:1"}]}
routes:
  - {name: two, match: {path: /two}, upstream: nope}
`)
	r = do(t, "POST", tg.admin+"/admin/reload", nil)
	if r.status != 400 || !strings.Contains(r.body, "CONFIG_INVALID") || !strings.Contains(r.body, "routes[0].upstream") {
		t.Errorf("bad reload: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", tg.base+"/two", nil); r.status != 200 {
		t.Errorf("after refused reload: %d", r.status)
	}
	if err := tg.Reload(context.Background()); err == nil {
		t.Errorf("Reload of a bad file returned nil")
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_config_reloads_total{result="success"} 1`, `dubbogw_config_reloads_total{result="rejected"} 2`, `dubbogw_config_last_reload_successful 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// /admin/config names the refusal's problems beside the configuration serving.
	var shown struct {
		Routes []struct{ Name string }
		Source struct {
			Kind    string
			Refused struct{ Problems []config.Problem }
		} `json:"_source"`
	}
	getJSON(t, tg.admin+"/admin/config", &shown)
	if len(shown.Routes) != 1 || shown.Routes[0].Name != "two" || shown.Source.Kind != "file" ||
		len(shown.Source.Refused.Problems) != 1 || shown.Source.Refused.Problems[0].Path != "routes[0].upstream" {
		t.Errorf("/admin/config after a refused reload: %+v", shown)
	}
	// A file that cannot be read is a failure, not a rejection.
	if err := os.Remove(tg.path); err != nil {
		t.Fatal(err)
	}
	r = do(t, "POST", tg.admin+"/admin/reload", nil)
	if r.status != 503 || !strings.Contains(r.body, "CONFIG_UNREADABLE") {
		t.Errorf("reload of a missing file: %d %s, want 503 CONFIG_UNREADABLE", r.status, r.body)
	}
	if n := testenv.MetricValue(t, tg.registry, "dubbogw_config_reloads_total", map[string]string{"result": "failure"}); n != 1 {
		t.Errorf("failures: %v, want 1", n)
	}
}

func TestWatchReloadsOnFileChange(t *testing.T) {
	a := echoUpstream(t, "a")
	routes := func(path string) string {
		return fmt.Sprintf(`
reload: {watch: true, interval: 100ms}
upstreams:
  a: {targets: [{url: %q}]}
routes:
  - {name: r, match: {path: %q}, upstream: a}
`, a.URL, path)
	}
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(baseYAML+routes("/before")), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, WatchPath: path,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown(context.Background())
	if err := os.WriteFile(path, []byte(baseYAML+routes("/after")), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r := do(t, "GET", "http://"+g.Addr()+"/after", nil); r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("file change not picked up within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestH2C(t *testing.T) {
	a := echoUpstream(t, "a")
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  a: {targets: [{url: %q}]}
routes:
  - {name: r, match: {prefix: /}, upstream: a}
`, a.URL))
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 5 * time.Second}
	resp, err := c.Get(tg.base + "/h2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("proto %s status %d", resp.Proto, resp.StatusCode)
	}
}

func TestPanicBecomes500(t *testing.T) {
	tg := startGW(t, `
upstreams:
  a: {targets: [{url: "http://127.0.0.1:1"}]}
routes:
  - {name: boom, match: {path: /boom}, upstream: a}
`)
	// Swap the route's handler for one that panics, as a faulty filter would.
	tab := tg.table.Load()
	tab.routes[0].handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("filter bug") })
	r := do(t, "GET", tg.base+"/boom", nil)
	if code, _, route, _ := errorBody(t, r); r.status != 500 || code != "INTERNAL" || route != "boom" {
		t.Fatalf("panic: %d %s %s", r.status, code, route)
	}
	if !strings.Contains(tg.logs.String(), "filter bug") {
		t.Errorf("panic not logged")
	}
	if !strings.Contains(do(t, "GET", tg.admin+"/metrics", nil).body, `dubbogw_filter_panics_total{route="boom"} 1`) {
		t.Errorf("panic not counted")
	}
	if r := do(t, "GET", tg.base+"/other", nil); r.status != 404 {
		t.Errorf("process does not keep serving: %d", r.status)
	}
}

func TestGracefulShutdownDrains(t *testing.T) {
	release := make(chan struct{})
	var entered sync.WaitGroup
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Done()
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	t.Cleanup(slow.Close)
	path := filepath.Join(t.TempDir(), "gw.yaml")
	yml := fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 300ms, drain_timeout: 5s}
upstreams:
  s: {targets: [{url: %q}]}
routes:
  - {name: s, match: {prefix: /}, upstream: s}
`, slow.URL)
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 20
	entered.Add(n)
	results := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			resp, err := client.Get("http://" + g.Addr() + "/work")
			if err != nil {
				results <- -1
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "done" {
				results <- -2
				return
			}
			results <- resp.StatusCode
		}()
	}
	entered.Wait()
	done := make(chan error, 1)
	go func() { done <- g.Shutdown(context.Background()) }()
	// During the delay readiness is false while requests keep being served.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := client.Get("http://" + g.AdminAddr() + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 503 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("readyz never went false")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond) // past the delay: the listener is closed, requests still held
	close(release)
	for i := 0; i < n; i++ {
		if s := <-results; s != 200 {
			t.Errorf("in-flight request %d ended with %d", i, s)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := client.Get("http://" + g.Addr() + "/after"); err == nil {
		t.Errorf("data listener still accepts after shutdown")
	}
}

func TestTimeoutAccessLogAndHeaderLimit(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	a := echoUpstream(t, "a")
	logPath := filepath.Join(t.TempDir(), "access.log")
	tg := startGWRaw(t, fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
shutdown: {delay: 0s}
access_log: {enabled: true, output: %q}
server: {max_header_bytes: 4KiB}
upstreams:
  slow: {targets: [{url: %q}], timeout: 10s}
  a: {targets: [{url: %q}]}
routes:
  - {name: slow, match: {path: /slow}, upstream: slow, timeout: 150ms}
  - {name: fast, match: {path: /fast}, upstream: a}
`, logPath, slow.URL, a.URL))

	start := time.Now()
	r := do(t, "GET", tg.base+"/slow", nil, "X-Request-Id", "slow-1")
	if code, msg, route, id := errorBody(t, r); r.status != 504 || code != "TIMEOUT" || route != "slow" || id != "slow-1" || !strings.Contains(msg, "150ms") {
		t.Errorf("route timeout: %d %s %q %s %s", r.status, code, msg, route, id)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("route timeout of 150ms answered after %v", d)
	}
	do(t, "GET", tg.base+"/fast", nil, "X-Request-Id", "fast-1")

	// Headers over max_header_bytes are refused by the server itself.
	big := do(t, "GET", tg.base+"/fast", nil, "X-Big", strings.Repeat("x", 16<<10)) // net/http allows 4 KiB of slack
	if big.status != 431 {
		t.Errorf("oversized headers: %d", big.status)
	}

	// The access log has one JSON line per request, with route, status,
	// upstream, bytes and the error code of gateway-made answers.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("access log line is not JSON: %q", l)
		}
		lines[fmt.Sprint(m["request_id"])] = m
	}
	if s := lines["slow-1"]; s == nil || s["route"] != "slow" || s["status"] != 504.0 || s["error_code"] != "TIMEOUT" ||
		!strings.HasPrefix(fmt.Sprint(s["upstream"]), "slow http://127.0.0.1:") {
		t.Errorf("slow line: %v", s)
	}
	if f := lines["fast-1"]; f == nil || f["route"] != "fast" || f["status"] != 200.0 || f["bytes_out"].(float64) <= 0 ||
		f["duration_ms"] == nil || f["method"] != "GET" {
		t.Errorf("fast line: %v", f)
	}
}

func TestReadyzBeforeStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(baseYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	g.readyz(w, httptest.NewRequest("GET", "/readyz", nil))
	if w.Code != 503 || !strings.Contains(w.Body.String(), "starting") {
		t.Errorf("readyz before Start: %d %s", w.Code, w.Body.String())
	}
	g.table.Load().closeExcept(nil)
}

// TestClientLeavingFreesItsSlot: a client that sends a request to a slow
// upstream and hangs up gets its request cancelled, the upstream call
// included, so the in-flight slot is free again long before the route's
// timeout: connecting, sending and closing in a loop cannot hold slots.
// On both HTTP/1.1 engines (the loop watches for the client only once a
// handler has run 5 ms).
func TestClientLeavingFreesItsSlot(t *testing.T) {
	for _, engine := range []string{config.EngineLoop, config.EngineNetHTTP} {
		t.Run(strings.ReplaceAll(engine, "/", ""), func(t *testing.T) {
			cancelled := make(chan struct{}, 1)
			entered := make(chan struct{}, 1)
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				select {
				case <-r.Context().Done(): // the gateway closed its upstream connection
					cancelled <- struct{}{}
				case <-time.After(30 * time.Second):
				}
			}))
			t.Cleanup(slow.Close)
			tg := startGW(t, fmt.Sprintf(`
server: {max_in_flight: 1, engine: %q}
upstreams:
  s: {targets: [{url: %q}], timeout: 60s}
routes:
  - {name: s, match: {prefix: /}, upstream: s}
`, engine, slow.URL))
			c, err := net.Dial("tcp", tg.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: gw.test\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			<-entered
			c.Close()
			select {
			case <-cancelled:
			case <-time.After(20 * time.Second):
				t.Fatal("the upstream call went on after its client left")
			}
			// The slot is free: the next request is not shed.
			deadline := time.Now().Add(10 * time.Second)
			for {
				m := do(t, "GET", tg.admin+"/metrics", nil).body
				if strings.Contains(m, `dubbogw_inflight{scope="global"} 0`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the in-flight count did not return to 0 after the client left")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
