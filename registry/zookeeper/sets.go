package zookeeper

import "iter"

// shrinkAbove is the size beyond which an emptied set gives its room back.
const shrinkAbove = 64

// set is a set that gives its memory back once emptied. A Go map keeps
// the room it grew to, and ranging over it costs that room, not what it
// holds: the nodes due to be read, 20,000 at startup on a large registry,
// would otherwise make every later step of the worker scan 20,000 slots
// for the few nodes a change makes due. The zero set is empty.
type set[T comparable] struct {
	m    map[T]struct{}
	peak int // the most m held since it was made
}

func (s *set[T]) add(v T) {
	if s.m == nil {
		s.m = make(map[T]struct{})
	}
	s.m[v] = struct{}{}
	s.peak = max(s.peak, len(s.m))
}

func (s *set[T]) remove(v T) {
	delete(s.m, v)
	if len(s.m) == 0 && s.peak > shrinkAbove {
		s.m, s.peak = nil, 0
	}
}

// clear empties s.
func (s *set[T]) clear() {
	if s.peak > shrinkAbove {
		s.m, s.peak = nil, 0
		return
	}
	clear(s.m)
}

func (s *set[T]) has(v T) bool {
	_, ok := s.m[v]
	return ok
}

func (s *set[T]) len() int { return len(s.m) }

// all yields the members; the loop may remove them.
func (s *set[T]) all() iter.Seq[T] {
	m := s.m
	return func(yield func(T) bool) {
		for v := range m {
			if !yield(v) {
				return
			}
		}
	}
}
