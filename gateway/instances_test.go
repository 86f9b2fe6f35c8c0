package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestTwoInstancesShareRedis runs two gateways on one Redis, as two
// instances behind a load balancer: a token revoked with DEL stops working
// on both within the invalidation delay (each caches it client-side), and
// a distributed rate limit holds across both within 10%.
func TestTwoInstancesShareRedis(t *testing.T) {
	redisAddr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("two:%d:", time.Now().UnixNano())
	seedTokens(t, redisAddr, prefix, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()
	route := fmt.Sprintf("two-%d", time.Now().UnixNano()) // distributed buckets are keyed by route name
	// A generous command timeout: this test is about sharing, not deadlines,
	// and it runs beside other packages' tests on two cores.
	yml := fmt.Sprintf(`
redis: {address: %q, timeout: 1s}
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - {name: auth, match: {prefix: /auth}, upstream: u, filters: [{auth: {key_prefix: %q, timeout: 1s}}]}
  - {name: %s, match: {prefix: /limited}, upstream: u, filters: [{rate_limit: {key: route, rate: 100, per: 1s, burst: 10, distributed: true}}]}
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

	// A shared limit: 100/s with a burst of 10, across both, for 2 s.
	const window = 2 * time.Second
	var allowed, limited atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(window)
	for w := range 8 {
		g := gws[w%2]
		wg.Go(func() {
			for time.Now().Before(stop) {
				switch do(t, "GET", g.base+"/limited", nil).status {
				case 200:
					allowed.Add(1)
				case 429:
					limited.Add(1)
				}
			}
		})
	}
	wg.Wait()
	want := 100*window.Seconds() + 10
	if got := float64(allowed.Load()); got < want*0.9 || got > want*1.1 {
		t.Errorf("two instances allowed %v requests in %v (%d limited); want %v ±10%%", got, window, limited.Load(), want)
	}
	if limited.Load() == 0 {
		t.Error("nothing was limited: the load did not exceed the rate")
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
