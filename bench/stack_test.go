package bench_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/bench/loadgen"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// stack is everything a measurement talks to, in this process, on
// 127.0.0.1: an HTTP upstream answering users as the Dubbo demo does, the
// demo provider (dubbo/provider), a gateway routing to both, a Dubbo client of its
// own and an HTTP client sized for the load.
type stack struct {
	upstreamURL string // GET {upstreamURL}/http/users/42 straight to the upstream
	gatewayURL  string // GET {gatewayURL}/http/users/42 and /api/users/42 through the gateway
	provider    string // host:port of the demo provider
	http        *http.Client
	dubbo       *dubbo.Client
	// getUser is the Dubbo-alone call: the same generic getUser(42) the
	// gateway makes for /api/users/42. Invoke only reads it.
	getUserCall *dubbo.Invocation
}

// stackSettings are what the load needs from the services.
const (
	// providerMaxInFlight is above the 512 concurrent callers of the
	// Dubbo-alone measurement, so the provider never refuses one with
	// "thread pool exhausted" (its default, as Java's, is 200).
	providerMaxInFlight = 1024
	// httpConnsPerHost covers the most concurrent HTTP workers with an idle
	// connection each.
	httpConnsPerHost = 256
)

func startStack(t testing.TB) *stack {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)

	// Each part runs under a pprof label naming its role, inherited by the
	// goroutines it starts, so a CPU profile tells them apart:
	// go tool pprof -tags bench.test profile.
	var upstream *httptest.Server
	asRole(ctx, "upstream", func(context.Context) { upstream = httptest.NewServer(http.HandlerFunc(serveUser)) })
	t.Cleanup(upstream.Close)

	provider := provider.NewServer(quiet)
	provider.SetMaxInFlight(providerMaxInFlight)
	for _, svc := range demo.DubboServices() {
		provider.Register(svc)
	}
	var providerAddr net.Addr
	var err error
	asRole(ctx, "provider", func(ctx context.Context) { providerAddr, err = provider.Listen(ctx, "127.0.0.1:0") })
	if err != nil {
		t.Fatalf("starting the demo provider: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = provider.Close(ctx)
	})

	// Token auth on Redis for the auth rows: one hot token, as a logged-in
	// client sends on every request (looked up through the client cache).
	redisAddr := testenv.RedisAddr(t)
	tokenPrefix := fmt.Sprintf("bench:%d:", time.Now().UnixNano())
	setToken(t, redisAddr, tokenPrefix+benchToken, `{"userId":"u42"}`)

	dir := t.TempDir()
	yml := fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
log: {level: warn}
access_log: {output: %q}
shutdown: {delay: 0s, drain_timeout: 5s}
# 1s, not the 50ms default: these rows measure the cost of a cached token
# lookup, and the stack shares two cores with the load generator (and, in
# the smoke test, with the race detector and other packages' tests).
redis: {address: %q, timeout: 1s}
server: {max_connections_per_ip: 0}   # the load generator is one client with many connections
registries:
  demo:
    providers:
      %s: [%q]
upstreams:
  users-http: {targets: [{url: %q}]}
routes:
  - name: http-users
    match: {methods: [GET], path: "/http/users/{id}"}
    upstream: users-http
  - name: api-users
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo:
      registry: demo
      interface: %s
      method: getUser
      params: [{type: java.lang.String, from: path, name: id}]
  - name: auth-http-users
    match: {methods: [GET], path: "/auth/http/users/{id}"}
    upstream: users-http
    filters: [{rewrite: {strip_prefix: /auth}}, {auth: {key_prefix: %q, timeout: 1s}}]
  - name: auth-api-users
    match: {methods: [GET], path: "/auth/api/users/{id}"}
    filters: [{auth: {key_prefix: %q, timeout: 1s}}]
    dubbo:
      registry: demo
      interface: %s
      method: getUser
      params: [{type: java.lang.String, from: path, name: id}]
`, filepath.Join(dir, "access.log"), redisAddr, demo.UserInterface, providerAddr.String(), upstream.URL, demo.UserInterface,
		tokenPrefix, tokenPrefix, demo.UserInterface)
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatalf("writing the gateway config: %v", err)
	}
	gw, err := gateway.New(gateway.Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: quiet})
	if err != nil {
		t.Fatalf("building the gateway: %v", err)
	}
	asRole(ctx, "gateway", func(ctx context.Context) { err = gw.Start(ctx) })
	if err != nil {
		t.Fatalf("starting the gateway: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := gw.Shutdown(ctx); err != nil {
			t.Errorf("shutting the gateway down: %v", err)
		}
	})

	transport := &http.Transport{
		MaxIdleConns:        4 * httpConnsPerHost,
		MaxIdleConnsPerHost: httpConnsPerHost,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	t.Cleanup(transport.CloseIdleConnections)
	client := dubbo.New(dubbo.Options{Logger: quiet})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Close(ctx)
	})
	s := &stack{
		upstreamURL: upstream.URL,
		gatewayURL:  "http://" + gw.Addr(),
		provider:    providerAddr.String(),
		http:        &http.Client{Transport: transport},
		dubbo:       client,
		getUserCall: &dubbo.Invocation{
			Interface:  demo.UserInterface,
			Method:     "getUser",
			ParamTypes: []string{"java.lang.String"},
			Args:       []any{"42"},
			Generic:    true,
		},
	}
	if err := loadgen.CheckLoopback(s.provider); err != nil {
		t.Fatal(err)
	}
	asRole(ctx, "generator", func(context.Context) { s.checkAnswersMatch(t) }) // dials the clients' connections
	return s
}

// asRole runs f labelled, for CPU profiles, with role: the generator, the
// gateway, the upstream or the provider. Goroutines f starts keep the label.
func asRole(ctx context.Context, role string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("role", role), f)
}

// serveUser answers GET /http/users/{id} (digits) with the JSON the
// gateway makes of the demo provider's getUser(id), so both routes move the
// same bytes.
func serveUser(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/http/users/")
	if !ok || id == "" || strings.Trim(id, "0123456789") != "" {
		http.NotFound(w, r)
		return
	}
	var buf [128]byte
	b := append(buf[:0], `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","name":"user `...)
	b = append(b, id...)
	b = append(b, `","age":30,"email":"`...)
	b = append(b, id...)
	b = append(b, "@example.com\"}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// checkAnswersMatch makes sure the routes work and that the HTTP one
// carries the same body as the Dubbo one before anything is measured.
func (s *stack) checkAnswersMatch(t testing.TB) {
	t.Helper()
	get := func(url string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.http.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d %s %q, %v", url, res.StatusCode, res.Header.Get("Content-Type"), body, err)
		}
		return string(body)
	}
	viaDubbo := get(s.gatewayURL + "/api/users/42")
	if want := `{"id":"42","name":"user 42","age":30,"email":"42@example.com"}`; strings.TrimSpace(viaDubbo) != want {
		t.Fatalf("HTTP→Dubbo answered %q, want %s", viaDubbo, want)
	}
	for _, url := range []string{s.upstreamURL + "/http/users/42", s.gatewayURL + "/http/users/42"} {
		if body := get(url); body != viaDubbo {
			t.Fatalf("GET %s answered %q, HTTP→Dubbo %q: the routes must move the same bytes", url, body, viaDubbo)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.getUser(ctx); err != nil {
		t.Fatal(err)
	}
}

// getUser is the Dubbo-alone target.
func (s *stack) getUser(ctx context.Context) error {
	res, err := s.dubbo.Invoke(ctx, s.provider, s.getUserCall)
	if err != nil {
		return err
	}
	if _, ok := res.Value.(*hessian.Map); !ok {
		return fmt.Errorf("getUser answered a %T, want a generic map", res.Value)
	}
	return nil
}

// httpTarget is a GET of path on base, checked to be on loopback, with
// the given header name, value pairs.
func (s *stack) httpTarget(t testing.TB, base, path string, header ...string) loadgen.Target {
	t.Helper()
	target, err := loadgen.HTTPGet(s.http, base+path, http.StatusOK, header...)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// benchToken is the token the auth rows send.
const benchToken = "bench-token"

// setToken stores a token's value in Redis with a TTL well above the
// sliding threshold (so the run measures lookups, not renewals), over one
// raw RESP exchange.
func setToken(t testing.TB, addr, key, value string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatalf("connecting to Redis: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	cmd := fmt.Sprintf("*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nEX\r\n$5\r\n86400\r\n", len(key), key, len(value), value)
	if _, err := c.Write([]byte(cmd)); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("SET %s: %q, %v", key, line, err)
	}
	t.Cleanup(func() {
		if c, err := net.DialTimeout("tcp", addr, 3*time.Second); err == nil {
			_, _ = fmt.Fprintf(c, "*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n", len(key), key)
			c.Close()
		}
	})
}
