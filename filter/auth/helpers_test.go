package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/auth"
	"github.com/dubbogw/dubbogw/redisclient"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// seen is what the upstream saw of one request, sent back as its body.
type seen struct {
	Headers     map[string][]string `json:"headers"`
	UserID      string              `json:"user_id"`
	Attachments map[string]string   `json:"attachments"`
}

// upstream answers 200 with what it saw: the identity headers and Info.
var upstream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	s := seen{Headers: map[string][]string{}}
	for name, vs := range r.Header {
		if strings.HasPrefix(name, "X-") {
			s.Headers[name] = vs
		}
	}
	if info := exchange.From(r.Context()); info != nil {
		s.UserID, s.Attachments = info.UserID, info.Attachments
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
})

// withInfo puts an exchange.Info in each request, as the gateway core does.
func withInfo(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &exchange.Info{Route: "r1", RequestID: "rid-1"}
		h.ServeHTTP(w, r.WithContext(exchange.WithInfo(r.Context(), info)))
	})
}

// gateway is a filter in front of upstream on a real loopback server.
type gateway struct {
	t   testing.TB
	f   *auth.Filter
	srv *httptest.Server
	reg *prometheus.Registry
}

// newGateway builds the filter from cfg (deps.Metrics and Route are set
// here) and serves it; both are closed when the test ends.
// Without a Timeout in cfg the lookup gets functionalTimeout: tests that
// are not about deadlines must not race the 50 ms default on a loaded
// machine.
func newGateway(t testing.TB, cfg auth.Config, rc *redisclient.Client) *gateway {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = functionalTimeout
	}
	reg := prometheus.NewRegistry()
	f, err := auth.New(&cfg, auth.Deps{Redis: rc, Metrics: reg, Log: testLogger(t), Route: "r1"})
	if err != nil {
		t.Fatalf("auth.New: %v", err)
	}
	t.Cleanup(f.Close)
	srv := httptest.NewServer(withInfo(f.Wrap(upstream)))
	t.Cleanup(srv.Close)
	return &gateway{t: t, f: f, srv: srv, reg: reg}
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// response is one answer of the gateway.
type response struct {
	status  int
	header  http.Header
	body    string
	seen    seen          // when status is 200
	elapsed time.Duration // from sending to the end of the body
}

// do sends method path with the given headers ("Name: value").
func (g *gateway) do(method, path string, headers ...string) response {
	g.t.Helper()
	req, err := http.NewRequest(method, g.srv.URL+path, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := g.srv.Client().Do(req.WithContext(ctx))
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	out := response{status: resp.StatusCode, header: resp.Header, body: string(body), elapsed: time.Since(start)}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &out.seen); err != nil {
			g.t.Fatalf("upstream body %q: %v", body, err)
		}
	}
	return out
}

func (g *gateway) metric(name string, labels map[string]string) float64 {
	return testenv.MetricValue(g.t, g.reg, name, labels)
}

func (g *gateway) outcome(result string) float64 {
	return g.metric("dubbogw_auth_requests_total", map[string]string{"route": "r1", "result": result})
}

func (g *gateway) renewals(result string) float64 {
	return g.metric("dubbogw_auth_renewals_total", map[string]string{"route": "r1", "result": result})
}

// errorBody decodes the gateway's JSON error.
func errorBody(t testing.TB, r response) (code, message string) {
	t.Helper()
	var v struct {
		Error struct {
			Code, Message, Route string
			RequestID            string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	if v.Error.Route != "r1" || v.Error.RequestID != "rid-1" {
		t.Errorf("error body %q lacks the route or request id", r.body)
	}
	return v.Error.Code, v.Error.Message
}

// functionalTimeout is the Redis and lookup deadline of tests that are not
// about deadlines: far beyond any scheduling delay under -race.
const functionalTimeout = config.Duration(5 * time.Second)

// newRedisClient connects a client on cfg (command timeout
// functionalTimeout unless cfg sets one).
func newRedisClient(t testing.TB, cfg config.Redis) *redisclient.Client {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = functionalTimeout
	}
	c, err := redisclient.New(cfg, prometheus.NewRegistry(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// rawClient is a plain rueidis client to set up and inspect keys.
func rawClient(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatalf("raw redis client to %s: %v", addr, err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// setToken stores value under key with ttl (0: none) and deletes it when
// the test ends.
func setToken(t testing.TB, raw rueidis.Client, key, value string, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	cmd := raw.B().Set().Key(key).Value(value).Build()
	if ttl > 0 {
		cmd = raw.B().Set().Key(key).Value(value).Px(ttl).Build()
	}
	if err := raw.Do(ctx, cmd).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(key).Build()) })
}

func pttl(t testing.TB, raw rueidis.Client, key string) time.Duration {
	t.Helper()
	ms, err := raw.Do(context.Background(), raw.B().Pttl().Key(key).Build()).ToInt64()
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ms) * time.Millisecond
}

// pexpireCalls reads INFO commandstats: PEXPIRE calls since the server
// started, from scripts included.
func pexpireCalls(t testing.TB, raw rueidis.Client) int {
	t.Helper()
	info, err := raw.Do(context.Background(), raw.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_pexpire:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// uniquePrefix is a key prefix of this test only.
func uniquePrefix(t testing.TB) string {
	return fmt.Sprintf("dubbogw-test:%s:%d:token:", t.Name(), time.Now().UnixNano())
}

func ptr[T any](v T) *T { return &v }
