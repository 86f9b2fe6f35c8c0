package proxy

import (
	"fmt"
	"sync/atomic"
)

// policy picks the target of one attempt among the targets that may take it.
type policy interface {
	// Select returns one of targets, which is never empty.
	Select(targets []*target) *target
}

// newPolicy returns the policy called name; intN returns a random int in [0, n).
func newPolicy(name string, intN func(n int) int) (policy, error) {
	switch name {
	case "", "round_robin":
		return &roundRobin{}, nil
	case "weighted_random":
		return &weightedRandom{intN: intN}, nil
	case "least_request":
		return &leastRequest{intN: intN}, nil
	default:
		return nil, fmt.Errorf("%q is not a policy: want round_robin, weighted_random or least_request", name)
	}
}

// roundRobin cycles through the targets in order.
type roundRobin struct{ next atomic.Uint64 }

// Select implements policy.
func (p *roundRobin) Select(targets []*target) *target {
	n := p.next.Add(1) - 1
	return targets[n%uint64(len(targets))]
}

// weightedRandom picks a target at random with a probability proportional to its weight.
type weightedRandom struct{ intN func(n int) int }

// Select implements policy.
func (p *weightedRandom) Select(targets []*target) *target {
	total := 0
	for _, t := range targets {
		total += t.weight
	}
	r := p.intN(total)
	for _, t := range targets {
		if r -= t.weight; r < 0 {
			return t
		}
	}
	return targets[len(targets)-1]
}

// leastRequest picks the target with the fewest attempts in flight among two
// picked at random (power of two choices), or among all of them when there are at most three.
type leastRequest struct{ intN func(n int) int }

// Select implements policy.
func (p *leastRequest) Select(targets []*target) *target {
	n := len(targets)
	if n > 3 {
		i := p.intN(n)
		j := p.intN(n - 1)
		if j >= i {
			j++
		}
		a, b := targets[i], targets[j]
		if b.inFlight.Load() < a.inFlight.Load() {
			return b
		}
		return a
	}
	// Scan all; break ties at random (reservoir sampling) so idle targets share the load.
	best, bestLoad, ties := targets[0], targets[0].inFlight.Load(), 1
	for _, t := range targets[1:] {
		switch load := t.inFlight.Load(); {
		case load < bestLoad:
			best, bestLoad, ties = t, load, 1
		case load == bestLoad:
			ties++
			if p.intN(ties) == 0 {
				best = t
			}
		}
	}
	return best
}
