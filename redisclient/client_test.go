package redisclient_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/redisclient"
)

// newClient returns a client on cfg registered in a fresh registry,
// connected unless Redis is unreachable; it is closed when the test ends.
// Without a Timeout in cfg, commands get functionalTimeout: a test about
// what Redis answers must not race a 50 ms deadline on a loaded machine.
func newClient(t testing.TB, cfg config.Redis, wait bool) (*redisclient.Client, *prometheus.Registry) {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = functionalTimeout
	}
	reg := prometheus.NewRegistry()
	c, err := redisclient.New(cfg, reg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	if wait {
		if err := c.WaitConnected(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return c, reg
}

// functionalTimeout is the command deadline of tests that are not about
// deadlines: far beyond any scheduling delay under -race on 2 busy cores.
const functionalTimeout = config.Duration(5 * time.Second)

func TestGetValueAndTTL(t *testing.T) {
	addr := testenv.RedisAddr(t)
	c, reg := newClient(t, config.Redis{Address: addr}, true)
	raw := rawClient(t, addr)
	ctx := ctxTimeout(t, 10*time.Second)
	p := keyPrefix(t)
	must(t, raw.Do(ctx, raw.B().Set().Key(p+"ttl").Value(`{"userId":"u1"}`).Px(time.Hour).Build()))
	must(t, raw.Do(ctx, raw.B().Set().Key(p+"forever").Value("v2").Build()))
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(p+"ttl", p+"forever").Build()) })
	hits := func() float64 { return testenv.MetricValue(t, reg, "dubbogw_redis_client_cache_hits_total", nil) }

	for i := range 2 { // a miss filling the cache, then a hit from it
		v, pttl, found, err := c.Get(ctx, p+"ttl")
		if err != nil || !found || v != `{"userId":"u1"}` {
			t.Fatalf("Get #%d = %q, %v, %v", i, v, found, err)
		}
		// The key's TTL, not the client-side cache's (30s).
		if pttl <= time.Hour-time.Minute || pttl > time.Hour {
			t.Errorf("Get #%d: pttl %s, want just under 1h", i, pttl)
		}
		if got := hits(); got != float64(i) {
			t.Errorf("after Get #%d: %v cache hits, want %d", i, got, i)
		}
	}
	for i := range 2 {
		v, pttl, found, err := c.Get(ctx, p+"forever")
		if err != nil || !found || v != "v2" || pttl != -1 {
			t.Errorf("Get forever #%d = %q, %s, %v, %v; want v2, -1, true", i, v, pttl, found, err)
		}
	}
	for i := range 2 {
		v, pttl, found, err := c.Get(ctx, p+"missing")
		if err != nil || found || v != "" || pttl != 0 {
			t.Errorf("Get missing #%d = %q, %s, %v, %v; want not found, no error", i, v, pttl, found, err)
		}
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_command_duration_seconds", map[string]string{"command": "get", "result": "nil"}); got != 2 {
		t.Errorf("get results nil = %v, want 2", got)
	}

	// Changing the TTL invalidates the cached PTTL.
	must(t, raw.Do(ctx, raw.B().Pexpire().Key(p+"ttl").Milliseconds(10_000).Build()))
	testenv.WaitFor(t, time.Second, "the new TTL seen through the cache", func() bool {
		_, pttl, found, err := c.Get(ctx, p+"ttl")
		return err == nil && found && pttl <= 10*time.Second && pttl > 9*time.Second
	})
}

func TestGetWithoutClientCache(t *testing.T) {
	addr := testenv.RedisAddr(t)
	off := false
	c, reg := newClient(t, config.Redis{Address: addr, ClientCache: config.ClientCache{Enabled: &off}}, true)
	raw := rawClient(t, addr)
	ctx := ctxTimeout(t, 10*time.Second)
	p := keyPrefix(t)
	must(t, raw.Do(ctx, raw.B().Set().Key(p+"k").Value("v").Px(time.Minute).Build()))
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(p+"k").Build()) })
	for range 2 {
		v, pttl, found, err := c.Get(ctx, p+"k")
		if err != nil || !found || v != "v" || pttl <= 50*time.Second || pttl > time.Minute {
			t.Fatalf("Get = %q, %s, %v, %v", v, pttl, found, err)
		}
	}
	if _, _, found, err := c.Get(ctx, p+"missing"); found || err != nil {
		t.Errorf("missing key: found %v, err %v", found, err)
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_client_cache_misses_total", nil); got != 0 {
		t.Errorf("cache misses %v without a cache", got)
	}
}

// A key deleted or changed elsewhere (another gateway, an admin) is seen
// by the next Get within the invalidation delay, not after the cache TTL.
func TestInvalidation(t *testing.T) {
	addr := testenv.RedisAddr(t)
	c, reg := newClient(t, config.Redis{Address: addr}, true)
	raw := rawClient(t, addr)
	ctx := ctxTimeout(t, 10*time.Second)
	key := keyPrefix(t) + "token"
	must(t, raw.Do(ctx, raw.B().Set().Key(key).Value("v1").Px(time.Hour).Build()))
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(key).Build()) })
	for range 2 {
		if v, _, _, err := c.Get(ctx, key); v != "v1" || err != nil {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	if testenv.MetricValue(t, reg, "dubbogw_redis_client_cache_hits_total", nil) != 1 {
		t.Fatal("the second Get was not a cache hit")
	}

	must(t, raw.Do(ctx, raw.B().Set().Key(key).Value("v2").Keepttl().Build()))
	testenv.WaitFor(t, time.Second, "the changed value", func() bool {
		v, _, _, err := c.Get(ctx, key)
		return err == nil && v == "v2"
	})
	must(t, raw.Do(ctx, raw.B().Del().Key(key).Build()))
	start := time.Now()
	testenv.WaitFor(t, time.Second, "the deletion", func() bool {
		_, _, found, err := c.Get(ctx, key)
		return err == nil && !found
	})
	t.Logf("deletion seen after %s", time.Since(start))
}

func TestEvalInts(t *testing.T) {
	s := testenv.StartRedis(t, "")
	c, reg := newClient(t, config.Redis{Address: s.Addr(), Breaker: config.RedisBreaker{MaxFailures: 2}}, true)
	raw := rawClient(t, s.Addr())
	ctx := ctxTimeout(t, 10*time.Second)
	const script = `return {tonumber(ARGV[1]), redis.call('INCR', KEYS[1]), -3}`

	for i := int64(1); i <= 2; i++ {
		got, err := c.EvalInts(ctx, script, []string{"n"}, []string{"7"})
		if err != nil || len(got) != 3 || got[0] != 7 || got[1] != i || got[2] != -3 {
			t.Fatalf("EvalInts #%d = %v, %v", i, got, err)
		}
	}
	// Redis forgets its scripts (a restart, SCRIPT FLUSH): loaded again.
	must(t, raw.Do(ctx, raw.B().ScriptFlush().Build()))
	if got, err := c.EvalInts(ctx, script, []string{"n"}, []string{"1"}); err != nil || got[1] != 3 {
		t.Fatalf("after SCRIPT FLUSH: %v, %v", got, err)
	}
	sum := sha1.Sum([]byte(script))
	known, err := raw.Do(ctx, raw.B().ScriptExists().Sha1(hex.EncodeToString(sum[:])).Build()).AsIntSlice()
	if err != nil || len(known) != 1 || known[0] != 1 {
		t.Fatalf("SCRIPT EXISTS after reloading: %v %v", known, err)
	}

	// Not an integer array, and error replies: errors, but Redis answered,
	// so the breaker (2 failures) stays closed.
	for range 3 {
		if _, err := c.EvalInts(ctx, `return 'x'`, nil, nil); err == nil {
			t.Error("a string reply gave no error")
		}
		_, err := c.EvalInts(ctx, `return redis.error_reply('NOPE no')`, nil, nil)
		var rerr *rueidis.RedisError
		if !errors.As(err, &rerr) || !strings.Contains(err.Error(), "NOPE") {
			t.Errorf("error reply: %v", err)
		}
	}
	if !c.Healthy() {
		t.Error("error replies opened the breaker")
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_errors_total", map[string]string{"kind": "redis"}); got != 3 {
		t.Errorf("redis errors %v, want 3", got)
	}
}

func TestDo(t *testing.T) {
	addr := testenv.RedisAddr(t)
	c, reg := newClient(t, config.Redis{Address: addr}, true)
	ctx := ctxTimeout(t, 10*time.Second)
	key := keyPrefix(t) + "k"
	t.Cleanup(func() {
		c.Do(context.Background(), "del", func(b rueidis.Builder) rueidis.Completed { return b.Del().Key(key).Build() })
	})
	if err := c.Do(ctx, "set", func(b rueidis.Builder) rueidis.Completed {
		return b.Set().Key(key).Value("v").Px(time.Minute).Build()
	}).Error(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, "get", func(b rueidis.Builder) rueidis.Completed { return b.Get().Key(key).Build() }).ToString(); v != "v" || err != nil {
		t.Fatalf("GET = %q, %v", v, err)
	}
	if err := c.Do(ctx, "get", func(b rueidis.Builder) rueidis.Completed { return b.Get().Key(key + "x").Build() }).Error(); !rueidis.IsRedisNil(err) {
		t.Errorf("missing key: %v, want redis nil", err)
	}
	for cmd, want := range map[string]float64{"set": 1, "get": 1} {
		if got := testenv.MetricValue(t, reg, "dubbogw_redis_command_duration_seconds", map[string]string{"command": cmd, "result": "ok"}); got != want {
			t.Errorf("%s ok = %v, want %v", cmd, got, want)
		}
	}
}

// Commands return by their deadline, the client's or the caller's when
// sooner, whatever Redis does.
func TestDeadlines(t *testing.T) {
	s := testenv.StartRedis(t, "")
	const timeout = 100 * time.Millisecond
	c, reg := newClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(timeout), Breaker: config.RedisBreaker{MaxFailures: 1000}}, true)
	patient, _ := newClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(time.Minute)}, true)
	raw := rawClient(t, s.Addr())
	ctx := ctxTimeout(t, 10*time.Second)
	testenv.WaitFor(t, 10*time.Second, "a first answer within the 100ms deadline", func() bool {
		_, _, _, err := c.Get(ctx, "warm")
		return err == nil
	})
	// What is tested is that a call returns at all while Redis holds it;
	// the margin only has to be far below "never" and far above a slow
	// scheduler under -race.
	const margin = 2 * time.Second
	expectTimeout := func(what string, within time.Duration, call func() error) {
		t.Helper()
		start := time.Now()
		err := call()
		took := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want a timeout", what, err)
		}
		if took > within+margin {
			t.Errorf("%s took %s, deadline %s", what, took, within)
		}
	}

	// CLIENT PAUSE: Redis holds every command for 300ms.
	must(t, raw.Do(ctx, raw.B().ClientPause().Timeout(300).Build()))
	expectTimeout("Get while paused", timeout, func() error { _, _, _, err := c.Get(context.Background(), "k1"); return err })
	testenv.WaitFor(t, 2*time.Second, "Redis answering after the pause", func() bool { _, _, _, err := c.Get(ctx, "k1"); return err == nil })
	timeouts := testenv.MetricValue(t, reg, "dubbogw_redis_errors_total", map[string]string{"kind": "timeout"})

	// A frozen server (SIGSTOP): nothing is answered at all.
	s.Freeze()
	defer s.Thaw()
	expectTimeout("Get", timeout, func() error { _, _, _, err := c.Get(context.Background(), "k2"); return err })
	short, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	expectTimeout("Get, caller deadline 30ms", 30*time.Millisecond, func() error { _, _, _, err := c.Get(short, "k3"); return err })
	expectTimeout("GetWithin a minute, client timeout 100ms", timeout, func() error {
		_, _, _, err := c.GetWithin(context.Background(), "k4", time.Minute)
		return err
	})
	expectTimeout("GetWithin 100ms, client timeout a minute", timeout, func() error {
		_, _, _, err := patient.GetWithin(context.Background(), "k5", timeout)
		return err
	})
	expectTimeout("EvalInts", timeout, func() error { _, err := c.EvalInts(context.Background(), "return {1}", nil, nil); return err })
	expectTimeout("Do", timeout, func() error {
		return c.Do(context.Background(), "ping", func(b rueidis.Builder) rueidis.Completed { return b.Ping().Build() }).Error()
	})
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_errors_total", map[string]string{"kind": "timeout"}) - timeouts; got != 5 {
		t.Errorf("timeouts counted %v, want 5", got)
	}
}

func TestBreaker(t *testing.T) {
	s := testenv.StartRedis(t, "")
	const openFor = 300 * time.Millisecond
	// A 1s deadline: the healthy calls cannot miss it by chance, and an
	// open breaker's answer (well under half of it) is told from a call
	// that waited for it.
	const timeout = time.Second
	c, reg := newClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(timeout),
		Breaker: config.RedisBreaker{MaxFailures: 3, OpenFor: config.Duration(openFor)}}, true)
	ctx := ctxTimeout(t, 20*time.Second)
	n := 0
	get := func() error { // a new key each time: never answered from the client-side cache
		n++
		_, _, _, err := c.Get(ctx, "k"+itoa(int64(n)))
		return err
	}
	if err := get(); err != nil || !c.Healthy() {
		t.Fatalf("Get %v, healthy %v", err, c.Healthy())
	}
	state := func() float64 { return testenv.MetricValue(t, reg, "dubbogw_redis_breaker_state", nil) }

	s.Freeze()
	for i := range 3 {
		if err := get(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("failure #%d: %v, want a timeout", i, err)
		}
	}
	opened := time.Now()
	start := time.Now()
	if err := get(); !errors.Is(err, redisclient.ErrBreakerOpen) {
		t.Fatalf("after 3 failures: %v, want ErrBreakerOpen", err)
	}
	if took := time.Since(start); took >= timeout/2 {
		t.Errorf("an open breaker took %s to fail a command", took)
	}
	if c.Healthy() || state() != 1 || c.State() != (redisclient.State{Connected: true, Breaker: "open"}) {
		t.Errorf("open breaker: healthy %v, state %v, State() %+v", c.Healthy(), state(), c.State())
	}

	// After openFor one probe goes to Redis; still frozen, it fails and
	// the breaker opens again.
	var err error
	testenv.WaitFor(t, 10*time.Second, "a probe", func() bool {
		err = get()
		return !errors.Is(err, redisclient.ErrBreakerOpen)
	})
	if time.Since(opened) < openFor {
		t.Errorf("probe after %s, before open_for %s", time.Since(opened), openFor)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("probe: %v, want a timeout", err)
	}
	if err := get(); !errors.Is(err, redisclient.ErrBreakerOpen) {
		t.Errorf("after a failed probe: %v, want ErrBreakerOpen", err)
	}

	// Redis back: the next probe succeeds and closes it.
	s.Thaw()
	testenv.WaitFor(t, 5*time.Second, "recovery", func() bool { return get() == nil })
	if !c.Healthy() || state() != 0 || c.State() != (redisclient.State{Connected: true, Breaker: "closed"}) {
		t.Errorf("recovered: healthy %v, state %v, State() %+v", c.Healthy(), state(), c.State())
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_errors_total", map[string]string{"kind": "breaker_open"}); got < 2 {
		t.Errorf("breaker_open errors %v", got)
	}

	// A killed server: connection errors open it too; a restarted one closes it.
	s.Stop()
	testenv.WaitFor(t, 5*time.Second, "the breaker opening on connection errors", func() bool {
		return errors.Is(get(), redisclient.ErrBreakerOpen)
	})
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_errors_total", map[string]string{"kind": "connection"}); got < 1 {
		t.Errorf("connection errors %v", got)
	}
	testenv.StartRedis(t, s.Addr())
	testenv.WaitFor(t, 5*time.Second, "recovery after a restart", func() bool { return get() == nil })
}

func TestStartWithRedisDown(t *testing.T) {
	addr := testenv.FreeAddr(t)
	c, reg := newClient(t, config.Redis{Address: addr}, false)
	ctx := ctxTimeout(t, 20*time.Second)
	for range 3 {
		if _, _, _, err := c.Get(ctx, "k"); !errors.Is(err, redisclient.ErrUnavailable) {
			t.Fatalf("Get before Redis is up: %v, want ErrUnavailable", err)
		}
	}
	if c.Healthy() || testenv.MetricValue(t, reg, "dubbogw_redis_connected", nil) != 0 || c.State().Connected {
		t.Errorf("healthy before connecting: %+v", c.State())
	}
	testenv.StartRedis(t, addr)
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.Get(ctx, "k"); err != nil {
		t.Fatalf("Get once connected: %v", err)
	}
	if !c.Healthy() || testenv.MetricValue(t, reg, "dubbogw_redis_connected", nil) != 1 || !c.State().Connected {
		t.Errorf("not healthy once connected: %+v", c.State())
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_errors_total", map[string]string{"kind": "unavailable"}); got != 3 {
		t.Errorf("unavailable errors %v, want 3", got)
	}
}

func TestOverloaded(t *testing.T) {
	s := testenv.StartRedis(t, "")
	c, reg := newClient(t, config.Redis{Address: s.Addr(), MaxPending: 1, Timeout: config.Duration(time.Second),
		Breaker: config.RedisBreaker{MaxFailures: 1000}}, true)
	s.Freeze()
	defer s.Thaw()
	held := make(chan error, 1)
	go func() { _, _, _, err := c.Get(context.Background(), "slow"); held <- err }()
	testenv.WaitFor(t, 2*time.Second, "the slot taken", func() bool {
		return testenv.MetricValue(t, reg, "dubbogw_redis_pending_commands", nil) == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, _, err := c.Get(ctx, "k"); !errors.Is(err, redisclient.ErrOverloaded) {
		t.Errorf("with the only slot taken: %v, want ErrOverloaded", err)
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_pending_wait_seconds", nil); got != 1 {
		t.Errorf("pending waits %v, want 1", got)
	}
	select {
	case err := <-held:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("slow Get: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the slow Get did not return")
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_redis_pending_commands", nil); got != 0 {
		t.Errorf("pending %v after all returned", got)
	}
}

// ownGoroutines counts goroutines running rueidis or this package's code.
func ownGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/redis/rueidis") || strings.Contains(g, "dubbogw/redisclient.") {
			n++
		}
	}
	return n
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	addr := testenv.RedisAddr(t)
	// Clients of earlier tests, closed, must be gone too.
	testenv.WaitFor(t, 3*time.Second, "no client goroutine before the test", func() bool { return ownGoroutines() == 0 })
	const before = 0
	for _, tc := range []struct {
		name string
		addr string
	}{{"connected", addr}, {"connecting to a Redis that is down", testenv.FreeAddr(t)}} {
		c, err := redisclient.New(config.Redis{Address: tc.addr}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.addr == addr {
			if err := c.WaitConnected(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 50 {
				wg.Go(func() { _, _, _, _ = c.Get(context.Background(), "k") })
			}
			wg.Wait()
		}
		if ownGoroutines() <= before {
			t.Fatalf("%s: the client runs no goroutine: the check below proves nothing", tc.name)
		}
		c.Close()
		if _, _, _, err := c.Get(context.Background(), "k"); !errors.Is(err, redisclient.ErrUnavailable) {
			t.Errorf("%s: Get after Close: %v", tc.name, err)
		}
		testenv.WaitFor(t, 3*time.Second, tc.name+": goroutines gone after Close", func() bool { return ownGoroutines() <= before })
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []config.Redis{
		{},
		{Address: "localhost"},
		{Address: "127.0.0.1:6379,"},
		{Address: "127.0.0.1:0"},
		{Address: "127.0.0.1:6379", DB: -1},
		{Address: "127.0.0.1:6379,127.0.0.1:6380", DB: 1},
		{Address: "127.0.0.1:6379", Pipelines: 3},
		{Address: "127.0.0.1:6379", Pipelines: 512},
		{Address: "127.0.0.1:6379", MaxPending: -1},
		{Address: "127.0.0.1:6379", MaxPending: 1 << 20},
		{Address: "127.0.0.1:6379", Breaker: config.RedisBreaker{MaxFailures: -1}},
		{Address: "127.0.0.1:6379", Timeout: config.Duration(-time.Second)},
	} {
		if c, err := redisclient.New(cfg, nil, nil); err == nil {
			c.Close()
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
