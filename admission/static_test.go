package admission

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestStaticAdmitsExactlyTheLimit: of many simultaneous Acquires that all
// hold on, exactly limit succeed.
func TestStaticAdmitsExactlyTheLimit(t *testing.T) {
	const limit, callers = 10, 64
	l := NewStatic(limit)
	start := make(chan struct{})
	releases := make(chan func(Outcome), callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			<-start
			if release, ok := l.Acquire(); ok {
				releases <- release
			}
		})
	}
	close(start)
	wg.Wait()
	close(releases)
	if got := len(releases); got != limit {
		t.Fatalf("admitted %d of %d callers, want exactly %d", got, callers, limit)
	}
	if got := l.InFlight(); got != limit {
		t.Errorf("InFlight() = %d, want %d", got, limit)
	}
	if got := l.Stats().Rejected; got != callers-limit {
		t.Errorf("Stats().Rejected = %d, want %d", got, callers-limit)
	}
	for release := range releases {
		release(Outcome{})
	}
	if got := l.InFlight(); got != 0 {
		t.Errorf("InFlight() after releasing all = %d, want 0", got)
	}
	if _, ok := l.Acquire(); !ok {
		t.Error("Acquire refused after every request was released")
	}
}

// TestStaticNeverExceedsTheLimitUnderChurn: callers acquiring and releasing
// concurrently never have more than limit requests running together.
func TestStaticNeverExceedsTheLimitUnderChurn(t *testing.T) {
	const limit, callers, rounds = 1, 8, 20000
	l := NewStatic(limit)
	var running, highest, admitted, refused, over atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range rounds {
				release, ok := l.Acquire()
				if !ok {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				if n := int64(l.InFlight()); n > limit {
					over.Add(1)
				}
				n := running.Add(1)
				for h := highest.Load(); n > h && !highest.CompareAndSwap(h, n); h = highest.Load() {
				}
				running.Add(-1)
				release(Outcome{})
			}
		})
	}
	wg.Wait()
	if h := highest.Load(); h > limit {
		t.Errorf("%d requests ran together, limit %d", h, limit)
	}
	if n := over.Load(); n > 0 {
		t.Errorf("%d times an admitted request saw more than %d in flight", n, limit)
	}
	if got := l.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d after all released, want 0", got)
	}
	if admitted.Load()+refused.Load() != callers*rounds {
		t.Errorf("admitted %d + refused %d != %d calls", admitted.Load(), refused.Load(), callers*rounds)
	}
	if got := l.Stats().Rejected; got != uint64(refused.Load()) {
		t.Errorf("Stats().Rejected = %d, callers saw %d refusals", got, refused.Load())
	}
}

func TestStaticUnlimitedCountsButNeverRefuses(t *testing.T) {
	for _, limit := range []int{0, -5} {
		l := NewStatic(limit)
		var releases []func(Outcome)
		for range 1000 {
			release, ok := l.Acquire()
			if !ok {
				t.Fatalf("NewStatic(%d) refused a request", limit)
			}
			releases = append(releases, release)
		}
		if l.Limit() != 0 || l.InFlight() != 1000 {
			t.Errorf("NewStatic(%d): Limit() = %d, InFlight() = %d; want 0, 1000", limit, l.Limit(), l.InFlight())
		}
		for _, r := range releases {
			r(Outcome{})
		}
		if l.InFlight() != 0 {
			t.Errorf("NewStatic(%d): InFlight() = %d after releases, want 0", limit, l.InFlight())
		}
	}
}

func TestRefusalReturnsANoOpRelease(t *testing.T) {
	l := NewStatic(1)
	release, ok := l.Acquire()
	if !ok {
		t.Fatal("first Acquire refused")
	}
	refusedRelease, ok := l.Acquire()
	if ok {
		t.Fatal("second Acquire admitted beyond limit 1")
	}
	refusedRelease(Outcome{}) // must not free the admitted request's slot
	if l.InFlight() != 1 {
		t.Fatalf("InFlight() = %d after calling a refusal's release, want 1", l.InFlight())
	}
	release(Outcome{})
}

func TestReleasingTwicePanics(t *testing.T) {
	for name, l := range map[string]Limiter{"static": NewStatic(3), "adaptive": newTestAdaptive(t, "gradient")} {
		release, _ := l.Acquire()
		release(Outcome{})
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a second release did not panic", name)
				}
			}()
			release(Outcome{})
		}()
	}
}
