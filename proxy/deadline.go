package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineCtx is the context of one forwarded request: its parent (the
// client's request) with the upstream exchange's deadline added, at the
// price of a struct where context.WithTimeout costs a timer, a callback
// and a registration with the parent (seven allocations per request).
//
// The direct transport, which does most exchanges, never waits on Done:
// it puts the deadline on its connection and watches only the parent
// (see directTransport.exchange). Whatever does wait on Done, or derives
// a context from this one (the standard transport, an upgrade's wait, a
// retry on a new request), gets a real timer context, made then: from
// that moment this context is that one.
//
// It keeps the contract of a context: Err is nil until Done would be
// closed, and never changes once not nil. The caller ends it with
// release, as it would call the cancel of context.WithTimeout.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time // the earlier of the parent's and the timeout's

	released atomic.Bool
	real     atomic.Pointer[timerCtx] // once one was needed: made under mu
	mu       sync.Mutex               // orders making real with release
}

// timerCtx is the real timer context a deadlineCtx stands for.
type timerCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// init sets c to parent with a deadline timeout from now (or the parent's,
// if earlier).
func (c *deadlineCtx) init(parent context.Context, timeout time.Duration) {
	c.parent = parent
	c.deadline = time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
}

// release ends c, as the cancel of context.WithTimeout does.
func (c *deadlineCtx) release() {
	c.mu.Lock()
	c.released.Store(true)
	if t := c.real.Load(); t != nil {
		t.cancel()
	}
	c.mu.Unlock()
}

// realCtx returns the timer context c stands for, making it on first
// use. The request's path reads real without a lock: only the first
// use takes mu.
func (c *deadlineCtx) realCtx() context.Context {
	if t := c.real.Load(); t != nil {
		return t.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.real.Load(); t != nil {
		return t.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	if c.released.Load() {
		cancel()
	}
	c.real.Store(&timerCtx{ctx: ctx, cancel: cancel})
	return ctx
}

// Deadline implements context.Context.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context: it makes the timer context.
func (c *deadlineCtx) Done() <-chan struct{} { return c.realCtx().Done() }

// Err implements context.Context. Without a timer context it answers
// from the parent and the clock; once the deadline has passed (or c was
// released) it makes one, already ended, so that Done, Err and
// context.Cause agree from then on. The clock decides, not the timer:
// the direct transport's connection fails at the deadline, and the
// error it reports must be the deadline's even when a timer context,
// made earlier, has not fired yet (its timer is due: Err waits for it).
func (c *deadlineCtx) Err() error {
	if c.real.Load() == nil {
		if err := c.parent.Err(); err != nil {
			return err // as a child of parent would: ended with it
		}
		if !c.released.Load() && time.Now().Before(c.deadline) {
			return nil
		}
	}
	inner := c.realCtx()
	if err := inner.Err(); err != nil || time.Now().Before(c.deadline) {
		return err
	}
	<-inner.Done() // the deadline has passed: its timer is due
	return inner.Err()
}

// Value implements context.Context. Once the timer context exists it
// answers, so that a context derived from c (which calls Done first,
// making it) registers with it rather than watching c from a goroutine.
func (c *deadlineCtx) Value(key any) any {
	if t := c.real.Load(); t != nil {
		return t.ctx.Value(key)
	}
	return c.parent.Value(key)
}

func (c *deadlineCtx) String() string {
	return "proxy.deadlineCtx(" + c.deadline.String() + ")"
}
