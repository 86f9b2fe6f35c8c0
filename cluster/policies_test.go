package cluster

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

func mustPolicy(t testing.TB, name string, opts PolicyOptions) Policy {
	t.Helper()
	p, err := NewPolicy(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// assertShares checks that the observed shares of got match want (weights) within tol (absolute share).
func assertShares(t *testing.T, ps []*Provider, got map[string]int, want []float64, tol float64) {
	t.Helper()
	total, sum := 0, 0.0
	for _, n := range got {
		total += n
	}
	for _, w := range want {
		sum += w
	}
	for i, p := range ps {
		share, expect := float64(got[p.Addr])/float64(total), want[i]/sum
		if math.Abs(share-expect) > tol {
			t.Errorf("%s: share %.4f, want %.4f ± %.3f (counts %v)", p.Addr, share, expect, tol, got)
		}
	}
}

func TestNewPolicyNames(t *testing.T) {
	stats := NewStats(StatsOptions{})
	for _, name := range []string{"", "random", "roundrobin", "leastactive", "consistenthash", "p2c"} {
		if _, err := NewPolicy(name, PolicyOptions{Stats: stats}); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, c := range []struct {
		name string
		opts PolicyOptions
		want string
	}{
		{"round_robin", PolicyOptions{}, "unknown policy"},
		{"leastactive", PolicyOptions{}, "needs Stats"},
		{"p2c", PolicyOptions{}, "needs Stats"},
		{"consistenthash", PolicyOptions{HashNodes: 3}, "at least 4"},
	} {
		if _, err := NewPolicy(c.name, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestPoliciesEmptyAndAllExcluded(t *testing.T) {
	stats := NewStats(StatsOptions{})
	ps := newProviders(100, 100, 100)
	none := &Call{Exclude: func(*Provider) bool { return true }}
	for _, name := range []string{"random", "roundrobin", "leastactive", "consistenthash", "p2c"} {
		p := mustPolicy(t, name, PolicyOptions{Stats: stats})
		if got := p.Select(nil, &Call{}); got != nil {
			t.Errorf("%s: Select(no providers) = %v", name, got.Addr)
		}
		if got := p.Select(ps, none); got != nil {
			t.Errorf("%s: Select(all excluded) = %v", name, got.Addr)
		}
		if got := p.Select(ps[:1], nil); got != ps[0] {
			t.Errorf("%s: Select(one provider, nil call) = %v", name, got)
		}
	}
}

func TestRandomDistribution(t *testing.T) {
	const n = 200000
	t.Run("weighted", func(t *testing.T) {
		ps := newProviders(100, 200, 700)
		p := mustPolicy(t, "random", PolicyOptions{IntN: seeded(1)})
		assertShares(t, ps, counts(p, ps, nil, n), []float64{1, 2, 7}, 0.005)
	})
	t.Run("equal weights", func(t *testing.T) {
		ps := newProviders(50, 50, 50, 50)
		p := mustPolicy(t, "random", PolicyOptions{IntN: seeded(2)})
		assertShares(t, ps, counts(p, ps, nil, n), []float64{1, 1, 1, 1}, 0.005)
	})
	t.Run("zero weight takes no share", func(t *testing.T) {
		ps := newProviders(0, 100, 300)
		p := mustPolicy(t, "random", PolicyOptions{IntN: seeded(3)})
		got := counts(p, ps, nil, n)
		if got[ps[0].Addr] != 0 {
			t.Errorf("weight 0 chosen %d times", got[ps[0].Addr])
		}
		assertShares(t, ps, got, []float64{0, 1, 3}, 0.005)
	})
	t.Run("all zero is uniform", func(t *testing.T) {
		ps := newProviders(0, 0)
		p := mustPolicy(t, "random", PolicyOptions{IntN: seeded(4)})
		assertShares(t, ps, counts(p, ps, nil, n), []float64{1, 1}, 0.005)
	})
	t.Run("exclusions", func(t *testing.T) {
		ps := newProviders(100, 200, 700, 100)
		call := &Call{Exclude: func(p *Provider) bool { return p == ps[2] }}
		p := mustPolicy(t, "random", PolicyOptions{IntN: seeded(5)})
		assertShares(t, ps, counts(p, ps, call, n), []float64{1, 2, 0, 1}, 0.005)
		same := newProviders(100, 100, 100)
		call = &Call{Exclude: func(p *Provider) bool { return p == same[0] }}
		assertShares(t, same, counts(p, same, call, n), []float64{0, 1, 1}, 0.005)
	})
	t.Run("warm-up", func(t *testing.T) {
		clock := testenv.NewFakeClock()
		ps := newProviders(100, 100)
		// Started a minute ago with a 10 min warm-up: weight 10.
		ps[1].Timestamp, ps[1].Warmup = clock.Now().Add(-time.Minute), 10*time.Minute
		p := mustPolicy(t, "random", PolicyOptions{IntN: seeded(6), Now: clock.Now})
		assertShares(t, ps, counts(p, ps, nil, n), []float64{100, 10}, 0.005)
	})
}

func TestRoundRobinSmoothSequence(t *testing.T) {
	names := func(p Policy, ps []*Provider, call *Call, n int) string {
		var b strings.Builder
		for range n {
			got := p.Select(ps, call)
			b.WriteByte("abcdefgh"[strings.Index("12345678", got.Addr[7:8])])
		}
		return b.String()
	}
	t.Run("weights 5,1,1", func(t *testing.T) {
		ps := newProviders(5, 1, 1)
		p := mustPolicy(t, "roundrobin", PolicyOptions{})
		if got := names(p, ps, nil, 14); got != "aabacaaaabacaa" {
			t.Errorf("sequence %s, want aabacaa aabacaa", got)
		}
	})
	t.Run("equal weights", func(t *testing.T) {
		ps := newProviders(100, 100, 100)
		p := mustPolicy(t, "roundrobin", PolicyOptions{})
		if got := names(p, ps, nil, 7); got != "abcabca" {
			t.Errorf("sequence %s", got)
		}
	})
	t.Run("weights 3,2", func(t *testing.T) {
		// current: (3,2)→a (-2,2); (1,4)→b (1,-1); (4,1)→a (-1,1); (2,3)→b (2,-2); (5,0)→a (0,0).
		ps := newProviders(3, 2)
		p := mustPolicy(t, "roundrobin", PolicyOptions{})
		if got := names(p, ps, nil, 10); got != "ababaababa" {
			t.Errorf("sequence %s", got)
		}
	})
	t.Run("exclusion", func(t *testing.T) {
		ps := newProviders(100, 100, 100)
		p := mustPolicy(t, "roundrobin", PolicyOptions{})
		call := &Call{Exclude: func(p *Provider) bool { return p == ps[1] }}
		if got := names(p, ps, call, 6); got != "acacac" {
			t.Errorf("sequence %s", got)
		}
	})
	t.Run("state carries to a new snapshot", func(t *testing.T) {
		ps := newProviders(5, 1, 1)
		p := mustPolicy(t, "roundrobin", PolicyOptions{})
		first := names(p, ps, nil, 3)
		next := copyProviders(ps)
		if got := first + names(p, next, nil, 11); got != "aabacaaaabacaa" {
			t.Errorf("sequence across snapshots %s", got)
		}
	})
	t.Run("weight change restarts that provider", func(t *testing.T) {
		ps := newProviders(1, 1)
		p := mustPolicy(t, "roundrobin", PolicyOptions{})
		names(p, ps, nil, 1) // a: (-1, 1)
		next := copyProviders(ps)
		next[0].Weight = 3
		// a restarts from 0, b keeps 1: (3,2)→a (-1,2); (2,3)→b (2,-1); (5,0)→a (1,0); (4,1)→a.
		if got := names(p, next, nil, 4); got != "abaa" {
			t.Errorf("sequence %s", got)
		}
	})
}

func TestLeastActive(t *testing.T) {
	stats := NewStats(StatsOptions{})
	ps := newProviders(100, 100, 300)
	p := mustPolicy(t, "leastactive", PolicyOptions{Stats: stats, IntN: seeded(7)})
	var samples []Sample
	start := func(pr *Provider, n int) {
		for range n {
			samples = append(samples, stats.Start(pr))
		}
	}
	start(ps[0], 2)
	start(ps[2], 1)
	if got := counts(p, ps, nil, 100); got[ps[1].Addr] != 100 {
		t.Fatalf("fewest active not always chosen: %v", got)
	}
	// Exclude it: the next least active (c, 1 call) takes all.
	call := &Call{Exclude: func(p *Provider) bool { return p == ps[1] }}
	if got := counts(p, ps, call, 100); got[ps[2].Addr] != 100 {
		t.Fatalf("with b excluded: %v", got)
	}
	// b and c tie at 1 call: by weight, 1:3.
	start(ps[1], 1)
	assertShares(t, ps, counts(p, ps, nil, 100000), []float64{0, 1, 3}, 0.01)
	for _, s := range samples {
		stats.Done(s)
	}
	if a := stats.Active(ps[0].Addr); a != 0 {
		t.Errorf("active after Done = %d", a)
	}
	// All idle, equal weights: uniform.
	eq := newProviders(100, 100, 100)
	assertShares(t, eq, counts(p, eq, nil, 100000), []float64{1, 1, 1}, 0.01)
}

func TestEffectiveWeight(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	at := func(uptime time.Duration) time.Time { return now.Add(-uptime) }
	for _, c := range []struct {
		p    Provider
		want int
	}{
		{Provider{Weight: 100}, 100},
		{Provider{Weight: 0}, 0},
		{Provider{Weight: -5}, 0},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(time.Millisecond)}, 1},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(time.Minute)}, 10},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(5 * time.Minute)}, 50},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(DefaultWarmup - time.Millisecond)}, 99},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(DefaultWarmup)}, 100},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(time.Hour)}, 100},
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(0)}, 100},                    // uptime 0: Java leaves the weight
		{Provider{Weight: 100, Warmup: DefaultWarmup, Timestamp: at(-time.Second)}, 1},           // started in the future: 1
		{Provider{Weight: 100, Warmup: 0, Timestamp: at(time.Millisecond)}, 100},                 // no warm-up
		{Provider{Weight: 7, Warmup: DefaultWarmup, Timestamp: at(85714 * time.Millisecond)}, 1}, // from a JVM run
		{Provider{Weight: 7, Warmup: DefaultWarmup, Timestamp: at(300 * time.Second)}, 3},
		{Provider{Weight: 1<<31 - 1, Warmup: DefaultWarmup, Timestamp: at(time.Millisecond)}, 3579},
	} {
		if got := EffectiveWeight(&c.p, now); got != c.want {
			t.Errorf("EffectiveWeight(weight %d, warmup %s, uptime %s) = %d, want %d",
				c.p.Weight, c.p.Warmup, now.Sub(c.p.Timestamp), got, c.want)
		}
	}
}

func TestNewProvider(t *testing.T) {
	p, err := NewProvider("10.0.0.1:20880", map[string]string{"weight": "50", "warmup": "60000", "timestamp": "1700000000000", "side": "provider"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Weight != 50 || p.Warmup != time.Minute || !p.Timestamp.Equal(time.UnixMilli(1700000000000)) || p.Params.Len() != 1 || p.Params.Get("side") != "provider" {
		t.Errorf("provider %+v", p)
	}
	p, err = NewProvider("10.0.0.1:20880", nil)
	if err != nil || p.Weight != DefaultWeight || p.Warmup != DefaultWarmup || !p.Timestamp.IsZero() {
		t.Errorf("defaults: %+v, %v", p, err)
	}
	if _, err := NewProvider("a:1", map[string]string{"weight": "heavy"}); err == nil || !strings.Contains(err.Error(), "weight") {
		t.Errorf("bad weight: %v", err)
	}
	if p.TLS {
		t.Error("a provider without ssl-enabled is TLS")
	}
	for v, want := range map[string]bool{"true": true, "TRUE": true, "false": false, "yes": false, "": false} {
		p, err := NewProvider("10.0.0.1:20880", map[string]string{"ssl-enabled": v, "side": "provider"})
		if err != nil || p.TLS != want || p.Params.Len() != 1 {
			t.Errorf("ssl-enabled=%q: TLS %v (want %v), params %v, %v", v, p.TLS, want, p.Params, err)
		}
	}
}

func TestP2C(t *testing.T) {
	clock := testenv.NewFakeClock()
	stats := NewStats(StatsOptions{Now: clock.Now})
	ps := newProviders(100, 100, 100)
	observe := func(p *Provider, rtt time.Duration) {
		s := stats.Start(p)
		clock.Advance(rtt)
		stats.Done(s)
	}
	observe(ps[0], time.Millisecond)
	observe(ps[1], 100*time.Millisecond)
	p := mustPolicy(t, "p2c", PolicyOptions{Stats: stats, IntN: seeded(8)})

	if got := counts(p, ps[:2], nil, 1000); got[ps[0].Addr] != 1000 {
		t.Errorf("two providers: fast one not always chosen: %v", got)
	}
	// c has no latency yet and nothing in flight: it costs nothing.
	got := counts(p, ps, nil, 30000)
	if got[ps[1].Addr] != 0 {
		t.Errorf("slow provider chosen although never the better of two: %v", got)
	}
	observe(ps[2], 50*time.Millisecond)
	// Now a beats both whenever drawn (2/3 of pairs), c beats b otherwise.
	got = counts(p, ps, nil, 30000)
	assertShares(t, ps, got, []float64{2, 0, 1}, 0.01)

	// In-flight penalty: 200 calls on a make it cost 201 ms > b's 100 ms.
	var held []Sample
	for range 200 {
		held = append(held, stats.Start(ps[0]))
	}
	if got := counts(p, ps[:2], nil, 100); got[ps[1].Addr] != 100 {
		t.Errorf("loaded fast provider still chosen: %v", got)
	}
	for _, s := range held {
		stats.Done(s)
	}
	// An unmeasured provider with a call in flight is avoided.
	fresh := &Provider{Addr: "10.0.0.9:20880", Weight: 100}
	s := stats.Start(fresh)
	if got := counts(p, []*Provider{ps[1], fresh}, nil, 100); got[ps[1].Addr] != 100 {
		t.Errorf("unmeasured busy provider chosen: %v", got)
	}
	stats.Done(s)
}

func TestLatencyEWMA(t *testing.T) {
	clock := testenv.NewFakeClock()
	stats := NewStats(StatsOptions{Now: clock.Now, LatencyDecay: 10 * time.Second})
	p := &Provider{Addr: "a:1"}
	observe := func(rtt time.Duration) {
		s := stats.Start(p)
		clock.Advance(rtt)
		stats.Done(s)
	}
	observe(10 * time.Millisecond)
	if got := stats.Latency(p.Addr); got != 10*time.Millisecond {
		t.Fatalf("first latency %s", got)
	}
	observe(100 * time.Millisecond) // a peak shows at once
	if got := stats.Latency(p.Addr); got != 100*time.Millisecond {
		t.Fatalf("after a peak %s", got)
	}
	clock.Advance(10 * time.Second) // decays by 1/e
	want := time.Duration(float64(100*time.Millisecond) * math.Exp(-1))
	if got := stats.Latency(p.Addr); got != want {
		t.Fatalf("decayed latency %s, want %s", got, want)
	}
	observe(10 * time.Millisecond) // lower samples blend in
	if got := stats.Latency(p.Addr); got <= 10*time.Millisecond || got >= 100*time.Millisecond {
		t.Fatalf("blended latency %s", got)
	}
}
