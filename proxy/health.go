package proxy

import (
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// target is one address of an upstream, with its passive health state.
type target struct {
	url         *url.URL
	label       string // "<upstream> <url>", for exchange.Info.Upstream
	basePath    string // url path without its trailing slash
	escapedBase string // escaped form of basePath
	rawBase     bool   // basePath has an escaping of its own, which escapedBase keeps
	weight      int

	inFlight     atomic.Int64 // attempts whose response body is not closed yet
	failures     atomic.Int64 // consecutive failed attempts
	ejectedUntil atomic.Int64 // unix nanoseconds; 0 while not ejected
	probing      atomic.Bool  // a probe attempt holds the target

	mu      sync.Mutex    // serialises ejection and restoration
	backoff time.Duration // the next ejection time; guarded by mu

	series    targetSeries
	spanAttrs []attribute.KeyValue // of the client span of an attempt
}

// outcome is what an attempt says about its target's health.
type outcome int

const (
	outcomeSuccess outcome = iota
	outcomeFailure
	// outcomeNeutral says nothing about the target: the client went away or sent too much.
	outcomeNeutral
)

// pick chooses the target of the next attempt, avoiding the targets already
// tried while others remain. ejected reports the target was ejected when
// picked (a probe or a panic pick); probe reports the caller holds the
// target's probe slot and must report the attempt.
func (u *Upstream) pick(tried []*target) (t *target, ejected, probe bool) {
	if len(tried) == 0 && u.ejected.Load() == 0 {
		return u.policy.Select(u.targets), false, false
	}
	now := u.now().UnixNano()
	candidates := make([]*target, 0, len(u.targets))
	for _, t := range u.targets {
		if available(t, now) && !contains(tried, t) {
			candidates = append(candidates, t)
		}
	}
	if len(candidates) == 0 {
		for _, t := range u.targets {
			if available(t, now) {
				candidates = append(candidates, t)
			}
		}
	}
	for len(candidates) > 0 {
		t := u.policy.Select(candidates)
		if t.ejectedUntil.Load() == 0 {
			return t, false, false
		}
		if t.probing.CompareAndSwap(false, true) {
			if t.ejectedUntil.Load() == 0 { // restored meanwhile
				t.probing.Store(false)
				return t, false, false
			}
			return t, true, true
		}
		candidates = remove(candidates, t) // another request took the probe slot
	}
	// Panic mode: every target is ejected; spread over them rather than fail.
	u.series.panics.Inc()
	for _, t := range u.targets {
		if !contains(tried, t) {
			candidates = append(candidates, t)
		}
	}
	if len(candidates) == 0 {
		candidates = append(candidates, u.targets...)
	}
	t = u.policy.Select(candidates)
	return t, t.ejectedUntil.Load() != 0, false
}

// available reports whether t may take an attempt: not ejected, or its
// ejection time has passed and no probe is in flight.
func available(t *target, now int64) bool {
	until := t.ejectedUntil.Load()
	return until == 0 || (now >= until && !t.probing.Load())
}

func contains(targets []*target, t *target) bool {
	for _, x := range targets {
		if x == t {
			return true
		}
	}
	return false
}

func remove(targets []*target, t *target) []*target {
	for i, x := range targets {
		if x == t {
			return append(targets[:i], targets[i+1:]...)
		}
	}
	return targets
}

// report records the outcome of an attempt on t picked by pick.
func (u *Upstream) report(t *target, ejected, probe bool, o outcome) {
	switch o {
	case outcomeSuccess:
		if t.failures.Load() != 0 {
			t.failures.Store(0)
		}
		if ejected {
			u.restore(t)
		}
	case outcomeFailure:
		u.fail(t, probe)
	}
	if probe {
		t.probing.Store(false)
	}
}

// fail counts a failed attempt on t and ejects t when it reaches max_failures,
// or ejects it again for twice as long when the attempt was its probe.
func (u *Upstream) fail(t *target, probe bool) {
	n := t.failures.Add(1)
	if u.maxFailures == 0 {
		return
	}
	if !probe && (n < u.maxFailures || t.ejectedUntil.Load() != 0) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.ejectedUntil.Load() != 0:
		if !probe {
			return
		}
		t.backoff = min(2*t.backoff, u.maxEjection)
	case n < u.maxFailures:
		return
	default:
		u.ejected.Add(1)
		t.series.healthy.Set(0)
	}
	until := u.now().Add(t.backoff)
	t.ejectedUntil.Store(until.UnixNano())
	t.series.ejections.Inc()
	u.log.Warn("upstream target ejected", "upstream", u.name, "target", t.series.target,
		"consecutive_failures", n, "probe", probe, "until", until)
}

// restore puts an ejected t back in rotation and resets its ejection time.
func (u *Upstream) restore(t *target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ejectedUntil.Load() == 0 {
		return
	}
	t.ejectedUntil.Store(0)
	t.backoff = u.ejection
	u.ejected.Add(-1)
	t.series.healthy.Set(1)
	u.log.Info("upstream target restored", "upstream", u.name, "target", t.series.target)
}

// TargetStatus is the state of one target, for the admin API.
type TargetStatus struct {
	URL    string `json:"url"`
	Weight int    `json:"weight"`
	// State is "healthy", "ejected" or "probing" (ejected, with a probe request in flight).
	State string `json:"state"`
	// EjectedUntil is when an ejected target may take a probe request.
	EjectedUntil        time.Time `json:"ejected_until,omitzero"`
	ConsecutiveFailures int64     `json:"consecutive_failures"`
	InFlight            int64     `json:"in_flight"`
}

// Targets reports the state of each target, in configuration order.
func (u *Upstream) Targets() []TargetStatus {
	out := make([]TargetStatus, len(u.targets))
	for i, t := range u.targets {
		s := TargetStatus{
			URL:                 t.series.target,
			Weight:              t.weight,
			State:               "healthy",
			ConsecutiveFailures: t.failures.Load(),
			InFlight:            t.inFlight.Load(),
		}
		if until := t.ejectedUntil.Load(); until != 0 {
			s.State = "ejected"
			if t.probing.Load() {
				s.State = "probing"
			}
			s.EjectedUntil = time.Unix(0, until).UTC()
		}
		out[i] = s
	}
	return out
}
