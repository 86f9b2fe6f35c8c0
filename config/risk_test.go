package config

import (
	"strings"
	"testing"
	"time"
)

func TestRiskConfigProblems(t *testing.T) {
	route := func(filter string) string {
		return "routes:\n  - {name: r, match: {path: /a}, upstream: u, filters: [" + filter + "]}\nupstreams: {u: {targets: [{url: \"http://127.0.0.1:1\"}]}}\n"
	}
	withRedis := "redis: {address: 127.0.0.1:6379}\n"
	cases := []struct{ name, yaml, path, reason string }{
		{"valid auth", withRedis + route(`{auth: {anonymous: [{path: "/public/*", methods: [GET]}]}}`), "", ""},
		{"valid memory auth", route(`{auth: {store: memory, tokens: {t1: '{"userId":"u1"}'}}}`), "", ""},
		{"valid rate limit", withRedis + route(`{rate_limit: {rate: 100, key: "header:X-Api-Key", distributed: true}}`), "", ""},
		{"redis store without redis", route(`{auth: {}}`), "routes[0].filters[0].auth.store", "needs the top-level redis"},
		{"distributed without redis", route(`{rate_limit: {rate: 5, distributed: true}}`), "routes[0].filters[0].rate_limit.distributed", "needs the top-level redis"},
		{"unknown store", withRedis + route(`{auth: {store: etcd}}`), "routes[0].filters[0].auth.store", `unknown store "etcd"`},
		{"memory without tokens", route(`{auth: {store: memory}}`), "routes[0].filters[0].auth.tokens", "needs tokens"},
		{"bad policy", withRedis + route(`{auth: {on_store_error: allow}}`), "routes[0].filters[0].auth.on_store_error", `unknown policy "allow"`},
		{"bad anonymous", withRedis + route(`{auth: {anonymous: [{path: "/a*b"}]}}`), "routes[0].filters[0].auth.anonymous[0].path", "exact path or a prefix"},
		{"window below threshold", withRedis + route(`{auth: {sliding: {threshold: 4h, window: 1h}}}`), "routes[0].filters[0].auth.sliding.window", "at least the threshold"},
		{"bad header", withRedis + route(`{auth: {headers: {userId: "X User"}}}`), "routes[0].filters[0].auth.headers.userId", "HTTP header name"},
		{"no rate", route(`{rate_limit: {}}`), "routes[0].filters[0].rate_limit.rate", "required"},
		{"bad key", route(`{rate_limit: {rate: 1, key: cookie}}`), "routes[0].filters[0].rate_limit.key", `unknown key "cookie"`},
		{"bad redis address", "redis: {address: nohost}\n", "redis.address", `"nohost" is not host:port`},
		{"pipelines not a power of two", "redis: {address: \"127.0.0.1:6379\", pipelines: 3}\n", "redis.pipelines", "must be a power of two"},
		{"negative route limit", "routes:\n  - {name: r, match: {path: /a}, upstream: u, max_in_flight: -1}\nupstreams: {u: {targets: [{url: \"http://127.0.0.1:1\"}]}}\n",
			"routes[0].max_in_flight", "must not be negative"},
		{"bad algorithm", "server: {adaptive_concurrency: {algorithm: vegas}}\n", "server.adaptive_concurrency.algorithm", `unknown algorithm "vegas"`},
		{"min above max", "server: {adaptive_concurrency: {min_limit: 50, max_limit: 10}}\n", "server.adaptive_concurrency", "min_limit (50) <= max_limit (10)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "t.yaml", nil)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("unexpected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %s: %s", tc.path, tc.reason)
			}
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Contains(line, " "+tc.path+": ") && strings.Contains(line, tc.reason) {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s: %s\ngot:\n%v", tc.path, tc.reason, err)
			}
		})
	}
}

func TestRiskDefaults(t *testing.T) {
	c, err := Parse([]byte(`
redis: {address: "127.0.0.1:6379"}
server: {max_in_flight: 400, adaptive_concurrency: {}}
upstreams: {u: {targets: [{url: "http://127.0.0.1:1"}]}}
routes:
  - name: r
    match: {path: /a}
    upstream: u
    filters: [{auth: {}}, {rate_limit: {rate: 10}}]
`), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Redis
	if r.Timeout.D() != 50*time.Millisecond || r.Pipelines != 2 || !*r.ClientCache.Enabled || r.Breaker.MaxFailures != 5 {
		t.Errorf("redis defaults %+v", r)
	}
	a := c.Routes[0].Filters[0].Auth
	if a.Store != "redis" || a.KeyPrefix != "token:" || a.Token.Header != "Authorization" || !*a.Token.Bearer ||
		a.Headers["userId"] != "X-User-Id" || a.Attachments["userId"] != "userId" || a.Sliding.Threshold.D() != 4*time.Hour ||
		a.OnStoreError != "reject" || a.Timeout.D() != 50*time.Millisecond {
		t.Errorf("auth defaults %+v", a)
	}
	rl := c.Routes[0].Filters[1].RateLimit
	if rl.Key != "client_ip" || rl.Per.D() != time.Second || rl.Burst != 10 || rl.MaxKeys != 100000 {
		t.Errorf("rate limit defaults %+v", rl)
	}
	ad := c.Server.AdaptiveConcurrency
	if ad.Algorithm != "gradient" || ad.MinLimit != 16 || ad.MaxLimit != 400 || ad.InitialLimit != 100 || ad.Tolerance != 2 {
		t.Errorf("adaptive defaults %+v", ad)
	}
}
