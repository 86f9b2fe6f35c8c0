package router

import "sync/atomic"

// MaxSplitWeight bounds the sum of the weights of one split: a weight is
// then at least a 1/10000 share, and the schedule at most 10000 entries.
const MaxSplitWeight = 10000

// split shares a slot's requests among routes by weight. Its schedule is
// the sequence of a smooth weighted round robin (nginx's) over one period:
// every window of sum(weights) consecutive requests gives each route
// exactly its weight, interleaved rather than in runs. Requests take
// tickets from one atomic counter, so concurrent requests never share a
// position and picking takes no lock.
type split struct {
	routes   []int    // route indexes
	schedule []uint16 // indexes into routes, one period
	next     atomic.Uint64
}

// newSplit makes the split of routes with weights (each 0..MaxSplitWeight,
// their sum 1..MaxSplitWeight, checked by the caller).
func newSplit(routes, weights []int) *split {
	g := 0
	for _, w := range weights {
		g = gcd(g, w)
	}
	total := 0
	for _, w := range weights {
		total += w / g
	}
	s := &split{routes: routes, schedule: make([]uint16, total)}
	current := make([]int, len(weights))
	for k := range s.schedule {
		best := -1
		for i, w := range weights {
			current[i] += w / g
			if w > 0 && (best < 0 || current[i] > current[best]) {
				best = i
			}
		}
		current[best] -= total
		s.schedule[k] = uint16(best)
	}
	return s
}

// pick returns the route of the next request.
func (s *split) pick() int {
	n := s.next.Add(1) - 1
	return s.routes[s.schedule[n%uint64(len(s.schedule))]]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
