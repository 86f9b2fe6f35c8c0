package proxy

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKeyTest struct{}

// deadlineCtx keeps the contract of context.WithTimeout's context: the
// earlier deadline, Err nil until Done would close and fixed after,
// the parent's end and release ending it, values from the parent, and
// contexts derived from it ended with it.
func TestDeadlineCtx(t *testing.T) {
	parentOf := func() (context.Context, context.CancelFunc) {
		return context.WithCancel(context.WithValue(context.Background(), ctxKeyTest{}, "v"))
	}

	t.Run("deadline passes, Done asked first", func(t *testing.T) {
		parent, cancel := parentOf()
		defer cancel()
		var c deadlineCtx
		c.init(parent, 30*time.Millisecond)
		defer c.release()
		if d, ok := c.Deadline(); !ok || time.Until(d) > 30*time.Millisecond {
			t.Fatalf("Deadline = %v, %v", d, ok)
		}
		if c.Value(ctxKeyTest{}) != "v" {
			t.Fatal("the parent's value is lost")
		}
		child, stop := context.WithCancel(&c)
		defer stop()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed at the deadline")
		}
		<-child.Done()
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(&c), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v, Cause = %v, child's Err = %v", c.Err(), context.Cause(&c), child.Err())
		}
	})

	t.Run("deadline passes, nothing waits", func(t *testing.T) {
		parent, cancel := parentOf()
		defer cancel()
		var c deadlineCtx
		c.init(parent, time.Millisecond)
		defer c.release()
		time.Sleep(5 * time.Millisecond)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v after the deadline", c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Err is set and Done is open")
		}
		cancel() // the parent's end after ours changes nothing
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(&c), context.DeadlineExceeded) {
			t.Fatalf("Err = %v, Cause = %v once the parent ended too", c.Err(), context.Cause(&c))
		}
	})

	t.Run("parent ends", func(t *testing.T) {
		parent, cancel := parentOf()
		var c deadlineCtx
		c.init(parent, time.Hour)
		defer c.release()
		cancel()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err = %v after the parent's end", c.Err())
		}
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err = %v once Done was made", c.Err())
		}
	})

	t.Run("parent ends while Done is awaited", func(t *testing.T) {
		parent, cancel := parentOf()
		var c deadlineCtx
		c.init(parent, time.Hour)
		defer c.release()
		done := c.Done()
		cancel()
		<-done
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err = %v", c.Err())
		}
	})

	t.Run("release", func(t *testing.T) {
		parent, cancel := parentOf()
		defer cancel()
		var c deadlineCtx
		c.init(parent, time.Hour)
		if c.Err() != nil {
			t.Fatal("ended before its deadline")
		}
		c.release()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err = %v after release", c.Err())
		}
		<-c.Done()
		var d deadlineCtx // Done asked before release
		d.init(parent, time.Hour)
		done := d.Done()
		d.release()
		<-done
	})

	t.Run("the parent's deadline is earlier", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		want, _ := parent.Deadline()
		var c deadlineCtx
		c.init(parent, time.Hour)
		defer c.release()
		if d, _ := c.Deadline(); !d.Equal(want) {
			t.Fatalf("Deadline = %v, want the parent's %v", d, want)
		}
	})
}
