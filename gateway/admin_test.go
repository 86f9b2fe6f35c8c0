package gateway

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/adminui"
)

// getJSON decodes the JSON answer of an admin endpoint into v; hdr are
// header names and values, as do takes them.
func getJSON(t *testing.T, url string, v any, hdr ...string) string {
	t.Helper()
	a := do(t, "GET", url, nil, hdr...)
	if a.status != 200 || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s %s", url, a.status, a.header.Get("Content-Type"), a.body)
	}
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, a.body)
	}
	return a.body
}

func TestAdminLimitsAfterKnownTraffic(t *testing.T) {
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
	fast := echoUpstream(t, "fast")
	tg := startGW(t, fmt.Sprintf(`
server: {max_in_flight: 50}
upstreams: {slow: {targets: [{url: %q}]}, fast: {targets: [{url: %q}]}}
routes:
  - {name: slow, match: {prefix: /slow}, upstream: slow, max_in_flight: 2}
  - {name: learned, match: {prefix: /learned}, upstream: fast, max_in_flight: 64,
     adaptive_concurrency: {min_limit: 4, initial_limit: 8}}
  - {name: free, match: {prefix: /free}, upstream: fast}
`, slow.URL, fast.URL))

	held := make(chan answer, 2)
	for range 2 {
		go func() { held <- do(t, "GET", tg.base+"/slow", nil) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for arrived.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two held requests never reached the upstream")
		}
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		if a := do(t, "GET", tg.base+"/slow", nil); a.status != 503 {
			t.Fatalf("over the route's limit: %d %s", a.status, a.body)
		}
	}

	type limit struct {
		Scope    string `json:"scope"`
		Kind     string `json:"kind"`
		Limit    int    `json:"limit"`
		InFlight int    `json:"in_flight"`
		Rejected uint64 `json:"rejected"`
	}
	var got struct {
		Global limit   `json:"global"`
		Routes []limit `json:"routes"`
	}
	getJSON(t, tg.admin+"/admin/limits", &got)
	if want := (limit{Scope: "global", Kind: "static", Limit: 50, InFlight: 2}); got.Global != want {
		t.Errorf("global limiter = %+v, want %+v", got.Global, want)
	}
	want := []limit{
		{Scope: "slow", Kind: "static", Limit: 2, InFlight: 2, Rejected: 3},
		{Scope: "learned", Kind: "adaptive", Limit: 8},
	}
	if fmt.Sprint(got.Routes) != fmt.Sprint(want) {
		t.Errorf("route limiters = %+v, want %+v (a route without a limit is not listed)", got.Routes, want)
	}

	close(release)
	for range 2 {
		if a := <-held; a.status != 200 {
			t.Errorf("a held request: %d", a.status)
		}
	}
	// The limiter is released when the handler returns, which may be just
	// after the client has read the answer.
	deadline = time.Now().Add(5 * time.Second)
	for {
		getJSON(t, tg.admin+"/admin/limits", &got)
		if got.Routes[0].InFlight == 0 && got.Global.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in flight after the requests ended: %+v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAdminBreakersAfterKnownTraffic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadProvider := ln.Addr().String()
	ln.Close()
	live := startProvider(t)
	deadTarget := closedURL(t)
	good := echoUpstream(t, "good")
	tg := startGW(t, fmt.Sprintf(`
registries:
  demo:
    providers:
      com.example.demo.UserService: [%q]
      com.example.demo.GreetService: [%q]
upstreams:
  pair:
    targets: [{url: %q}, {url: %q}]
    passive_health: {max_failures: 2, ejection: 1m}
routes:
  - name: dead
    match: {path: /dead}
    dubbo: {registry: demo, interface: com.example.demo.UserService, method: greet, breaker: {max_failures: 3, open_for: 1m}}
  - name: alive
    match: {path: /alive}
    dubbo: {registry: demo, interface: com.example.demo.GreetService, method: greet}
  - {name: http, match: {prefix: /http}, upstream: pair}
`, deadProvider, live, deadTarget, good.URL))
	for range 6 {
		do(t, "GET", tg.base+"/dead", nil)
		do(t, "GET", tg.base+"/http/x", nil)
	}
	do(t, "GET", tg.base+"/alive", nil)

	var got struct {
		Routes []struct {
			Route    string `json:"route"`
			Service  string `json:"service"`
			Breakers []struct {
				Scope, Key, State string
			} `json:"breakers"`
		} `json:"routes"`
		Upstreams []struct {
			Name    string `json:"name"`
			Targets []struct {
				URL, State string
			} `json:"targets"`
		} `json:"upstreams"`
	}
	body := getJSON(t, tg.admin+"/admin/breakers", &got)
	states := map[string]string{} // route/scope/key → state
	for _, r := range got.Routes {
		for _, b := range r.Breakers {
			states[r.Route+" "+b.Scope+" "+b.Key] = b.State
		}
	}
	if len(got.Routes) != 2 || got.Routes[0].Route != "dead" || got.Routes[0].Service != "com.example.demo.UserService" {
		t.Errorf("routes: %s", body)
	}
	if s := states["dead provider "+deadProvider]; s != "open" && states["dead route dead"] != "open" {
		t.Errorf("after failures the dead route shows no open breaker: %v", states)
	}
	if s := states["alive provider "+live]; s != "closed" {
		t.Errorf("the live provider's breaker: %q (%v)", s, states)
	}
	ejected := map[string]string{}
	for _, u := range got.Upstreams {
		for _, tg := range u.Targets {
			ejected[tg.URL] = tg.State
		}
	}
	if len(got.Upstreams) != 1 || ejected[deadTarget] != "ejected" || ejected[good.URL] != "healthy" {
		t.Errorf("upstream targets: %v", ejected)
	}
}

func TestAdminConfigIsRedacted(t *testing.T) {
	up := echoUpstream(t, "up")
	secrets := []string{"redis-pw-7f3a", "tok-9c1e", "user-id-5d2b", "upstream-key-8e4c"}
	yaml := func(route string) string {
		return fmt.Sprintf(`
redis: {address: %q, password: redis-pw-7f3a, dial_timeout: 50ms}
upstreams: {up: {targets: [{url: %q}]}}
routes:
  - name: %s
    match: {prefix: /}
    upstream: up
    filters:
      - auth: {store: memory, tokens: {tok-9c1e: '{"userId": "user-id-5d2b"}'}}
      - headers: {request: {set: {X-Api-Key: upstream-key-8e4c}}}
`, strings.TrimPrefix(closedURL(t), "http://"), up.URL, route)
	}
	tg := startGW(t, yaml("private"))
	if a := do(t, "GET", tg.base+"/x", nil, "Authorization", "Bearer tok-9c1e"); a.status != 200 {
		t.Fatalf("the configured token is not accepted: %d %s", a.status, a.body)
	}
	var cfg struct {
		Redis  struct{ Address, Password string }
		Routes []struct{ Name string }
	}
	body := getJSON(t, tg.admin+"/admin/config", &cfg)
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("/admin/config shows the secret %q:\n%s", s, body)
		}
	}
	if cfg.Redis.Password != adminui.Redacted || cfg.Redis.Address == "" || len(cfg.Routes) != 1 || cfg.Routes[0].Name != "private" {
		t.Errorf("/admin/config: %s", body)
	}

	// It is the configuration serving now: a reload shows.
	tg.rewrite(t, yaml("reloaded"))
	if a := do(t, "POST", tg.admin+"/admin/reload", nil); a.status != 200 {
		t.Fatalf("reload: %d %s", a.status, a.body)
	}
	getJSON(t, tg.admin+"/admin/config", &cfg)
	if len(cfg.Routes) != 1 || cfg.Routes[0].Name != "reloaded" {
		t.Errorf("after a reload: %+v", cfg.Routes)
	}
}

// BenchmarkAdminEndpoints measures what each admin endpoint costs the
// gateway per call (an open dashboard asks /admin/summary every second,
// /admin/routes and a page of /admin/services every 5s; Prometheus
// scrapes /metrics), against /livez as the baseline of the admin
// listener's own overhead.
func BenchmarkAdminEndpoints(b *testing.B) {
	g := offlineGateway(b, `
upstreams: {a: {targets: [{url: "http://127.0.0.1:1"}, {url: "http://127.0.0.1:2"}]}}
registries: {demo: {providers: {com.example.demo.UserService: ["127.0.0.1:3", "127.0.0.1:4"]}}}
routes:
  - {name: http, match: {prefix: /http}, upstream: a, max_in_flight: 10,
     filters: [{auth: {store: memory, tokens: {t1: '{"userId":"u1"}'}}}]}
  - {name: dubbo, match: {path: /dubbo}, dubbo: {registry: demo, interface: com.example.demo.UserService, method: greet}}
`)
	h := g.adminHandler(g.startCfg)
	for _, target := range []string{"/livez", "/admin/summary", "/metrics", "/admin/routes", "/admin/services", "/admin/limits", "/admin/breakers", "/admin/config", "/admin/ui/"} {
		b.Run(strings.TrimPrefix(target, "/"), func(b *testing.B) {
			req := httptest.NewRequest("GET", target, nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d", target, rec.Code)
				}
			}
		})
	}
}

// manyRoutesGateway builds (without starting) a gateway with one Dubbo
// method route per service of a static registry, 10 providers each.
func manyRoutesGateway(tb testing.TB, routes int) *Gateway {
	tb.Helper()
	var yaml strings.Builder
	yaml.WriteString(bigRegistryYAML("com.example.many.Service", routes) + "routes:\n")
	for s := range routes {
		fmt.Fprintf(&yaml, "  - {name: r%d, match: {path: /r%d}, dubbo: {registry: big, interface: com.example.many.Service%d, method: m}}\n", s, s, s)
	}
	return offlineGateway(tb, yaml.String())
}

// TestAdminServicesCostIsThePage: asking /admin/services for one service
// costs the same with 100 routes as with 2,000 (it looked at every route's
// breakers on every call: routes × providers).
func TestAdminServicesCostIsThePage(t *testing.T) {
	allocs := map[int]float64{}
	for _, routes := range []int{100, 2000} {
		g := manyRoutesGateway(t, routes)
		h := g.adminHandler(g.startCfg)
		req := httptest.NewRequest("GET", "/admin/services?service=com.example.many.Service7&limit=1", nil)
		allocs[routes] = testing.AllocsPerRun(20, func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"com.example.many.Service7"`) {
				t.Fatalf("%d routes: %d %s", routes, rec.Code, rec.Body)
			}
		})
	}
	if allocs[2000] > allocs[100]+5 {
		t.Errorf("one service's page: %.0f allocations with 100 routes, %.0f with 2,000", allocs[100], allocs[2000])
	}
}

// TestInsertBounded checks the bounded listing of /readyz's unread
// services against sorting them all: the first max distinct keys, sorted.
func TestInsertBounded(t *testing.T) {
	rnd := rand.New(rand.NewPCG(19, 20))
	for round := range 500 {
		max := 1 + rnd.IntN(25)
		var got, all []string
		for range rnd.IntN(200) {
			k := fmt.Sprintf("com.example.S%d", rnd.IntN(80))
			got = insertBounded(got, k, max)
			all = append(all, k)
		}
		slices.Sort(all)
		all = slices.Compact(all)
		want := all[:min(len(all), max)]
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, max %d: got %v, want %v", round, max, got, want)
		}
	}
}
