package admission

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Latencies are counted in log-linear buckets of microseconds: 8 buckets
// per power of two, so a bucket is at most 1/8 of its lower bound wide and
// its midpoint is within ±6% of any latency it holds. Below 8µs buckets are
// 1µs wide; from 2^34µs (about 4.8h) on, everything falls into the last one.
const (
	subBucketBits = 3
	subBuckets    = 1 << subBucketBits
	maxShift      = 30
	bucketCount   = (maxShift + 2) * subBuckets
)

// histogram counts latencies of one sample window; add is lock-free and
// drain empties it while adds go on (an add racing a drain lands in either
// window).
type histogram struct {
	counts [bucketCount]atomic.Uint32
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucketOf(d)].Add(1)
}

// drainMedian empties the histogram and returns the median of what it held
// (the midpoint of the median's bucket) and the number of samples.
func (h *histogram) drainMedian() (time.Duration, int) {
	var snapshot [bucketCount]uint32
	total := 0
	for i := range h.counts {
		snapshot[i] = h.counts[i].Swap(0)
		total += int(snapshot[i])
	}
	if total == 0 {
		return 0, 0
	}
	half := (total + 1) / 2
	seen := 0
	for i, c := range snapshot {
		seen += int(c)
		if seen >= half {
			return bucketMidpoint(i), total
		}
	}
	panic("unreachable: the median bucket is within the histogram")
}

// bucketOf returns the bucket of latency d.
func bucketOf(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < subBuckets {
		return int(us)
	}
	shift := bits.Len64(us) - subBucketBits - 1
	if shift > maxShift {
		return bucketCount - 1
	}
	return (shift+1)*subBuckets + int(us>>shift) - subBuckets
}

// bucketMidpoint returns the middle of bucket i's range, never 0.
func bucketMidpoint(i int) time.Duration {
	if i < subBuckets {
		return time.Duration(i)*time.Microsecond + time.Microsecond/2
	}
	shift := i/subBuckets - 1
	lower := uint64(i%subBuckets+subBuckets) << shift
	width := uint64(1) << shift
	return time.Duration(lower)*time.Microsecond + time.Duration(width)*time.Microsecond/2
}
