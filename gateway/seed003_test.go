package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/bench/loadgen"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestSeedIncident003 reproduces seed incident 003: a token-auth filter
// calling a Redis that has become slow. The same bounded load (1,000
// requests/s on an auth route, each with a token not seen before so every
// lookup goes to Redis, plus 1,000/s on a route without auth, plus /livez
// polled every 5 ms) runs for 20 s against a healthy Redis and for 20 s
// against a Redis answering 200 ms late (a delaying proxy), in four rounds
// of 5 s each way, so that drift over the run (heap, caches) weighs on both
// sides alike. While Redis is slow: /livez and the route without auth
// keep their p99 under 10 ms, within 1.5× + 5 ms of the healthy runs, or
// (another process loading the machine) of each other at the same
// moments, and their medians within 1.5× + 5 ms of the healthy ones; the
// auth route answers within its 50 ms deadline (503 AUTH_UNAVAILABLE, the
// configured policy), goroutines and heap stay bounded; each time Redis is
// healthy again, valid tokens pass within 5 s. While Redis is healthy, at
// most 0.2% of valid tokens beyond the late callers get 503, in every
// round where the machine let the gateway answer requests without Redis
// within the 50 ms lookup deadline (at least one such round).
//
// It measures time, so it runs without the race detector (scripts/test.sh
// runs it in its own pass); with -race it is skipped.
func TestSeedIncident003(t *testing.T) {
	if raceEnabled {
		t.Skip("a timed load test: scripts/test.sh runs it without -race")
	}
	if testing.Short() {
		t.Skip("40 s of load")
	}
	redisAddr := testenv.RedisAddr(t)
	proxy := testenv.StartProxy(t, redisAddr)
	prefix := fmt.Sprintf("seed003:%d:", time.Now().UnixNano())
	const rate, phase, rounds, extraRounds = 1000, 5 * time.Second, 4, 4
	tokens := rate * int(phase/time.Second) * 11 / 10 // per phase, with margin
	// Every phase takes fresh tokens: a healthy and a slow one per round,
	// the extra healthy rounds run when none could be judged, and the
	// warm-up and recovery checks (1,000).
	seedTokens(t, redisAddr, prefix, (2*rounds+extraRounds)*tokens+1000)

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-User", r.Header.Get("X-User-Id"))
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(upstream.Close)
	tg := startGW(t, fmt.Sprintf(`
redis: {address: %q, timeout: 50ms, breaker: {max_failures: 5, open_for: 1s}}
server: {max_connections_per_ip: 0}   # the load generator is one client with up to 256 connections
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - name: auth
    match: {prefix: /auth}
    upstream: u
    filters: [{auth: {key_prefix: %q, timeout: 50ms, on_store_error: reject}}]
  - name: open
    match: {prefix: /open}
    upstream: u
`, proxy.Addr(), upstream.URL, prefix))

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	var nextToken, healthyUnavailable atomic.Int64
	// authCall returns a load target using a fresh valid token per call.
	// unavailable says what a 503 AUTH_UNAVAILABLE (the configured policy
	// when a lookup misses its 50 ms deadline) counts as: expected (Redis
	// slow), counted in healthyUnavailable (Redis healthy: the test allows
	// at most 0.2% of them, a loaded CI machine can stall a process 50 ms),
	// or an error (checking recovery).
	const (
		unavailableExpected = iota
		unavailableCounted
		unavailableError
	)
	authCall := func(unavailable int) loadgen.Target {
		return func(ctx context.Context) error {
			tok := fmt.Sprintf("t%d", nextToken.Add(1))
			req, _ := http.NewRequestWithContext(ctx, "GET", tg.base+"/auth/x", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			switch {
			case resp.StatusCode == 200 && resp.Header.Get("X-Seen-User") == "u"+tok[1:]:
				return nil
			case resp.StatusCode == 503 && unavailable == unavailableExpected:
				return nil
			case resp.StatusCode == 503 && unavailable == unavailableCounted && strings.Contains(string(body), "AUTH_UNAVAILABLE"):
				healthyUnavailable.Add(1)
				return nil
			}
			return fmt.Errorf("token %s: %d (user %q)", tok, resp.StatusCode, resp.Header.Get("X-Seen-User"))
		}
	}
	openCall, err := loadgen.HTTPGet(client, tg.base+"/open/x", 200)
	if err != nil {
		t.Fatal(err)
	}
	livezCall, err := loadgen.HTTPGet(client, tg.admin+"/livez", 200)
	if err != nil {
		t.Fatal(err)
	}

	type measured struct {
		auth, open, livez   *loadgen.Result
		goroutines, heapMiB int
	}
	run := func(name string, unavailable int) measured {
		t.Helper()
		var m measured
		var wg sync.WaitGroup
		load := func(dst **loadgen.Result, o loadgen.OpenLoop, target loadgen.Target) {
			wg.Go(func() {
				res, err := o.Run(context.Background(), target)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				*dst = res
			})
		}
		load(&m.auth, loadgen.OpenLoop{Rate: rate, Duration: phase, Workers: 128, MaxInFlight: 1024}, authCall(unavailable))
		load(&m.open, loadgen.OpenLoop{Rate: rate, Duration: phase, Workers: 64, MaxInFlight: 1024}, openCall)
		load(&m.livez, loadgen.OpenLoop{Rate: 200, Duration: phase, Workers: 4, MaxInFlight: 64}, livezCall)
		done := make(chan struct{})
		wg.Go(func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				m.goroutines = max(m.goroutines, runtime.NumGoroutine())
				m.heapMiB = max(m.heapMiB, int(ms.HeapInuse>>20))
			}
		})
		time.Sleep(phase) // the loads run for phase; this only ends the sampler with them
		close(done)
		wg.Wait()
		for what, r := range map[string]*loadgen.Result{"auth": m.auth, "open": m.open, "livez": m.livez} {
			if r == nil {
				t.Fatalf("%s: no %s result", name, what)
			}
			t.Logf("%s %s: %v", name, what, r)
			if r.Errors > 0 || r.Dropped > 0 {
				t.Errorf("%s %s: %d errors (first: %v), %d dropped", name, what, r.Errors, r.FirstError, r.Dropped)
			}
		}
		t.Logf("%s: at most %d goroutines, %d MiB heap in use", name, m.goroutines, m.heapMiB)
		return m
	}

	merge := func(into *measured, m measured) {
		if into.auth == nil {
			*into = m
			return
		}
		for _, p := range [][2]*loadgen.Result{{into.auth, m.auth}, {into.open, m.open}, {into.livez, m.livez}} {
			p[0].Latency.Merge(p[1].Latency)
			p[0].OK += p[1].OK
		}
		into.goroutines = max(into.goroutines, m.goroutines)
		into.heapMiB = max(into.heapMiB, m.heapMiB)
	}
	// Warm up (connections to Redis and the upstream, goroutine stacks,
	// caches) for one second, not measured: the rounds compare a healthy
	// and a slow Redis, not a cold and a warm gateway.
	warm := func(target loadgen.Target) {
		if _, err := (loadgen.OpenLoop{Rate: rate, Duration: time.Second, Workers: 64, MaxInFlight: 1024}).Run(context.Background(), target); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	var wwg sync.WaitGroup
	wwg.Go(func() { warm(authCall(unavailableExpected)) })
	wwg.Go(func() { warm(openCall) })
	wwg.Wait()

	var healthy, slow measured
	// Lookups past their deadline while Redis kept answering: the
	// gateway's goroutines were late (another process on the CPU), not
	// Redis. Each is a 503 here (every call is a fresh token: nothing to
	// serve stale), which says nothing about Redis.
	late := func() uint64 {
		return uint64(testenv.MetricValue(t, tg.registry, "dubbogw_redis_errors_total", map[string]string{"kind": "late"}))
	}
	// A healthy round is judged only when the machine let the gateway
	// answer every request that needs no Redis within the lookup deadline
	// (the open route's slowest at most 50 ms: a p99 gate let a round with
	// a 50 ms stall through, and the lookups under way during the stall
	// missed their deadline by the machine's doing). Beyond, another process holds
	// the CPU: Redis and the proxy in front of it are starved as much as
	// the gateway, lookups of fresh tokens miss 50 ms whoever is at fault,
	// and their 503 (the configured policy) says nothing about a lockout.
	// A lockout (the breaker opening on a healthy Redis, say) refuses
	// valid tokens however fast the open route is. At least one round must
	// be judged: up to four more healthy rounds are run to find one.
	judged := 0
	healthyRound := func(name string) measured {
		healthyUnavailable.Store(0)
		lateBefore := late()
		h := run(name, unavailableCounted)
		lateCallers := late() - lateBefore
		n, total := uint64(healthyUnavailable.Load()), h.auth.OK
		switch open := h.open.Latency.Max(); {
		case open > 50*time.Millisecond:
			t.Logf("%s: not judged: the open route took up to %v, over the 50ms lookup deadline: the machine stalled (%d of %d tokens got 503, %d late callers)",
				name, open, n, total, lateCallers)
		case n > total/500+lateCallers:
			judged++
			t.Errorf("%s: %d of %d valid tokens got 503 with Redis healthy (%d of them late callers); want at most 0.2%% more",
				name, n, total, lateCallers)
		default:
			judged++
			if n > 0 {
				t.Logf("%s: %d of %d lookups missed the 50ms deadline (%d late callers)", name, n, total, lateCallers)
			}
		}
		return h
	}
	for round := range rounds {
		h := healthyRound(fmt.Sprintf("round %d healthy", round))
		merge(&healthy, h)
		proxy.SetDelay(200 * time.Millisecond)
		merge(&slow, run(fmt.Sprintf("round %d slow redis", round), unavailableExpected))
		proxy.SetDelay(0)
		// Recovery: valid tokens pass again within 5 s.
		deadline := time.Now().Add(5 * time.Second)
		for authCall(unavailableError)(context.Background()) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: valid tokens still refused 5s after Redis recovered", round)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	for extra := 0; judged == 0 && extra < extraRounds; extra++ {
		healthyRound(fmt.Sprintf("extra healthy round %d", extra))
	}
	if judged == 0 {
		t.Errorf("no healthy round could be judged: in each, a request without Redis took over 50 ms (the machine is loaded beyond what this test measures)")
	}

	p99 := func(r *loadgen.Result) time.Duration { return r.Latency.Quantile(0.99) }
	t.Logf("p99 over %d rounds: open %v healthy, %v slow; auth %v healthy, %v slow; livez %v healthy, %v slow",
		rounds, p99(healthy.open), p99(slow.open), p99(healthy.auth), p99(slow.auth), p99(healthy.livez), p99(slow.livez))
	p50 := func(r *loadgen.Result) time.Duration { return r.Latency.Quantile(0.5) }
	t.Logf("p50 over %d rounds: open %v healthy, %v slow; livez %v healthy, %v slow",
		rounds, p50(healthy.open), p50(slow.open), p50(healthy.livez), p50(slow.livez))
	// Another process on the machine moves a p99 of a few milliseconds by
	// tens of them, in bursts no interleaving of rounds evens out. So each
	// route that never calls Redis is held against its own healthy p99 and
	// against the other one, measured at the same moments with Redis slow:
	// /livez queued behind Redis (the seed's failure) would be slower than
	// the open route, which is not; both queued behind it (the whole
	// gateway blocked) would move their medians by Redis's 200 ms, which
	// bursts of noise do not.
	within := func(what string, slowP99, healthyP99, otherSlowP99 time.Duration) {
		switch {
		case slowP99 < 10*time.Millisecond, slowP99 <= healthyP99*3/2+5*time.Millisecond:
		case slowP99 <= otherSlowP99*3/2+5*time.Millisecond:
			t.Logf("%s: p99 %v with Redis slow, %v healthy: no slower than the other Redis-free route at the same time (%v): the machine, not Redis",
				what, slowP99, healthyP99, otherSlowP99)
		default:
			t.Errorf("%s: p99 %v with Redis slow, %v healthy, the other Redis-free route %v at the same time; want < 10ms, within 1.5× + 5ms of healthy, or of the other route",
				what, slowP99, healthyP99, otherSlowP99)
		}
	}
	within("/livez", p99(slow.livez), p99(healthy.livez), p99(slow.open))
	within("the route without auth", p99(slow.open), p99(healthy.open), p99(slow.livez))
	for _, r := range []struct {
		what          string
		healthy, slow *loadgen.Result
	}{{"/livez", healthy.livez, slow.livez}, {"the route without auth", healthy.open, slow.open}} {
		if h, s := p50(r.healthy), p50(r.slow); s > h*3/2+5*time.Millisecond {
			t.Errorf("%s: median %v with Redis slow, %v healthy; want within 1.5× + 5ms", r.what, s, h)
		}
	}
	// Within its 50 ms deadline, plus 25 ms or (a loaded machine) what the
	// healthy p99 of the same run says scheduling costs.
	if h, s := p99(healthy.auth), p99(slow.auth); s > 50*time.Millisecond+max(25*time.Millisecond, h*3/2) {
		t.Errorf("the auth route: p99 %v with Redis slow, %v healthy; want within its 50ms deadline (+25ms or 1.5× healthy)", s, h)
	}
	// Each request in flight is a goroutine: a stall of the machine for
	// 100 ms at the offered 2,200 requests/s adds about 220, whatever
	// Redis does. Lookups waiting on Redis past their 50 ms deadline (the
	// seed's failure) would hold 1,000/s × the 5 s phase: thousands.
	if slow.goroutines > healthy.goroutines+1000 {
		t.Errorf("goroutines: %d healthy, %d with Redis slow", healthy.goroutines, slow.goroutines)
	}
	if slow.heapMiB > healthy.heapMiB*3/2+16 {
		t.Errorf("heap in use: %d MiB healthy, %d MiB with Redis slow", healthy.heapMiB, slow.heapMiB)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_auth_`, `dubbogw_redis_`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// seedTokens stores tokens t1..tn with values {"userId":"u<i>"} under
// prefix, pipelined over one raw RESP connection.
func seedTokens(t *testing.T, addr, prefix string, n int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	w := bufio.NewWriterSize(c, 64<<10)
	r := bufio.NewReader(c)
	writeCmd := func(args ...string) {
		fmt.Fprintf(w, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	const batch = 1000
	for start := 1; start <= n; start += batch {
		end := min(start+batch-1, n)
		for i := start; i <= end; i++ {
			writeCmd("SET", prefix+"t"+strconv.Itoa(i), `{"userId":"u`+strconv.Itoa(i)+`"}`, "EX", "3600")
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := start; i <= end; i++ {
			line, err := r.ReadString('\n')
			if err != nil || line != "+OK\r\n" {
				t.Fatalf("SET: %q, %v", line, err)
			}
		}
	}
}
