package gateway

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestTwoInstancesShareRedis runs two gateways on one Redis, as two
// instances behind a load balancer: a token revoked with DEL stops working
// on both within the invalidation delay (each caches it client-side), and
// a distributed rate limit holds across both: what Redis decides allows
// exactly the burst, whichever instance a request reaches.
func TestTwoInstancesShareRedis(t *testing.T) {
	redisAddr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("two:%d:", time.Now().UnixNano())
	seedTokens(t, redisAddr, prefix, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()
	route := fmt.Sprintf("two-%d", time.Now().UnixNano()) // distributed buckets are keyed by route name
	// Generous command and decision timeouts: this test is about sharing,
	// not deadlines, and it runs beside other packages' tests on two cores.
	yml := fmt.Sprintf(`
redis: {address: %q, timeout: 1s}
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - {name: auth, match: {prefix: /auth}, upstream: u, filters: [{auth: {key_prefix: %q, timeout: 1s}}]}
  - {name: %s, match: {prefix: /limited}, upstream: u, filters: [{rate_limit: {key: route, rate: 10, per: 1m, burst: 10, distributed: true, timeout: 1s}}]}
`, redisAddr, upstream.URL, prefix, route)
	gws := []*testGW{startGW(t, yml), startGW(t, yml)}

	// Revocation.
	for i, g := range gws {
		for range 3 { // the second and third come from the client cache
			if a := do(t, "GET", g.base+"/auth", nil, "Authorization", "Bearer t1"); a.status != 200 {
				t.Fatalf("instance %d before revocation: %d %s", i, a.status, a.body)
			}
		}
	}
	redisDo(t, redisAddr, "DEL", prefix+"t1")
	for i, g := range gws {
		deadline := time.Now().Add(time.Second)
		for do(t, "GET", g.base+"/auth", nil, "Authorization", "Bearer t1").status != 401 {
			if time.Now().After(deadline) {
				t.Fatalf("instance %d still accepts the token 1s after DEL", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// A shared limit: a burst of 10, then one more every 6 s. 30 requests
	// spread over both instances within a few seconds: two separate
	// limits would allow 20. A decision Redis could not make within its
	// deadline (a very slow scheduler) falls back to the instance's local
	// limit and is counted as such — its script may still have run in
	// Redis and taken a token nobody saw. So what Redis was seen to allow
	// is at most the burst (plus one per 6 s the test took), and at least
	// the burst less the fallbacks; every 200 is one of those or a
	// fallback.
	start := time.Now()
	ok := 0
	for i := range 30 {
		if do(t, "GET", gws[i%2].base+"/limited", nil).status == 200 {
			ok++
		}
	}
	took := time.Since(start)
	var byRedis, byFallback, decidedByRedis, fallbacks float64
	for _, g := range gws {
		for _, result := range []string{"allowed", "limited"} {
			n := testenv.MetricValue(t, g.registry, "dubbogw_ratelimit_decisions_total", map[string]string{"route": route, "result": result, "source": "redis"})
			f := testenv.MetricValue(t, g.registry, "dubbogw_ratelimit_decisions_total", map[string]string{"route": route, "result": result, "source": "fallback"})
			decidedByRedis += n
			fallbacks += f
			if result == "allowed" {
				byRedis += n
				byFallback += f
			}
		}
	}
	if most := 10 + math.Floor(took.Seconds()/6); byRedis < 10-fallbacks || byRedis > most {
		t.Errorf("Redis allowed %v of 30 requests over two instances in %s (%v fallbacks); want 10 (at least %v, at most %v)",
			byRedis, took, fallbacks, 10-fallbacks, most)
	}
	if float64(ok) != byRedis+byFallback {
		t.Errorf("%d requests allowed; Redis allowed %v and the fallback %v", ok, byRedis, byFallback)
	}
	if decidedByRedis < 20 {
		t.Errorf("only %v of 30 decisions made by Redis: the sharing was not tested", decidedByRedis)
	}
}

// redisDo runs one command on a raw RESP connection and checks it got an answer.
func redisDo(t *testing.T, addr string, args ...string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	cmd := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		cmd += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := c.Read(buf); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}
