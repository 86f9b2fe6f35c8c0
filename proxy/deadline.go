package proxy

import (
	"context"
	"sync"
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

	mu       sync.Mutex
	inner    context.Context // the real timer context, once one was needed
	cancel   context.CancelFunc
	released bool
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
	c.released = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

// realLocked returns the timer context c stands for, making it on first
// use. c.mu is held.
func (c *deadlineCtx) realLocked() context.Context {
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.released {
			c.cancel()
		}
	}
	return c.inner
}

// Deadline implements context.Context.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context: it makes the timer context.
func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.realLocked().Done()
}

// Err implements context.Context. Without a timer context it answers
// from the parent and the clock; once the deadline has passed (or c was
// released) it makes one, already ended, so that Done, Err and
// context.Cause agree from then on. The clock decides, not the timer:
// the direct transport's connection fails at the deadline, and the
// error it reports must be the deadline's even when a timer context,
// made earlier, has not fired yet (its timer is due: Err waits for it).
func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	if c.inner == nil {
		if err := c.parent.Err(); err != nil {
			c.mu.Unlock()
			return err // as a child of parent would: ended with it
		}
		if !c.released && time.Now().Before(c.deadline) {
			c.mu.Unlock()
			return nil
		}
	}
	inner := c.realLocked()
	c.mu.Unlock()
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
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner != nil {
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

func (c *deadlineCtx) String() string {
	return "proxy.deadlineCtx(" + c.deadline.String() + ")"
}
