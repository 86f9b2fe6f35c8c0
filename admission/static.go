package admission

import "sync/atomic"

// static is a fixed in-flight limit.
type static struct {
	inFlight atomic.Int64
	rejected atomic.Uint64
	limit    int64         // 0: unlimited
	release  func(Outcome) // s.finish, bound once so Acquire does not allocate
}

// NewStatic returns a limiter that admits at most limit requests at once;
// limit <= 0 means unlimited (requests are still counted).
func NewStatic(limit int) Limiter {
	s := &static{limit: max(int64(limit), 0)}
	s.release = s.finish
	return s
}

func (s *static) Acquire() (func(Outcome), bool) {
	if s.limit == 0 {
		s.inFlight.Add(1)
		return s.release, true
	}
	// Compare-and-swap, not add-then-undo: an add that overshoots and is
	// undone would make a concurrent Acquire see a full limiter that is not.
	for {
		n := s.inFlight.Load()
		if n >= s.limit {
			s.rejected.Add(1)
			return noRelease, false
		}
		if s.inFlight.CompareAndSwap(n, n+1) {
			return s.release, true
		}
	}
}

func (s *static) finish(Outcome) {
	if s.inFlight.Add(-1) < 0 {
		panic(releasedTooOften)
	}
}

func (s *static) Limit() int    { return int(s.limit) }
func (s *static) InFlight() int { return int(s.inFlight.Load()) }
func (s *static) Stats() Stats  { return Stats{Rejected: s.rejected.Load()} }
