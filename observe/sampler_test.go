package observe

import (
	"sync"
	"testing"
	"time"
)

func TestLogSampler(t *testing.T) {
	var s LogSampler
	t0 := time.Unix(1000, 0)
	if ok, _ := s.Allow(t0); !ok {
		t.Fatal("the first line was held back")
	}
	for i := range 100 {
		if ok, _ := s.Allow(t0.Add(time.Duration(i) * 5 * time.Millisecond)); ok {
			t.Fatalf("line %d within the second went through", i)
		}
	}
	if ok, held := s.Allow(t0.Add(time.Second)); !ok || held != 100 {
		t.Fatalf("a second later: %v, %d held back; want true, 100", ok, held)
	}
	// Many writers at one instant: exactly one line goes through.
	var wg sync.WaitGroup
	var through sync.Map
	t1 := t0.Add(5 * time.Second)
	for i := range 50 {
		wg.Go(func() {
			if ok, _ := s.Allow(t1); ok {
				through.Store(i, true)
			}
		})
	}
	wg.Wait()
	n := 0
	through.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d of 50 concurrent lines went through, want 1", n)
	}
}
