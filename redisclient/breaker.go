package redisclient

import (
	"sync/atomic"
	"time"
)

// breaker fails commands at once while Redis keeps failing: maxFailures
// consecutive failures open it; after openFor one command goes through as
// a probe, and its outcome closes or reopens it. It is lock-free: every
// command consults it.
type breaker struct {
	maxFailures int64
	openFor     time.Duration
	onChange    func(state int32) // called by the goroutine that changed the state

	state    atomic.Int32 // stateClosed, stateOpen or stateProbing
	failures atomic.Int64 // consecutive failures while closed
	openedAt atomic.Int64 // UnixNano of the last opening
}

// allow reports whether a command may run now, and whether it is the probe
// of a half-open breaker. A caller given probe must report its outcome with
// succeeded, failed or abandoned.
func (b *breaker) allow(now time.Time) (ok, probe bool) {
	switch b.state.Load() {
	case stateClosed:
		return true, false
	case stateOpen:
		if now.UnixNano()-b.openedAt.Load() < int64(b.openFor) {
			return false, false
		}
		if b.state.CompareAndSwap(stateOpen, stateProbing) {
			b.onChange(stateProbing)
			return true, true
		}
	}
	return false, false
}

// succeeded records a command Redis answered.
func (b *breaker) succeeded(probe bool) {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	if probe {
		b.state.Store(stateClosed)
		b.onChange(stateClosed)
	}
}

// failed records a command Redis did not answer in time or at all.
func (b *breaker) failed(probe bool, now time.Time) {
	if probe {
		b.openedAt.Store(now.UnixNano())
		b.state.Store(stateOpen)
		b.onChange(stateOpen)
		return
	}
	if b.failures.Add(1) < b.maxFailures || b.state.Load() != stateClosed {
		return
	}
	// openedAt is written before the state so that no reader of the open
	// state sees an older opening time and probes early.
	b.openedAt.Store(now.UnixNano())
	if b.state.CompareAndSwap(stateClosed, stateOpen) {
		b.failures.Store(0)
		b.onChange(stateOpen)
	}
}

// probeSoon lets the next command probe at once when the breaker is open
// (Redis was heard from again).
func (b *breaker) probeSoon() {
	if b.state.Load() == stateOpen && b.openedAt.Load() != 0 {
		b.openedAt.Store(0)
	}
}

// abandoned gives back a probe that did not reach Redis (no pending slot,
// the caller gave up): the next command probes instead.
func (b *breaker) abandoned(probe bool) {
	if probe {
		b.state.Store(stateOpen)
		b.onChange(stateOpen)
	}
}

func (b *breaker) closed() bool { return b.state.Load() == stateClosed }
