package h1

import (
	"context"
	"sync"
	"time"
)

// requestCtx is a request's context: the connection's values, cancelled
// when the request ends or its client leaves. It is what
// context.WithCancel makes, less what a proxied request does not use:
// it lives in the request's response (no allocation of its own), makes
// its Done channel only when asked for one, and runs functions on its end
// through AfterFunc, which context.AfterFunc and every context derived
// from it use, without a children map or a context per function.
type requestCtx struct {
	parent context.Context

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error         // set once, by cancel
	funcs []*afterFunc  // waiting for the end; stopped ones removed
	first afterFunc     // the first AfterFunc's, in place
	array [2]*afterFunc // funcs' first backing
}

// afterFunc is one function to run when a requestCtx ends.
type afterFunc struct {
	ctx  *requestCtx
	f    func()
	done bool // run or stopped: stop reports false
}

func (c *requestCtx) init(parent context.Context) { c.parent, c.funcs = parent, c.array[:0] }

// Deadline implements context.Context: a request has none of its own.
func (c *requestCtx) Deadline() (deadline time.Time, ok bool) { return time.Time{}, false }

// Value implements context.Context.
func (c *requestCtx) Value(key any) any { return c.parent.Value(key) }

// Done implements context.Context.
func (c *requestCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err implements context.Context.
func (c *requestCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc arranges for f to run in its own goroutine once c ends, as
// context.AfterFunc does (which calls it: see the afterFuncer interface
// of package context); stop keeps f from running and reports whether it
// did so.
func (c *requestCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &c.first
	if a.ctx != nil {
		a = &afterFunc{}
	}
	a.ctx, a.f = c, f
	c.funcs = append(c.funcs, a)
	return a.stop
}

func (a *afterFunc) stop() bool {
	c := a.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.done {
		return false
	}
	a.done = true
	for i, b := range c.funcs {
		if b == a {
			c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
			break
		}
	}
	return true
}

// cancel ends c (once): Done closes, Err is context.Canceled, the
// functions given to AfterFunc start.
func (c *requestCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	for _, a := range c.funcs {
		a.done = true
		go a.f()
	}
	c.funcs = nil
}
