package exchange

import (
	"context"
	"sync"
	"testing"
	"time"
)

// funcCtx is a parent context with its own AfterFunc, as the loop
// engine's request context is; it counts the functions given to it.
type funcCtx struct {
	context.Context
	mu    sync.Mutex
	funcs []func()
	done  chan struct{}
}

func (c *funcCtx) Done() <-chan struct{} { return c.done }

func (c *funcCtx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.funcs = append(c.funcs, f)
	return func() bool { return true }
}

// TestAfterFuncThroughInfoContext: an InfoContext hands AfterFunc to a
// parent that has one (context.AfterFunc and derived contexts take that
// path, with no goroutine of their own), and to package context
// otherwise.
func TestAfterFuncThroughInfoContext(t *testing.T) {
	parent := &funcCtx{Context: context.Background(), done: make(chan struct{})}
	var ic InfoContext
	ic.Init(parent, &Info{})
	AfterFunc(&ic, func() {})
	context.AfterFunc(&ic, func() {})
	_, cancel := context.WithCancel(&ic)
	defer cancel()
	if n := len(parent.funcs); n != 3 {
		t.Fatalf("the parent was given %d functions, want 3", n)
	}

	// A parent of package context's own: the children map, as before.
	std, stdCancel := context.WithCancel(context.Background())
	var ic2 InfoContext
	ic2.Init(std, &Info{})
	ran := make(chan struct{})
	stop := AfterFunc(&ic2, func() { close(ran) })
	kid, kidCancel := context.WithCancel(&ic2)
	defer kidCancel()
	stdCancel()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc on a package context parent did not run")
	}
	<-kid.Done()
	if stop() {
		t.Fatal("stop after the run reported true")
	}
}
