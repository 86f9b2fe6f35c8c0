package testenv

import (
	"sync"
	"time"
)

// FakeClock is a clock a test moves by hand; its Now fits wherever code
// takes a func() time.Time.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock at 2025-01-02 03:04:05 UTC.
func NewFakeClock() *FakeClock {
	return &FakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now is the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
