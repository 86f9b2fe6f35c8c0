package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// BreakerState is the state of a circuit breaker.
type BreakerState int32

// Circuit breaker states.
const (
	// BreakerClosed lets every call through.
	BreakerClosed BreakerState = iota
	// BreakerOpen rejects calls until its cool-down has passed.
	BreakerOpen
	// BreakerHalfOpen lets a few probe calls through: their success closes
	// the breaker, a failure opens it again.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("BreakerState(%d)", int32(s))
}

// MarshalText writes the state's name (JSON in the admin API).
func (s BreakerState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// BreakerOptions configures a circuit breaker. A trigger set to 0 is off;
// with both triggers off the breaker never opens (the zero value). The
// other zero fields take their defaults.
type BreakerOptions struct {
	// ConsecutiveFailures opens the breaker after this many failed calls in a row.
	ConsecutiveFailures int
	// FailureRate (0 < rate ≤ 1) opens the breaker when the failed share of
	// the calls of the last Window reaches it, once MinRequests calls were seen.
	FailureRate float64
	// MinRequests is the fewest calls in Window for FailureRate to apply. Default 20.
	MinRequests int
	// Window is the rolling window of FailureRate (10 buckets). Default 10s.
	Window time.Duration
	// CoolDown is how long the breaker stays open before it lets probes through. Default 10s.
	CoolDown time.Duration
	// HalfOpenProbes is how many probe calls a half-open breaker lets through
	// at once; that many successes close it. Default 1.
	HalfOpenProbes int
}

// DefaultBreakerOptions returns recommended settings: open after 5
// consecutive failures or a 50% failure rate over 10s (at least 20 calls),
// for 10s, then one probe.
func DefaultBreakerOptions() BreakerOptions {
	return BreakerOptions{ConsecutiveFailures: 5, FailureRate: 0.5, MinRequests: 20, Window: 10 * time.Second, CoolDown: 10 * time.Second, HalfOpenProbes: 1}
}

// enabled reports whether a trigger is on.
func (o BreakerOptions) enabled() bool { return o.ConsecutiveFailures > 0 || o.FailureRate > 0 }

// normalize checks o and fills its defaults.
func (o BreakerOptions) normalize() (BreakerOptions, error) {
	switch {
	case o.ConsecutiveFailures < 0:
		return o, fmt.Errorf("consecutive failures %d is negative", o.ConsecutiveFailures)
	case o.FailureRate < 0 || o.FailureRate > 1:
		return o, fmt.Errorf("failure rate %g is not within (0, 1]", o.FailureRate)
	case o.MinRequests < 0 || o.Window < 0 || o.CoolDown < 0 || o.HalfOpenProbes < 0:
		return o, fmt.Errorf("min requests, window, cool-down and half-open probes must not be negative")
	}
	if o.MinRequests == 0 {
		o.MinRequests = 20
	}
	if o.Window == 0 {
		o.Window = 10 * time.Second
	}
	if o.Window < windowBuckets {
		return o, fmt.Errorf("window %s is too short", o.Window)
	}
	if o.CoolDown == 0 {
		o.CoolDown = 10 * time.Second
	}
	if o.HalfOpenProbes == 0 {
		o.HalfOpenProbes = 1
	}
	return o, nil
}

// BreakerStatus is the state of one circuit breaker, for the admin API.
type BreakerStatus struct {
	// Scope is "route" (the breaker over all of a route's calls),
	// "service" (over its calls of one service, on a route that calls
	// many) or "provider" (one provider address).
	Scope string `json:"scope"`
	// Key is the route name, the service key or the provider address.
	Key   string       `json:"key"`
	State BreakerState `json:"state"`
	// OpenUntil is when an open breaker lets probes through.
	OpenUntil           time.Time `json:"open_until,omitzero"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	WindowRequests      int       `json:"window_requests"`
	WindowFailures      int       `json:"window_failures"`
	ProbesInFlight      int       `json:"probes_in_flight,omitempty"`
}

// Breaker scopes.
const (
	ScopeRoute    = "route"
	ScopeService  = "service"
	ScopeProvider = "provider"
)

const windowBuckets = 10

// breaker is a circuit breaker. Its state is read with atomics (allow,
// available); outcomes are recorded under mu.
type breaker struct {
	opts       BreakerOptions
	scope, key string
	bucketNs   int64
	onChange   func(b *breaker, from, to BreakerState, now int64) // called under mu

	stateGen  atomic.Uint64 // generation<<2 | state; the generation changes with each transition
	openUntil atomic.Int64  // unix nanoseconds
	probes    atomic.Int32  // probes in flight while half-open

	mu          sync.Mutex
	detached    bool // dropped by its cluster: no longer in its count of open breakers
	consecutive int
	successes   int // successful probes while half-open
	// buckets are made at the first call counted: a gateway with
	// thousands of routes keeps a breaker for each, most never called.
	buckets *[windowBuckets]bucket
}

// bucket counts the calls of one slice of the failure-rate window.
type bucket struct {
	epoch              int64
	requests, failures int
}

// ticket is what allow hands a call through: it ties the outcome to the
// breaker generation that admitted the call, so late outcomes of calls
// admitted before a transition are ignored.
type ticket struct {
	gen   uint64
	probe bool
}

func newBreaker(scope, key string, opts BreakerOptions, onChange func(b *breaker, from, to BreakerState, now int64)) *breaker {
	return &breaker{opts: opts, scope: scope, key: key, bucketNs: int64(opts.Window) / windowBuckets, onChange: onChange}
}

func (b *breaker) state() BreakerState { return BreakerState(b.stateGen.Load() & 3) }

// allow reports whether a call may go through now, taking a probe slot when
// the breaker is half-open. The clock is read only when the breaker is not closed.
func (b *breaker) allow(clk *lazyClock) (ticket, bool) {
	for {
		sg := b.stateGen.Load()
		switch BreakerState(sg & 3) {
		case BreakerClosed:
			return ticket{gen: sg >> 2}, true
		case BreakerOpen:
			now := clk.get()
			if now < b.openUntil.Load() {
				return ticket{}, false
			}
			b.mu.Lock()
			if b.stateGen.Load() == sg {
				b.transitionLocked(BreakerHalfOpen, now)
			}
			b.mu.Unlock()
		case BreakerHalfOpen:
			for {
				n := b.probes.Load()
				if int(n) >= b.opts.HalfOpenProbes {
					return ticket{}, false
				}
				if b.probes.CompareAndSwap(n, n+1) {
					return ticket{gen: sg >> 2, probe: true}, true
				}
			}
		}
	}
}

// available reports whether allow would let a call through now, without taking anything.
func (b *breaker) available(clk *lazyClock) bool {
	switch b.state() {
	case BreakerOpen:
		return clk.get() >= b.openUntil.Load() // probe slots are reset when it turns half-open
	case BreakerHalfOpen:
		return int(b.probes.Load()) < b.opts.HalfOpenProbes
	}
	return true
}

// record counts the outcome of a call admitted with t.
func (b *breaker) record(t ticket, failed bool, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sg := b.stateGen.Load()
	if sg>>2 != t.gen {
		return // admitted before a transition: says nothing about the present state
	}
	switch BreakerState(sg & 3) {
	case BreakerClosed:
		if failed {
			b.consecutive++
		} else {
			b.consecutive = 0
		}
		tripped := b.opts.ConsecutiveFailures > 0 && b.consecutive >= b.opts.ConsecutiveFailures
		if b.opts.FailureRate > 0 {
			b.countLocked(now, failed)
			requests, failures := b.windowLocked(now)
			tripped = tripped || (requests >= b.opts.MinRequests && float64(failures) >= b.opts.FailureRate*float64(requests))
		}
		if tripped {
			b.transitionLocked(BreakerOpen, now)
		}
	case BreakerHalfOpen:
		if !t.probe {
			return
		}
		b.probes.Add(-1)
		if failed {
			b.transitionLocked(BreakerOpen, now)
			return
		}
		if b.successes++; b.successes >= b.opts.HalfOpenProbes {
			b.transitionLocked(BreakerClosed, now)
		}
	}
}

// release gives back what a call admitted with t held, recording no outcome
// (the caller went away: nothing to learn about the provider).
func (b *breaker) release(t ticket) {
	if !t.probe {
		return
	}
	b.mu.Lock()
	if b.stateGen.Load()>>2 == t.gen {
		b.probes.Add(-1)
	}
	b.mu.Unlock()
}

// transitionLocked moves the breaker to state to and resets its counters.
func (b *breaker) transitionLocked(to BreakerState, now int64) {
	sg := b.stateGen.Load()
	from := BreakerState(sg & 3)
	b.consecutive, b.successes = 0, 0
	if b.buckets != nil {
		*b.buckets = [windowBuckets]bucket{}
	}
	switch to {
	case BreakerOpen:
		b.openUntil.Store(now + int64(b.opts.CoolDown))
	case BreakerHalfOpen:
		b.probes.Store(0)
	}
	b.stateGen.Store((sg>>2+1)<<2 | uint64(to))
	if b.onChange != nil {
		b.onChange(b, from, to, now)
	}
}

func (b *breaker) countLocked(now int64, failed bool) {
	epoch := now / b.bucketNs
	if b.buckets == nil {
		b.buckets = new([windowBuckets]bucket)
	}
	bk := &b.buckets[epoch%windowBuckets]
	if bk.epoch != epoch {
		*bk = bucket{epoch: epoch}
	}
	bk.requests++
	if failed {
		bk.failures++
	}
}

// windowLocked sums the buckets of the window ending now.
func (b *breaker) windowLocked(now int64) (requests, failures int) {
	epoch := now / b.bucketNs
	if b.buckets == nil {
		return 0, 0
	}
	for _, bk := range b.buckets {
		if bk.epoch > epoch-windowBuckets && bk.epoch <= epoch {
			requests += bk.requests
			failures += bk.failures
		}
	}
	return requests, failures
}

// status reports the breaker's state.
func (b *breaker) status(now int64) BreakerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BreakerStatus{Scope: b.scope, Key: b.key, State: b.state(), ConsecutiveFailures: b.consecutive}
	if b.opts.FailureRate > 0 {
		s.WindowRequests, s.WindowFailures = b.windowLocked(now)
	}
	switch s.State {
	case BreakerOpen:
		s.OpenUntil = time.Unix(0, b.openUntil.Load()).UTC()
	case BreakerHalfOpen:
		s.ProbesInFlight = int(b.probes.Load())
	}
	return s
}
