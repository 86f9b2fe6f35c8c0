package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// testLogger logs at info level into the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// staticOf is a static registry listing one provider of each interface
// com.example.S0 … S<n-1>.
func staticOf(t *testing.T, n int) *Static {
	t.Helper()
	providers := make(map[string][]string, n)
	for i := range n {
		providers[fmt.Sprintf("com.example.S%d", i)] = []string{"127.0.0.1:20880"}
	}
	reg, err := NewStatic(providers)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestReferencesOnDemandNotRegistered: a name the registry's catalog does
// not list is refused from memory: no reference, no subscription.
func TestReferencesOnDemandNotRegistered(t *testing.T) {
	reg := staticOf(t, 1)
	c := NewReferences(reg, 100, time.Hour)
	defer c.Close()
	for i := range 1000 {
		r, err := c.OnDemand(context.Background(), refKey(1000+i))
		if r != nil || !errors.Is(err, ErrNotRegistered) {
			t.Fatalf("an interface nobody registered: %v, %v", r, err)
		}
	}
	if r, err := c.OnDemand(context.Background(), refKey(0)); err != nil || r == nil || len(r.Dir.Providers()) != 1 {
		t.Fatalf("a registered interface: %+v, %v", r, err)
	}
	if n := len(reg.Directories()); n != 1 {
		t.Errorf("%d directories, want the registered interface's", n)
	}
	if got := c.Refusals(); got != (Refusals{NotRegistered: 1000}) {
		t.Errorf("refusals %+v", got)
	}
}

// TestReferencesOnDemandPerSecond: new subscriptions beyond the per-second
// limit are refused until the bucket refills; services already subscribed
// are not limited.
func TestReferencesOnDemandPerSecond(t *testing.T) {
	reg := staticOf(t, 20)
	c := NewReferences(reg, 100, time.Hour)
	defer c.Close()
	c.SetLogger(testLogger(t))
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	c.SetOnDemandLimits(OnDemandLimits{PerSecond: 5, Max: 100})
	for i := range 5 {
		if _, err := c.OnDemand(context.Background(), refKey(i)); err != nil {
			t.Fatalf("new service %d of 5: %v", i, err)
		}
	}
	if _, err := c.OnDemand(context.Background(), refKey(5)); !errors.Is(err, ErrSubscribeRate) {
		t.Fatalf("the 6th new service within the second: %v", err)
	}
	for i := range 5 {
		if _, err := c.OnDemand(context.Background(), RefKey{Service: refKey(i).Service, Timeout: time.Minute}); err != nil {
			t.Fatalf("another reference to subscribed service %d: %v", i, err)
		}
	}
	now = now.Add(200 * time.Millisecond) // one more token
	if _, err := c.OnDemand(context.Background(), refKey(5)); err != nil {
		t.Fatalf("after 200ms: %v", err)
	}
	if _, err := c.OnDemand(context.Background(), refKey(6)); !errors.Is(err, ErrSubscribeRate) {
		t.Fatalf("no token left: %v", err)
	}
	if got := c.Refusals(); got != (Refusals{Rate: 2}) {
		t.Errorf("refusals %+v", got)
	}
	if n := c.OnDemandSubscriptions(); n != 6 {
		t.Errorf("%d on-demand subscriptions, want 6", n)
	}
}

// TestReferencesOnDemandMax: at most Max subscriptions made on demand are
// live; one the registry drops makes room again. A route's pinned
// service is not counted.
func TestReferencesOnDemandMax(t *testing.T) {
	reg := staticOf(t, 10)
	c := NewReferences(reg, 100, time.Hour)
	defer c.Close()
	c.SetLogger(testLogger(t))
	c.SetOnDemandLimits(OnDemandLimits{PerSecond: 1000, Max: 3})
	pinned := c.Pin(refKey(9))
	if _, err := c.OnDemand(context.Background(), refKey(9)); err != nil {
		t.Fatalf("a route's service: %v", err)
	}
	for i := range 3 {
		if _, err := c.OnDemand(context.Background(), refKey(i)); err != nil {
			t.Fatalf("new service %d of 3: %v", i, err)
		}
	}
	if _, err := c.OnDemand(context.Background(), refKey(3)); !errors.Is(err, ErrSubscribeMax) {
		t.Fatalf("a 4th: %v", err)
	}
	c.Unpin(pinned)
	c.SetLimits(3, time.Hour) // crowds the least recently used out; static: released at once
	if _, err := c.OnDemand(context.Background(), refKey(3)); err != nil {
		t.Fatalf("after an eviction: %v", err)
	}
	if got := c.Refusals(); got != (Refusals{Max: 1}) {
		t.Errorf("refusals %+v", got)
	}
}

// TestReferencesIdleReleasesAtOnce: an idle on-demand reference is evicted
// when it reaches the idle TTL, and its subscription released without the
// registry's grace period.
func TestReferencesIdleReleasesAtOnce(t *testing.T) {
	ds := &Directories{Grace: time.Hour}
	reg := &graceRegistry{dirs: ds}
	c := NewReferences(reg, 100, 50*time.Millisecond)
	defer c.Close()
	// Before the call: its last use is stamped inside OnDemand, and a busy
	// scheduler may take milliseconds to return from it.
	start := time.Now()
	r, err := c.OnDemand(context.Background(), refKey(1))
	if err != nil {
		t.Fatal(err)
	}
	for r.Dir.Live() {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the idle reference's subscription is still live after 10s (TTL 50ms, grace 1h)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("released after %v, before the idle TTL", d)
	}
	if c.Len() != 0 || ds.Len() != 0 {
		t.Errorf("%d references, %d directories left", c.Len(), ds.Len())
	}
}

// graceRegistry is a registry of empty directories with a grace period.
type graceRegistry struct{ dirs *Directories }

func (g *graceRegistry) Subscribe(key ServiceKey) *Directory { return g.dirs.Acquire(key) }
func (g *graceRegistry) Directories() []DirectoryStatus      { return g.dirs.Status() }
func (g *graceRegistry) SelectDirectories(f DirectoryFilter) ([]DirectoryStatus, int) {
	return g.dirs.Select(f)
}
func (g *graceRegistry) Status() Status { return Status{} }
func (g *graceRegistry) Close() error   { g.dirs.Close(); return nil }

// TestReferencesOnDemandFailsOpen: while the catalog cannot tell, OnDemand
// waits for it (bounded by ctx) and then subscribes as Get does; a
// catalog read meanwhile decides.
func TestReferencesOnDemandFailsOpen(t *testing.T) {
	reg := &catalogRegistry{graceRegistry: graceRegistry{dirs: &Directories{}}, wait: make(chan struct{})}
	c := NewReferences(reg, 100, time.Hour)
	defer c.Close()

	// Unreachable: nothing to wait for.
	reg.set(PresenceUnknown, nil)
	if r, err := c.OnDemand(context.Background(), refKey(1)); err != nil || r == nil {
		t.Fatalf("unknown, unreachable: %v, %v", r, err)
	}
	// Being read, and the call's time runs out: subscribes.
	reg.set(PresenceUnknown, reg.wait)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if r, err := c.OnDemand(ctx, refKey(2)); err != nil || r == nil {
		t.Fatalf("unknown until the call's deadline: %v, %v", r, err)
	}
	// Being read, then known: its answer decides.
	done := make(chan error, 1)
	go func() {
		_, err := c.OnDemand(context.Background(), refKey(3))
		done <- err
	}()
	reg.set(PresenceAbsent, nil)
	close(reg.wait)
	if err := <-done; !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("absent once read: %v", err)
	}
	if n := reg.dirs.Len(); n != 2 {
		t.Errorf("%d directories, want the two subscribed while the catalog could not tell", n)
	}
}

// catalogRegistry is a registry whose catalog says what the test sets.
type catalogRegistry struct {
	graceRegistry
	wait chan struct{}

	mu       sync.Mutex
	presence Presence
	waitOn   chan struct{}
}

func (c *catalogRegistry) set(p Presence, wait chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.presence, c.waitOn = p, wait
}

func (c *catalogRegistry) Lookup(string) (Presence, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.presence, c.waitOn
}
