package proxy

import (
	"math"
	"math/rand/v2"
	"testing"
)

func testTargets(weights ...int) []*target {
	out := make([]*target, len(weights))
	for i, w := range weights {
		out[i] = &target{weight: w}
	}
	return out
}

func indexOf(ts []*target, t *target) int {
	for i, x := range ts {
		if x == t {
			return i
		}
	}
	return -1
}

func TestRoundRobinCyclesInOrder(t *testing.T) {
	ts := testTargets(1, 1, 1)
	p := &roundRobin{}
	counts := make([]int, len(ts))
	for i := range 300 {
		got := indexOf(ts, p.Select(ts))
		if got != i%3 {
			t.Fatalf("pick %d went to target %d, want %d", i, got, i%3)
		}
		counts[got]++
	}
	for i, n := range counts {
		if n != 100 {
			t.Errorf("target %d picked %d times, want 100", i, n)
		}
	}
}

func TestWeightedRandomIsProportional(t *testing.T) {
	ts := testTargets(100, 300, 600)
	p := &weightedRandom{intN: rand.New(rand.NewPCG(1, 2)).IntN}
	const picks = 100_000
	counts := make([]int, len(ts))
	for range picks {
		counts[indexOf(ts, p.Select(ts))]++
	}
	for i, want := range []float64{0.1, 0.3, 0.6} {
		got := float64(counts[i]) / picks
		if math.Abs(got-want) > 0.015 {
			t.Errorf("target %d (weight %d) got share %.4f, want %.2f±0.015", i, ts[i].weight, got, want)
		}
	}
}

func TestLeastRequestScansFewTargets(t *testing.T) {
	ts := testTargets(1, 1, 1)
	ts[0].inFlight.Store(2)
	ts[1].inFlight.Store(0)
	ts[2].inFlight.Store(1)
	p := &leastRequest{intN: rand.New(rand.NewPCG(3, 4)).IntN}
	for range 100 {
		if got := indexOf(ts, p.Select(ts)); got != 1 {
			t.Fatalf("picked target %d, want the idle target 1", got)
		}
	}

	// Ties are shared, the busy target is never picked.
	ts[0].inFlight.Store(0)
	ts[2].inFlight.Store(5)
	counts := make([]int, len(ts))
	for range 1000 {
		counts[indexOf(ts, p.Select(ts))]++
	}
	if counts[2] != 0 || counts[0] < 300 || counts[1] < 300 {
		t.Errorf("picks with in-flight [0 0 5] = %v, want the two idle targets to share", counts)
	}
}

func TestLeastRequestPowerOfTwoChoices(t *testing.T) {
	ts := testTargets(1, 1, 1, 1, 1)
	for i, tg := range ts {
		tg.inFlight.Store(int64(i))
	}
	p := &leastRequest{intN: rand.New(rand.NewPCG(5, 6)).IntN}
	const picks = 10_000
	counts := make([]int, len(ts))
	for range picks {
		counts[indexOf(ts, p.Select(ts))]++
	}
	// The busiest target loses every pair; the idle one wins every pair it is in (4 of 10 pairs).
	if counts[4] != 0 {
		t.Errorf("busiest target picked %d times, want 0", counts[4])
	}
	if share := float64(counts[0]) / picks; math.Abs(share-0.4) > 0.03 {
		t.Errorf("idle target share %.3f, want 0.40±0.03 (counts %v)", share, counts)
	}
}

func TestNewPolicyRejectsUnknown(t *testing.T) {
	if _, err := newPolicy("random", rand.IntN); err == nil {
		t.Fatal("newPolicy(random) succeeded")
	}
}
