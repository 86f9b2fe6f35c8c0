package ratelimit_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter/ratelimit"
)

func TestDistributedHeadersAreExactAndShared(t *testing.T) {
	addr := redisAddr(t)
	s1, s2 := newScripter(t, addr), newScripter(t, addr)
	route := uniqueRoute(t, s1)
	reg := prometheus.NewRegistry()
	// 3 per hour: one every 1200s; two gateway instances.
	cfg := ratelimit.Config{Rate: 3, Per: config.Duration(time.Hour), Distributed: true}
	h1 := newFilter(t, cfg, ratelimit.Deps{Route: route, Redis: s1, Metrics: reg}).Wrap(okHandler)
	h2 := newFilter(t, cfg, ratelimit.Deps{Route: route, Redis: s2, Metrics: reg}).Wrap(okHandler)
	r, _ := request(context.Background(), "192.0.2.1", "")

	check(t, "first, instance 1", serve(h1, r), want{204, "3", "2", "1200", ""})
	check(t, "second, instance 2", serve(h2, r), want{204, "3", "1", "2400", ""})
	check(t, "third, instance 1", serve(h1, r), want{204, "3", "0", "3600", ""})
	check(t, "over, instance 2", serve(h2, r), want{429, "3", "0", "3600", "1200"})
	check(t, "over, instance 1", serve(h1, r), want{429, "3", "0", "3600", "1200"})
	other, _ := request(context.Background(), "192.0.2.2", "")
	check(t, "another client", serve(h2, other), want{204, "3", "2", "1200", ""})

	// The key and its expiry: interval × burst.
	key := "ratelimit:" + route + ":ip:192.0.2.1"
	pttl, err := s1.client.Do(context.Background(), s1.client.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil || pttl <= 3500*1000 || pttl > 3600*1000 {
		t.Fatalf("PTTL %s = %d, %v; want just under 3600000", key, pttl, err)
	}
	for result, n := range map[string]float64{"allowed": 4, "limited": 2} {
		if got := counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"route": route, "source": "redis", "result": result}); got != n {
			t.Errorf("redis %s = %v, want %v", result, got, n)
		}
	}
	if got := counter(t, reg, "dubbogw_ratelimit_fallbacks_total", nil); got != 0 {
		t.Errorf("fallbacks %v", got)
	}
}

func TestDistributedKeys(t *testing.T) {
	addr := redisAddr(t)
	s := newScripter(t, addr)
	tests := []struct {
		key, user, header, want string
	}{
		{"client_ip", "", "", "ip:192.0.2.7"},
		{"user", "alice", "", "user:alice"},
		{"user", "", "", "ip:192.0.2.7"},
		{"header:X-Api-Key", "", "k1", "h:k1"},
		{"header:X-Api-Key", "", "", "header-missing"},
		{"route", "", "", "route"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"/"+tt.want, func(t *testing.T) {
			route := uniqueRoute(t, s)
			h := newFilter(t, ratelimit.Config{Key: tt.key, Rate: 1, Per: config.Duration(time.Hour), Distributed: true},
				ratelimit.Deps{Route: route, Redis: s}).Wrap(okHandler)
			r, _ := request(context.Background(), "192.0.2.7", tt.user)
			if tt.header != "" {
				r.Header.Set("X-Api-Key", tt.header)
			}
			if code := serve(h, r).Code; code != 204 {
				t.Fatalf("status %d", code)
			}
			key := "ratelimit:" + route + ":" + tt.want
			n, err := s.client.Do(context.Background(), s.client.B().Exists().Key(key).Build()).AsInt64()
			if err != nil || n != 1 {
				t.Fatalf("EXISTS %s = %d, %v", key, n, err)
			}
		})
	}
}

// TestDistributedLimitIsShared runs two gateway instances against one limit
// and counts what they let through together.
func TestDistributedLimitIsShared(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 2s")
	}
	const rate, burst, workersPerInstance = 200, 200, 4
	const run = 2 * time.Second
	addr := redisAddr(t)
	reg := prometheus.NewRegistry()
	var route string
	var handlers []http.Handler
	for i := range 2 {
		s := newScripter(t, addr)
		if i == 0 {
			route = uniqueRoute(t, s)
		}
		f := newFilter(t, ratelimit.Config{Key: "route", Rate: rate, Burst: burst, Distributed: true},
			ratelimit.Deps{Route: route, Redis: s, Metrics: reg})
		handlers = append(handlers, f.Wrap(okHandler))
	}

	var allowed, sent atomic.Int64
	start := time.Now()
	deadline := start.Add(run)
	var wg sync.WaitGroup
	for _, h := range handlers {
		for range workersPerInstance {
			wg.Go(func() {
				r, _ := request(context.Background(), "192.0.2.1", "")
				for time.Now().Before(deadline) {
					sent.Add(1)
					if serve(h, r).Code == 204 {
						allowed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	expected := burst + rate*elapsed.Seconds()
	got := float64(allowed.Load())
	fallbacks := counter(t, reg, "dubbogw_ratelimit_fallbacks_total", nil)
	t.Logf("%d requests in %s: %v allowed, %.0f expected, %v fallbacks", sent.Load(), elapsed.Round(time.Millisecond), got, expected, fallbacks)
	if sent.Load() < int64(2*expected) {
		t.Fatalf("only %d requests sent: not enough to test a limit of %.0f", sent.Load(), expected)
	}
	if got < 0.9*expected || got > 1.1*expected {
		t.Fatalf("allowed %v, want %.0f ± 10%%", got, expected)
	}
}

// The decision deadline of the tests that stall or kill Redis: long enough
// that the healthy first decision cannot miss it by chance, short enough to
// tell "answered by the deadline" from "held"; decisionMargin is what a
// slow scheduler may add.
const (
	stalledDecisionTimeout = time.Second
	decisionMargin         = 2 * time.Second
)

func TestRedisDownFallsBackToLocalLimit(t *testing.T) {
	redis := testenv.StartRedis(t, "")
	s := newScripter(t, redis.Addr())
	reg := prometheus.NewRegistry()
	clock := testenv.NewFakeClock()
	h := newFilter(t, ratelimit.Config{Rate: 2, Per: config.Duration(time.Minute), Distributed: true},
		ratelimit.Deps{Route: "r", Redis: s, Metrics: reg, Now: clock.Now, DecisionTimeout: stalledDecisionTimeout}).Wrap(okHandler)
	r, _ := request(context.Background(), "192.0.2.1", "")
	check(t, "Redis up", serve(h, r), want{204, "2", "1", "30", ""})

	redis.Stop()
	// The local bucket is fresh: the burst again, then exact local limits.
	for i, exp := range []want{{204, "2", "1", "30", ""}, {204, "2", "0", "60", ""}, {429, "2", "0", "60", "30"}} {
		start := time.Now()
		check(t, "Redis down "+strconv.Itoa(i), serve(h, r), exp)
		if d := time.Since(start); d > stalledDecisionTimeout+decisionMargin {
			t.Fatalf("decision took %s with Redis down", d)
		}
	}
	if got := counter(t, reg, "dubbogw_ratelimit_fallbacks_total", map[string]string{"route": "r", "reason": "error"}); got != 3 {
		t.Errorf("fallbacks (error) %v, want 3", got)
	}
	if got := counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"route": "r", "source": "fallback"}); got != 3 {
		t.Errorf("fallback decisions %v, want 3", got)
	}
}

// TestRedisStalledAnswersWithinDeadline stops the Redis process: commands
// are sent and never answered.
func TestRedisStalledAnswersWithinDeadline(t *testing.T) {
	redis := testenv.StartRedis(t, "")
	s := newScripter(t, redis.Addr())
	reg := prometheus.NewRegistry()
	clock := testenv.NewFakeClock() // the local limit's answers do not move with the deadlines waited
	h := newFilter(t, ratelimit.Config{Rate: 1, Per: config.Duration(time.Hour), Burst: 2, Distributed: true},
		ratelimit.Deps{Route: "r", Redis: s, Metrics: reg, Now: clock.Now, DecisionTimeout: stalledDecisionTimeout}).Wrap(okHandler)
	r, _ := request(context.Background(), "192.0.2.1", "")
	check(t, "Redis up", serve(h, r), want{204, "2", "1", "3600", ""})

	redis.Freeze()
	for i, exp := range []want{{204, "2", "1", "3600", ""}, {204, "2", "0", "7200", ""}, {429, "2", "0", "7200", "3600"}} {
		start := time.Now()
		check(t, "Redis stalled "+strconv.Itoa(i), serve(h, r), exp)
		// Without the decision deadline a stalled Redis holds the request
		// until the client's connection timeout (10s and more).
		if d := time.Since(start); d > stalledDecisionTimeout+decisionMargin {
			t.Fatalf("decision took %s with Redis stalled", d)
		}
	}
	if got := counter(t, reg, "dubbogw_ratelimit_fallbacks_total", map[string]string{"route": "r", "reason": "timeout"}); got != 3 {
		t.Errorf("fallbacks (timeout) %v, want 3", got)
	}

	redis.Thaw()
	// Redis answers again (after the stalled commands); its bucket has one left.
	other, _ := request(context.Background(), "192.0.2.2", "")
	var code int
	for range 100 { // the client may need a few commands to recover its connection
		if code = serve(h, other).Code; counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"source": "redis"}) >= 2 {
			break
		}
	}
	if code != 204 || counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"source": "redis"}) < 2 {
		t.Fatalf("Redis not used again after it resumed (status %d)", code)
	}
}

func TestRedisErrorsFallBack(t *testing.T) {
	addr := redisAddr(t)
	s := newScripter(t, addr)
	tests := []struct {
		name   string
		redis  func(route string) ratelimit.Scripter
		ctx    func() context.Context
		reason string
	}{
		{
			name: "error reply",
			redis: func(route string) ratelimit.Scripter {
				// A bucket key of the wrong type makes the script fail in Redis.
				key := "ratelimit:" + route + ":ip:192.0.2.1"
				if err := s.client.Do(context.Background(), s.client.B().Hset().Key(key).FieldValue().FieldValue("f", "v").Build()).Error(); err != nil {
					t.Fatal(err)
				}
				return s
			},
			reason: "redis_error",
		},
		{
			name: "bad reply",
			redis: func(string) ratelimit.Scripter {
				return scripterFunc(func(context.Context, string, []string, []string) ([]int64, error) { return []int64{1, 2}, nil })
			},
			reason: "bad_reply",
		},
		{
			name: "connection error",
			redis: func(string) ratelimit.Scripter {
				return scripterFunc(func(context.Context, string, []string, []string) ([]int64, error) { return nil, errBoom })
			},
			reason: "error",
		},
		{
			name:  "request canceled",
			redis: func(string) ratelimit.Scripter { return s },
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			reason: "canceled",
		},
		{
			name:  "request deadline passed",
			redis: func(string) ratelimit.Scripter { return s },
			ctx: func() context.Context {
				ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
				t.Cleanup(cancel)
				return ctx
			},
			reason: "timeout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := uniqueRoute(t, s)
			reg := prometheus.NewRegistry()
			h := newFilter(t, ratelimit.Config{Rate: 1, Per: config.Duration(time.Hour), Distributed: true},
				ratelimit.Deps{Route: route, Redis: tt.redis(route), Metrics: reg}).Wrap(okHandler)
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			r, _ := request(ctx, "192.0.2.1", "")
			check(t, "first", serve(h, r), want{204, "1", "0", "3600", ""})
			check(t, "second", serve(h, r), want{429, "1", "0", "3600", "3600"})
			if got := counter(t, reg, "dubbogw_ratelimit_fallbacks_total", map[string]string{"route": route, "reason": tt.reason}); got != 2 {
				t.Errorf("fallbacks (%s) %v, want 2", tt.reason, got)
			}
			if got := counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"route": route, "source": "fallback"}); got != 2 {
				t.Errorf("fallback decisions %v, want 2", got)
			}
		})
	}
}

// TestDecisionDeadlineIsShort checks the deadline a Scripter is given:
// at most 20ms, or the request's own when it is nearer.
func TestDecisionDeadlineIsShort(t *testing.T) {
	var got time.Duration
	spy := scripterFunc(func(ctx context.Context, _ string, _, _ []string) ([]int64, error) {
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatal("no deadline")
		}
		got = time.Until(d)
		return []int64{1, 0, 0, 1000}, nil
	})
	h := newFilter(t, ratelimit.Config{Rate: 1, Distributed: true}, ratelimit.Deps{Redis: spy}).Wrap(okHandler)
	r, _ := request(context.Background(), "192.0.2.1", "")
	serve(h, r)
	if got <= 0 || got > 20*time.Millisecond {
		t.Errorf("deadline in %s, want at most 20ms", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	r, _ = request(ctx, "192.0.2.1", "")
	serve(h, r)
	if got > 5*time.Millisecond {
		t.Errorf("deadline in %s, want the request's 5ms", got)
	}
}

// TestDistributedFractionalIntervals uses rates whose emission interval is
// not a whole number of microseconds: each burst must still be exact.
func TestDistributedFractionalIntervals(t *testing.T) {
	s := newScripter(t, redisAddr(t))
	for _, tt := range []struct {
		rate int
		per  time.Duration
	}{{3, time.Second}, {7, time.Second}, {9, time.Second}, {11, 3 * time.Second}, {6, 7 * time.Second}} {
		t.Run(strconv.Itoa(tt.rate)+"per"+tt.per.String(), func(t *testing.T) {
			route := uniqueRoute(t, s)
			h := newFilter(t, ratelimit.Config{Rate: tt.rate, Per: config.Duration(tt.per), Distributed: true},
				ratelimit.Deps{Route: route, Redis: s}).Wrap(okHandler)
			for i := range tt.rate {
				r, _ := request(context.Background(), "192.0.2.1", "")
				w := serve(h, r)
				if w.Code != 204 || w.Header().Get("RateLimit-Remaining") != strconv.Itoa(tt.rate-1-i) {
					t.Fatalf("request %d: status %d, remaining %s; want 204, %d", i, w.Code, w.Header().Get("RateLimit-Remaining"), tt.rate-1-i)
				}
			}
			r, _ := request(context.Background(), "192.0.2.1", "")
			if code := serve(h, r).Code; code != 429 {
				t.Fatalf("request %d: status %d, want 429", tt.rate, code)
			}
		})
	}
}
