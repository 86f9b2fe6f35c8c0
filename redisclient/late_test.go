package redisclient

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A command past its deadline is a Redis failure (counted by the breaker)
// only when Redis sent nothing at all since it began; while Redis kept
// answering, the caller was late (a busy scheduler), not Redis.
func TestLateCallerIsNotARedisFailure(t *testing.T) {
	c := &Client{}
	start := time.Now()
	cl := &call{caller: context.Background(), start: start}
	timeout := fmt.Errorf("reading: %w", context.DeadlineExceeded)

	c.lastHeard.Store(start.Add(-time.Second).UnixNano())
	if r := c.classify(cl, timeout); r != resultTimeout {
		t.Errorf("Redis silent since before the command: %v, want timeout", r)
	}
	c.lastHeard.Store(start.Add(time.Millisecond).UnixNano())
	if r := c.classify(cl, timeout); r != resultLate {
		t.Errorf("Redis answered something after the command began: %v, want late", r)
	}
}

// Hearing from Redis again lets an open breaker probe at once rather than
// after open_for.
func TestHeardProbesAtOnce(t *testing.T) {
	c := &Client{}
	c.breaker = breaker{maxFailures: 1, openFor: time.Hour, onChange: func(int32) {}}
	now := time.Now()
	c.breaker.failed(false, now)
	if ok, _ := c.breaker.allow(now.Add(time.Second)); ok {
		t.Fatal("the breaker did not open")
	}
	c.heard()
	if ok, probe := c.breaker.allow(now.Add(time.Second)); !ok || !probe {
		t.Errorf("after hearing from Redis: allow %v, probe %v; want a probe at once", ok, probe)
	}
}
