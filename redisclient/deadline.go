package redisclient

import (
	"context"
	"sync"
	"time"
)

// deadlineContext is a context with a sooner deadline than its parent's
// whose timer is only started when something asks for Done or Err. A
// command answered from the client-side cache never does, so it pays for
// neither the timer nor context.WithDeadline's allocations; a command that
// goes to Redis gets a real context.WithDeadline on first use.
type deadlineContext struct {
	context.Context // the caller's: Value, and the parent of the real one
	deadline        time.Time

	once   sync.Once
	real   context.Context // context.WithDeadline(parent, deadline), made by once
	cancel context.CancelFunc
}

func newDeadlineContext(parent context.Context, deadline time.Time) *deadlineContext {
	return &deadlineContext{Context: parent, deadline: deadline}
}

func (d *deadlineContext) Deadline() (time.Time, bool) { return d.deadline, true }

func (d *deadlineContext) Done() <-chan struct{} { return d.start().Done() }

func (d *deadlineContext) Err() error { return d.start().Err() }

func (d *deadlineContext) start() context.Context {
	d.once.Do(func() { d.real, d.cancel = context.WithDeadline(d.Context, d.deadline) })
	return d.real
}

// stop releases the timer, if one was started. The context must not be
// used afterwards.
func (d *deadlineContext) stop() {
	d.once.Do(func() {}) // no timer from now on
	if d.cancel != nil {
		d.cancel()
	}
}
