package observe

import (
	"sync/atomic"
	"time"
)

// LogSampler lets one log line through per second and counts the lines it
// held back, so that a client repeating a bad request cannot flood the
// log: the line that goes through says how many were not written. The zero
// value is ready; it is safe for concurrent use.
type LogSampler struct {
	next    atomic.Int64 // UnixNano before which lines are held back
	dropped atomic.Int64 // lines held back since the last one let through
}

// Allow reports whether a line may be written at now, and how many were
// held back since the last one written.
func (s *LogSampler) Allow(now time.Time) (ok bool, heldBack int64) {
	next := s.next.Load()
	if now.UnixNano() < next || !s.next.CompareAndSwap(next, now.Add(time.Second).UnixNano()) {
		s.dropped.Add(1)
		return false, 0
	}
	return true, s.dropped.Swap(0)
}
