package gateway

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMetricsAfterKnownTraffic scrapes /metrics after a known set of
// requests: the counts are exact, every dubbogw_ family the gateway
// exports is documented in docs/METRICS.md (and every documented one
// exists in the code), and no label value carries a request path, a token
// or a user id.
func TestMetricsAfterKnownTraffic(t *testing.T) {
	upstream := echoUpstream(t, "u")
	provider := startProvider(t)
	tg := startGW(t, fmt.Sprintf(`
upstreams: {u: {targets: [{url: %q}]}}
registries: {r: {providers: {com.example.demo.UserService: [%q]}}}
routes:
  - name: h
    match: {prefix: /h}
    upstream: u
    max_in_flight: 5
    filters: [{auth: {store: memory, tokens: {secret-token-123: '{"userId":"user-987"}'}}}, {rate_limit: {key: user, rate: 100}}]
  - name: d
    match: {path: "/d/{id}"}
    dubbo: {registry: r, interface: com.example.demo.UserService, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
`, upstream.URL, provider))
	for i := range 3 {
		do(t, "GET", fmt.Sprintf("%s/h/items/%d", tg.base, 1000+i), nil, "Authorization", "Bearer secret-token-123")
	}
	do(t, "GET", tg.base+"/h/items/1", nil) // no token: 401
	for i := range 2 {
		do(t, "GET", fmt.Sprintf("%s/d/%d", tg.base, 5000+i), nil)
	}
	do(t, "GET", tg.base+"/nowhere/31337", nil) // 404
	m := do(t, "GET", tg.admin+"/metrics", nil).body

	for _, want := range []string{
		`dubbogw_http_requests_total{code="200",route="h"} 3`,
		`dubbogw_http_requests_total{code="401",route="h"} 1`,
		`dubbogw_http_requests_total{code="200",route="d"} 2`,
		`dubbogw_http_requests_total{code="404",route="none"} 1`,
		`dubbogw_errors_total{code="UNAUTHORIZED"} 1`,
		`dubbogw_errors_total{code="NO_ROUTE"} 1`,
		`dubbogw_http_request_duration_seconds_count{route="h"} 4`,
		`dubbogw_auth_requests_total{result="ok",route="h"} 3`,
		`dubbogw_ratelimit_decisions_total{result="allowed",route="h",source="local"} 3`,
		`dubbogw_dubbo_calls_total{result="ok"} 2`,
		`dubbogw_cluster_selections_total{policy="random",route="d"} 2`, // breaker series: from their first change
		`dubbogw_inflight{scope="h"} 0`,
		`dubbogw_inflight_limit{scope="h"} 5`,
		`dubbogw_routes 2`,
		`dubbogw_providers{registry="r",service="com.example.demo.UserService"} 1`,
		`dubbogw_ready 1`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}

	// No label value carries what a client sent: paths, tokens, user ids.
	labelValue := regexp.MustCompile(`="([^"]*)"`)
	for _, line := range strings.Split(m, "\n") {
		if !strings.HasPrefix(line, "dubbogw_") {
			continue
		}
		for _, v := range labelValue.FindAllStringSubmatch(line, -1) {
			for _, leak := range []string{"secret-token-123", "user-987", "/items/", "31337", "500", "/d/"} {
				if strings.Contains(v[1], leak) && !strings.HasPrefix(v[1], "127.0.0.1:") && !isStatus(v[1]) {
					t.Errorf("label value %q (from %s) carries client input %q", v[1], line, leak)
				}
			}
		}
	}

	// docs/METRICS.md lists every exported family, and nothing else.
	doc, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, name := range regexp.MustCompile("(?m)^\\| `(dubbogw_[a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[name[1]] = true
	}
	for _, name := range regexp.MustCompile(`(?m)^# TYPE (dubbogw_[a-z_]+) `).FindAllStringSubmatch(m, -1) {
		if !documented[name[1]] {
			t.Errorf("%s is exported but not in docs/METRICS.md", name[1])
		}
		delete(documented, name[1])
	}
	// What this traffic cannot show (Redis, ZooKeeper, breakers tripping,
	// retries, ...) must at least exist in the code.
	var code strings.Builder
	for _, dir := range []string{"../gateway", "../proxy", "../dubbo", "../triple", "../cluster", "../redisclient", "../filter/auth", "../filter/ratelimit", "../admission", "../registry", "../tracing", "../servertls", "../configsource"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				b, _ := os.ReadFile(dir + "/" + e.Name())
				code.Write(b)
			}
		}
	}
	for name := range documented {
		if !strings.Contains(code.String(), `"`+name+`"`) && !strings.Contains(code.String(), `"`+strings.TrimPrefix(name, "dubbogw_")+`"`) {
			t.Errorf("docs/METRICS.md lists %s, which no code defines", name)
		}
	}
}

func isStatus(v string) bool { return len(v) == 3 && v[0] >= '1' && v[0] <= '5' }

// TestRouteSeriesMadeAtFirstRequest: a route nobody called exports no
// series of its own (at thousands of routes they were most of a scrape);
// its first request makes them.
func TestRouteSeriesMadeAtFirstRequest(t *testing.T) {
	upstream := echoUpstream(t, "u")
	var routes strings.Builder
	for i := range 50 {
		fmt.Fprintf(&routes, "  - {name: r%d, match: {prefix: /r%d}, upstream: u}\n", i, i)
	}
	tg := startGW(t, fmt.Sprintf("upstreams: {u: {targets: [{url: %q}]}}\nroutes:\n%s", upstream.URL, routes.String()))
	scrape := func() string { return do(t, "GET", tg.admin+"/metrics", nil).body }
	before := scrape()
	for _, family := range []string{"dubbogw_http_request_duration_seconds", "dubbogw_filter_panics_total", "dubbogw_http_requests_total"} {
		if strings.Contains(before, family+"{") || strings.Contains(before, family+"_count{") {
			t.Errorf("%s exported before any request", family)
		}
	}
	do(t, "GET", tg.base+"/r7/x", nil)
	after := scrape()
	for _, want := range []string{
		`dubbogw_http_request_duration_seconds_count{route="r7"} 1`,
		`dubbogw_http_requests_total{code="200",route="r7"} 1`,
		`dubbogw_filter_panics_total{route="r7"} 0`,
	} {
		if !strings.Contains(after, want+"\n") {
			t.Errorf("after one request, metrics lack %s", want)
		}
	}
	if strings.Contains(after, `route="r8"`) {
		t.Error("a route not called exports series")
	}
}

// TestMetricsDoNotGrowWithProviders scrapes /metrics after the same calls
// through a Dubbo route whose service has 100 providers, then 2,000 (all
// refusing connections: every call fails over three of them): by
// default the scrape has as many series either way; with
// dubbo.metrics.per_provider, each provider adds its own. Both counts are
// those of the formula in docs/METRICS.md.
func TestMetricsDoNotGrowWithProviders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // every address below refuses connections at once
	scrape := func(perProvider bool, providers int) (series, size int) {
		addrs := make([]string, providers)
		for i := range addrs {
			addrs[i] = fmt.Sprintf("%q", fmt.Sprintf("127.0.%d.%d:%d", i/250, 1+i%250, port))
		}
		tg := startGW(t, fmt.Sprintf(`
dubbo: {metrics: {per_provider: %v}}
registries: {r: {providers: {com.example.demo.UserService: [%s]}}}
routes:
  - name: d
    match: {path: "/d/{id}"}
    dubbo: {registry: r, interface: com.example.demo.UserService, method: getUser, loadbalance: roundrobin,
            params: [{type: java.lang.String, from: path, name: id}]}
`, perProvider, strings.Join(addrs, ", ")))
		for i := range 3 {
			if a := do(t, "GET", fmt.Sprintf("%s/d/%d", tg.base, i), nil); a.status < 500 {
				t.Fatalf("a call to providers that refuse connections: %d %s", a.status, a.body)
			}
		}
		m := do(t, "GET", tg.admin+"/metrics", nil).body
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, "dubbogw_") {
				series++
				size += len(line) + 1
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tg.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		return series, size
	}
	// docs/METRICS.md's formula for this gateway: 28 fixed, E = 1 error
	// code, 19 for the one route called (d: "none" answered nothing) and
	// d's one status code, 2 for the Dubbo route called (retries,
	// selections; its breakers did not change state), 20 for the registry
	// and 1 for its service, 49 for the Dubbo client. Per provider: one
	// breaker state per provider, and the client's 49 for each of the 9
	// addresses called (3 calls, 3 attempts).
	want := 28 + 1 + 19 + 1 + 2 + 20 + 1 + 49
	for _, providers := range []int{100, 2000} {
		if got, size := scrape(false, providers); got != want {
			t.Errorf("default, %d providers: %d series (%d bytes), want %d", providers, got, size, want)
		}
		if got, size := scrape(true, providers); got != want+providers+49*8 {
			t.Errorf("per_provider, %d providers: %d series (%d bytes), want %d", providers, got, size, want+providers+49*8)
		}
	}
}
