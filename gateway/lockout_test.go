package gateway

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// The lockout tests are issue 13's first item, black-box: a gateway with
// the production defaults (50 ms Redis deadline, breaker 5 × / 500 ms,
// stale_if_error 5m) in front of a private Redis, a known user polling
// every 10 ms, and the machine or Redis in trouble. They measure time
// under load, so they skip themselves under the race detector and run in
// scripts/test.sh's serial pass.

// lockoutGW starts a gateway whose /private route needs a token from r.
func lockoutGW(t *testing.T, redisAddr, prefix string) *testGW {
	echo := echoUpstream(t, "echo")
	// Every client here is 127.0.0.1, the flood and the known user alike:
	// no per-client connection cap (the flood opens a connection per
	// request, and the cap would refuse the known user's too).
	return startGW(t, fmt.Sprintf(`
redis: {address: %q}
server: {max_connections_per_ip: 0}
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - {name: private, match: {prefix: /private}, upstream: u, filters: [{auth: {key_prefix: %q}}]}
`, redisAddr, echo.URL, prefix))
}

// poller sends a request with token every 10 ms until stopped, counting
// answers by status.
type poller struct {
	mu       sync.Mutex
	statuses map[int]int
	paused   atomic.Bool
	stop     chan struct{}
	done     sync.WaitGroup
}

func startPoller(t *testing.T, url, token string) *poller {
	p := &poller{statuses: map[int]int{}, stop: make(chan struct{})}
	p.done.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			if p.paused.Load() {
				continue
			}
			st := do(t, "GET", url, nil, "Authorization", "Bearer "+token).status
			p.mu.Lock()
			p.statuses[st]++
			p.mu.Unlock()
		}
	})
	return p
}

// end stops the poller and returns how many answers were 200, of all.
func (p *poller) end() (ok, all int, statuses map[int]int) {
	close(p.stop)
	p.done.Wait()
	for st, n := range p.statuses {
		all += n
		if st == 200 {
			ok += n
		}
	}
	return ok, all, p.statuses
}

// atLeast999 says whether ok of all is at least 99.9%.
func atLeast999(ok, all int) bool { return all > 0 && ok*1000 >= all*999 }

// busyLoops runs n shell busy loops (another CPU-heavy process on the
// machine) until the test ends.
func busyLoops(t *testing.T, n int) {
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a busy loop: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// TestNoLockoutUnderRandomTokenFlood: a flood of random tokens at the
// highest rate the machine gives, with two busy loops on the CPU, while a
// known user polls every 10 ms: at least 99.9% of the known user's
// requests are 200 (on main before this, deadline misses of the late
// goroutines opened the breaker and locked out cached users too).
func TestNoLockoutUnderRandomTokenFlood(t *testing.T) {
	if raceEnabled {
		t.Skip("measures a flood under CPU load; runs in the serial pass without -race")
	}
	redis := testenv.StartRedis(t, "")
	prefix := fmt.Sprintf("flood:%d:", time.Now().UnixNano())
	redisDo(t, redis.Addr(), "SET", prefix+"known", `{"userId":"u1"}`, "EX", "86400")
	g := lockoutGW(t, redis.Addr(), prefix)
	testenv.WaitFor(t, 10*time.Second, "the known token answered", func() bool {
		return do(t, "GET", g.base+"/private", nil, "Authorization", "Bearer known").status == 200
	})
	busyLoops(t, 2)

	known := startPoller(t, g.base+"/private", "known")
	var flooded atomic.Int64
	stop := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				do(t, "GET", g.base+"/private", nil, "Authorization", fmt.Sprintf("Bearer random-%d-%d", w, i))
				flooded.Add(1)
			}
		})
	}
	wg.Wait()
	ok, all, statuses := known.end()
	t.Logf("%d random-token requests; the known user: %d of %d ok %v; breaker timeouts %v, late callers %v", flooded.Load(), ok, all, statuses,
		testenv.MetricValue(t, g.registry, "dubbogw_redis_errors_total", map[string]string{"kind": "timeout"}),
		testenv.MetricValue(t, g.registry, "dubbogw_redis_errors_total", map[string]string{"kind": "late"}))
	if !atLeast999(ok, all) {
		t.Errorf("the known user got %d of %d requests through (%v), want at least 99.9%%", ok, all, statuses)
	}
}

// TestNoLockoutWhenRedisStallsOrDies: Redis frozen (SIGSTOP) for 5 s, then
// killed for 10 s: known users keep getting 200 (at least 99.9%), unknown
// tokens get 503 with Retry-After, and a new token works within 1 s of
// Redis answering again.
func TestNoLockoutWhenRedisStallsOrDies(t *testing.T) {
	if raceEnabled {
		t.Skip("measures recovery time; runs in the serial pass without -race")
	}
	redis := testenv.StartRedis(t, "")
	prefix := fmt.Sprintf("outage:%d:", time.Now().UnixNano())
	users := []string{"alice", "bob", "carol"}
	setUsers := func() {
		for _, u := range users {
			redisDo(t, redis.Addr(), "SET", prefix+u, fmt.Sprintf(`{"userId":%q}`, u), "EX", "86400")
		}
	}
	setUsers()
	g := lockoutGW(t, redis.Addr(), prefix)
	var pollers []*poller
	for _, u := range users {
		testenv.WaitFor(t, 10*time.Second, u+" answered", func() bool {
			return do(t, "GET", g.base+"/private", nil, "Authorization", "Bearer "+u).status == 200
		})
		pollers = append(pollers, startPoller(t, g.base+"/private", u))
	}
	unknown := func(phase string) {
		t.Helper()
		a := do(t, "GET", g.base+"/private", nil, "Authorization", "Bearer stranger-"+phase)
		if code, _, _, _ := errorBody(t, a); a.status != 503 || code != exchange.CodeAuthUnavailable || a.header.Get("Retry-After") == "" {
			t.Errorf("%s: an unknown token got %d %s (Retry-After %q), want 503 AUTH_UNAVAILABLE with Retry-After", phase, a.status, code, a.header.Get("Retry-After"))
		}
	}

	redis.Freeze()
	time.Sleep(2500 * time.Millisecond)
	unknown("frozen")
	time.Sleep(2500 * time.Millisecond)
	redis.Thaw()
	time.Sleep(500 * time.Millisecond)

	redis.Stop()
	// Still ready (an outage of Redis must not take the instance out of
	// its load balancer), and /readyz says what is degraded.
	testenv.WaitFor(t, 5*time.Second, "/readyz naming Redis as degraded", func() bool {
		r := do(t, "GET", g.admin+"/readyz", nil)
		return r.status == 200 && strings.Contains(r.body, `"redis: disconnected; routes that need it follow their on_store_error policy"`)
	})
	time.Sleep(5 * time.Second)
	unknown("killed")
	time.Sleep(5 * time.Second)

	// Redis comes back empty (no persistence here): the users' tokens are
	// written again before anyone asks, as a real store would have them.
	for _, p := range pollers {
		p.paused.Store(true)
	}
	testenv.StartRedis(t, redis.Addr())
	back := time.Now()
	setUsers()
	redisDo(t, redis.Addr(), "SET", prefix+"newcomer", `{"userId":"newcomer"}`, "EX", "86400")
	for _, p := range pollers {
		p.paused.Store(false)
	}
	testenv.WaitFor(t, 10*time.Second, "a new token served after Redis came back", func() bool {
		return do(t, "GET", g.base+"/private", nil, "Authorization", "Bearer newcomer").status == 200
	})
	if took := time.Since(back); took > time.Second {
		t.Errorf("a new token worked %s after Redis answered again, want within 1s", took)
	}
	testenv.WaitFor(t, 5*time.Second, "/readyz no longer naming Redis", func() bool {
		r := do(t, "GET", g.admin+"/readyz", nil)
		return r.status == 200 && !strings.Contains(r.body, "redis")
	})
	time.Sleep(500 * time.Millisecond)
	for i, p := range pollers {
		ok, all, statuses := p.end()
		t.Logf("%s: %d of %d ok %v", users[i], ok, all, statuses)
		if !atLeast999(ok, all) {
			t.Errorf("%s got %d of %d requests through a Redis outage (%v), want at least 99.9%%", users[i], ok, all, statuses)
		}
	}
	if got := testenv.MetricValue(t, g.registry, "dubbogw_auth_requests_total", map[string]string{"route": "private", "result": "stale"}); got == 0 {
		t.Error("no request was served stale: the outage was not tested")
	}
}
