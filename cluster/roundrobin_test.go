package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// nginxRR is Nginx's smooth weighted round-robin as Dubbo runs it, O(n) per
// pick, with state by address: what smoothRoundRobin must agree with.
type nginxRR struct {
	now     func() time.Time
	weights map[string]int // effective weight seen last
	current map[string]int64
}

func newNginxRR(now func() time.Time) *nginxRR {
	return &nginxRR{now: now, weights: make(map[string]int), current: make(map[string]int64)}
}

func (r *nginxRR) pick(ps []*Provider, call *Call) *Provider {
	now := r.now()
	var best *Provider
	total := int64(0)
	for i, p := range ps {
		if call.Excludes(ps, i) {
			continue
		}
		w := EffectiveWeight(p, now)
		if last, ok := r.weights[p.Addr]; !ok || last != w {
			r.weights[p.Addr], r.current[p.Addr] = w, 0
		}
		r.current[p.Addr] += int64(w)
		if best == nil || r.current[p.Addr] > r.current[best.Addr] {
			best = p
		}
		total += int64(w)
	}
	if best != nil {
		r.current[best.Addr] -= total
	}
	return best
}

// keepOnly forgets the addresses not in ps, as the policy does on a snapshot change.
func (r *nginxRR) keepOnly(ps []*Provider) {
	for addr := range r.weights {
		if !slices.ContainsFunc(ps, func(p *Provider) bool { return p.Addr == addr }) {
			delete(r.weights, addr)
			delete(r.current, addr)
		}
	}
}

// agree makes n picks with both and fails at the first difference.
func agree(t *testing.T, p Policy, ref *nginxRR, ps []*Provider, call *Call, n int) {
	t.Helper()
	for k := range n {
		got, want := p.Select(ps, call), ref.pick(ps, call)
		if got != want {
			t.Fatalf("pick %d: got %v, Nginx's algorithm %v", k, addrOf(got), addrOf(want))
		}
	}
}

func addrOf(p *Provider) string {
	if p == nil {
		return "<nil>"
	}
	return p.Addr
}

// cycleOf returns the cycle serving ps, or nil while Nginx's algorithm runs.
func cycleOf(t *testing.T, p *smoothRoundRobin, ps []*Provider) *rrCycle {
	t.Helper()
	st, ok := p.cache.load(ps)
	if !ok {
		t.Fatal("no state for the snapshot")
	}
	return st.cycle.Load()
}

// TestRoundRobinAgreesWithNginx changes snapshots at random (providers
// added, removed, reweighted, reordered) and checks every pick against
// Nginx's algorithm, with cycles of any length and with cycles limited to
// 8 picks (so that most snapshots fall back, then retry).
func TestRoundRobinAgreesWithNginx(t *testing.T) {
	weights := []int{0, 1, 2, 3, 5, 10, 100, 150, 200, 100, 100, 101}
	leads, fallbacks := 0, 0
	for seed := range uint64(60) {
		for _, limit := range []int{maxCycle, 8} {
			rng := rand.New(rand.NewPCG(seed, uint64(limit)))
			p, ref := newSmoothRoundRobin(time.Now, limit), newNginxRR(time.Now)
			next := 0
			newProvider := func() *Provider {
				next++
				return &Provider{Addr: fmt.Sprintf("10.0.%d.%d:20880", next/250, next%250), Weight: weights[rng.IntN(len(weights))]}
			}
			var ps []*Provider
			for range 1 + rng.IntN(12) {
				ps = append(ps, newProvider())
			}
			for change := range 15 {
				for k := range 1 + rng.IntN(60) {
					if got, want := p.Select(ps, nil), ref.pick(ps, nil); got != want {
						t.Fatalf("seed %d, limit %d, snapshot %d, pick %d: got %s, Nginx's algorithm %s", seed, limit, change, k, addrOf(got), addrOf(want))
					}
				}
				if cy := cycleOf(t, p, ps); cy == nil {
					fallbacks++
				} else if cy.lead > 0 {
					leads++
				}
				ps = copyProviders(ps)
				switch rng.IntN(5) {
				case 0:
					ps = append(ps, newProvider())
				case 1:
					if len(ps) > 1 {
						i := rng.IntN(len(ps))
						ps = slices.Delete(ps, i, i+1)
					}
				case 2:
					ps[rng.IntN(len(ps))].Weight = weights[rng.IntN(len(weights))]
				case 3:
					rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
				}
				ref.keepOnly(ps)
			}
		}
	}
	t.Logf("%d cycles with a lead, %d snapshots without a cycle", leads, fallbacks)
	if leads == 0 || fallbacks == 0 {
		t.Errorf("%d cycles with a lead, %d snapshots without a cycle: want some of each", leads, fallbacks)
	}
}

func TestRoundRobinCycle(t *testing.T) {
	t.Run("equal weights walk the providers in order", func(t *testing.T) {
		ps := make([]*Provider, 1000)
		for i := range ps {
			ps[i] = &Provider{Addr: fmt.Sprintf("10.0.%d.%d:20880", i/250, i%250), Weight: 100}
		}
		p := newSmoothRoundRobin(time.Now, maxCycle)
		for k := range 2500 {
			if got := p.Select(ps, nil); got != ps[k%1000] {
				t.Fatalf("pick %d: %s, want %s", k, got.Addr, ps[k%1000].Addr)
			}
		}
		if cy := cycleOf(t, p, ps); cy == nil || cy.order != nil || cy.lead != 0 || cy.period != 1000 {
			t.Errorf("cycle %+v: want no recorded order, period 1000", cy)
		}
	})
	t.Run("unequal weights: one cycle holds each weight/gcd times", func(t *testing.T) {
		ps := benchProviders(1000) // weights 100, 150, 200: gcd 50, cycle 2999 picks
		p, ref := newSmoothRoundRobin(time.Now, maxCycle), newNginxRR(time.Now)
		agree(t, p, ref, ps, nil, 1)
		cy := cycleOf(t, p, ps)
		if cy == nil || cy.lead != 0 || cy.period != 2999 || len(cy.order) != 2999 {
			t.Fatalf("cycle lead %d period %d", cy.lead, cy.period)
		}
		got := counts(p, ps, nil, 2998) // the rest of the first cycle
		got[addrOf(ps[cy.order[0]])]++
		for _, pr := range ps {
			if got[pr.Addr] != pr.Weight/50 {
				t.Fatalf("%s (weight %d) picked %d times in a cycle", pr.Addr, pr.Weight, got[pr.Addr])
			}
		}
		// Smooth: between two picks of a provider, none of the heavier ones is picked twice.
		last := map[int]int{}
		for k, i := range cy.order {
			if j, ok := last[int(i)]; ok {
				between := map[int32]int{}
				for _, o := range cy.order[j+1 : k] {
					if between[o]++; between[o] > 1 && ps[o].Weight <= ps[i].Weight {
						t.Fatalf("%s (weight %d) picked twice between two picks of %s (weight %d)", ps[o].Addr, ps[o].Weight, ps[i].Addr, ps[i].Weight)
					}
				}
			}
			last[int(i)] = k
		}
		agree(t, p, newNginxRRAfter(ps, 2999), ps, nil, 3*2999)
	})
	t.Run("fallback when the cycle would be too long", func(t *testing.T) {
		ps := newProviders(100, 101, 100, 101) // gcd 1: 402 picks
		p, ref := newSmoothRoundRobin(time.Now, 400), newNginxRR(time.Now)
		agree(t, p, ref, ps, nil, 1000)
		if cy := cycleOf(t, p, ps); cy != nil {
			t.Errorf("cycle of %d picks recorded over the limit of 400", cy.lead+cy.period)
		}
	})
	t.Run("a lead before the cycle", func(t *testing.T) {
		// Ten providers, nine picked: removing eight leaves j far ahead of i.
		ps := newProviders(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
		p, ref := newSmoothRoundRobin(time.Now, maxCycle), newNginxRR(time.Now)
		agree(t, p, ref, ps, nil, 9)
		next := copyProviders(ps[8:])
		ref.keepOnly(next)
		agree(t, p, ref, next, nil, 30)
		if cy := cycleOf(t, p, next); cy == nil || cy.lead == 0 || cy.period != 2 {
			t.Errorf("cycle %+v: want a lead, then period 2", cy)
		}
	})
	t.Run("a lead longer than the limit: the algorithm runs, then a cycle", func(t *testing.T) {
		ps := newProviders(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
		p, ref := newSmoothRoundRobin(time.Now, 4), newNginxRR(time.Now)
		agree(t, p, ref, ps, nil, 9) // a cycle of 10: over the limit
		next := copyProviders(ps[8:])
		ref.keepOnly(next)
		agree(t, p, ref, next, nil, 1)
		if cy := cycleOf(t, p, next); cy != nil {
			t.Fatalf("cycle %+v recorded within 4 picks", cy)
		}
		agree(t, p, ref, next, nil, 12)
		if cy := cycleOf(t, p, next); cy == nil {
			t.Error("no cycle once the lead was run by the algorithm")
		}
	})
	t.Run("all weights zero: the first provider", func(t *testing.T) {
		ps := newProviders(0, 0, 0)
		p := newSmoothRoundRobin(time.Now, maxCycle)
		if got := counts(p, ps, nil, 10); got[ps[0].Addr] != 10 {
			t.Errorf("picks %v", got)
		}
	})
}

// newNginxRR returns the reference after its first picks over ps.
func newNginxRRAfter(ps []*Provider, picks int) *nginxRR {
	r := newNginxRR(time.Now)
	for range picks {
		r.pick(ps, nil)
	}
	return r
}

func TestRoundRobinSnapshotChange(t *testing.T) {
	ps := newProviders(100, 200, 300, 100)
	p, ref := newSmoothRoundRobin(time.Now, maxCycle), newNginxRR(time.Now)
	agree(t, p, ref, ps, nil, 5)
	// One provider leaves, one arrives, one is reweighted, order changes.
	next := copyProviders(ps[1:])
	next = append(next, &Provider{Addr: "10.0.0.9:20880", Weight: 200})
	next[0].Weight = 100
	next[1], next[2] = next[2], next[1]
	ref.keepOnly(next)
	agree(t, p, ref, next, nil, 40)
	if cycleOf(t, p, next) == nil {
		t.Error("no cycle for the new snapshot")
	}
}

func TestRoundRobinWarmup(t *testing.T) {
	clock := testenv.NewFakeClock()
	ps := newProviders(100, 100, 100)
	ps[2].Timestamp, ps[2].Warmup = clock.Now().Add(-time.Minute), 2*time.Minute // weight 50 for now
	p, ref := newSmoothRoundRobin(clock.Now, maxCycle), newNginxRR(clock.Now)
	step := func(advance time.Duration, wantCycle bool) {
		t.Helper()
		clock.Advance(advance)
		agree(t, p, ref, ps, nil, 50)
		if got := cycleOf(t, p, ps) != nil; got != wantCycle {
			t.Errorf("at %s: cycle %v, want %v", clock.Now().Format(time.TimeOnly), got, wantCycle)
		}
	}
	step(0, false)               // warming up: Nginx's algorithm on effective weights
	step(30*time.Second, false)  // weight 75
	step(31*time.Second, true)   // warm: the cycle from the current weights
	step(-time.Hour, false)      // the clock went back: started in the future, weight 1
	step(2*time.Hour, true)      // warm again
	step(time.Millisecond, true) // and staying so
}

func TestRoundRobinExclude(t *testing.T) {
	names := func(p Policy, ps []*Provider, call *Call, n int) string {
		b := make([]byte, n)
		for k := range b {
			got := p.Select(ps, call)
			b[k] = 'a' + byte(slices.Index(ps, got))
		}
		return string(b)
	}
	t.Run("skips the excluded picks of the cycle", func(t *testing.T) {
		ps := newProviders(5, 1, 1) // cycle aabacaa
		p := newSmoothRoundRobin(time.Now, maxCycle)
		if got := names(p, ps, &Call{Exclude: func(p *Provider) bool { return p == ps[1] }}, 12); got != "aaacaaaaacaa" {
			t.Errorf("without b: %s", got)
		}
		if got := names(p, ps, nil, 7); got != "aabacaa" {
			t.Errorf("then: %s, want the cycle to go on", got)
		}
		if got := names(p, ps, &Call{Exclude: func(p *Provider) bool { return p == ps[0] }}, 6); got != "bcbcbc" {
			t.Errorf("without a: %s", got)
		}
	})
	t.Run("eligible providers keep their shares", func(t *testing.T) {
		ps := newProviders(5, 3, 2, 1)
		p := newSmoothRoundRobin(time.Now, maxCycle)
		got := counts(p, ps, &Call{Exclude: func(p *Provider) bool { return p == ps[2] }}, 4*(5+3+1))
		if got[ps[0].Addr] != 20 || got[ps[1].Addr] != 12 || got[ps[2].Addr] != 0 || got[ps[3].Addr] != 4 {
			t.Errorf("picks over four cycles without c: %v", got)
		}
	})
	t.Run("more excluded picks in a row than it skips", func(t *testing.T) {
		ps := newProviders(1, 40) // up to 20 b in a row
		p := newSmoothRoundRobin(time.Now, maxCycle)
		if got := counts(p, ps, &Call{Exclude: func(p *Provider) bool { return p == ps[1] }}, 100); got[ps[0].Addr] != 100 {
			t.Errorf("without b: %v", got)
		}
	})
	t.Run("only weight 0 left: the first eligible", func(t *testing.T) {
		ps := newProviders(5, 0, 0)
		p := newSmoothRoundRobin(time.Now, maxCycle)
		if got := names(p, ps, &Call{Exclude: func(p *Provider) bool { return p == ps[0] }}, 3); got != "bbb" {
			t.Errorf("without a: %s", got)
		}
		if got := p.Select(ps, &Call{Exclude: func(p *Provider) bool { return p != ps[2] }}); got != ps[2] {
			t.Errorf("only c eligible: %v", addrOf(got))
		}
	})
}

// TestRoundRobinConcurrentShares takes exactly three cycles of picks from
// several goroutines: every pick of the cycle is taken once.
func TestRoundRobinConcurrentShares(t *testing.T) {
	ps := benchProviders(1000) // cycle 2999 picks
	p := mustPolicy(t, "roundrobin", PolicyOptions{})
	const goroutines, cycles = 4, 3
	perGoroutine := cycles * 2999 / goroutines
	results := make([]map[*Provider]int, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		results[g] = make(map[*Provider]int)
		wg.Go(func() {
			for range perGoroutine {
				results[g][p.Select(ps, nil)]++
			}
		})
	}
	wg.Wait()
	total := make(map[*Provider]int)
	for _, r := range results {
		for pr, n := range r {
			total[pr] += n
		}
	}
	for range cycles*2999 - goroutines*perGoroutine {
		total[p.Select(ps, nil)]++
	}
	for _, pr := range ps {
		if want := cycles * pr.Weight / 50; total[pr] != want {
			t.Fatalf("%s (weight %d): %d picks in %d cycles, want %d", pr.Addr, pr.Weight, total[pr], cycles, want)
		}
	}
}

// TestRoundRobinConcurrentTransitions picks from several goroutines while
// snapshots change and the clock crosses a warm-up's end back and forth,
// for the race detector; every pick must be an eligible provider.
func TestRoundRobinConcurrentTransitions(t *testing.T) {
	clock := testenv.NewFakeClock()
	a, b := newProviders(100, 200, 100, 300), newProviders(100, 200, 300)
	b[1].Timestamp, b[1].Warmup = clock.Now().Add(-time.Minute), 2*time.Minute
	snapshots := [][]*Provider{a, b, copyProviders(a)}
	p := mustPolicy(t, "roundrobin", PolicyOptions{Now: clock.Now})
	errs := make(chan string, 8)
	var pickers sync.WaitGroup
	for g := range 4 {
		pickers.Go(func() {
			for i := range 3000 {
				if g == 0 && i%7 == 0 { // across the end of b[1]'s warm-up
					clock.Advance(time.Duration(1-i/7%2*2) * 2 * time.Minute)
				}
				ps := snapshots[(i/100+g)%len(snapshots)]
				excluded := ps[i%len(ps)]
				call := &Call{Exclude: func(p *Provider) bool { return i%3 == 0 && p == excluded }}
				got := p.Select(ps, call)
				if !slices.Contains(ps, got) || call.Exclude(got) {
					errs <- fmt.Sprintf("pick %d of goroutine %d: %v", i, g, addrOf(got))
					return
				}
			}
		})
	}
	pickers.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
