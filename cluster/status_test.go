package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestOpenBreakersAndServiceBreaker: the counts of breakers not closed
// follow every transition, eviction included, and ServiceBreaker reports
// the breaker kept for a service, or none.
func TestOpenBreakersAndServiceBreaker(t *testing.T) {
	clock := testenv.NewFakeClock()
	c := newCluster(t, Options{
		Route:              "generic",
		Mode:               Failfast,
		Now:                clock.Now,
		ServiceBreaker:     BreakerOptions{ConsecutiveFailures: 1, CoolDown: 5 * time.Second},
		MaxServiceBreakers: 2,
	})
	dead1 := []*Provider{{Addr: "10.0.8.1:20880", Weight: 100}}
	dead2 := []*Provider{{Addr: "10.0.8.2:20880", Weight: 100}}
	live := []*Provider{{Addr: "10.0.9.1:20880", Weight: 100}}
	f := newFakeInvoker()
	f.set(dead1[0].Addr, errRefused)
	f.set(dead2[0].Addr, errRefused)
	call := func(ps []*Provider, service string, wantErr error) {
		t.Helper()
		clock.Advance(time.Millisecond) // distinct uses, for the eviction order
		if _, err := c.Invoke(context.Background(), ps, &Call{Service: service}, f.invoke); !errors.Is(err, wantErr) {
			t.Fatalf("call of %s on %s: %v, want %v", service, ps[0].Addr, err, wantErr)
		}
	}
	want := func(step string, o OpenBreakers) {
		t.Helper()
		if got := c.OpenBreakers(); got != o {
			t.Errorf("%s: OpenBreakers() = %+v, want %+v", step, got, o)
		}
	}
	state := func(service string) string {
		t.Helper()
		b, ok := c.ServiceBreaker(service)
		if !ok {
			return "none"
		}
		if b.Scope != ScopeService || b.Key != service {
			t.Errorf("ServiceBreaker(%q) = %+v", service, b)
		}
		return b.State.String()
	}

	want("new", OpenBreakers{})
	if s := state("a"); s != "none" {
		t.Errorf("a service never called has a breaker: %s", s)
	}
	call(dead1, "a", errRefused)
	want("a failed", OpenBreakers{Services: 1})
	call(live, "b", nil)
	if a, b := state("a"), state("b"); a != "open" || b != "closed" {
		t.Errorf("a %s, b %s; want open, closed", a, b)
	}
	call(dead2, "c", errRefused) // evicts b, the closed one
	want("c failed", OpenBreakers{Services: 2})
	if s := state("b"); s != "none" {
		t.Errorf("b evicted: %s", s)
	}
	call(live, "d", nil) // every one kept is open: evicts a, the least recently used
	want("a evicted open", OpenBreakers{Services: 1})
	if a, c := state("a"), state("c"); a != "none" || c != "open" {
		t.Errorf("a %s, c %s; want none, open", a, c)
	}
	clock.Advance(5 * time.Second)
	call(live, "c", nil) // its half-open probe succeeds
	want("c recovered", OpenBreakers{})
	if s := state("c"); s != "closed" {
		t.Errorf("c after its probe: %s", s)
	}

	// Provider breakers, and the route's: both dead providers are tried.
	r := newCluster(t, Options{Route: "one", Now: clock.Now,
		Breaker:      BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Minute},
		RouteBreaker: BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Minute}})
	dead := []*Provider{dead1[0], dead2[0]}
	if got := r.OpenBreakers(); got != (OpenBreakers{}) {
		t.Errorf("new route: %+v", got)
	}
	if _, err := r.Invoke(context.Background(), dead, nil, f.invoke); !errors.Is(err, errRefused) {
		t.Fatal(err)
	}
	if got := r.OpenBreakers(); got != (OpenBreakers{Route: true, Providers: 2}) {
		t.Errorf("both providers failed: %+v, want the route's and both providers' open", got)
	}
	if _, ok := r.ServiceBreaker("a"); ok {
		t.Error("a route without service breakers reports one")
	}
}
