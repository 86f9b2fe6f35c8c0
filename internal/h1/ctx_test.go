package h1

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

func newRequestCtx() *requestCtx {
	c := &requestCtx{}
	c.init(context.WithValue(context.Background(), ctxKey{}, "v"))
	return c
}

// TestRequestCtx: a request's context behaves as context.WithCancel's:
// Done and Err before and after the end, values through, functions run
// once on the end unless stopped, and run at once when given after it.
func TestRequestCtx(t *testing.T) {
	c := newRequestCtx()
	if c.Err() != nil || c.Value(ctxKey{}) != "v" {
		t.Fatalf("fresh: Err %v, Value %v", c.Err(), c.Value(ctxKey{}))
	}
	if _, ok := c.Deadline(); ok {
		t.Fatal("a request's context has a deadline")
	}
	done := c.Done()
	select {
	case <-done:
		t.Fatal("done before the end")
	default:
	}
	ran := make(chan string, 4)
	stopA := c.AfterFunc(func() { ran <- "a" })
	stopB := c.AfterFunc(func() { ran <- "b" }) // past the in-place slot
	_ = c.AfterFunc(func() { ran <- "c" })
	if !stopB() || stopB() {
		t.Fatal("stop before the end: want true once, then false")
	}
	c.cancel()
	c.cancel() // once
	<-done
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err after the end: %v", c.Err())
	}
	got := map[string]bool{<-ran: true, <-ran: true}
	if !got["a"] || !got["c"] {
		t.Fatalf("ran %v, want a and c", got)
	}
	if stopA() {
		t.Fatal("stop after its function ran reported true")
	}
	c.AfterFunc(func() { ran <- "late" })
	if s := <-ran; s != "late" {
		t.Fatalf("ran %q", s)
	}
	select {
	case s := <-ran:
		t.Fatalf("%q ran too", s)
	case <-time.After(20 * time.Millisecond):
	}
	// A Done asked for after the end is closed.
	c2 := newRequestCtx()
	c2.cancel()
	select {
	case <-c2.Done():
	default:
		t.Fatal("Done made after the end is open")
	}
}

// TestRequestCtxDerived: package context's own functions work on it
// through its AfterFunc: no goroutine per derived context (what package
// context starts for a parent it does not know), and derived contexts
// end with it.
func TestRequestCtxDerived(t *testing.T) {
	c := newRequestCtx()
	before := runtime.NumGoroutine()
	const n = 200
	var kids []context.Context
	var cancels []context.CancelFunc
	for range n {
		k, cancel := context.WithTimeout(c, time.Hour)
		kids, cancels = append(kids, k), append(cancels, cancel)
	}
	if g := runtime.NumGoroutine(); g > before+n/10 {
		t.Fatalf("%d goroutines for %d derived contexts (from %d)", g, n, before)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	stop := context.AfterFunc(c, wg.Done)
	cancels[0]() // one derived context ended on its own: the others stay
	if kids[1].Err() != nil {
		t.Fatal("a sibling ended with another")
	}
	c.cancel()
	wg.Wait()
	for i, k := range kids {
		select {
		case <-k.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("derived context %d still open after its parent ended", i)
		}
		if !errors.Is(k.Err(), context.Canceled) || context.Cause(k) == nil {
			t.Fatalf("derived %d: Err %v, Cause %v", i, k.Err(), context.Cause(k))
		}
	}
	if stop() {
		t.Fatal("stop after the end reported true")
	}
	for _, cancel := range cancels {
		cancel()
	}
}

// TestRequestCtxRace: stops, registrations and the end from many
// goroutines (run with -race); every function not stopped in time runs
// exactly once.
func TestRequestCtxRace(t *testing.T) {
	for range 50 {
		c := newRequestCtx()
		var mu sync.Mutex
		runs := map[int]int{}
		stopped := map[int]bool{}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ran sync.WaitGroup
				ran.Add(1)
				stop := c.AfterFunc(func() {
					mu.Lock()
					runs[i]++
					mu.Unlock()
					ran.Done()
				})
				if i%2 == 0 && stop() {
					mu.Lock()
					stopped[i] = true
					mu.Unlock()
					return
				}
				ran.Wait()
			}()
		}
		c.cancel()
		wg.Wait()
		for i := range 8 {
			if want := map[bool]int{true: 0, false: 1}[stopped[i]]; runs[i] != want {
				t.Fatalf("function %d ran %d times (stopped %v)", i, runs[i], stopped[i])
			}
		}
	}
}
