package admission

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
)

// virtualClock is the limiter's clock in simulations: time moves only when
// the simulation says so.
type virtualClock struct{ nanos atomic.Int64 }

func (c *virtualClock) now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *virtualClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }
func (c *virtualClock) elapsed() time.Duration  { return time.Duration(c.nanos.Load()) }

// backend is a simulated upstream: requests take base up to knee of them at
// once; beyond, they queue and latency grows in proportion (throughput is
// capped at knee/base).
type backend struct {
	base    time.Duration
	knee    int
	timeout bool // every request times out after a second (Dropped)
}

func (b backend) outcome(concurrent int) Outcome {
	if b.timeout {
		return Outcome{Latency: time.Second, Dropped: true}
	}
	if concurrent <= b.knee {
		return Outcome{Latency: b.base}
	}
	return Outcome{Latency: b.base * time.Duration(concurrent) / time.Duration(b.knee)}
}

// sim drives a limiter with more demand than it admits, in rounds: admit
// what the limiter takes, run those requests together for the backend's
// latency at that concurrency, release them all.
type sim struct {
	t       *testing.T
	l       *adaptive
	clock   *virtualClock
	demand  int
	history []limitAt
}

type limitAt struct {
	at    time.Duration
	limit int
}

func newSim(t *testing.T, cfg config.AdaptiveConcurrency) *sim {
	t.Helper()
	clock := &virtualClock{}
	clock.advance(time.Hour) // any start will do; not the zero time
	l, err := NewAdaptive(cfg, 0, clock.now)
	if err != nil {
		t.Fatalf("NewAdaptive(%+v): %v", cfg, err)
	}
	return &sim{t: t, l: l.(*adaptive), clock: clock, demand: 5000}
}

// run simulates at least d of virtual time, and at least one round,
// against b, checking the limit's bounds every round.
func (s *sim) run(b backend, d time.Duration) {
	s.t.Helper()
	end := s.clock.elapsed() + d
	releases := make([]func(Outcome), 0, s.demand)
	for first := true; first || s.clock.elapsed() < end; first = false {
		releases = releases[:0]
		for len(releases) < s.demand {
			release, ok := s.l.Acquire()
			if !ok {
				break
			}
			releases = append(releases, release)
		}
		if len(releases) == 0 {
			s.t.Fatalf("at %v: the limiter admitted nothing with nothing in flight", s.clock.elapsed())
		}
		o := b.outcome(len(releases))
		s.clock.advance(o.Latency)
		for _, release := range releases {
			release(o)
		}
		limit := s.l.Limit()
		if float64(limit) < s.l.minLimit || float64(limit) > s.l.maxLimit {
			s.t.Fatalf("at %v: limit %d is outside [%v, %v]", s.clock.elapsed(), limit, s.l.minLimit, s.l.maxLimit)
		}
		s.history = append(s.history, limitAt{s.clock.elapsed(), limit})
	}
}

// untilProbeEnds runs b until a no-load probe has started and ended, so that
// the next probe is a probeInterval away.
func (s *sim) untilProbeEnds(b backend) {
	s.t.Helper()
	deadline := s.clock.elapsed() + 2*probeInterval
	for s.l.gate.Load()&probingBit == 0 {
		s.run(b, 0)
		if s.clock.elapsed() > deadline {
			s.t.Fatal("no probe started within two probe intervals")
		}
	}
	for s.l.gate.Load()&probingBit != 0 {
		s.run(b, 0)
		if s.clock.elapsed() > deadline {
			s.t.Fatal("the probe did not end")
		}
	}
}

// limitsSince returns the lowest and highest limit seen in the last d.
func (s *sim) limitsSince(d time.Duration) (lowest, highest int) {
	from := s.clock.elapsed() - d
	lowest, highest = 1<<62, 0
	for _, h := range s.history {
		if h.at >= from {
			lowest, highest = min(lowest, h.limit), max(highest, h.limit)
		}
	}
	return lowest, highest
}

func (s *sim) expectBand(what string, d time.Duration, lo, hi int) {
	s.t.Helper()
	lowest, highest := s.limitsSince(d)
	if lowest < lo || highest > hi {
		s.t.Errorf("%s: limit ranged over [%d, %d] in the last %v, want within [%d, %d]", what, lowest, highest, d, lo, hi)
	}
}

func TestGradientConvergesNearTheKnee(t *testing.T) {
	b := backend{base: 10 * time.Millisecond, knee: 100}
	for _, tc := range []struct {
		tolerance float64
		lo, hi    int
	}{
		// The limit settles where latency is tolerance × no-load, less the
		// sqrt(limit) headroom: just past the knee with tolerance 1, near
		// twice it with 2 (latency doubles at twice the knee).
		{tolerance: 1, lo: 100, hi: 130},
		{tolerance: 2, lo: 160, hi: 210},
	} {
		s := newSim(t, config.AdaptiveConcurrency{Tolerance: tc.tolerance})
		s.run(b, 3*time.Minute)
		s.expectBand("tolerance "+strconv.FormatFloat(tc.tolerance, 'g', -1, 64), time.Minute, tc.lo, tc.hi)
	}
}

func TestGradientReachesItsBounds(t *testing.T) {
	s := newSim(t, config.AdaptiveConcurrency{MinLimit: 5, MaxLimit: 300})
	s.run(backend{base: 10 * time.Millisecond, knee: 1 << 20}, time.Minute)
	s.expectBand("a backend that never slows down", 20*time.Second, 300, 300)

	s = newSim(t, config.AdaptiveConcurrency{MinLimit: 5, MaxLimit: 300})
	s.run(backend{base: time.Millisecond, knee: 2}, 2*time.Minute)
	// Probes measure at min_limit (5), already past the knee, so the
	// no-load latency is 2.5ms: the limit settles where 10 + sqrt(limit)
	// = limit, about 14, far below the 300 allowed.
	s.expectBand("a backend saturated at 2", 30*time.Second, 5, 16)
}

func TestGradientDropsOnALatencySpikeAndRecovers(t *testing.T) {
	normal := backend{base: 10 * time.Millisecond, knee: 100}
	spike := backend{base: 50 * time.Millisecond, knee: 100}
	s := newSim(t, config.AdaptiveConcurrency{Tolerance: 1.5})
	s.run(normal, 2*time.Minute)
	s.expectBand("before the spike", 30*time.Second, 120, 170)

	s.untilProbeEnds(normal) // so that no probe relearns the spike as no-load latency
	s.run(spike, 10*time.Second)
	s.expectBand("end of the spike", 2*time.Second, 16, 20)

	s.run(normal, time.Minute)
	s.expectBand("after the spike", 20*time.Second, 120, 170)
}

func TestGradientRelearnsNoLoadLatencyAfterAPermanentShift(t *testing.T) {
	s := newSim(t, config.AdaptiveConcurrency{Tolerance: 1.5})
	normal := backend{base: 10 * time.Millisecond, knee: 100}
	s.run(normal, 2*time.Minute)
	s.untilProbeEnds(normal)
	// The upstream becomes three times slower at any concurrency, its
	// capacity in concurrent requests unchanged: after a probe the limit
	// is back where it was.
	slower := backend{base: 30 * time.Millisecond, knee: 100}
	s.run(slower, 10*time.Second)
	if _, highest := s.limitsSince(2 * time.Second); highest > 60 {
		t.Errorf("the limit stayed up to %d after latency tripled, want it cut", highest)
	}
	s.run(slower, 2*probeInterval+time.Minute)
	s.expectBand("a minute after a probe", 30*time.Second, 120, 170)
}

func TestGradientProbeOfATimingOutUpstreamKeepsTheLimitDown(t *testing.T) {
	s := newSim(t, config.AdaptiveConcurrency{Tolerance: 1.5})
	s.run(backend{base: 10 * time.Millisecond, knee: 100}, 2*time.Minute)
	// Every request times out for three probe intervals: a probe must not
	// take the timeout for the no-load latency and let the limit grow.
	s.run(backend{timeout: true}, 3*probeInterval)
	s.expectBand("an upstream that only times out", 2*probeInterval, 16, 20)
}

// TestProbeIgnoresRequestsAdmittedBeforeIt: requests in flight when a probe
// starts carry the queueing the probe measures without; their latency must
// not become the no-load latency.
func TestProbeIgnoresRequestsAdmittedBeforeIt(t *testing.T) {
	clock := &virtualClock{}
	l, err := NewAdaptive(config.AdaptiveConcurrency{MinLimit: 16, InitialLimit: 100, MaxLimit: 200}, 0, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	a := l.(*adaptive)
	cycle := func(n int, o Outcome) {
		t.Helper()
		for range n {
			release, ok := a.Acquire()
			if !ok {
				t.Fatalf("Acquire refused with %d in flight, limit %d", a.InFlight(), a.gate.Load()>>1)
			}
			clock.advance(o.Latency)
			release(o)
		}
	}
	fast := Outcome{Latency: 10 * time.Millisecond}
	cycle(windowSamples, fast) // the first probe
	if a.gate.Load()&probingBit != 0 || a.noLoad != bucketMidpoint(bucketOf(fast.Latency)) {
		t.Fatalf("after the first probe: probing %v, no-load %v; want false, ~%v", a.gate.Load()&probingBit != 0, a.noLoad, fast.Latency)
	}
	var held []func(Outcome)
	for range 50 {
		release, ok := a.Acquire()
		if !ok {
			t.Fatal("Acquire refused below the limit")
		}
		held = append(held, release)
	}
	clock.advance(probeInterval)
	cycle(windowSamples, fast) // closes a window past the probe time: the next probe starts
	if a.gate.Load()&probingBit == 0 {
		t.Fatal("no probe started a probe interval after the last")
	}
	if _, ok := a.Acquire(); ok {
		t.Fatal("a probe admitted a request with 50 in flight, above min_limit 16")
	}
	for _, release := range held {
		release(Outcome{Latency: 5 * time.Second})
	}
	probe := Outcome{Latency: 12 * time.Millisecond}
	cycle(windowSamples, probe)
	if a.gate.Load()&probingBit != 0 {
		t.Fatal("the probe did not end after a window of its own requests")
	}
	if want := bucketMidpoint(bucketOf(probe.Latency)); a.noLoad != want {
		t.Errorf("no-load latency after the probe = %v, want %v (the probe's own requests)", a.noLoad, want)
	}
	if a.Limit() < 100 || a.gate.Load()>>1 != int64(a.Limit()) {
		t.Errorf("after the probe: Limit() %d, admitting %d; want the learned limit (at least 100) back", a.Limit(), a.gate.Load()>>1)
	}
}

// TestAppLimitedTrafficDoesNotRaiseTheLimit: a limit that traffic never
// comes near learns nothing, so it must not grow toward max while idle.
func TestAppLimitedTrafficDoesNotRaiseTheLimit(t *testing.T) {
	for _, algo := range []string{"gradient", "aimd"} {
		s := newSim(t, config.AdaptiveConcurrency{Algorithm: algo, InitialLimit: 100, MaxLimit: 1000})
		s.demand = 10
		s.run(backend{base: 10 * time.Millisecond, knee: 1000}, time.Minute)
		s.expectBand(algo+" with 10 requests at a time", time.Minute, 100, 100)
		if st := s.l.Stats(); st.LimitIncreases != 0 {
			t.Errorf("%s: %d limit increases under app-limited traffic", algo, st.LimitIncreases)
		}
	}
}

func TestAIMDSettlesBelowTheLatencyTarget(t *testing.T) {
	// Latency passes the 100ms target beyond 500 concurrent requests.
	b := backend{base: 20 * time.Millisecond, knee: 100}
	s := newSim(t, config.AdaptiveConcurrency{Algorithm: "aimd", LatencyTarget: config.Duration(100 * time.Millisecond)})
	s.run(b, 2*time.Minute)
	s.expectBand("sawtooth under the target", 30*time.Second, 420, 520)
	st := s.l.Stats()
	if st.LimitIncreases == 0 || st.LimitDecreases == 0 {
		t.Errorf("Stats() = %+v: want both increases and decreases along the sawtooth", st)
	}
}

func TestAIMDCutsOnDropsAndRecovers(t *testing.T) {
	b := backend{base: 20 * time.Millisecond, knee: 100}
	s := newSim(t, config.AdaptiveConcurrency{Algorithm: "aimd", MinLimit: 16, MaxLimit: 1000})
	s.run(b, 2*time.Minute)
	s.run(backend{timeout: true}, 30*time.Second) // a window a second, each cut by aimdBackoff
	s.expectBand("after 30s of timeouts", time.Second, 16, 30)
	s.run(b, 3*time.Minute)
	s.expectBand("three minutes after the timeouts", 30*time.Second, 420, 520)
}

// TestAdaptiveUnderConcurrency drives a limiter from many goroutines with a
// clock that leaps on every release, so windows close and probes start
// while others acquire and release.
func TestAdaptiveUnderConcurrency(t *testing.T) {
	for _, algo := range []string{"gradient", "aimd"} {
		clock := &virtualClock{}
		l, err := NewAdaptive(config.AdaptiveConcurrency{Algorithm: algo, MinLimit: 2, InitialLimit: 4, MaxLimit: 16}, 0, clock.now)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				// Each worker holds up to 4 requests at once, so that traffic
				// presses on the limit (else it is app-limited and stays).
				held := make([]func(Outcome), 0, 4)
				for i := range 5000 {
					for len(held) < cap(held) {
						release, ok := l.Acquire()
						if !ok {
							break
						}
						held = append(held, release)
					}
					clock.advance(time.Millisecond)
					for j, release := range held {
						release(Outcome{Latency: time.Duration(1+(i+j+w)%20) * time.Millisecond, Dropped: (i+j)%997 == 0})
					}
					held = held[:0]
				}
			})
		}
		wg.Wait()
		if l.InFlight() != 0 {
			t.Errorf("%s: InFlight() = %d after every release", algo, l.InFlight())
		}
		if lim := l.Limit(); lim < 2 || lim > 16 {
			t.Errorf("%s: Limit() = %d outside [2, 16]", algo, lim)
		}
		if st := l.Stats(); st.LimitIncreases+st.LimitDecreases == 0 {
			t.Errorf("%s: the limit never changed in 40000 rounds: windows did not close", algo)
		}
	}
}

func TestAdaptiveStartsNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newSim(t, config.AdaptiveConcurrency{})
	s.run(backend{base: 10 * time.Millisecond, knee: 100}, 2*probeInterval)
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before, %d after building and running a limiter", before, after)
	}
}

func TestNewAdaptiveDefaults(t *testing.T) {
	for _, tc := range []struct {
		name              string
		cfg               config.AdaptiveConcurrency
		staticMax         int
		min, max, initial float64
		algorithm         algorithm
		tolerance         float64
		latencyTarget     time.Duration
	}{
		{"all defaults", config.AdaptiveConcurrency{}, 0, 16, 1000, 250, gradient, 2, 100 * time.Millisecond},
		{"max from the static limit", config.AdaptiveConcurrency{Algorithm: "aimd"}, 400, 16, 400, 100, aimd, 2, 100 * time.Millisecond},
		{"static limit below the default min", config.AdaptiveConcurrency{}, 10, 10, 10, 10, gradient, 2, 100 * time.Millisecond},
		{"max_limit below the default min", config.AdaptiveConcurrency{MaxLimit: 8}, 0, 8, 8, 8, gradient, 2, 100 * time.Millisecond},
		{"initial at least min", config.AdaptiveConcurrency{MinLimit: 50, MaxLimit: 100}, 0, 50, 100, 50, gradient, 2, 100 * time.Millisecond},
		{"explicit", config.AdaptiveConcurrency{Algorithm: "gradient", MinLimit: 2, MaxLimit: 20, InitialLimit: 7, Tolerance: 1.25, LatencyTarget: config.Duration(time.Second)},
			999, 2, 20, 7, gradient, 1.25, time.Second},
	} {
		l, err := NewAdaptive(tc.cfg, tc.staticMax, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		a := l.(*adaptive)
		if a.minLimit != tc.min || a.maxLimit != tc.max || a.estimate != tc.initial || a.Limit() != int(tc.initial) ||
			a.algorithm != tc.algorithm || a.tolerance != tc.tolerance || a.latencyTarget != tc.latencyTarget {
			t.Errorf("%s: got min %v max %v initial %v (Limit %d) algorithm %v tolerance %v target %v; want %v %v %v %v %v %v",
				tc.name, a.minLimit, a.maxLimit, a.estimate, a.Limit(), a.algorithm, a.tolerance, a.latencyTarget,
				tc.min, tc.max, tc.initial, tc.algorithm, tc.tolerance, tc.latencyTarget)
		}
	}
}

func TestNewAdaptiveRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  config.AdaptiveConcurrency
		want string
	}{
		{config.AdaptiveConcurrency{Algorithm: "vegas"}, `algorithm "vegas"`},
		{config.AdaptiveConcurrency{MinLimit: -1}, "want 1 <= min_limit (-1) <= max_limit (1000)"},
		{config.AdaptiveConcurrency{MinLimit: 50, MaxLimit: 10}, "want 1 <= min_limit (50) <= max_limit (10)"},
		{config.AdaptiveConcurrency{MinLimit: 10, MaxLimit: 100, InitialLimit: 101}, "initial_limit: must be within min_limit and max_limit, got 101"},
		{config.AdaptiveConcurrency{MinLimit: 10, MaxLimit: 100, InitialLimit: 5}, "initial_limit: must be within min_limit and max_limit, got 5"},
		{config.AdaptiveConcurrency{Tolerance: 0.9}, "tolerance: must be a finite number of at least 1 (a multiple of the no-load latency), got 0.9"},
		{config.AdaptiveConcurrency{LatencyTarget: config.Duration(-time.Second)}, "latency_target: must not be negative, got -1s"},
		{config.AdaptiveConcurrency{Tolerance: math.Inf(1)}, "tolerance: must be a finite number"},
	} {
		_, err := NewAdaptive(tc.cfg, 0, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "adaptive_concurrency: ") {
			t.Errorf("NewAdaptive(%+v) error = %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

func newTestAdaptive(t *testing.T, algo string) Limiter {
	t.Helper()
	l, err := NewAdaptive(config.AdaptiveConcurrency{Algorithm: algo}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSkippedOutcomesTeachNothing: releases marked Skipped (requests a
// narrower limit refused before any upstream) free their slot but do not
// move an adaptive limit; the same releases unmarked do.
func TestSkippedOutcomesTeachNothing(t *testing.T) {
	for _, algo := range []string{"gradient", "aimd"} {
		for _, skipped := range []bool{true, false} {
			clock := &virtualClock{}
			clock.advance(time.Hour)
			l, err := NewAdaptive(config.AdaptiveConcurrency{Algorithm: algo, MinLimit: 2, InitialLimit: 8, MaxLimit: 64,
				LatencyTarget: config.Duration(100 * time.Millisecond)}, 0, clock.now)
			if err != nil {
				t.Fatal(err)
			}
			// Rounds that fill the limit (so the traffic is not app-limited)
			// with fast, successful requests.
			var releases []func(Outcome)
			for range 1000 {
				releases = releases[:0]
				for {
					release, ok := l.Acquire()
					if !ok {
						break
					}
					releases = append(releases, release)
				}
				clock.advance(10 * time.Millisecond)
				for _, release := range releases {
					release(Outcome{Latency: time.Millisecond, Skipped: skipped})
				}
			}
			st := l.Stats()
			changed := st.LimitIncreases+st.LimitDecreases > 0
			if skipped && (changed || l.Limit() != 8) {
				t.Errorf("%s: skipped outcomes moved the limit to %d (%+v)", algo, l.Limit(), st)
			}
			if !skipped && !changed {
				t.Errorf("%s: 1,000 full rounds of fast outcomes did not move the limit (%+v): the test shows nothing", algo, st)
			}
			if l.InFlight() != 0 {
				t.Errorf("%s: %d in flight after every release", algo, l.InFlight())
			}
		}
	}
}
