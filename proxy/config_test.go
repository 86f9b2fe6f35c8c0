package proxy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/proxy"
)

// The upstreams: section and the upstream route kind, as a user writes
// them (every problem of the rules is in all/parse_test.go, with the
// other kinds registered; New's refusals in TestNewRejectsBadConfig).

const oneRoute = `routes:
  - name: users
    match: {prefix: /users}
    upstream: users
`

func TestUpstreamDefaultsAreAsDocumented(t *testing.T) {
	c := configtest.Parse(t, oneRoute+"upstreams:\n  users:\n    targets: [{url: \"http://127.0.0.1:9001\"}]\n")
	u, r := proxy.UpstreamsOf(c)["users"], c.Routes[0]
	rt, _ := proxy.RouteOf(r)
	checks := []struct {
		name      string
		got, want any
	}{
		{"upstream.policy", u.Policy, "round_robin"},
		{"upstream.timeout", u.Timeout.D(), 30 * time.Second},
		{"upstream.connect_timeout", u.ConnectTimeout.D(), 2 * time.Second},
		{"upstream.preserve_host", u.PreserveHost, false},
		{"upstream.transport", u.Transport, ""},
		{"upstream.protocol", u.Protocol, "http1"},
		{"target.weight", u.Targets[0].Weight, 100},
		{"pool.max_idle_per_target", u.Pool.MaxIdlePerTarget, 64},
		{"pool.max_per_target", u.Pool.MaxPerTarget, 0},
		{"pool.idle_timeout", u.Pool.IdleTimeout.D(), 90 * time.Second},
		{"retry.retries", *u.Retry.Retries, 1},
		{"retry.on", strings.Join(u.Retry.On, ","), "connect_failure,502,503,504"},
		{"retry.methods", strings.Join(u.Retry.Methods, ","), "GET,HEAD,OPTIONS,PUT,DELETE"},
		{"passive_health.max_failures", *u.PassiveHealth.MaxFailures, 5},
		{"passive_health.ejection", u.PassiveHealth.Ejection.D(), 10 * time.Second},
		{"passive_health.max_ejection", u.PassiveHealth.MaxEjection.D(), 2 * time.Minute},
		{"route.timeout (the upstream's)", r.Timeout.D(), 30 * time.Second},
		{"route.upgrades", strings.Join(rt.Upgrades, ","), "websocket"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestUpstreamDefaultsIndependent(t *testing.T) {
	c := configtest.Parse(t, oneRoute+`upstreams:
  users: {targets: [{url: "http://a:1"}]}
  orders: {targets: [{url: "http://b:1"}]}
`)
	us := proxy.UpstreamsOf(c)
	us["users"].Retry.Methods[0] = "PATCH"
	if us["orders"].Retry.Methods[0] != "GET" {
		t.Error("upstreams share their default retry methods slice")
	}
	if w := config.Warnings(c); len(w) != 1 || w[0].Path != "upstreams.orders" {
		t.Errorf("Warnings = %v, want orders not used", w)
	}
	// An explicit empty list stays empty.
	c = configtest.Parse(t, oneRoute+"upstreams:\n  users:\n    targets: [{url: \"http://a:1\"}]\n    retry: {on: []}\n")
	if on := proxy.UpstreamsOf(c)["users"].Retry.On; on == nil || len(on) != 0 {
		t.Errorf("retry.on = %#v, want an empty list", on)
	}
	// New applies the defaults to its own copy: the caller's stays as written.
	cfg := &proxy.Config{Targets: []proxy.Target{{URL: "http://a:1"}}}
	u, err := proxy.New("u", cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.Close()
	if cfg.Targets[0].Weight != 0 || cfg.Retry.Retries != nil {
		t.Errorf("New changed its configuration: %+v", cfg)
	}
}
