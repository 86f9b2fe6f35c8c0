package auth_test

import (
	"testing"
	"time"

	_ "github.com/dubbogw/dubbogw/all" // the dubbo route kind and static registry these cases write
	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/filter/auth"
)

const withRedis = "redis: {address: \"127.0.0.1:6379\"}\n"

func TestConfigProblems(t *testing.T) {
	const at = "routes[0].filters[0].auth"
	l := configtest.EntryLine
	configtest.Parse(t, configtest.WithFilter(`auth: {anonymous: [{path: "/public/*", methods: [GET]}]}`, withRedis))
	configtest.Parse(t, configtest.WithFilter(`auth: {store: memory, tokens: {t1: '{"userId":"u1"}'}}`, ""))
	configtest.Parse(t, configtest.WithFilter("auth: {}", ""),
		configtest.Want{Path: at + ".store", Reason: "the redis store needs the top-level redis: section", Line: l})
	configtest.Parse(t, configtest.WithFilter(`auth:
          store: etcd
          on_store_error: allow
          headers: {userId: "X User"}
          sliding: {threshold: 4h, window: 1h}
          anonymous: [{path: "/a*b", methods: [get]}]`, withRedis),
		configtest.Want{Path: at + ".anonymous[0].methods[0]", Reason: "write GET", Line: l + 5},
		configtest.Want{Path: at + ".anonymous[0].path", Reason: "exact path or a prefix", Line: l + 5},
		configtest.Want{Path: at + ".headers.userId", Reason: "HTTP header name", Line: l + 3},
		configtest.Want{Path: at + ".on_store_error", Reason: `unknown policy "allow"`, Line: l + 2},
		configtest.Want{Path: at + ".sliding.window", Reason: "at least the threshold", Line: l + 4},
		configtest.Want{Path: at + ".store", Reason: `unknown store "etcd"`, Line: l + 1},
	)
	configtest.Parse(t, configtest.WithFilter("auth: {store: memory}", ""),
		configtest.Want{Path: at + ".tokens", Reason: "needs tokens", Line: l})
}

func TestConfigDefaults(t *testing.T) {
	c := configtest.Parse(t, configtest.WithFilter("auth: {}", withRedis))
	a := c.Routes[0].Filters[0].Spec.(*auth.Config)
	if a.Store != "redis" || a.KeyPrefix != "token:" || a.Token.Header != "Authorization" || !*a.Token.Bearer ||
		a.Headers["userId"] != "X-User-Id" || a.Attachments["userId"] != "userId" || a.Sliding.Threshold.D() != 4*time.Hour ||
		!*a.Sliding.Enabled || a.Sliding.Window.D() != 4*time.Hour || a.Sliding.Interval.D() != time.Minute ||
		a.OnStoreError != "reject" || a.Timeout.D() != 50*time.Millisecond || a.StaleIfError.D() != 5*time.Minute || a.UnknownLookups != 256 {
		t.Errorf("auth defaults %+v", a)
	}
}

// TestConfigIdentityAttachments: what the filter sets and reads as
// identity no Dubbo route may list as a client's attachment.
func TestConfigIdentityAttachments(t *testing.T) {
	configtest.Parse(t, configtest.WithFilter("auth: {headers: {tenant: X-Tenant}}", `  - name: pass
    match: {path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: local, passthrough: {allow: [com.example.*], attachments: [trace, Tenant]}}
registries: {local: {type: static, providers: {com.example.A: ["127.0.0.1:20880"]}}}
`+withRedis),
		configtest.Want{Path: "routes[1].dubbo.passthrough.attachments[1]", Reason: `"Tenant" carries identity`})
}
