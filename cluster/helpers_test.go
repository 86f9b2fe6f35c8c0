package cluster

import (
	"fmt"
	"math/rand/v2"
)

// newProviders returns providers 10.0.0.1:20880, 10.0.0.2:20880, ... with the given weights.
func newProviders(weights ...int) []*Provider {
	ps := make([]*Provider, len(weights))
	for i, w := range weights {
		ps[i] = &Provider{Addr: fmt.Sprintf("10.0.0.%d:20880", i+1), Weight: w}
	}
	return ps
}

// copyProviders returns a new snapshot of equal but distinct providers.
func copyProviders(ps []*Provider) []*Provider {
	out := make([]*Provider, len(ps))
	for i, p := range ps {
		c := *p
		out[i] = &c
	}
	return out
}

// seeded returns a deterministic random source.
func seeded(seed uint64) func(n int) int {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).IntN
}

// counts selects n times and counts the chosen addresses.
func counts(p Policy, ps []*Provider, call *Call, n int) map[string]int {
	out := make(map[string]int)
	for range n {
		if got := p.Select(ps, call); got != nil {
			out[got.Addr]++
		} else {
			out["<nil>"]++
		}
	}
	return out
}
