package admission

import (
	"testing"
	"time"
)

func TestBucketMidpointIsCloseToItsLatencies(t *testing.T) {
	last := -1
	for d := time.Duration(0); d < 10*time.Hour; d = d*17/16 + time.Microsecond {
		b := bucketOf(d)
		if b < last {
			t.Fatalf("bucketOf(%v) = %d, below bucketOf of a shorter latency (%d)", d, b, last)
		}
		last = b
		if b >= bucketCount {
			t.Fatalf("bucketOf(%v) = %d, beyond the %d buckets", d, b, bucketCount)
		}
		if b == bucketCount-1 {
			continue // the last bucket holds everything beyond
		}
		mid := bucketMidpoint(b)
		if d < subBuckets*time.Microsecond {
			if diff := (mid - d).Abs(); diff > time.Microsecond {
				t.Errorf("latency %v: bucket midpoint %v is %v away, want within 1µs", d, mid, diff)
			}
			continue
		}
		if rel := float64((mid - d).Abs()) / float64(d); rel > 1.0/16 {
			t.Errorf("latency %v: bucket midpoint %v is %.1f%% away, want within 6.25%%", d, mid, rel*100)
		}
	}
	if got := bucketOf(100 * time.Hour); got != bucketCount-1 {
		t.Errorf("bucketOf(100h) = %d, want the last bucket %d", got, bucketCount-1)
	}
	if got := bucketOf(-time.Second); got != 0 {
		t.Errorf("bucketOf(-1s) = %d, want 0", got)
	}
}

func TestDrainMedian(t *testing.T) {
	var h histogram
	if m, n := h.drainMedian(); m != 0 || n != 0 {
		t.Fatalf("empty histogram: median %v of %d, want 0 of 0", m, n)
	}
	// 6 fast, 5 slow: the median is fast; outliers do not move it.
	for range 6 {
		h.add(10 * time.Millisecond)
	}
	for range 4 {
		h.add(5 * time.Second)
	}
	h.add(time.Hour)
	m, n := h.drainMedian()
	if n != 11 || m != bucketMidpoint(bucketOf(10*time.Millisecond)) {
		t.Errorf("median %v of %d, want ~10ms of 11", m, n)
	}
	if m, n := h.drainMedian(); n != 0 {
		t.Errorf("after a drain: median %v of %d, want empty", m, n)
	}
	h.add(time.Millisecond)
	h.add(3 * time.Millisecond)
	if m, _ := h.drainMedian(); m != bucketMidpoint(bucketOf(time.Millisecond)) {
		t.Errorf("median of 1ms and 3ms = %v, want the lower (~1ms)", m)
	}
}
