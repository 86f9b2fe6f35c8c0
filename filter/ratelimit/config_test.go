package ratelimit_test

import (
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/filter/ratelimit"
)

func TestConfigProblems(t *testing.T) {
	const at = "routes[0].filters[0].rate_limit"
	l := configtest.EntryLine
	configtest.Parse(t, configtest.WithFilter(`rate_limit: {rate: 100, key: "header:X-Api-Key", distributed: true}`, "redis: {address: \"127.0.0.1:6379\"}\n"))
	configtest.Parse(t, configtest.WithFilter("rate_limit: {rate: 5, distributed: true}", ""),
		configtest.Want{Path: at + ".distributed", Reason: "needs the top-level redis", Line: l})
	configtest.Parse(t, configtest.WithFilter("rate_limit: {rate: 1, timeout: -1s}", ""),
		configtest.Want{Path: at + ".timeout", Reason: `duration "-1s" is negative`, Line: l})
	configtest.Parse(t, configtest.WithFilter("rate_limit: {key: cookie, max_keys: -1}", ""),
		configtest.Want{Path: at + ".burst", Reason: "must be at least 1, got 0", Line: l},
		configtest.Want{Path: at + ".key", Reason: `unknown key "cookie"`, Line: l},
		configtest.Want{Path: at + ".max_keys", Reason: "must be at least 1, got -1", Line: l},
		configtest.Want{Path: at + ".rate", Reason: "required", Line: l},
	)
}

func TestConfigDefaults(t *testing.T) {
	c := configtest.Parse(t, configtest.WithFilter("rate_limit: {rate: 10}", ""))
	rl := c.Routes[0].Filters[0].Spec.(*ratelimit.Config)
	if rl.Key != "client_ip" || rl.Per.D() != time.Second || rl.Burst != 10 || rl.MaxKeys != 100000 || rl.Timeout.D() != 20*time.Millisecond {
		t.Errorf("rate limit defaults %+v", rl)
	}
}
