package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var policyNames = []string{"random", "roundrobin", "leastactive", "consistenthash", "p2c"}

func benchProviders(n int) []*Provider {
	ws := make([]int, n)
	for i := range ws {
		ws[i] = 100 + i%3*50 // unequal weights: the weighted paths
	}
	return newProviders(ws...)
}

func TestSelectAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool allocate")
	}
	for _, name := range policyNames {
		for _, n := range []int{3, 30, 300, 1000} {
			stats := NewStats(StatsOptions{})
			p := mustPolicy(t, name, PolicyOptions{Stats: stats})
			ps := benchProviders(n)
			for _, call := range []*Call{
				{HashKey: "user-12345"},
				{HashKey: "user-12345", Exclude: func(p *Provider) bool { return p == ps[0] }},
			} {
				p.Select(ps, call) // first sight of the snapshot builds its state
				if allocs := testing.AllocsPerRun(200, func() { p.Select(ps, call) }); allocs != 0 {
					t.Errorf("%s with %d providers (exclude %v): %v allocations per Select", name, n, call.Exclude != nil, allocs)
				}
			}
		}
	}
}

func TestInvokeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool allocate")
	}
	c := newCluster(t, Options{Policy: "roundrobin", Breaker: DefaultBreakerOptions(), RouteBreaker: DefaultBreakerOptions()})
	ps := benchProviders(30)
	call := &Call{Method: "getUser"}
	inv := func(ctx context.Context, p *Provider) (any, error) { return nil, nil }
	ctx := context.Background()
	c.Invoke(ctx, ps, call, inv)
	if allocs := testing.AllocsPerRun(200, func() { c.Invoke(ctx, ps, call, inv) }); allocs != 0 {
		t.Errorf("%v allocations per successful Invoke", allocs)
	}
}

// BenchmarkSelect measures each policy at 3, 30, 300 and 1,000 providers. The
// "baseline" policy is the cheapest possible choice (one uniform random
// index), for ratios.
func BenchmarkSelect(b *testing.B) {
	for _, n := range []int{3, 30, 300, 1000} {
		ps := benchProviders(n)
		b.Run(fmt.Sprintf("baseline/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var sink *Provider
			for b.Loop() {
				sink = ps[rand.IntN(len(ps))]
			}
			_ = sink
		})
		for _, name := range policyNames {
			stats := NewStats(StatsOptions{})
			p, err := NewPolicy(name, PolicyOptions{Stats: stats})
			if err != nil {
				b.Fatal(err)
			}
			call := &Call{Method: "getUser", HashKey: "user-12345"}
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					call.HashKey = hashKeys[i&255]
					p.Select(ps, call)
					i++
				}
			})
		}
	}
}

// BenchmarkRoundRobinSnapshot measures the first Select on a new snapshot
// of 1,000 providers (weights 100, 150, 200), one provider fewer or more
// than the previous one: carrying the current weights over by address and
// recording the 2,999-pick cycle that follows them.
func BenchmarkRoundRobinSnapshot(b *testing.B) {
	all := benchProviders(1000)
	p := mustPolicy(b, "roundrobin", PolicyOptions{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ps := slices.Clone(all[i%2:]) // a snapshot never seen
		p.Select(ps, nil)
		i++
	}
}

// BenchmarkRoundRobinFallback measures roundrobin where no cycle is
// recorded (1,000 providers of weights 100 and 101: 100,500 picks), so
// each Select runs Nginx's O(n) algorithm.
func BenchmarkRoundRobinFallback(b *testing.B) {
	ws := make([]int, 1000)
	for i := range ws {
		ws[i] = 100 + i%2
	}
	ps := newProviders(ws...)
	p := mustPolicy(b, "roundrobin", PolicyOptions{})
	b.ReportAllocs()
	for b.Loop() {
		p.Select(ps, nil)
	}
}

var hashKeys = func() (keys [256]string) {
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i*7919)
	}
	return keys
}()

// BenchmarkInvoke measures a whole successful Invoke (policy, stats,
// provider and route breakers) around an invoker that does nothing.
func BenchmarkInvoke(b *testing.B) {
	for _, n := range []int{3, 30, 300} {
		c, err := New(Options{Route: "bench", Policy: "random", Breaker: DefaultBreakerOptions(), RouteBreaker: DefaultBreakerOptions(), Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		ps := benchProviders(n)
		call := &Call{Method: "getUser"}
		inv := func(ctx context.Context, p *Provider) (any, error) { return nil, nil }
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				c.Invoke(ctx, ps, call, inv)
			}
		})
		c.Close()
	}
}

// TestRefusalsAllocateNothing: the errors Invoke returns without trying a
// provider (none listed, the route's breaker open) name the route, wrap
// their sentinel, and cost no allocation however many calls a dead route
// takes.
func TestRefusalsAllocateNothing(t *testing.T) {
	c := newCluster(t, Options{Route: "users", RouteBreaker: DefaultBreakerOptions()})
	ctx := context.Background()
	inv := func(ctx context.Context, p *Provider) (any, error) { return nil, nil }
	_, err := c.Invoke(ctx, nil, &Call{Method: "get"}, inv)
	if !errors.Is(err, ErrNoProvider) || err.Error() != "route users: no provider available" {
		t.Fatalf("no providers: %v", err)
	}
	for err, want := range map[error]string{&c.errRouteOpen: "route users: circuit breaker open", &c.errServiceOpen: "route users: the called service's circuit breaker open"} {
		if !errors.Is(err, ErrBreakerOpen) || err.Error() != want {
			t.Errorf("error %q, want %q wrapping ErrBreakerOpen", err, want)
		}
	}
	if raceEnabled {
		return // the race detector allocates
	}
	if allocs := testing.AllocsPerRun(200, func() { c.Invoke(ctx, nil, &Call{Method: "get"}, inv) }); allocs != 0 {
		t.Errorf("%v allocations per call refused for want of providers", allocs)
	}
}
