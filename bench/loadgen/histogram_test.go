package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsTileTheRange(t *testing.T) {
	// Every bucket starts right after the previous one ends, and is at most
	// 1/128 of its lowest value wide.
	var next uint64
	for i := range bucketCount {
		lo, hi := bucketBounds(i)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d is [%d, %d], want it to start at %d", i, lo, hi, next)
		}
		if width := hi - lo + 1; lo >= subBucketCount && width*subBucketCount > lo {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/%d of its values", i, lo, hi, subBucketCount)
		}
		next = hi + 1
	}
	if next != maxTracked+1 {
		t.Fatalf("the buckets end at %d, want %d", next-1, uint64(maxTracked))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := rng.Uint64N(maxTracked + 1)
		if v%3 == 0 {
			v >>= rng.UintN(maxValueBits) // plenty of small values too
		}
		lo, hi := bucketBounds(bucketIndex(v))
		if v < lo || v > hi {
			t.Fatalf("%d went to bucket %d, [%d, %d]", v, bucketIndex(v), lo, hi)
		}
	}
}

func TestQuantilesMatchExactValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	values := make([]time.Duration, 20000)
	for i := range values {
		// Log-uniform from 50 ns to about 1 s, as latencies spread.
		values[i] = time.Duration(50 * math.Exp(rng.Float64()*math.Log(2e7)))
		h.Record(values[i])
	}
	slices.Sort(values)
	for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := values[int(math.Ceil(q*float64(len(values))))-1]
		got := h.Quantile(q)
		if got < exact || got > exact+exact/subBucketCount+1 {
			t.Errorf("q%v = %v, exact %v: want at most 1/%d above", q, got, exact, subBucketCount)
		}
	}
	if h.Count() != uint64(len(values)) || h.Min() != values[0] || h.Max() != values[len(values)-1] {
		t.Errorf("count %d min %v max %v, want %d %v %v", h.Count(), h.Min(), h.Max(), len(values), values[0], values[len(values)-1])
	}
	var sum float64
	for _, v := range values {
		sum += float64(v)
	}
	if mean := time.Duration(sum / float64(len(values))); absDiff(h.Mean(), mean) > time.Microsecond {
		t.Errorf("mean %v, want %v", h.Mean(), mean)
	}
}

func TestSmallValuesAreExact(t *testing.T) {
	var h Histogram
	for v := range 100 {
		h.Record(time.Duration(v))
	}
	for q, want := range map[float64]time.Duration{0.01: 0, 0.5: 49, 0.9: 89, 1: 99} {
		if got := h.Quantile(q); got != want {
			t.Errorf("q%v = %d ns, want %d ns", q, got, want)
		}
	}
	if n := h.CountAtOrAbove(90); n != 10 {
		t.Errorf("CountAtOrAbove(90 ns) = %d, want 10", n)
	}
}

func TestMergeEqualsRecordingEverything(t *testing.T) {
	var a, b, all Histogram
	for i := range 5000 {
		v := time.Duration(i*i) * time.Nanosecond
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	var merged Histogram
	merged.Merge(&a)
	merged.Merge(&Histogram{}) // merging an empty one changes nothing
	merged.Merge(&b)
	if merged != all {
		t.Errorf("merged histogram differs: count %d min %v max %v, want %d %v %v",
			merged.Count(), merged.Min(), merged.Max(), all.Count(), all.Min(), all.Max())
	}
	merged.Reset()
	if merged != (Histogram{}) {
		t.Error("Reset left values behind")
	}
}

func TestEdgeValues(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Mean() != 0 {
		t.Error("an empty histogram must report zeros")
	}
	h.Record(-time.Second) // counts as 0
	h.Record(time.Hour)    // beyond the resolved range: top bucket, exact max
	if h.Min() != 0 || h.Max() != time.Hour || h.Quantile(1) != time.Hour || h.Quantile(0.5) != 0 {
		t.Errorf("min %v max %v q1 %v q0.5 %v", h.Min(), h.Max(), h.Quantile(1), h.Quantile(0.5))
	}
	if h.CountAtOrAbove(2*time.Hour) != 1 {
		t.Error("a clamped value must count in the top bucket")
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := &Histogram{}
	d := time.Duration(1)
	if n := testing.AllocsPerRun(1000, func() { d = d*3 + 7; h.Record(d % time.Minute) }); n != 0 {
		t.Errorf("Record allocates %v times", n)
	}
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

func BenchmarkRecord(b *testing.B) {
	h := &Histogram{}
	d := time.Duration(1)
	for b.Loop() {
		d = d*3 + 7
		h.Record(d % time.Minute)
	}
}
