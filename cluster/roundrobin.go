package cluster

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the round-robin cycle walk.
const (
	// maxCycle is the most picks a recorded cycle holds (4 bytes each, so
	// 256 KiB at most): longer ones are left to Nginx's O(n) algorithm.
	maxCycle = 1 << 16
	// maxSkips is how many excluded picks one Select consumes before it
	// looks through a whole cycle instead.
	maxSkips = 8
)

// smoothRoundRobin cycles through the providers in proportion to their
// weights, spread evenly (Nginx's smooth weighted round-robin, as Dubbo's
// RoundRobinLoadBalance), replaying the algorithm's recorded picks with an
// atomic cursor so that a pick costs O(1) without a lock.
//
// Nginx's algorithm costs O(n) per pick under a lock: each provider's
// current weight grows by its weight, the largest is chosen and loses the
// total. With fixed weights its picks repeat, so on a snapshot's first use
// the policy runs it ahead from the current weights (those the previous
// snapshot left, by address) until they come back, and records the picks:
// a lead, then a period that repeats (the weights' sum divided by their
// gcd). Walking the record gives the very picks the algorithm would. The
// price is the recording, O(log n) per pick (about 0.4 ms for 1,000
// providers of weights 100, 150 and 200), and 4 bytes per recorded pick;
// with equal weights from rest the record is the providers in order and
// is not stored (a counter modulo n).
//
// The algorithm itself runs when the record would exceed maxCycle picks
// (weights with a small gcd, such as 100 and 101; or current weights,
// carried over, that take that long to settle, after which recording is
// tried again), and while a provider warms up, since its effective weight
// changes with time; when warm-up ends, recording starts from the current
// weights then.
//
// Exclusions: the algorithm leaves excluded providers out, as Dubbo does
// (their weight neither grows nor counts in the total). The walk instead
// consumes their picks and takes the next one, so the eligible providers
// keep their shares without being spread anew. After maxSkips excluded
// picks it looks through one whole period without consuming it; when
// every provider with a weight is excluded, it takes the first eligible
// one (of weight 0), as the algorithm would from rest.
type smoothRoundRobin struct {
	now      func() time.Time
	maxCycle int // longest cycle recorded, in picks
	cache    snapshotCache[*rrState]
}

func newSmoothRoundRobin(now func() time.Time, maxCycle int) *smoothRoundRobin {
	return &smoothRoundRobin{now: now, maxCycle: maxCycle}
}

// rrState is the round-robin state of one snapshot: a recorded cycle when
// cycle is set, else the current weights of Nginx's algorithm.
type rrState struct {
	addrs    []string
	table    *weightTable
	total    int64 // sum of the static weights
	cyclable bool  // the static weights' period fits in maxCycle picks
	maxCycle int   // longest cycle recorded, in picks
	cycle    atomic.Pointer[rrCycle]

	mu      sync.Mutex
	weights []int   // effective weight seen last (-1: none yet); a change resets current, as in Dubbo
	current []int64 // current weight of each provider; stale while cycle is set
	retryIn int     // picks by the algorithm before trying to record a cycle again
}

// Select implements Policy.
func (p *smoothRoundRobin) Select(providers []*Provider, call *Call) *Provider {
	if len(providers) == 0 {
		return nil
	}
	st := p.state(providers)
	w := newWeigher(st.table, p.now)
	for {
		if cy := st.cycle.Load(); cy != nil && !w.warming {
			if i := cy.next(providers, call); i >= 0 {
				return providers[i]
			}
			return firstEligible(providers, call)
		}
		if pr, ok := st.step(providers, call, &w); ok {
			return pr
		}
		// A cycle has just been recorded: walk it.
	}
}

// firstEligible returns the first provider call does not exclude, or nil.
func firstEligible(providers []*Provider, call *Call) *Provider {
	for i, pr := range providers {
		if !call.Excludes(providers, i) {
			return pr
		}
	}
	return nil
}

// step picks by Nginx's algorithm: each eligible provider's current weight
// grows by its weight, the largest is chosen and loses the eligible total.
// It picks nothing and returns false when picks are to come from a cycle,
// recorded now or by another call meanwhile.
func (st *rrState) step(providers []*Provider, call *Call, w *weigher) (*Provider, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if cy := st.cycle.Load(); cy != nil {
		if !w.warming {
			return nil, false
		}
		st.leaveCycle(cy) // the clock went back into a warm-up
	} else if !w.warming && st.cyclable {
		switch {
		case st.retryIn > 0:
			st.retryIn--
		case st.enterCycle():
			return nil, false
		default:
			st.retryIn = st.maxCycle
		}
	}
	all := call.excludesNone()
	best, total := -1, int64(0)
	for i, pr := range providers {
		if !all && call.Excludes(providers, i) {
			continue
		}
		wt := w.weight(i, pr)
		if wt != st.weights[i] {
			st.weights[i], st.current[i] = wt, 0
		}
		st.current[i] += int64(wt)
		if best < 0 || st.current[i] > st.current[best] {
			best = i
		}
		total += int64(wt)
	}
	if best < 0 {
		return nil, true
	}
	st.current[best] -= total
	return providers[best], true
}

// enterCycle records the cycle that follows the current weights (a provider
// whose weight changed starting from 0) and switches to it. It reports false
// when the picks do not repeat within maxCycle. The caller holds st.mu.
func (st *rrState) enterCycle() bool {
	start := make([]int64, len(st.current))
	for i, wt := range st.table.static {
		if st.weights[i] == wt {
			start[i] = st.current[i]
		}
	}
	cy := recordCycle(st.table.static, st.total, start, st.maxCycle)
	if cy == nil {
		return false
	}
	st.cycle.Store(cy)
	return true
}

// leaveCycle switches back to the algorithm, from the current weights
// reached by the cycle's picks so far. Picks taken while it runs are not
// counted. The caller holds st.mu.
func (st *rrState) leaveCycle(cy *rrCycle) {
	st.cycle.Store(nil)
	st.current = cy.currentAt(cy.cursor.Load(), st.table.static, st.total)
	copy(st.weights, st.table.static)
	st.retryIn = 0
}

// state returns the round-robin state of providers, carrying the current
// weights of addresses already known from the previous snapshot.
func (p *smoothRoundRobin) state(providers []*Provider) *rrState {
	if st, ok := p.cache.load(providers); ok {
		return st
	}
	p.cache.mu.Lock()
	defer p.cache.mu.Unlock()
	if st, ok := p.cache.load(providers); ok {
		return st
	}
	st := newRRState(providers, p.maxCycle)
	if prev, ok := p.cache.latest(); ok {
		st.carry(prev)
	}
	p.cache.store(providers, st)
	return st
}

func newRRState(providers []*Provider, limit int) *rrState {
	n := len(providers)
	st := &rrState{
		addrs:    make([]string, n),
		table:    newWeightTable(providers),
		maxCycle: limit,
		weights:  make([]int, n),
		current:  make([]int64, n),
	}
	for i, pr := range providers {
		st.addrs[i] = pr.Addr
		st.weights[i] = -1 // unknown: the first pick sets it and starts from 0
	}
	st.total = int64(st.table.total)
	length, _ := cycleLength(st.table.static, st.total)
	st.cyclable = length <= int64(limit)
	return st
}

// carry takes the weights and current weights of the addresses prev knows.
func (st *rrState) carry(prev *rrState) {
	prev.mu.Lock()
	defer prev.mu.Unlock()
	weights, current := prev.weights, prev.current
	if cy := prev.cycle.Load(); cy != nil {
		weights, current = prev.table.static, cy.currentAt(cy.cursor.Load(), prev.table.static, prev.total)
	}
	at := make(map[string]int, len(prev.addrs))
	for i, a := range prev.addrs {
		at[a] = i
	}
	for i, a := range st.addrs {
		if j, ok := at[a]; ok {
			st.weights[i], st.current[i] = weights[j], current[j]
		}
	}
}

// cycleLength returns after how many picks Nginx's algorithm started from
// zero is back there with the static weights (summing to total): their sum
// divided by their gcd, or 1 when all are 0. It returns that gcd as well.
func cycleLength(static []int, total int64) (length, gcd int64) {
	for _, wt := range static {
		a, b := gcd, int64(wt)
		for b != 0 {
			a, b = b, a%b
		}
		gcd = a
	}
	if gcd == 0 {
		return 1, 0
	}
	return total / gcd, gcd
}

// rrCycle is a record of Nginx's algorithm's picks from some current
// weights: lead picks, then period picks that repeat forever.
type rrCycle struct {
	order  []int32 // provider index of each pick; nil: pick k is provider k
	lead   uint64
	period uint64
	start  []int64 // current weights before the first pick

	_      [64]byte // keeps the cursor, written by every pick, off the lines every pick reads
	cursor atomic.Uint64
}

// at returns the provider index of the k-th pick (from 0).
func (cy *rrCycle) at(k uint64) int {
	if k >= cy.lead {
		k = cy.lead + (k-cy.lead)%cy.period
	}
	if cy.order == nil {
		return int(k)
	}
	return int(cy.order[k])
}

// next takes the next pick that call does not exclude and returns its
// provider index, or -1 when call excludes every provider with a weight.
func (cy *rrCycle) next(providers []*Provider, call *Call) int {
	k := cy.cursor.Add(1) - 1
	i := cy.at(k)
	if call.excludesNone() {
		return i
	}
	for range maxSkips {
		if !call.Excludes(providers, i) {
			return i
		}
		k = cy.cursor.Add(1) - 1
		i = cy.at(k)
	}
	for j := range cy.lead + cy.period {
		if i = cy.at(k + j); !call.Excludes(providers, i) {
			return i
		}
	}
	return -1
}

// currentAt returns the current weights after the first k picks.
func (cy *rrCycle) currentAt(k uint64, static []int, total int64) []int64 {
	if k >= cy.lead {
		k = cy.lead + (k-cy.lead)%cy.period
	}
	current := slices.Clone(cy.start)
	for i, wt := range static {
		current[i] += int64(k) * int64(wt)
	}
	for j := range k {
		current[cy.at(j)] -= total
	}
	return current
}

// weightClass is the providers of one weight while recordCycle runs, as a
// heap: the highest current weight first, the lowest index among equals.
// Every pick grows them all alike, so only the chosen one moves in it.
type weightClass struct {
	weight int64
	heap   []int32
}

// recordCycle runs Nginx's algorithm from the current weights start, with
// the static weights (summing to total), and records its picks until they
// repeat. It returns nil when that takes more than limit picks.
//
// Each pick compares the top of each weight class, so it costs O(classes +
// log n); a limit of 64 Ki leaves room for a few hundred distinct weights.
// The state after p more picks is the same iff each provider was picked
// p×weight/total times in them, which can only happen at multiples of
// total/gcd (interval): the state is compared there, with a mark moving on
// at doubling distances (Brent's cycle detection), so the record ends within
// about twice the lead plus the period.
func recordCycle(static []int, total int64, start []int64, limit int) *rrCycle {
	n := len(static)
	interval, unit := cycleLength(static, total)
	if interval > int64(limit) {
		return nil
	}

	// base[i] + grown×weight[i] is provider i's current weight.
	base := slices.Clone(start)
	grown := int64(0)
	byWeight := make(map[int]int)
	var classes []weightClass
	for i, wt := range static {
		c, ok := byWeight[wt]
		if !ok {
			c = len(classes)
			byWeight[wt] = c
			classes = append(classes, weightClass{weight: int64(wt)})
		}
		classes[c].heap = append(classes[c].heap, int32(i))
	}
	for _, cl := range classes {
		for i := len(cl.heap)/2 - 1; i >= 0; i-- {
			siftDown(cl.heap, i, base)
		}
	}

	var order []int32
	picks := make([]int64, n) // since mark
	mark, span := 0, interval
	for len(order) < limit {
		grown++
		best, bestClass, bestValue := int32(-1), -1, int64(0)
		for c, cl := range classes {
			i := cl.heap[0]
			if v := base[i] + grown*cl.weight; best < 0 || v > bestValue || v == bestValue && i < best {
				best, bestClass, bestValue = i, c, v
			}
		}
		base[best] -= total
		siftDown(classes[bestClass].heap, 0, base)
		order = append(order, best)
		picks[best]++

		since := int64(len(order) - mark)
		if since%interval != 0 {
			continue
		}
		for _, cl := range classes { // fold the growth into base
			for _, i := range cl.heap {
				base[i] += grown * cl.weight
			}
		}
		grown = 0
		if repeats(picks, static, since, interval, unit) {
			return newRRCycle(order, mark, since, start)
		}
		if since == span {
			mark, span = len(order), 2*span
			clear(picks)
		}
	}
	return nil
}

// repeats reports whether picks, made over since picks, bring every
// provider's current weight back: picked since×weight/total times.
func repeats(picks []int64, static []int, since, interval, unit int64) bool {
	if unit == 0 {
		return true // all weights zero: current weights never change
	}
	for i, wt := range static {
		if picks[i]*interval != since*(int64(wt)/unit) {
			return false
		}
	}
	return true
}

func newRRCycle(order []int32, lead int, period int64, start []int64) *rrCycle {
	cy := &rrCycle{lead: uint64(lead), period: uint64(period), start: start}
	identity := lead == 0 && int(period) == len(start)
	for k, i := range order {
		identity = identity && int(i) == k
	}
	if !identity {
		cy.order = slices.Clone(order)
	}
	return cy
}

// siftDown moves heap[i] down to its place in a weight class.
func siftDown(heap []int32, i int, base []int64) {
	for {
		first, l, r := i, 2*i+1, 2*i+2
		if l < len(heap) && before(heap[l], heap[first], base) {
			first = l
		}
		if r < len(heap) && before(heap[r], heap[first], base) {
			first = r
		}
		if first == i {
			return
		}
		heap[i], heap[first] = heap[first], heap[i]
		i = first
	}
}

// before orders a weight class: the highest current weight first (all
// grew alike, so the highest base), the lowest index among equals.
func before(a, b int32, base []int64) bool {
	return base[a] > base[b] || base[a] == base[b] && a < b
}
