package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// TestServiceBreakersIsolateServices: on a route that reaches many
// services (a pass-through), the failures of one service open its own
// breaker; the others' calls still reach their providers.
func TestServiceBreakersIsolateServices(t *testing.T) {
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	c := newCluster(t, Options{
		Route:          "generic",
		Mode:           Failfast,
		Now:            clock.Now,
		Metrics:        NewMetrics(reg, MetricsOptions{}),
		ServiceBreaker: BreakerOptions{ConsecutiveFailures: 3, CoolDown: 5 * time.Second},
	})
	dead, live := newProviders(100), []*Provider{{Addr: "10.0.9.1:20880", Weight: 100}, {Addr: "10.0.9.2:20880", Weight: 100}}
	f := newFakeInvoker()
	f.set(dead[0].Addr, errRefused)
	deadCall, liveCall := &Call{Service: "com.example.Dead"}, &Call{Service: "com.example.Live"}
	for range 3 {
		if _, err := c.Invoke(context.Background(), dead, deadCall, f.invoke); !errors.Is(err, errRefused) {
			t.Fatal(err)
		}
	}
	f.reset()
	if _, err := c.Invoke(context.Background(), dead, deadCall, f.invoke); !errors.Is(err, ErrBreakerOpen) || len(f.called()) != 0 {
		t.Fatalf("the failing service: %v, calls %v; want its breaker open, no call", err, f.called())
	}
	for range 10 {
		if _, err := c.Invoke(context.Background(), live, liveCall, f.invoke); err != nil {
			t.Fatalf("another service behind the same route: %v", err)
		}
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_service_breakers_open", map[string]string{"route": "generic"}); got != 1 {
		t.Errorf("open service breakers gauge %v, want 1", got)
	}
	bs := c.Breakers()
	if len(bs) != 1 || bs[0].Scope != ScopeService || bs[0].Key != "com.example.Dead" || bs[0].State != BreakerOpen {
		t.Errorf("Breakers() = %+v, want the one open service breaker (closed ones are not listed)", bs)
	}
	// Without a service key, a call has no service breaker.
	if _, err := c.Invoke(context.Background(), live, &Call{}, f.invoke); err != nil {
		t.Fatal(err)
	}
	// Recovery: after the cool-down a probe closes it.
	clock.Advance(5 * time.Second)
	f.reset()
	if _, err := c.Invoke(context.Background(), dead, deadCall, f.invoke); !errors.Is(err, errRefused) || len(f.called()) != 1 {
		t.Fatalf("half-open probe: %v, calls %v", err, f.called())
	}
}

// TestServiceBreakersBounded: past the bound, new services evict the least
// recently used closed breakers first, and open ones survive a flood of
// new names; the open gauge stays right when an open one is evicted.
func TestServiceBreakersBounded(t *testing.T) {
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	c := newCluster(t, Options{
		Route:              "generic",
		Mode:               Failfast,
		Now:                clock.Now,
		Metrics:            NewMetrics(reg, MetricsOptions{}),
		ServiceBreaker:     BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Minute},
		MaxServiceBreakers: 4,
	})
	dead, live := newProviders(100), []*Provider{{Addr: "10.0.9.1:20880", Weight: 100}}
	f := newFakeInvoker()
	f.set(dead[0].Addr, errRefused)
	open := &Call{Service: "open"}
	c.Invoke(context.Background(), dead, open, f.invoke)
	for i := range 20 { // a flood of new names
		clock.Advance(time.Millisecond)
		c.Invoke(context.Background(), live, &Call{Service: fmt.Sprint("s", i)}, f.invoke)
	}
	if n := c.services.len(); n != 4 {
		t.Errorf("%d service breakers kept, want the bound 4", n)
	}
	if _, err := c.Invoke(context.Background(), dead, open, f.invoke); !errors.Is(err, ErrBreakerOpen) {
		t.Errorf("the open breaker was evicted by new names: %v", err)
	}
	// Every breaker open: the least recently used goes, and stops counting.
	for i := range 4 {
		clock.Advance(time.Millisecond)
		c.Invoke(context.Background(), dead, &Call{Service: fmt.Sprint("d", i)}, f.invoke)
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_service_breakers_open", map[string]string{"route": "generic"}); got != 4 {
		t.Errorf("open service breakers gauge %v, want 4 (the bound, all open)", got)
	}
}

// TestServiceBreakersOpenAcrossReload: when a reload replaces a route's
// cluster, the open service breakers of the old one leave the route's
// count as it closes; the new cluster's are counted alone.
func TestServiceBreakersOpenAcrossReload(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := Options{Route: "generic", Mode: Failfast, Metrics: NewMetrics(reg, MetricsOptions{}), Logger: quietLogger(),
		ServiceBreaker: BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Hour}}
	open := func() float64 {
		return testenv.MetricValue(t, reg, "dubbogw_cluster_service_breakers_open", map[string]string{"route": "generic"})
	}
	dead := newProviders(100)
	f := newFakeInvoker()
	f.set(dead[0].Addr, errRefused)
	old, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	old.Invoke(context.Background(), dead, &Call{Service: "a"}, f.invoke)
	old.Invoke(context.Background(), dead, &Call{Service: "b"}, f.invoke)
	renewed, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer renewed.Close()
	renewed.Invoke(context.Background(), dead, &Call{Service: "a"}, f.invoke)
	if got := open(); got != 3 {
		t.Fatalf("open with both clusters: %v, want 3", got)
	}
	old.Close()
	if got := open(); got != 1 {
		t.Errorf("open once the old cluster closed: %v, want 1 (the new cluster's)", got)
	}
}
