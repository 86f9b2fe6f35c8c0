// Package admission decides whether a request may start: it keeps an
// in-flight limit, static or learned from latency (gradient or AIMD), and
// refuses at once what is beyond it, so the gateway sheds instead of queueing.
package admission

import "time"

// Outcome is how an admitted request ended, reported to its release.
type Outcome struct {
	// Latency is the time from admission to the end of the request.
	Latency time.Duration
	// Dropped marks a request that timed out or was shed downstream; AIMD
	// cuts its limit on it.
	Dropped bool
	// Skipped marks a request that never reached an upstream (refused by a
	// narrower limit, say): it frees its slot but says nothing about
	// latency, so an adaptive limit does not learn from it.
	Skipped bool
}

// Limiter admits requests up to an in-flight limit. Its methods are safe for
// concurrent use. Acquire and release do not allocate and take no lock,
// except that the one release that closes an adaptive limiter's sample
// window (once per window) computes the next limit under a mutex.
type Limiter interface {
	// Acquire admits a request or refuses it at once (never waits). The
	// returned release must be called exactly once when the request ends,
	// with the request's outcome for adaptive limiters. When ok is false,
	// release is a no-op.
	Acquire() (release func(outcome Outcome), ok bool)
	// Limit is the current limit; 0 means unlimited.
	Limit() int
	// InFlight is the number of admitted requests not yet released.
	InFlight() int
	// Stats are the limiter's counters since it was made.
	Stats() Stats
}

// Stats are a limiter's cumulative counters, read by Metrics at scrape time.
type Stats struct {
	// Rejected counts Acquire calls refused.
	Rejected uint64
	// LimitIncreases and LimitDecreases count changes of the limit
	// (adaptive limiters only).
	LimitIncreases, LimitDecreases uint64
}

// noRelease is what Acquire returns with a refusal.
func noRelease(Outcome) {}

// releasedTooOften is the panic of a release called more often than Acquire
// succeeded: the in-flight count would go negative and admit too much.
const releasedTooOften = "admission: release called more times than Acquire admitted"
