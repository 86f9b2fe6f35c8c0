package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

var (
	errRefused = errors.New("connection refused")
	errTimeout = errors.New("timed out")
	errBiz     = errors.New("com.example.DemoException: no such user")
)

func testClassify(err error) Class {
	switch {
	case errors.Is(err, errRefused):
		return NotExecuted
	case errors.Is(err, errBiz):
		return Business
	case errors.Is(err, context.Canceled):
		return Canceled
	}
	return MaybeExecuted
}

// fakeInvoker answers per provider address (success "ok <addr>" by default) and records the calls.
type fakeInvoker struct {
	mu     sync.Mutex
	calls  []string
	errors map[string]error
}

func newFakeInvoker() *fakeInvoker { return &fakeInvoker{errors: make(map[string]error)} }

func (f *fakeInvoker) set(addr string, err error) {
	f.mu.Lock()
	f.errors[addr] = err
	f.mu.Unlock()
}

func (f *fakeInvoker) invoke(ctx context.Context, p *Provider) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, p.Addr)
	if err := f.errors[p.Addr]; err != nil {
		return nil, fmt.Errorf("invoke %s: %w", p.Addr, err)
	}
	return "ok " + p.Addr, nil
}

func (f *fakeInvoker) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeInvoker) reset() {
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newCluster(t *testing.T, opts Options) *Cluster {
	t.Helper()
	if opts.Route == "" {
		opts.Route = "users"
	}
	if opts.Classify == nil {
		opts.Classify = testClassify
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func intp(n int) *int { return &n }

func TestInvokeSuccess(t *testing.T) {
	c := newCluster(t, Options{Policy: "roundrobin"})
	ps := newProviders(100, 100)
	f := newFakeInvoker()
	for _, want := range []string{"ok 10.0.0.1:20880", "ok 10.0.0.2:20880"} {
		v, err := c.Invoke(context.Background(), ps, &Call{Method: "getUser"}, f.invoke)
		if err != nil || v != want {
			t.Fatalf("Invoke = %v, %v; want %s", v, err, want)
		}
	}
	if a := c.Stats().Active(ps[0].Addr); a != 0 {
		t.Errorf("active after the call = %d", a)
	}
}

func TestFailover(t *testing.T) {
	ps := newProviders(100, 100, 100, 100)
	t.Run("retries on other providers", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		c := newCluster(t, Options{Metrics: NewMetrics(reg, MetricsOptions{}), IntN: seeded(10)})
		f := newFakeInvoker()
		for _, p := range ps {
			f.set(p.Addr, errRefused)
		}
		_, err := c.Invoke(context.Background(), ps, nil, f.invoke)
		calls := f.called()
		if len(calls) != 3 || calls[0] == calls[1] || calls[1] == calls[2] || calls[0] == calls[2] {
			t.Fatalf("attempts %v: want 3 on distinct providers (2 retries by default)", calls)
		}
		if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "3 attempts failed") || !strings.Contains(err.Error(), calls[0]) {
			t.Errorf("error %v", err)
		}
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_retries_total", map[string]string{"route": "users"}); got != 2 {
			t.Errorf("retries metric %v, want 2", got)
		}
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_selections_total", map[string]string{"route": "users", "policy": "random"}); got != 3 {
			t.Errorf("selections metric %v, want 3", got)
		}
	})
	t.Run("succeeds on the next provider", func(t *testing.T) {
		c := newCluster(t, Options{Policy: "roundrobin"})
		f := newFakeInvoker()
		f.set(ps[0].Addr, errRefused)
		v, err := c.Invoke(context.Background(), ps, nil, f.invoke)
		if err != nil || v != "ok "+ps[1].Addr {
			t.Fatalf("Invoke = %v, %v", v, err)
		}
	})
	t.Run("no more attempts than providers", func(t *testing.T) {
		c := newCluster(t, Options{Retries: intp(5)})
		f := newFakeInvoker()
		f.set(ps[0].Addr, errRefused)
		f.set(ps[1].Addr, errRefused)
		_, err := c.Invoke(context.Background(), ps[:2], nil, f.invoke)
		if n := len(f.called()); n != 2 || !errors.Is(err, errRefused) {
			t.Fatalf("%d attempts, error %v", n, err)
		}
	})
	t.Run("retries 0", func(t *testing.T) {
		c := newCluster(t, Options{Retries: intp(0)})
		f := newFakeInvoker()
		f.set(ps[0].Addr, errRefused)
		_, err := c.Invoke(context.Background(), ps[:1], nil, f.invoke)
		if n := len(f.called()); n != 1 || !errors.Is(err, errRefused) || strings.Contains(err.Error(), "attempts") {
			t.Fatalf("%d attempts, error %v", n, err)
		}
	})
	t.Run("maybe executed needs idempotent", func(t *testing.T) {
		f := newFakeInvoker()
		for _, p := range ps {
			f.set(p.Addr, errTimeout)
		}
		c := newCluster(t, Options{})
		if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); len(f.called()) != 1 || !errors.Is(err, errTimeout) {
			t.Fatalf("not idempotent: attempts %v, error %v", f.called(), err)
		}
		f.reset()
		c = newCluster(t, Options{Idempotent: true})
		if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); len(f.called()) != 3 || !errors.Is(err, errTimeout) {
			t.Fatalf("idempotent: attempts %v, error %v", f.called(), err)
		}
	})
	t.Run("business errors are not retried", func(t *testing.T) {
		c := newCluster(t, Options{Idempotent: true, Breaker: BreakerOptions{ConsecutiveFailures: 1}})
		f := newFakeInvoker()
		for _, p := range ps {
			f.set(p.Addr, errBiz)
		}
		_, err := c.Invoke(context.Background(), ps, nil, f.invoke)
		if len(f.called()) != 1 || !errors.Is(err, errBiz) || strings.Contains(err.Error(), "attempts") {
			t.Fatalf("attempts %v, error %v", f.called(), err)
		}
		for _, b := range c.Breakers() {
			if b.State != BreakerClosed {
				t.Errorf("a business error counted against %s: %+v", b.Key, b)
			}
		}
	})
	t.Run("canceled is not retried", func(t *testing.T) {
		c := newCluster(t, Options{Idempotent: true})
		f := newFakeInvoker()
		for _, p := range ps {
			f.set(p.Addr, context.Canceled)
		}
		if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); len(f.called()) != 1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("attempts %v, error %v", f.called(), err)
		}
	})
	t.Run("stops when the context is done", func(t *testing.T) {
		c := newCluster(t, Options{Idempotent: true})
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		_, err := c.Invoke(ctx, ps, nil, func(ctx context.Context, p *Provider) (any, error) {
			calls++
			cancel() // the client went away during the first attempt
			return nil, errTimeout
		})
		if calls != 1 || !errors.Is(err, errTimeout) {
			t.Fatalf("%d attempts, error %v", calls, err)
		}
	})
}

func TestFailfast(t *testing.T) {
	c := newCluster(t, Options{Mode: Failfast, Idempotent: true, Retries: intp(5)})
	ps := newProviders(100, 100, 100)
	f := newFakeInvoker()
	for _, p := range ps {
		f.set(p.Addr, errRefused)
	}
	if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); len(f.called()) != 1 || !errors.Is(err, errRefused) {
		t.Fatalf("attempts %v, error %v", f.called(), err)
	}
	if m, err := ParseMode("failfast"); err != nil || m != Failfast || m.String() != "failfast" {
		t.Errorf("ParseMode = %v, %v", m, err)
	}
	if _, err := ParseMode("failsafe"); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestNoProvider(t *testing.T) {
	c := newCluster(t, Options{})
	f := newFakeInvoker()
	if _, err := c.Invoke(context.Background(), nil, &Call{}, f.invoke); !errors.Is(err, ErrNoProvider) {
		t.Errorf("empty list: %v", err)
	}
	ps := newProviders(100, 100)
	readonly := &Call{Exclude: func(*Provider) bool { return true }}
	if _, err := c.Invoke(context.Background(), ps, readonly, f.invoke); !errors.Is(err, ErrNoProvider) || errors.Is(err, ErrBreakerOpen) {
		t.Errorf("all excluded by the caller: %v", err)
	}
	skipFirst := &Call{Exclude: func(p *Provider) bool { return p == ps[0] }}
	for range 20 {
		if v, err := c.Invoke(context.Background(), ps, skipFirst, f.invoke); err != nil || v != "ok "+ps[1].Addr {
			t.Fatalf("with the first excluded: %v, %v", v, err)
		}
	}
	if len(f.called()) != 20 {
		t.Errorf("calls %v", f.called())
	}
	// The caller's Exclude is asked about the chosen provider, not all of them.
	many := newProviders(100, 100, 100, 100, 100, 100, 100, 100, 100, 100)
	asked := 0
	counting := &Call{Exclude: func(*Provider) bool { asked++; return false }}
	for range 50 {
		if _, err := c.Invoke(context.Background(), many, counting, f.invoke); err != nil {
			t.Fatal(err)
		}
	}
	if asked != 50 {
		t.Errorf("Exclude called %d times for 50 calls", asked)
	}
}

func TestNewValidates(t *testing.T) {
	for _, opts := range []Options{
		{Policy: "fastest"},
		{Retries: intp(-1)},
		{Mode: Mode(7)},
		{Breaker: BreakerOptions{FailureRate: 1.5}},
		{RouteBreaker: BreakerOptions{ConsecutiveFailures: -1}},
	} {
		if c, err := New(opts); err == nil {
			c.Close()
			t.Errorf("New(%+v) accepted", opts)
		}
	}
}

// TestProviderBreaker takes a provider breaker through open, half-open
// and closed, and checks what the metrics show of it: by default, the
// route's count of open provider breakers and its transitions under key
// ""; with PerProvider, the breaker's own state and transitions under its
// address (and no more the count alone).
func TestProviderBreaker(t *testing.T) {
	for _, perProvider := range []bool{false, true} {
		t.Run(fmt.Sprintf("per_provider=%v", perProvider), func(t *testing.T) { testProviderBreaker(t, perProvider) })
	}
}

func testProviderBreaker(t *testing.T, perProvider bool) {
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	c := newCluster(t, Options{
		Mode:    Failfast,
		Policy:  "roundrobin",
		Now:     clock.Now,
		Metrics: NewMetrics(reg, MetricsOptions{PerProvider: perProvider}),
		Breaker: BreakerOptions{ConsecutiveFailures: 3, CoolDown: 10 * time.Second},
	})
	ps := newProviders(100, 100)
	a, b := ps[0].Addr, ps[1].Addr
	f := newFakeInvoker()
	f.set(a, errRefused)
	state := func(addr string) BreakerState {
		for _, s := range c.Breakers() {
			if s.Scope == ScopeProvider && s.Key == addr {
				return s.State
			}
		}
		t.Fatalf("no breaker for %s in %+v", addr, c.Breakers())
		return 0
	}
	key := "" // the transitions of all the route's provider breakers
	if perProvider {
		key = a
	}
	labels := func(to string) map[string]string {
		return map[string]string{"route": "users", "scope": "provider", "key": key, "to": to}
	}
	// checkState checks the exported state of a (-1: no series) and the
	// route's count of provider breakers not closed.
	checkState := func(want float64, open float64) {
		t.Helper()
		if !perProvider {
			want = -1 // one series per provider only when asked for
		}
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_state", map[string]string{"scope": "provider", "key": a}); got != want {
			t.Errorf("state gauge %v, want %v", got, want)
		}
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_provider_breakers_open", map[string]string{"route": "users"}); got != open {
			t.Errorf("provider breakers open: %v, want %v", got, open)
		}
	}
	checkState(-1, -1) // no breaker before the first call, and no count before a breaker changed
	// Round-robin alternates a, b: three failures on a in six calls.
	for range 6 {
		c.Invoke(context.Background(), ps, nil, f.invoke)
	}
	if state(a) != BreakerOpen || state(b) != BreakerClosed {
		t.Fatalf("states %+v", c.Breakers())
	}
	checkState(1, 1)
	// While open, a is left out: everything goes to b.
	f.reset()
	for range 10 {
		if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); err != nil {
			t.Fatal(err)
		}
	}
	for _, addr := range f.called() {
		if addr != b {
			t.Fatalf("open provider called: %v", f.called())
		}
	}
	// With only a, the call fails at once.
	f.reset()
	if _, err := c.Invoke(context.Background(), ps[:1], nil, f.invoke); !errors.Is(err, ErrBreakerOpen) || len(f.called()) != 0 {
		t.Fatalf("only open provider: %v, calls %v", err, f.called())
	}
	// After the cool-down a probe goes through; it fails: open again for another cool-down.
	clock.Advance(10 * time.Second)
	if _, err := c.Invoke(context.Background(), ps[:1], nil, f.invoke); !errors.Is(err, errRefused) {
		t.Fatalf("probe: %v", err)
	}
	if state(a) != BreakerOpen {
		t.Fatalf("after a failed probe: %v", state(a))
	}
	clock.Advance(9 * time.Second)
	if _, err := c.Invoke(context.Background(), ps[:1], nil, f.invoke); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("within the second cool-down: %v", err)
	}
	// The provider recovers: the next probe closes the breaker.
	clock.Advance(time.Second)
	f.set(a, nil)
	if _, err := c.Invoke(context.Background(), ps[:1], nil, f.invoke); err != nil {
		t.Fatalf("successful probe: %v", err)
	}
	if state(a) != BreakerClosed {
		t.Fatalf("after a successful probe: %v", state(a))
	}
	for to, want := range map[string]float64{"open": 2, "half_open": 2, "closed": 1} {
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_transitions_total", labels(to)); got != want {
			t.Errorf("transitions to %s: %v, want %v", to, got, want)
		}
	}
	checkState(0, 0)
	if !perProvider {
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_state", map[string]string{"scope": "provider"}); got != -1 {
			t.Errorf("a provider breaker's state exported without per-provider series: %v", got)
		}
	}
	c.Close()
	checkState(-1, -1)
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_transitions_total", map[string]string{"scope": "provider"}); got != -1 {
		t.Errorf("provider transitions kept after Close: %v", got)
	}
}

func TestBreakerFailureRate(t *testing.T) {
	clock := testenv.NewFakeClock()
	c := newCluster(t, Options{
		Mode:    Failfast,
		Now:     clock.Now,
		Breaker: BreakerOptions{FailureRate: 0.5, MinRequests: 10, Window: 10 * time.Second},
	})
	ps := newProviders(100)
	f := newFakeInvoker()
	call := func(err error) {
		f.set(ps[0].Addr, err)
		c.Invoke(context.Background(), ps, nil, f.invoke)
		clock.Advance(100 * time.Millisecond)
	}
	// Old failures slide out of the window.
	for range 9 {
		call(errRefused)
	}
	clock.Advance(10 * time.Second)
	for range 5 {
		call(nil)
	}
	for range 4 {
		call(errRefused)
	}
	st := c.Breakers()[0]
	if st.State != BreakerClosed || st.WindowRequests != 9 || st.WindowFailures != 4 {
		t.Fatalf("below the minimum: %+v", st)
	}
	call(errRefused) // 10 calls, 5 failed
	if st := c.Breakers()[0]; st.State != BreakerOpen || st.OpenUntil.IsZero() {
		t.Fatalf("at 50%%: %+v", st)
	}
}

func TestBreakerHalfOpenProbes(t *testing.T) {
	clock := testenv.NewFakeClock()
	c := newCluster(t, Options{
		Mode:    Failfast,
		Now:     clock.Now,
		Breaker: BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Second, HalfOpenProbes: 2},
	})
	ps := newProviders(100)
	f := newFakeInvoker()
	f.set(ps[0].Addr, errRefused)
	c.Invoke(context.Background(), ps, nil, f.invoke)
	clock.Advance(time.Second)

	// Two probes hold the provider; a third call is refused.
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	blocking := func(ctx context.Context, p *Provider) (any, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return "ok", nil
		case <-time.After(10 * time.Second):
			return nil, errors.New("test timed out")
		}
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Invoke(context.Background(), ps, nil, blocking)
			errs <- err
		}()
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("probes did not start")
		}
	}
	if st := c.Breakers()[0]; st.State != BreakerHalfOpen || st.ProbesInFlight != 2 {
		t.Fatalf("with two probes in flight: %+v", st)
	}
	if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("third call: %v", err)
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Breakers()[0]; st.State != BreakerClosed {
		t.Fatalf("after two successful probes: %+v", st)
	}
}

func TestBreakerHalfOpenNeedsAllProbes(t *testing.T) {
	clock := testenv.NewFakeClock()
	b := newBreaker(ScopeProvider, "a", BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Second, HalfOpenProbes: 2, MinRequests: 1, Window: time.Second}, nil)
	clk := func() *lazyClock { return &lazyClock{clock: clock.Now} }
	t0, _ := b.allow(clk())
	b.record(t0, true, clock.Now().UnixNano())
	clock.Advance(time.Second)
	p1, ok1 := b.allow(clk())
	p2, ok2 := b.allow(clk())
	if _, ok3 := b.allow(clk()); !ok1 || !ok2 || ok3 || !p1.probe || !p2.probe {
		t.Fatalf("probe admission %v %v %v", ok1, ok2, ok3)
	}
	b.record(p1, false, clock.Now().UnixNano())
	if b.state() != BreakerHalfOpen {
		t.Fatalf("one success of two closed it: %v", b.state())
	}
	// A canceled probe gives its slot back.
	b.release(p2)
	p3, ok := b.allow(clk())
	if !ok {
		t.Fatal("released slot not reusable")
	}
	b.record(p3, false, clock.Now().UnixNano())
	if b.state() != BreakerClosed {
		t.Fatalf("after two successes: %v", b.state())
	}
	// An outcome from before the transitions is ignored.
	b.record(t0, true, clock.Now().UnixNano())
	if b.state() != BreakerClosed {
		t.Fatalf("stale failure opened it: %v", b.state())
	}
}

func TestRouteBreaker(t *testing.T) {
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	c := newCluster(t, Options{
		Route:        "orders",
		Now:          clock.Now,
		Metrics:      NewMetrics(reg, MetricsOptions{}),
		RouteBreaker: BreakerOptions{ConsecutiveFailures: 2, CoolDown: 5 * time.Second},
	})
	ps := newProviders(100, 100, 100)
	f := newFakeInvoker()
	for _, p := range ps {
		f.set(p.Addr, errRefused)
	}
	for range 2 { // each call fails after its 3 attempts: 2 route failures
		if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); !errors.Is(err, errRefused) {
			t.Fatal(err)
		}
	}
	f.reset()
	if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); !errors.Is(err, ErrBreakerOpen) || len(f.called()) != 0 {
		t.Fatalf("open route: %v, calls %v", err, f.called())
	}
	st := c.Breakers()[0]
	if st.Scope != ScopeRoute || st.Key != "orders" || st.State != BreakerOpen {
		t.Fatalf("route breaker %+v", st)
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_state", map[string]string{"scope": "route", "key": "orders"}); got != 1 {
		t.Errorf("route state gauge %v", got)
	}
	// A business error is an answer: it closes the half-open route.
	clock.Advance(5 * time.Second)
	f.set(ps[0].Addr, errBiz)
	f.set(ps[1].Addr, errBiz)
	f.set(ps[2].Addr, errBiz)
	if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); !errors.Is(err, errBiz) {
		t.Fatal(err)
	}
	if st := c.Breakers()[0]; st.State != BreakerClosed {
		t.Fatalf("after the probe: %+v", st)
	}
	// No provider is not the route's failure.
	for range 3 {
		c.Invoke(context.Background(), nil, nil, f.invoke)
	}
	if st := c.Breakers()[0]; st.State != BreakerClosed {
		t.Fatalf("after no-provider calls: %+v", st)
	}
}

func TestBreakersAcrossSnapshots(t *testing.T) {
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	c := newCluster(t, Options{Mode: Failfast, Now: clock.Now, Metrics: NewMetrics(reg, MetricsOptions{PerProvider: true}), Breaker: BreakerOptions{ConsecutiveFailures: 1}})
	ps := newProviders(100, 100)
	f := newFakeInvoker()
	f.set(ps[0].Addr, errRefused)
	c.Invoke(context.Background(), ps[:1], nil, f.invoke)
	// A new snapshot with the same address keeps its open breaker.
	next := copyProviders(ps)
	if _, err := c.Invoke(context.Background(), next[:1], nil, f.invoke); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("new snapshot: %v", err)
	}
	// Once the address is in neither of the last two snapshots, its breaker and series go.
	c.Invoke(context.Background(), next[1:], nil, f.invoke)
	c.Invoke(context.Background(), copyProviders(next[1:]), nil, f.invoke)
	for _, st := range c.Breakers() {
		if st.Key == ps[0].Addr {
			t.Fatalf("breaker of a removed provider kept: %+v", c.Breakers())
		}
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_state", map[string]string{"key": ps[0].Addr}); got != -1 {
		t.Errorf("series of a removed provider kept: %v", got)
	}
	c.Close()
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_state", map[string]string{"key": ps[1].Addr}); got != -1 {
		t.Errorf("series kept after Close: %v", got)
	}
}

func TestMetricsSharedAcrossReload(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, MetricsOptions{PerProvider: true})
	opts := Options{Route: "users", Metrics: m, Logger: quietLogger(), Breaker: BreakerOptions{ConsecutiveFailures: 1}}
	old, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ps := newProviders(100)
	f := newFakeInvoker()
	old.Invoke(context.Background(), ps, nil, f.invoke)
	opts.Policy = "roundrobin"
	renewed, err := New(opts) // the reloaded route, with another policy
	if err != nil {
		t.Fatal(err)
	}
	renewed.Invoke(context.Background(), ps, nil, f.invoke)
	old.Close()
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_selections_total", map[string]string{"route": "users", "policy": "random"}); got != -1 {
		t.Errorf("old policy's selections after the old cluster closed: %v, want none", got)
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_selections_total", map[string]string{"route": "users", "policy": "roundrobin"}); got != 1 {
		t.Errorf("selections after the old cluster closed: %v, want 1", got)
	}
	old.Close() // twice: harmless
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_retries_total", map[string]string{"route": "users"}); got != 0 {
		t.Errorf("retries series after the old cluster closed twice: %v, want 0", got)
	}
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_breaker_state", map[string]string{"key": ps[0].Addr}); got != 0 {
		t.Errorf("breaker series after the old cluster closed: %v", got)
	}
	renewed.Close()
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_selections_total", map[string]string{"route": "users"}); got != -1 {
		t.Errorf("selections kept after both closed: %v", got)
	}
}

// TestProviderBreakersOpenCount: the route's count of open provider
// breakers follows them across a reload (the old cluster's leave the count
// when it closes, the new one's are its own) and across snapshots (a
// breaker dropped with its provider leaves it), and its series goes with
// the route's last cluster.
func TestProviderBreakersOpenCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, MetricsOptions{})
	opts := Options{Route: "users", Mode: Failfast, Policy: "roundrobin", Metrics: m, Logger: quietLogger(),
		Breaker: BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Hour}}
	open := func() float64 {
		return testenv.MetricValue(t, reg, "dubbogw_cluster_provider_breakers_open", map[string]string{"route": "users"})
	}
	ps := newProviders(100, 100, 100)
	f := newFakeInvoker()
	f.set(ps[0].Addr, errRefused)
	f.set(ps[1].Addr, errRefused)
	old, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // round robin: a, b fail
		old.Invoke(context.Background(), ps, nil, f.invoke)
	}
	if got := open(); got != 2 {
		t.Fatalf("open after a and b failed: %v, want 2", got)
	}
	renewed, err := New(opts) // the reloaded route: breakers of its own, closed
	if err != nil {
		t.Fatal(err)
	}
	defer renewed.Close()
	renewed.Invoke(context.Background(), ps, nil, f.invoke) // a fails
	if got := open(); got != 3 {
		t.Fatalf("open with both clusters: %v, want 3", got)
	}
	old.Close()
	if got := open(); got != 1 {
		t.Fatalf("open once the old cluster closed: %v, want 1 (the new cluster's)", got)
	}
	// a leaves the registry: once in neither of the last two snapshots,
	// its breaker is dropped and no longer counted.
	rest := copyProviders(ps[1:])
	renewed.Invoke(context.Background(), rest, nil, f.invoke)
	renewed.Invoke(context.Background(), copyProviders(rest), nil, f.invoke)
	if got := open(); got != 1 {
		t.Fatalf("open after a left and b failed: %v, want 1 (b)", got)
	}
	renewed.Invoke(context.Background(), copyProviders(ps[2:]), nil, f.invoke)
	renewed.Invoke(context.Background(), copyProviders(ps[2:]), nil, f.invoke)
	if got := open(); got != 0 {
		t.Fatalf("open after a and b left: %v, want 0", got)
	}
	renewed.Close()
	if got := open(); got != -1 {
		t.Errorf("count kept after the last cluster closed: %v", got)
	}
}

// TestInvokeConcurrent runs calls from many goroutines while the snapshot
// changes and providers fail, for the race detector, then checks the
// books balance.
func TestInvokeConcurrent(t *testing.T) {
	for _, policy := range []string{"random", "roundrobin", "leastactive", "consistenthash", "p2c"} {
		t.Run(policy, func(t *testing.T) {
			c := newCluster(t, Options{
				Policy:       policy,
				Idempotent:   true,
				Breaker:      BreakerOptions{ConsecutiveFailures: 3, CoolDown: time.Millisecond},
				RouteBreaker: BreakerOptions{FailureRate: 0.9, MinRequests: 1000},
			})
			snapshots := [][]*Provider{newProviders(100, 100, 100, 100), newProviders(100, 50, 100)}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 300 {
						ps := snapshots[(i/50+g)%2]
						c.Invoke(context.Background(), ps, &Call{HashKey: fmt.Sprint(i)}, func(ctx context.Context, p *Provider) (any, error) {
							if (i+g)%5 == 0 {
								return nil, errRefused
							}
							return "ok", nil
						})
					}
				})
			}
			wg.Wait()
			for _, ps := range snapshots {
				for _, p := range ps {
					if a := c.Stats().Active(p.Addr); a != 0 {
						t.Errorf("%s: %d calls still counted active", p.Addr, a)
					}
				}
			}
		})
	}
}

// TestMetricsCardinality: a route over 2,000 providers exports as many
// series as one over 100 (after the same calls, with some provider
// breakers open), unless per-provider series are asked for; then they
// grow with the providers.
func TestMetricsCardinality(t *testing.T) {
	series := func(perProvider bool, providers int) int {
		reg := prometheus.NewRegistry()
		c := newCluster(t, Options{
			Policy:       "roundrobin",
			Metrics:      NewMetrics(reg, MetricsOptions{PerProvider: perProvider}),
			Breaker:      BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Hour},
			RouteBreaker: DefaultBreakerOptions(),
		})
		ps := newProviders(slices.Repeat([]int{100}, providers)...)
		f := newFakeInvoker()
		for _, p := range ps {
			f.set(p.Addr, errRefused)
		}
		for range 4 { // 3 attempts each: 12 providers fail and open their breakers
			if _, err := c.Invoke(context.Background(), ps, nil, f.invoke); !errors.Is(err, errRefused) {
				t.Fatalf("%d providers: %v", providers, err)
			}
		}
		if got := testenv.MetricValue(t, reg, "dubbogw_cluster_provider_breakers_open", nil); got != 12 {
			t.Fatalf("%d providers: %v provider breakers open, want 12", providers, got)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range families {
			n += len(f.GetMetric())
		}
		return n
	}
	few, many := series(false, 100), series(false, 2000)
	if few != many {
		t.Errorf("default: %d series with 100 providers, %d with 2,000: want the same", few, many)
	}
	few, many = series(true, 100), series(true, 2000)
	if many < few+1900 {
		t.Errorf("per provider: %d series with 100 providers, %d with 2,000: want one more per provider at least", few, many)
	}
}

// TestRouteSeriesMadeAtFirstCall: a route's cluster exports nothing before
// its first call (thousands of routes nobody calls cost no series); the
// first call makes its selection series, and a breaker's state appears
// with its first change.
func TestRouteSeriesMadeAtFirstCall(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, MetricsOptions{})
	c, err := New(Options{Route: "users", Metrics: m, Logger: quietLogger(),
		Breaker: BreakerOptions{ConsecutiveFailures: 1}, RouteBreaker: BreakerOptions{ConsecutiveFailures: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		t.Errorf("before any call: %s exported (%d series)", f.GetName(), len(f.GetMetric()))
	}
	c.Invoke(context.Background(), newProviders(3), nil, newFakeInvoker().invoke)
	if got := testenv.MetricValue(t, reg, "dubbogw_cluster_selections_total", map[string]string{"route": "users"}); got != 1 {
		t.Errorf("selections after one call: %v, want 1", got)
	}
}

// TestSubsetsKeepBreakers: calls narrowed by governance rules to subsets
// of one snapshot (Call.Snapshot) keep the breakers of the snapshot's
// addresses however many subsets they alternate between; without
// Snapshot, an address in neither of the last two snapshots loses it.
func TestSubsetsKeepBreakers(t *testing.T) {
	var whole []*Provider
	for i := range 8 {
		whole = append(whole, &Provider{Addr: fmt.Sprintf("10.0.0.%d:20880", i+1), Weight: 100})
	}
	subset := func(i int) []*Provider { return []*Provider{whole[i]} } // a new slice each time: a new identity
	for _, withSnapshot := range []bool{true, false} {
		c, err := New(Options{Route: "r", Mode: Failfast, Breaker: BreakerOptions{ConsecutiveFailures: 1, CoolDown: time.Hour, HalfOpenProbes: 1}})
		if err != nil {
			t.Fatal(err)
		}
		call := func(ps []*Provider, fail bool) error {
			cl := &Call{Method: "m"}
			if withSnapshot {
				cl.Snapshot = whole
			}
			_, err := c.Invoke(context.Background(), ps, cl, func(context.Context, *Provider) (any, error) {
				if fail {
					return nil, errors.New("down")
				}
				return "ok", nil
			})
			return err
		}
		_ = call(subset(0), true) // opens 10.0.0.1's breaker
		for i := 1; i < len(whole); i++ {
			if err := call(subset(i), false); err != nil {
				t.Fatal(err)
			}
		}
		err = call(subset(0), false)
		if withSnapshot && !errors.Is(err, ErrBreakerOpen) {
			t.Errorf("with Snapshot: 10.0.0.1's breaker was lost after 7 other subsets: %v", err)
		}
		if !withSnapshot && err != nil {
			t.Errorf("without Snapshot: 10.0.0.1's breaker was expected dropped (in neither of the last two snapshots): %v", err)
		}
		c.Close()
	}
}
