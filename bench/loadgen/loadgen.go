// Package loadgen drives a call, over and over, against a service on the
// loopback interface and reports throughput, errors and latency
// percentiles.
//
// Two modes: ClosedLoop keeps N callers busy, each calling again as soon as
// its call returns (it finds peak throughput); OpenLoop sends calls at a fixed
// rate whatever the target does, and measures each call's latency from the
// time it was meant to be sent, so a target that stalls is charged for every
// call that had to wait (coordinated omission corrected, as wrk2). Both stop
// at a duration and at a number of calls, whichever comes first. Latencies go
// to fixed-memory log-linear histograms, one per caller, merged at the end:
// nothing is allocated per call by the generator itself.
package loadgen

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target is the call under load. It returns nil on success. It must return
// soon after ctx ends: that is how a run bounds calls still running when its
// time is up.
type Target func(ctx context.Context) error

// DefaultDrain is how long calls still running at the end of a run's
// duration are given before their ctx is cancelled, when Drain is zero.
const DefaultDrain = 5 * time.Second

// Result is what a run measured.
type Result struct {
	// Start is when the run began; open-loop call i was due at
	// Start + i/Rate.
	Start time.Time
	// Elapsed runs from Start until the last call returned.
	Elapsed time.Duration
	// OK and Errors count the calls made; OK+Errors is every call sent.
	OK, Errors uint64
	// Dropped counts open-loop calls that came due while MaxInFlight calls
	// were outstanding: they were never sent, and a non-zero count means the
	// target did not keep up with the rate (the percentiles then flatter it).
	Dropped uint64
	// FirstError is the first error a call returned, nil when none did.
	FirstError error
	// Latency holds the successful calls' latencies: in open loop from the
	// time each call was due (so it includes any wait for a free caller), in
	// closed loop from the time it was sent.
	Latency *Histogram
	// ServiceTime holds the successful calls' time from being sent to
	// returning. In closed loop it is the same histogram as Latency.
	ServiceTime *Histogram
	// ScheduleLag (open loop only, nil in closed loop) holds how late the
	// generator itself handed each call to its callers, dropped ones
	// included: its timer's resolution and its own share of the CPU. It is
	// part of Latency; when it is a large part, the generator is the limit.
	ScheduleLag *Histogram
}

// Throughput returns successful calls per second of Elapsed.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// String summarises r on one line.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ok, %d errors, %d dropped in %v: %.0f/s; latency p50 %v p90 %v p99 %v p99.9 %v max %v",
		r.OK, r.Errors, r.Dropped, r.Elapsed.Round(time.Millisecond), r.Throughput(),
		r.Latency.Quantile(0.50), r.Latency.Quantile(0.90), r.Latency.Quantile(0.99), r.Latency.Quantile(0.999), r.Latency.Max())
	if r.FirstError != nil {
		fmt.Fprintf(&b, "; first error: %v", r.FirstError)
	}
	return b.String()
}

// caller is one goroutine's tally, merged into the Result at the end.
type caller struct {
	latency    Histogram
	service    *Histogram // open loop only
	ok, errors uint64
	firstErr   error
	firstErrAt time.Duration // since the start, to pick the run's first error
}

func (c *caller) record(err error, at, latency, service time.Duration) {
	if err != nil {
		if c.errors == 0 {
			c.firstErr, c.firstErrAt = err, at
		}
		c.errors++
		return
	}
	c.ok++
	c.latency.Record(latency)
	if c.service != nil {
		c.service.Record(service)
	}
}

// merge folds the callers' tallies into r.
func merge(r *Result, callers []caller, open bool) {
	r.Latency = &Histogram{}
	r.ServiceTime = r.Latency
	if open {
		r.ServiceTime = &Histogram{}
	}
	var firstAt time.Duration
	for i := range callers {
		c := &callers[i]
		r.OK += c.ok
		r.Errors += c.errors
		r.Latency.Merge(&c.latency)
		if open {
			r.ServiceTime.Merge(c.service)
		}
		if c.firstErr != nil && (r.FirstError == nil || c.firstErrAt < firstAt) {
			r.FirstError, firstAt = c.firstErr, c.firstErrAt
		}
	}
}

// ClosedLoop runs Workers callers, each calling the target again as soon as
// its previous call returned, until Duration has passed or MaxRequests calls
// were started.
type ClosedLoop struct {
	// Workers is the number of concurrent callers (at least 1).
	Workers int
	// Duration bounds the run: no call starts after it (it must be > 0).
	Duration time.Duration
	// MaxRequests bounds the calls started, across callers (at least 1).
	MaxRequests int64
	// Drain is how long calls still running at Duration may take before
	// their ctx is cancelled. Zero means DefaultDrain.
	Drain time.Duration
}

// Run drives target until the duration or the call count is reached, or
// ctx ends, and returns what it measured. Its only error is an invalid
// configuration.
func (c ClosedLoop) Run(ctx context.Context, target Target) (*Result, error) {
	switch {
	case c.Workers < 1:
		return nil, fmt.Errorf("closed loop: %d workers, need at least 1", c.Workers)
	case c.Duration <= 0:
		return nil, fmt.Errorf("closed loop: duration %v, need more than 0", c.Duration)
	case c.MaxRequests < 1:
		return nil, fmt.Errorf("closed loop: max requests %d, need at least 1", c.MaxRequests)
	}
	start := time.Now()
	callCtx, cancel := context.WithDeadline(ctx, start.Add(c.Duration+drainOrDefault(c.Drain)))
	defer cancel()

	callers := make([]caller, c.Workers)
	var started atomic.Int64
	var wg sync.WaitGroup
	for i := range callers {
		w := &callers[i]
		wg.Go(func() {
			for started.Add(1) <= c.MaxRequests && callCtx.Err() == nil {
				sent := time.Since(start)
				if sent >= c.Duration {
					return
				}
				err := target(callCtx)
				done := time.Since(start)
				w.record(err, done, done-sent, 0)
			}
		})
	}
	wg.Wait()
	r := &Result{Start: start, Elapsed: time.Since(start)}
	merge(r, callers, false)
	return r, nil
}

// OpenLoop schedules calls at a fixed rate: call i is due at Start + i/Rate,
// for every i with i/Rate < Duration. Workers callers take the due calls in
// order; a call waits (in a queue bounded by MaxInFlight) while every caller
// is busy, and that wait counts in its latency. A call coming due while
// MaxInFlight calls are outstanding (queued or running) is dropped and
// counted, never queued: memory stays bounded however far the target falls
// behind.
type OpenLoop struct {
	// Rate is the number of calls per second (> 0).
	Rate float64
	// Duration is the span calls are scheduled over (> 0).
	Duration time.Duration
	// Workers is the number of concurrent callers (at least 1).
	Workers int
	// MaxInFlight bounds the calls due but not finished, queued or
	// running. Zero means Workers; otherwise it must be at least Workers.
	MaxInFlight int
	// Drain is how long calls still running at Duration may take before
	// their ctx is cancelled. Zero means DefaultDrain.
	Drain time.Duration
}

// maxOpenLoopCalls bounds the calls one open-loop run schedules.
const maxOpenLoopCalls = 1 << 32

// Calls returns the number of calls the run schedules.
func (o OpenLoop) Calls() int64 {
	if o.Rate <= 0 || o.Duration <= 0 {
		return 0
	}
	n := int64(o.Duration.Seconds() * o.Rate)
	for n > 0 && o.due(n-1) >= o.Duration {
		n--
	}
	for o.due(n) < o.Duration {
		n++
	}
	return n
}

// due returns when call i is due, from the start.
func (o OpenLoop) due(i int64) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / o.Rate)
}

// Run schedules the calls, waits for them to finish (calls still running
// Drain after Duration get their ctx cancelled) and returns what it
// measured. It stops scheduling when ctx ends. Its only error is an invalid
// configuration.
func (o OpenLoop) Run(ctx context.Context, target Target) (*Result, error) {
	if o.MaxInFlight == 0 {
		o.MaxInFlight = o.Workers
	}
	switch {
	case o.Rate <= 0:
		return nil, fmt.Errorf("open loop: rate %v per second, need more than 0", o.Rate)
	case o.Duration <= 0:
		return nil, fmt.Errorf("open loop: duration %v, need more than 0", o.Duration)
	case o.Workers < 1:
		return nil, fmt.Errorf("open loop: %d workers, need at least 1", o.Workers)
	case o.MaxInFlight < o.Workers:
		return nil, fmt.Errorf("open loop: max in flight %d is under the %d workers", o.MaxInFlight, o.Workers)
	}
	calls := o.Calls()
	if calls > maxOpenLoopCalls {
		return nil, fmt.Errorf("open loop: %d calls at %v/s over %v, over the limit of %d", calls, o.Rate, o.Duration, int64(maxOpenLoopCalls))
	}
	start := time.Now()
	callCtx, cancel := context.WithDeadline(ctx, start.Add(o.Duration+drainOrDefault(o.Drain)))
	defer cancel()

	// queue carries each call's due time; it never blocks the scheduler
	// because it holds at most inFlight <= MaxInFlight = cap(queue) calls.
	queue := make(chan time.Duration, o.MaxInFlight)
	var inFlight atomic.Int64
	callers := make([]caller, o.Workers)
	var wg sync.WaitGroup
	for i := range callers {
		w := &callers[i]
		w.service = &Histogram{}
		wg.Go(func() {
			for due := range queue {
				sent := time.Since(start)
				err := target(callCtx)
				done := time.Since(start)
				inFlight.Add(-1)
				w.record(err, done, done-due, done-sent)
			}
		})
	}

	var dropped uint64
	lag := &Histogram{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
schedule:
	for i := range calls {
		due := o.due(i)
		if wait := due - time.Since(start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				break schedule
			}
		} else if ctx.Err() != nil {
			break
		}
		lag.Record(time.Since(start) - due)
		// Only this goroutine adds, so the count cannot rise between the
		// check and the add.
		if inFlight.Load() >= int64(o.MaxInFlight) {
			dropped++
			continue
		}
		inFlight.Add(1)
		queue <- due
	}
	close(queue)
	wg.Wait()
	r := &Result{Start: start, Elapsed: time.Since(start), Dropped: dropped, ScheduleLag: lag}
	merge(r, callers, true)
	return r, nil
}

func drainOrDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultDrain
	}
	return d
}
