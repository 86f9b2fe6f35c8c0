package admission

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/config"
)

// Fixed tuning, documented in the README.
const (
	// windowSamples is the fewest samples a window closes with; it also
	// lasts at least twice its predecessor's median latency, within
	// [minWindow, maxWindow], so a limit change shows in the next window.
	windowSamples = 20
	minWindow     = 100 * time.Millisecond
	maxWindow     = time.Second
	// clockEvery: past windowSamples, only every clockEvery-th release
	// reads the clock to see whether the window is due.
	clockEvery = 8
	// smoothing is the weight of a new gradient limit against the old one.
	smoothing = 0.2
	// minGradient bounds one window's cut, so outliers cannot collapse the limit.
	minGradient = 0.5
	// aimdBackoff multiplies the AIMD limit on a window with a drop or a
	// median above the target.
	aimdBackoff = 0.9
	// probeInterval is how often the gradient limiter drops to its minimum
	// limit for one window to measure the no-load latency again.
	probeInterval = time.Minute
)

type algorithm int

const (
	gradient algorithm = iota
	aimd
)

// probingBit is set in adaptive.gate while a no-load probe runs.
const probingBit = 1

// adaptive is an in-flight limit that follows measured latency. Acquire and
// release use atomics only; the release that finds a window due takes mu,
// once per window, to compute the next limit.
type adaptive struct {
	inFlight  atomic.Int64
	gate      atomic.Int64 // the admission limit << 1 | probingBit
	samples   atomic.Int64 // releases counted in the current window
	peak      atomic.Int64 // the highest in-flight count in the current window
	drops     atomic.Int64 // dropped outcomes in the current window
	windowEnd atomic.Int64 // when the current window may close, in ns since epoch
	latencies histogram

	limit     atomic.Int64 // the learned limit, as Limit reports it
	rejected  atomic.Uint64
	increases atomic.Uint64
	decreases atomic.Uint64

	// release and probeRelease are a.finish and a.finishProbe bound once, so
	// that Acquire does not allocate. probeRelease goes to requests admitted
	// during a probe, the only ones whose latency a probe may count.
	release, probeRelease func(Outcome)

	algorithm          algorithm
	minLimit, maxLimit float64
	tolerance          float64
	latencyTarget      time.Duration
	now                func() time.Time
	epoch              time.Time

	mu         sync.Mutex    // held by the release that closes a window
	estimate   float64       // the limit before rounding
	noLoad     time.Duration // gradient: median latency without queueing; 0 until measured
	lastMedian time.Duration
	nextProbe  time.Time
}

// NewAdaptive returns a limiter whose limit follows latency, by the
// algorithm cfg names ("gradient", the default, or "aimd"). staticMax is the
// static limit of the same scope (server.max_in_flight or the route's
// max_in_flight), the default max_limit when it is positive. now is the
// clock (time.Now when nil); tests pass a virtual one. The limiter starts
// no goroutine and needs no Close.
func NewAdaptive(cfg config.AdaptiveConcurrency, staticMax int, now func() time.Time) (Limiter, error) {
	if now == nil {
		now = time.Now
	}
	a := &adaptive{now: now}
	if err := a.configure(cfg, staticMax); err != nil {
		return nil, fmt.Errorf("adaptive_concurrency: %w", err)
	}
	a.release, a.probeRelease = a.finish, a.finishProbe
	a.epoch = now()
	a.limit.Store(int64(a.estimate))
	if a.algorithm == gradient {
		// Learn the no-load latency first: the first window is a probe.
		a.gate.Store(int64(a.minLimit)<<1 | probingBit)
	} else {
		a.gate.Store(int64(a.estimate) << 1)
		a.windowEnd.Store(int64(minWindow))
	}
	return a, nil
}

// configure applies cfg's defaults and checks it with config's own rules.
func (a *adaptive) configure(cfg config.AdaptiveConcurrency, staticMax int) error {
	cfg.Defaults(staticMax)
	if err := config.Check("", cfg.Validate); err != nil {
		return err
	}
	a.algorithm = gradient
	if cfg.Algorithm == "aimd" {
		a.algorithm = aimd
	}
	a.tolerance = cfg.Tolerance
	a.latencyTarget = cfg.LatencyTarget.D()
	a.minLimit, a.maxLimit, a.estimate = float64(cfg.MinLimit), float64(cfg.MaxLimit), float64(cfg.InitialLimit)
	return nil
}

func (a *adaptive) Acquire() (func(Outcome), bool) {
	gate := a.gate.Load()
	limit := gate >> 1
	for {
		n := a.inFlight.Load()
		if n >= limit {
			a.rejected.Add(1)
			return noRelease, false
		}
		if a.inFlight.CompareAndSwap(n, n+1) {
			if n+1 > a.peak.Load() {
				a.raisePeak(n + 1)
			}
			if gate&probingBit != 0 {
				return a.probeRelease, true
			}
			return a.release, true
		}
	}
}

func (a *adaptive) raisePeak(n int64) {
	for p := a.peak.Load(); n > p; p = a.peak.Load() {
		if a.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (a *adaptive) finish(o Outcome)      { a.record(o, false) }
func (a *adaptive) finishProbe(o Outcome) { a.record(o, true) }

// record releases one request and counts its outcome in the window,
// closing the window when it is due.
func (a *adaptive) record(o Outcome, admittedInProbe bool) {
	if a.inFlight.Add(-1) < 0 {
		panic(releasedTooOften)
	}
	if o.Skipped {
		return // no latency to learn from
	}
	probing := a.gate.Load()&probingBit != 0
	if probing && !admittedInProbe {
		return // admitted before the probe: its latency has the queueing the probe drains
	}
	a.latencies.add(o.Latency)
	if o.Dropped {
		a.drops.Add(1)
	}
	n := a.samples.Add(1)
	if n < windowSamples || (n-windowSamples)%clockEvery != 0 {
		return
	}
	if !probing && a.now().Sub(a.epoch) < time.Duration(a.windowEnd.Load()) {
		return
	}
	a.closeWindow()
}

// closeWindow computes the next limit from the window's samples. A release
// that finds another one closing the window leaves it to that one.
func (a *adaptive) closeWindow() {
	if !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	now := a.now()
	median, n := a.latencies.drainMedian()
	drops := a.drops.Swap(0)
	peak := a.peak.Swap(a.inFlight.Load())
	a.samples.Store(0)
	if n == 0 {
		return // drained by a window that closed just before
	}
	if a.gate.Load()&probingBit != 0 {
		a.endProbe(now, median, drops)
		return
	}
	a.lastMedian = median
	next := a.estimate
	switch a.algorithm {
	case gradient:
		next = a.gradientStep(median, peak)
	case aimd:
		next = a.aimdStep(median, drops, peak)
	}
	a.setEstimate(next)
	if a.algorithm == gradient && !now.Before(a.nextProbe) {
		a.startProbe()
		return
	}
	a.openWindow(now)
}

// gradientStep is Gradient2: the limit shrinks by how much the median
// exceeds tolerance × the no-load latency, and grows by sqrt(limit) while
// it does not.
func (a *adaptive) gradientStep(median time.Duration, peak int64) float64 {
	if median < a.noLoad || a.noLoad == 0 {
		a.noLoad = median
	}
	g := min(max(a.tolerance*float64(a.noLoad)/float64(median), minGradient), 1)
	target := a.estimate*g + math.Sqrt(a.estimate)
	if target > a.estimate && float64(peak) < a.estimate/2 {
		return a.estimate // app-limited: traffic never came near the limit, so it says nothing about it
	}
	return a.estimate*(1-smoothing) + target*smoothing
}

// aimdStep adds 1 after a window within the target without drops and
// multiplies by aimdBackoff after any other.
func (a *adaptive) aimdStep(median time.Duration, drops, peak int64) float64 {
	switch {
	case drops > 0 || median > a.latencyTarget:
		return a.estimate * aimdBackoff
	case float64(peak) < a.estimate/2:
		return a.estimate // app-limited
	default:
		return a.estimate + 1
	}
}

// setEstimate clamps and publishes the next limit, counting changes of its
// rounded value.
func (a *adaptive) setEstimate(next float64) {
	a.estimate = min(max(next, a.minLimit), a.maxLimit)
	old, limit := a.limit.Load(), int64(math.Round(a.estimate))
	switch {
	case limit > old:
		a.increases.Add(1)
	case limit < old:
		a.decreases.Add(1)
	}
	a.limit.Store(limit)
}

// startProbe admits at most minLimit requests until a window of requests
// admitted under it has been measured.
func (a *adaptive) startProbe() {
	a.gate.Store(int64(a.minLimit)<<1 | probingBit)
	a.latencies.drainMedian()
	a.samples.Store(0)
	a.drops.Store(0)
}

// endProbe takes the probe's median as the no-load latency and restores the
// learned limit. A probe that saw drops may lower the no-load latency but
// not raise it: a dependency that times out has no no-load latency to learn.
func (a *adaptive) endProbe(now time.Time, median time.Duration, drops int64) {
	if drops == 0 || a.noLoad == 0 || median < a.noLoad {
		a.noLoad = median
	}
	a.lastMedian = median
	a.nextProbe = now.Add(probeInterval)
	a.openWindow(now)
}

// openWindow starts a window at now and admits up to the learned limit.
func (a *adaptive) openWindow(now time.Time) {
	length := min(max(2*a.lastMedian, minWindow), maxWindow)
	a.windowEnd.Store(int64(now.Add(length).Sub(a.epoch)))
	a.gate.Store(a.limit.Load() << 1)
}

func (a *adaptive) Limit() int    { return int(a.limit.Load()) }
func (a *adaptive) InFlight() int { return int(a.inFlight.Load()) }
func (a *adaptive) Stats() Stats {
	return Stats{Rejected: a.rejected.Load(), LimitIncreases: a.increases.Load(), LimitDecreases: a.decreases.Load()}
}
