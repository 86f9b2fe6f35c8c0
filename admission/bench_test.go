package admission

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
)

// BenchmarkBaseline is what the gateway does today: one shared atomic
// counter up and down per request. The others are read as ratios to it.
func BenchmarkBaseline(b *testing.B) {
	var inFlight atomic.Int64
	limit := int64(1 << 30)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if inFlight.Add(1) > limit {
				b.Fatal("over the limit")
			}
			inFlight.Add(-1)
		}
	})
}

func BenchmarkStatic(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int
	}{{"limited", 1 << 30}, {"unlimited", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			benchmarkLimiter(b, NewStatic(bc.limit))
		})
	}
}

func BenchmarkAdaptive(b *testing.B) {
	for _, algo := range []string{"gradient", "aimd"} {
		b.Run(algo, func(b *testing.B) {
			l, err := NewAdaptive(config.AdaptiveConcurrency{Algorithm: algo, MinLimit: 64, MaxLimit: 1 << 20}, 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchmarkLimiter(b, l)
		})
	}
}

// BenchmarkRefused is the cost of shedding: Acquire on a full limiter.
func BenchmarkRefused(b *testing.B) {
	l := NewStatic(1)
	l.Acquire()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := l.Acquire(); ok {
				b.Fatal("admitted beyond the limit")
			}
		}
	})
}

func benchmarkLimiter(b *testing.B, l Limiter) {
	outcome := Outcome{Latency: time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			release, ok := l.Acquire()
			if !ok {
				b.Fatal("refused below the limit")
			}
			release(outcome)
		}
	})
}
