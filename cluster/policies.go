package cluster

import (
	"slices"
	"sync"
	"time"
)

// weightedRandom picks a provider at random with a probability proportional to its weight, as Dubbo's RandomLoadBalance.
type weightedRandom struct {
	intN    func(n int) int
	now     func() time.Time
	weights weightTables
}

// Select implements Policy. Equal weights (or all zero) pick uniformly.
func (p *weightedRandom) Select(providers []*Provider, call *Call) *Provider {
	all := call.excludesNone()
	if all && len(providers) <= 1 {
		if len(providers) == 0 {
			return nil
		}
		return providers[0]
	}
	w := newWeigher(p.weights.get(providers), p.now)
	if all && !w.warming {
		// The common case: binary search of the running sums.
		t := w.table
		if t.same || t.total == 0 {
			return providers[p.intN(len(providers))]
		}
		offset := p.intN(t.total)
		i, found := slices.BinarySearch(t.prefix, offset)
		if found { // offset == prefix[i]: it falls in the next non-empty provider
			for t.prefix[i] == offset {
				i++
			}
		}
		return providers[i]
	}
	total, count, last, firstWeight, same := 0, 0, -1, 0, true
	for i, pr := range providers {
		if !all && call.Excludes(providers, i) {
			continue
		}
		wt := w.weight(i, pr)
		if count == 0 {
			firstWeight = wt
		} else if wt != firstWeight {
			same = false
		}
		total += wt
		count++
		last = i
	}
	switch count {
	case 0:
		return nil
	case 1:
		return providers[last]
	}
	if total > 0 && !same {
		offset := p.intN(total)
		for i, pr := range providers {
			if !all && call.Excludes(providers, i) {
				continue
			}
			if offset -= w.weight(i, pr); offset < 0 {
				return pr
			}
		}
		return providers[last] // exclusions changed under us
	}
	if all {
		return providers[p.intN(len(providers))]
	}
	return nthEligible(providers, call, p.intN(count), last)
}

// nthEligible returns the n-th (from 0) provider call does not exclude, or
// providers[fallback] when exclusions changed since they were counted.
func nthEligible(providers []*Provider, call *Call, n, fallback int) *Provider {
	for i, pr := range providers {
		if call.Excludes(providers, i) {
			continue
		}
		if n == 0 {
			return pr
		}
		n--
	}
	return providers[fallback]
}

// leastActive picks the provider with the fewest calls in flight, ties broken at random by weight, as Dubbo's LeastActiveLoadBalance.
type leastActive struct {
	stats   *Stats
	intN    func(n int) int
	now     func() time.Time
	weights weightTables
	scratch sync.Pool // *[]tie
}

// tie is a provider sharing the least number of calls in flight.
type tie struct{ index, weight int }

func newLeastActive(stats *Stats, intN func(int) int, now func() time.Time) *leastActive {
	p := &leastActive{stats: stats, intN: intN, now: now}
	p.scratch.New = func() any { return new([]tie) }
	return p
}

// Select implements Policy.
func (p *leastActive) Select(providers []*Provider, call *Call) *Provider {
	if len(providers) == 0 {
		return nil
	}
	sv := p.stats.view(providers, call.snapshot())
	all := call.excludesNone()
	w := newWeigher(p.weights.get(providers), p.now)
	buf := p.scratch.Get().(*[]tie)
	defer p.scratch.Put(buf)
	ties := (*buf)[:0]
	least, total, same := int64(0), 0, true
	for i, pr := range providers {
		if !all && call.Excludes(providers, i) {
			continue
		}
		active, wt := sv[i].active.Load(), w.weight(i, pr)
		switch {
		case len(ties) == 0 || active < least:
			least, total, same = active, wt, true
			ties = append(ties[:0], tie{i, wt})
		case active == least:
			ties = append(ties, tie{i, wt})
			total += wt
			same = same && wt == ties[0].weight
		}
	}
	*buf = ties
	switch len(ties) {
	case 0:
		return nil
	case 1:
		return providers[ties[0].index]
	}
	if !same && total > 0 {
		offset := p.intN(total)
		for _, t := range ties {
			if offset -= t.weight; offset < 0 {
				return providers[t.index]
			}
		}
	}
	return providers[ties[p.intN(len(ties))].index]
}

// powerOfTwo picks two providers at random and takes the one with the lower peak EWMA latency × (calls in flight + 1).
type powerOfTwo struct {
	stats *Stats
	intN  func(n int) int
}

// Select implements Policy. A provider with no latency measured yet costs
// nothing while idle (so new providers are tried) and a large penalty per
// call in flight. Weights are not used.
func (p *powerOfTwo) Select(providers []*Provider, call *Call) *Provider {
	var a, b int
	if call.excludesNone() {
		switch n := len(providers); n {
		case 0:
			return nil
		case 1:
			return providers[0]
		default:
			a, b = p.pickTwo(n)
		}
	} else {
		count, last := 0, -1
		for i := range providers {
			if !call.Excludes(providers, i) {
				count, last = count+1, i
			}
		}
		switch count {
		case 0:
			return nil
		case 1:
			return providers[last]
		}
		ra, rb := p.pickTwo(count)
		a, b = -1, -1
		k := 0
		for i := range providers {
			if call.Excludes(providers, i) {
				continue
			}
			if k == ra {
				a = i
			}
			if k == rb {
				b = i
			}
			k++
		}
		if a < 0 || b < 0 { // exclusions changed under us
			return providers[last]
		}
	}
	sv := p.stats.view(providers, call.snapshot())
	now := p.stats.nanotime()
	if sv[b].cost(now, p.stats.decay) < sv[a].cost(now, p.stats.decay) {
		return providers[b]
	}
	return providers[a]
}

// pickTwo returns two distinct random ints in [0, n), n ≥ 2.
func (p *powerOfTwo) pickTwo(n int) (int, int) {
	a := p.intN(n)
	b := p.intN(n - 1)
	if b >= a {
		b++
	}
	return a, b
}
