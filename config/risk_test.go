package config

import (
	"strings"
	"testing"
	"time"
)

func TestRiskConfigProblems(t *testing.T) {
	cases := []struct{ name, yaml, path, reason string }{
		{"bad redis address", "redis: {address: nohost}\n", "redis.address", `"nohost" is not host:port`},
		{"password and password_file", "redis: {address: \"127.0.0.1:6379\", password: x, password_file: /etc/p}\n", "redis.password_file", "not both"},
		{"missing password_file", "redis: {address: \"127.0.0.1:6379\", password_file: /nonexistent/p}\n", "redis.password_file", "reading the secret file"},
		{"tls settings without enabled", "redis: {address: \"127.0.0.1:6379\", tls: {ca_file: /etc/ca.pem}}\n", "redis.tls.enabled", "set enabled: true"},
		{"tls with a missing CA", "redis: {address: \"127.0.0.1:6379\", tls: {enabled: true, ca_file: /nonexistent/ca.pem}}\n", "redis.tls", "reading ca_file"},
		{"tls cert without key", "redis: {address: \"127.0.0.1:6379\", tls: {enabled: true, cert_file: /etc/c.pem}}\n", "redis.tls", "cert_file and key_file go together"},
		{"tls min version", "redis: {address: \"127.0.0.1:6379\", tls: {enabled: true, min_version: '1.0'}}\n", "redis.tls", `min_version "1.0"`},
		{"tls on the system roots", "redis: {address: \"127.0.0.1:6379\", tls: {enabled: true}}\n", "", ""},
		{"pipelines not a power of two", "redis: {address: \"127.0.0.1:6379\", pipelines: 3}\n", "redis.pipelines", "must be a power of two"},
		{"negative route limit", "routes:\n  - {name: r, match: {path: /a}, backend: u, max_in_flight: -1}\nbackends: {u: {targets: [{url: \"http://127.0.0.1:1\"}]}}\n",
			"routes[0].max_in_flight", "must not be negative"},
		{"bad algorithm", "server: {adaptive_concurrency: {algorithm: vegas}}\n", "server.adaptive_concurrency.algorithm", `unknown algorithm "vegas"`},
		{"min above max", "server: {adaptive_concurrency: {min_limit: 50, max_limit: 10}}\n", "server.adaptive_concurrency", "min_limit (50) <= max_limit (10)"},
		// min_limit's default (16) follows a lower max_limit, as the limiter always did.
		{"max below the default min", "server: {adaptive_concurrency: {max_limit: 8}}\n", "", ""},
		{"static limit below the default min", "server: {max_in_flight: 10, adaptive_concurrency: {}}\n", "", ""},
		{"infinite tolerance", "server: {adaptive_concurrency: {tolerance: .inf}}\n", "server.adaptive_concurrency.tolerance", "finite"},
		{"negative latency target", "server: {adaptive_concurrency: {algorithm: aimd, latency_target: -1s}}\n", "server.adaptive_concurrency.latency_target", "negative"},
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
backends: {u: {targets: [{url: "http://127.0.0.1:1"}]}}
routes:
  - name: r
    match: {path: /a}
    backend: u
`), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Redis
	if r.Timeout.D() != 50*time.Millisecond || r.Pipelines != 2 || !*r.ClientCache.Enabled || r.Breaker.MaxFailures != 5 {
		t.Errorf("redis defaults %+v", r)
	}
	ad := c.Server.AdaptiveConcurrency
	if ad.Algorithm != "gradient" || ad.MinLimit != 16 || ad.MaxLimit != 400 || ad.InitialLimit != 100 || ad.Tolerance != 2 {
		t.Errorf("adaptive defaults %+v", ad)
	}
}
