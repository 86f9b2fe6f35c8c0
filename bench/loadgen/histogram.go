package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear, as HdrHistogram: values below subBucketCount
// nanoseconds have a bucket each; above, every power of two is split into
// subBucketCount/2 equal buckets, so a bucket is never wider than 1/128 of
// the values it holds.
const (
	subBucketBits  = 7
	subBucketCount = 1 << subBucketBits
	// maxValueBits bounds what is resolved: 2^40 ns, about 18 minutes.
	// Larger values are counted in the top bucket; Max stays exact.
	maxValueBits = 40
	bucketCount  = (maxValueBits - subBucketBits + 1) * subBucketCount
	maxTracked   = 1<<maxValueBits - 1
)

// Histogram counts durations in fixed memory (about 35 KB) with a relative
// error under 1/128 (0.8%). Record never allocates. The zero value is an
// empty histogram ready to use. A Histogram is not safe for concurrent use:
// give each goroutine its own and Merge them.
type Histogram struct {
	counts   [bucketCount]uint64
	total    uint64
	min, max int64 // nanoseconds; meaningful when total > 0
	sum      float64
}

// bucketIndex returns the bucket of v, 0 <= v <= maxTracked.
func bucketIndex(v uint64) int {
	if v < subBucketCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBucketBits - 1 // v>>shift is in [subBucketCount, 2*subBucketCount)
	return shift*subBucketCount + int(v>>shift)
}

// bucketBounds returns the smallest and largest values bucket i holds.
func bucketBounds(i int) (lo, hi uint64) {
	if i < subBucketCount {
		return uint64(i), uint64(i)
	}
	shift := i/subBucketCount - 1
	mantissa := uint64(i%subBucketCount + subBucketCount)
	return mantissa << shift, (mantissa+1)<<shift - 1
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	if h.total == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.total++
	h.sum += float64(v)
	h.counts[bucketIndex(uint64(min(v, maxTracked)))]++
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.total += o.total
	h.sum += o.sum
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Min returns the smallest recorded value (0 when empty).
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest recorded value, exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the average of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// Quantile returns the value at or below which a fraction q (0 < q <= 1) of
// the recorded values lie: the top of the bucket holding the value of rank
// ceil(q*count), so it never understates, capped at Max. It returns 0 when h
// is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == bucketCount-1 {
				return time.Duration(h.max) // the top bucket also holds what was clamped
			}
			_, hi := bucketBounds(i)
			return time.Duration(min(max(int64(hi), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// CountAtOrAbove returns how many recorded values are at least d, counting
// whole buckets: values in d's bucket but below d are included (an error
// under 1/128 of d).
func (h *Histogram) CountAtOrAbove(d time.Duration) uint64 {
	v := max(int64(d), 0)
	var n uint64
	for i := bucketIndex(uint64(min(v, maxTracked))); i < bucketCount; i++ {
		n += h.counts[i]
	}
	return n
}
