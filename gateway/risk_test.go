package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/exchange"
)

// TestAuthEndToEnd: the auth filter (memory store) on an HTTP route and on
// Dubbo routes: identity reaches the upstream as headers and the provider
// as attachments, forged identity never does, anonymous rules apply.
func TestAuthEndToEnd(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user=%q roles=%q", r.Header.Get("X-User-Id"), r.Header.Get("X-Roles"))
	}))
	defer upstream.Close()
	srv := provider.NewServer(slog.New(slog.DiscardHandler))
	srv.Register(provider.Service{Interface: "com.example.Who", Methods: map[string][]provider.Method{
		"whoami": {{Func: func(ctx context.Context, _ []any) (any, error) {
			return fmt.Sprint(provider.Attachments(ctx)["userId"]), nil
		}}},
	}})
	addr, err := srv.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	authYAML := `{auth: {store: memory, tokens: {tok1: '{"userId":"u1","roles":"admin"}'},
        headers: {userId: X-User-Id, roles: X-Roles}, anonymous: [{path: "/http/public/*", methods: [GET]}]}}`
	tg := startGW(t, fmt.Sprintf(`
upstreams: {u: {targets: [{url: %q}]}}
registries: {r: {providers: {com.example.Who: [%q]}}}
routes:
  - {name: http, match: {prefix: /http}, upstream: u, filters: [%s]}
  - {name: who, match: {path: /who}, dubbo: {registry: r, interface: com.example.Who, method: whoami}, filters: [%s]}
  - {name: generic, match: {methods: [POST], path: "/dubbo/{interface}/{method}"}, dubbo: {registry: r, passthrough: {allow: [com.example.Who]}}, filters: [%s]}
`, upstream.URL, addr.String(), authYAML, authYAML, authYAML))

	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		want                     string
	}{
		{"bearer token", "GET", "/http/x", "", []string{"Authorization", "Bearer tok1"}, 200, `user="u1" roles="admin"`},
		{"forged identity stripped", "GET", "/http/x", "", []string{"Authorization", "Bearer tok1", "X-User-Id", "root", "X-Roles", "god"}, 200, `user="u1" roles="admin"`},
		{"no token", "GET", "/http/x", "", nil, 401, `"code":"UNAUTHORIZED"`},
		{"unknown token", "GET", "/http/x", "", []string{"Authorization", "Bearer nope"}, 401, `"code":"UNAUTHORIZED"`},
		{"anonymous path, forged header stripped", "GET", "/http/public/a", "", []string{"X-User-Id", "root"}, 200, `user="" roles=""`},
		{"anonymous rule is per method", "POST", "/http/public/a", "", nil, 401, `"code":"UNAUTHORIZED"`},
		{"identity as a Dubbo attachment", "GET", "/who", "", []string{"Authorization", "Bearer tok1"}, 200, `"u1"`},
		{"pass-through cannot send identity", "POST", "/dubbo/com.example.Who/whoami", `{"attachments": {"userId": "evil"}}`,
			[]string{"Authorization", "Bearer tok1"}, 400, `attachments.userId`},
		{"pass-through identity from the token", "POST", "/dubbo/com.example.Who/whoami", `{}`,
			[]string{"Authorization", "Bearer tok1"}, 200, `"u1"`},
		{"Dubbo route without token", "GET", "/who", "", nil, 401, `"code":"UNAUTHORIZED"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			a := do(t, c.method, tg.base+c.path, body, c.hdr...)
			if a.status != c.status || !strings.Contains(a.body, c.want) {
				t.Errorf("%d %s; want %d with %s", a.status, a.body, c.status, c.want)
			}
		})
	}
	if m := do(t, "GET", tg.admin+"/metrics", nil).body; !strings.Contains(m, `dubbogw_auth_`) {
		t.Error("no dubbogw_auth_ metrics")
	}
}

// TestRateLimitEndToEnd: a route's local limit answers 429 with the
// headers once its burst is spent, per client.
func TestRateLimitEndToEnd(t *testing.T) {
	upstream := echoUpstream(t, "u")
	tg := startGW(t, fmt.Sprintf(`
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - {name: limited, match: {prefix: /l}, upstream: u, filters: [{rate_limit: {rate: 3, per: 1m}}]}
`, upstream.URL))
	for i := range 3 {
		if a := do(t, "GET", tg.base+"/l", nil); a.status != 200 || a.header.Get("RateLimit-Limit") != "3" {
			t.Fatalf("request %d: %d %v", i, a.status, a.header)
		}
	}
	a := do(t, "GET", tg.base+"/l", nil)
	if code, _, _, _ := errorBody(t, a); a.status != 429 || code != "RATE_LIMITED" || a.header.Get("Retry-After") == "" ||
		a.header.Get("RateLimit-Remaining") != "0" {
		t.Errorf("over the limit: %d %v %s", a.status, a.header, a.body)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	if !strings.Contains(m, `dubbogw_ratelimit_decisions_total{result="limited",route="limited",source="local"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(m, "ratelimit"))
	}
}

// TestRouteInFlightLimit: a route at its max_in_flight sheds at once with
// 503 SHED and Retry-After, before its upstream sees the request; other
// routes are not affected; the limit shows in the metrics.
func TestRouteInFlightLimit(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}))
	defer slow.Close()
	defer close(release)
	fast := echoUpstream(t, "fast")
	tg := startGW(t, fmt.Sprintf(`
upstreams: {slow: {targets: [{url: %q}]}, fast: {targets: [{url: %q}]}}
routes:
  - {name: slow, match: {prefix: /slow}, upstream: slow, max_in_flight: 1}
  - {name: fast, match: {prefix: /fast}, upstream: fast}
`, slow.URL, fast.URL))
	first := make(chan answer, 1)
	go func() { first <- do(t, "GET", tg.base+"/slow", nil) }()
	deadline := time.Now().Add(5 * time.Second)
	for arrived.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first request never reached the upstream")
		}
		time.Sleep(time.Millisecond)
	}
	a := do(t, "GET", tg.base+"/slow", nil)
	if code, _, _, _ := errorBody(t, a); a.status != 503 || code != "SHED" || a.header.Get("Retry-After") != "1" {
		t.Errorf("over the route's limit: %d %s", a.status, a.body)
	}
	if n := arrived.Load(); n != 1 {
		t.Errorf("the upstream saw %d requests; the shed one must not reach it", n)
	}
	if b := do(t, "GET", tg.base+"/fast", nil); b.status != 200 {
		t.Errorf("another route: %d", b.status)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_inflight{scope="slow"} 1`, `dubbogw_inflight_limit{scope="slow"} 1`,
		`dubbogw_saturation{scope="slow"} 1`, `dubbogw_admission_rejected_total{scope="slow"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "scope="))
		}
	}
	release <- struct{}{}
	if r := <-first; r.status != 200 {
		t.Errorf("the admitted request: %d", r.status)
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestOutcomeForAdaptiveLimits(t *testing.T) {
	for code, want := range map[string]struct{ dropped, skipped bool }{
		"":                    {},
		"TIMEOUT":             {dropped: true},
		"UPSTREAM_OVERLOADED": {dropped: true},
		"SHED":                {skipped: true},
		"RATE_LIMITED":        {skipped: true},
		"AUTH_UNAVAILABLE":    {skipped: true},
		"NO_PROVIDER":         {skipped: true},
		"BAD_GATEWAY":         {},
		"DUBBO_EXCEPTION":     {},
	} {
		o := outcome(&exchange.Info{ErrorCode: code, Start: time.Now()})
		if o.Dropped != want.dropped || o.Skipped != want.skipped {
			t.Errorf("%q: %+v, want dropped %v skipped %v", code, o, want.dropped, want.skipped)
		}
	}
}
