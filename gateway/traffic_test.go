package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dubbogw/dubbogw/config"
)

// TestRoutePredicates: routes at one path chosen by headers, query
// parameters and cookies through real HTTP, with the precedence the router
// documents, and 404 (not 405) when the path matched but no predicate set
// held and no route without predicates is there.
func TestRoutePredicates(t *testing.T) {
	stable, canary, beta, v2, only := echoUpstream(t, "stable"), echoUpstream(t, "canary"), echoUpstream(t, "beta"), echoUpstream(t, "v2"), echoUpstream(t, "only")
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  stable: {targets: [{url: %q}]}
  canary: {targets: [{url: %q}]}
  beta: {targets: [{url: %q}]}
  v2: {targets: [{url: %q}]}
  only: {targets: [{url: %q}]}
routes:
  - {name: api, match: {prefix: /api}, upstream: stable}
  - name: api-canary
    match: {prefix: /api, headers: [{name: x-env, exact: canary}]}
    upstream: canary
  - name: api-beta
    match: {prefix: /api, headers: [{name: X-Env, regex: "can.*"}], cookies: [{name: beta, present: true}]}
    upstream: beta
  - name: api-v2
    match: {prefix: /api, query: [{name: v, prefix: "2"}]}
    upstream: v2
  - name: hidden
    match: {path: /hidden, methods: [GET], headers: [{name: X-Key, exact: open-sesame}]}
    upstream: only
`, stable.URL, canary.URL, beta.URL, v2.URL, only.URL))

	cases := []struct {
		name, method, path string
		hdr                []string
		upstream           string // "" for a 404
	}{
		{"no predicate holds", "GET", "/api/users", nil, "stable"},
		{"header exact", "GET", "/api/users", []string{"X-Env", "canary"}, "canary"},
		{"header names any case", "GET", "/api/users", []string{"x-ENV", "canary"}, "canary"},
		{"exact is exact", "GET", "/api/users", []string{"X-Env", "Canary"}, "stable"},
		{"more predicates first", "GET", "/api/users", []string{"X-Env", "canary", "Cookie", "theme=dark; beta=1"}, "beta"},
		{"regex is anchored", "GET", "/api/users", []string{"X-Env", "xcanary", "Cookie", "beta=1"}, "stable"},
		{"config order among equals", "GET", "/api/users?v=2", []string{"X-Env", "canary"}, "canary"},
		{"query prefix", "GET", "/api/users?a=1&v=2.1", nil, "v2"},
		{"query decoded", "GET", "/api/users?%76=2", nil, "v2"},
		{"hidden route found", "GET", "/hidden", []string{"X-Key", "open-sesame"}, "only"},
		{"hidden route not found", "GET", "/hidden", nil, ""},
		{"hidden route, other method", "POST", "/hidden", []string{"X-Key", "open-sesame"}, ""},
	}
	for _, tc := range cases {
		resp := do(t, tc.method, tg.base+tc.path, nil, tc.hdr...)
		if tc.upstream == "" {
			code, _, _, _ := errorBody(t, resp)
			if resp.status != http.StatusNotFound || code != "NO_ROUTE" || resp.header.Get("Allow") != "" {
				t.Errorf("%s: %d %s Allow %q; want 404 NO_ROUTE", tc.name, resp.status, code, resp.header.Get("Allow"))
			}
			continue
		}
		if resp.status != 200 {
			t.Errorf("%s: status %d body %s", tc.name, resp.status, resp.body)
			continue
		}
		if got := decodeEcho(t, resp).Upstream; got != tc.upstream {
			t.Errorf("%s: went to %s, want %s", tc.name, got, tc.upstream)
		}
	}
}

// TestWeightedSplit sends 10,000 requests, from concurrent clients, to two
// routes sharing a path with weights 90 and 10 (a canary), and a header-
// pinned route beside them: each split route serves its share within ±2
// points (the schedule makes it exact), visible under its route name in
// dubbogw_http_requests_total; the pinned route takes only its requests.
func TestWeightedSplit(t *testing.T) {
	stable, canary, pinned := nameUpstream(t, "stable"), nameUpstream(t, "canary"), nameUpstream(t, "pinned")
	tg := startGW(t, fmt.Sprintf(`
upstreams:
  stable: {targets: [{url: %q}]}
  canary: {targets: [{url: %q}]}
  pinned: {targets: [{url: %q}]}
routes:
  - {name: orders-stable, match: {prefix: /orders, weight: 90}, upstream: stable}
  - {name: orders-canary, match: {prefix: /orders, weight: 10}, upstream: canary}
  - {name: orders-pinned, match: {prefix: /orders, headers: [{name: X-Canary, present: true}]}, upstream: pinned}
`, stable.URL, canary.URL, pinned.URL))

	const total, workers = 10000, 8
	var mu sync.Mutex
	served := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			local := map[string]int{}
			for i := range total / workers {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/orders/%d-%d", tg.base, w, i), nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
				local[resp.Header.Get("X-Upstream")]++
			}
			mu.Lock()
			defer mu.Unlock()
			for k, n := range local {
				served[k] += n
			}
		})
	}
	wg.Wait()
	share := func(name string) float64 { return 100 * float64(served[name]) / total }
	t.Logf("over %d requests: %v", total, served)
	if s := share("stable"); s < 88 || s > 92 {
		t.Errorf("stable served %.2f%% of requests; want 90 ± 2", s)
	}
	if s := share("canary"); s < 8 || s > 12 {
		t.Errorf("canary served %.2f%% of requests; want 10 ± 2", s)
	}
	if served["pinned"] != 0 {
		t.Errorf("the pinned route served %d requests without its header", served["pinned"])
	}
	if got := do(t, "GET", tg.base+"/orders/1", nil, "X-Canary", "").header.Get("X-Upstream"); got != "pinned" {
		t.Errorf("with X-Canary: %s; want pinned", got)
	}
	routes := do(t, "GET", tg.admin+"/admin/routes", nil).body
	for _, want := range []string{`"name":"orders-canary","prefix":"/orders","weight":10`, `"predicates":["header X-Canary present"]`} {
		if !strings.Contains(routes, want) {
			t.Errorf("/admin/routes lacks %s: %s", want, routes)
		}
	}
	metrics := do(t, "GET", tg.admin+"/metrics", nil).body
	for route, n := range map[string]int{"orders-stable": served["stable"], "orders-canary": served["canary"]} {
		want := fmt.Sprintf(`dubbogw_http_requests_total{code="200",route=%q} %d`, route, n)
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// nameUpstream answers every request with an empty 200 naming itself in
// X-Upstream: the least work per request, for tests that send many.
func nameUpstream(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", name)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestCanaryRampByReload: a canary's weight raised by a reload takes
// effect on the next requests, exactly; a reload whose split is invalid
// is refused with the reason and the split in service keeps serving.
func TestCanaryRampByReload(t *testing.T) {
	stable, canary := echoUpstream(t, "stable"), echoUpstream(t, "canary")
	cfg := func(stableWeight, canaryWeight int) string {
		return fmt.Sprintf(`
upstreams:
  stable: {targets: [{url: %q}]}
  canary: {targets: [{url: %q}]}
routes:
  - {name: stable, match: {path: /x, weight: %d}, upstream: stable}
  - {name: canary, match: {path: /x, weight: %d}, upstream: canary}
`, stable.URL, canary.URL, stableWeight, canaryWeight)
	}
	tg := startGW(t, cfg(99, 1))
	count := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			got[decodeEcho(t, do(t, "GET", tg.base+"/x", nil)).Upstream]++
		}
		return got
	}
	if got := count(100); got["canary"] != 1 {
		t.Errorf("at 99/1 over 100 requests: %v", got)
	}
	tg.rewrite(t, cfg(50, 50))
	if r := do(t, "POST", tg.admin+"/admin/reload", nil); r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if got := count(100); got["canary"] != 50 {
		t.Errorf("at 50/50 over 100 requests: %v", got)
	}
	tg.rewrite(t, cfg(0, 0))
	r := do(t, "POST", tg.admin+"/admin/reload", nil)
	if r.status != 400 || !strings.Contains(r.body, "CONFIG_INVALID") || !strings.Contains(r.body, "weights add up to 0") {
		t.Errorf("reload of weights 0/0: %d %s", r.status, r.body)
	}
	if got := count(100); got["canary"] != 50 {
		t.Errorf("after the refused reload, over 100 requests: %v; want 50/50 still", got)
	}
}

// TestTrafficRuleConfigErrors: invalid predicates and splits are refused
// with the place and the reason, before anything is served.
func TestTrafficRuleConfigErrors(t *testing.T) {
	u := echoUpstream(t, "u")
	head := fmt.Sprintf(`
upstreams:
  u: {targets: [{url: %q}]}
routes:
`, u.URL)
	tests := []struct{ routes, want string }{
		{`  - {name: a, match: {prefix: /a, headers: [{name: X-A}]}, upstream: u}`,
			"routes[0].match.headers[0]: say how to compare: set one of exact, prefix, regex or present: true"},
		{`  - {name: a, match: {prefix: /a, headers: [{name: X-A, exact: x, prefix: y}]}, upstream: u}`,
			"routes[0].match.headers[0]: set one of exact, prefix, regex and present"},
		{`  - {name: a, match: {prefix: /a, query: [{name: v, regex: "a("}]}, upstream: u}`,
			"routes[0].match.query[0]: error parsing regexp: missing closing )"},
		{`  - {name: a, match: {prefix: /a, headers: [{name: X-User-Id, present: true}]}, upstream: u}`,
			`routes[0].match.headers[0].name: "X-User-Id" is an identity header, removed from every request before routing`},
		{`  - {name: a, match: {prefix: /a, headers: [{name: Host, exact: x}]}, upstream: u}`,
			"routes[0].match.headers[0]: the host is matched by host"},
		{`  - {name: a, match: {prefix: /a, cookies: [{name: b, present: true}, {name: b, exact: "1"}]}, upstream: u}`,
			`routes[0].match.cookies[1].name: "b" is tested by cookies[0] already`},
		{`  - {name: a, match: {prefix: /a, weight: 10001}, upstream: u}`,
			"routes[0].match.weight: must be 0..10000, got 10001"},
		{`  - {name: a, match: {prefix: /a, headers: [{name: X-A, exact: "1"}]}, upstream: u}
  - {name: b, match: {prefix: /a, headers: [{name: x-a, exact: "1"}]}, upstream: u}`,
			"spec 1 is shadowed by spec 0 (same host, prefix, no method list and predicates; give both a weight to split their requests)"},
		{`  - {name: a, match: {prefix: /a, weight: 0}, upstream: u}
  - {name: b, match: {prefix: /a, weight: 0}, upstream: u}`,
			"their weights add up to 0, so no route would serve these requests"},
	}
	for _, tt := range tests {
		err := checkConfig(t, baseYAML+head+tt.routes+"\n")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n error %v\n want %s", tt.routes, err, tt.want)
		}
	}
}

// checkConfig parses, validates and compiles a config file's text as
// `dubbogw validate` does.
func checkConfig(t *testing.T, yamlText string) error {
	t.Helper()
	cfg, err := config.Parse([]byte(yamlText), "test.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		return err
	}
	return Check(cfg)
}

// BenchmarkServeHTTPTrafficRules is BenchmarkServeHTTP (1,000 routes, the
// same request) where the request's slot also has a header-and-cookie
// canary route, a query route and a 90/10 split: what predicates and a
// split cost on top of plain routing, measured in the same run.
func BenchmarkServeHTTPTrafficRules(b *testing.B) {
	var routes strings.Builder
	for i := 0; i < 1000; i++ {
		if i == 500 {
			fmt.Fprintf(&routes, "  - {name: r%d-canary, match: {path: \"/svc%d/items/{id}\", methods: [GET], headers: [{name: X-Env, exact: canary}], cookies: [{name: beta, present: true}]}, upstream: b}\n", i, i)
			fmt.Fprintf(&routes, "  - {name: r%d-v2, match: {path: \"/svc%d/items/{id}\", methods: [GET], query: [{name: v, regex: \"2\\\\.[0-9]+\"}]}, upstream: b}\n", i, i)
			fmt.Fprintf(&routes, "  - {name: r%d-next, match: {path: \"/svc%d/items/{id}\", methods: [GET], weight: 10}, upstream: b}\n", i, i)
			fmt.Fprintf(&routes, "  - {name: r%d, match: {path: \"/svc%d/items/{id}\", methods: [GET], weight: 90}, upstream: b}\n", i, i)
			continue
		}
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
	for _, bc := range []struct{ name, url, env string }{
		{"split", "http://example.com/svc500/items/42", ""},        // both predicate routes tried, then the split
		{"canary", "http://example.com/svc500/items/42", "canary"}, // the first route's predicates hold
		{"plain", "http://example.com/svc499/items/42", ""},        // a slot without predicates
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", bc.url+"?v=1", nil)
			req.Header = http.Header{"Connection": {"keep-alive"}, "User-Agent": {"Mozilla/5.0"}, "Accept": {"application/json"},
				"Accept-Encoding": {"gzip, deflate, br"}, "Accept-Language": {"en-US,en;q=0.9"}, "Cookie": {"session=abc; beta=1"}}
			if bc.env != "" {
				req.Header.Set("X-Env", bc.env)
			}
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				delete(req.Header, "X-Request-Id")
				g.ServeHTTP(w, req)
			}
		})
	}
}
