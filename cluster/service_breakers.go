package cluster

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultMaxServiceBreakers is Options.MaxServiceBreakers' default: the
// pass-through's default bound on the references it keeps.
const DefaultMaxServiceBreakers = 1024

// serviceBreakers are a route's circuit breakers by service key, at most
// max of them: a new service past the bound drops the least recently used
// closed breaker (an open one only when every one is open, so a flood of
// new names cannot reset the breakers of failing services for long).
type serviceBreakers struct {
	opts BreakerOptions
	max  int

	mu sync.RWMutex
	m  map[string]*serviceEntry
}

type serviceEntry struct {
	b    *breaker
	used atomic.Int64 // unix nanoseconds of the last call
}

func newServiceBreakers(opts BreakerOptions, max int) *serviceBreakers {
	if max <= 0 {
		max = DefaultMaxServiceBreakers
	}
	return &serviceBreakers{opts: opts, max: max, m: make(map[string]*serviceEntry)}
}

// get returns the breaker of service, made on first use; dropped reports
// a breaker the bound evicted (to stop counting it if open).
func (s *serviceBreakers) get(service string, now int64, onChange func(b *breaker, from, to BreakerState, now int64), dropped func(*breaker)) *breaker {
	s.mu.RLock()
	e := s.m[service]
	s.mu.RUnlock()
	if e != nil {
		e.used.Store(now)
		return e.b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e = s.m[service]; e != nil {
		e.used.Store(now)
		return e.b
	}
	if len(s.m) >= s.max {
		victim := s.victimLocked()
		dropped(s.m[victim].b)
		delete(s.m, victim)
	}
	e = &serviceEntry{b: newBreaker(ScopeService, service, s.opts, onChange)}
	e.used.Store(now)
	s.m[service] = e
	return e.b
}

// lookup returns the breaker of service, or nil when none is kept; unlike
// get, it makes none and does not count as a use.
func (s *serviceBreakers) lookup(service string) *breaker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.m[service]; e != nil {
		return e.b
	}
	return nil
}

// victimLocked names the least recently used closed breaker, or the least
// recently used one when none is closed.
func (s *serviceBreakers) victimLocked() string {
	var (
		victim       string
		oldest       int64
		victimClosed bool
	)
	for k, e := range s.m {
		closed := e.b.state() == BreakerClosed
		used := e.used.Load()
		if victim == "" || closed && !victimClosed || closed == victimClosed && used < oldest {
			victim, oldest, victimClosed = k, used, closed
		}
	}
	return victim
}

// statuses lists the breakers that are not closed, by service key: the
// closed ones say nothing an operator needs, and there may be thousands.
func (s *serviceBreakers) statuses(now int64) []BreakerStatus {
	s.mu.RLock()
	var out []BreakerStatus
	for _, e := range s.m {
		if e.b.state() != BreakerClosed {
			out = append(out, e.b.status(now))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b BreakerStatus) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// dropAll drops every breaker, handing each to dropped (to stop counting
// the open ones).
func (s *serviceBreakers) dropAll(dropped func(*breaker)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.m {
		dropped(e.b)
	}
	clear(s.m)
}

// len is the number of breakers kept.
func (s *serviceBreakers) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}
