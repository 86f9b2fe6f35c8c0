package auth

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// stuckStore blocks every renewal until release is closed (or the
// renewal's context ends).
type stuckStore struct {
	release chan struct{}
	started atomic.Int64
}

func (s *stuckStore) Lookup(context.Context, string) (string, time.Duration, bool, error) {
	return "", 0, false, nil
}

func (s *stuckStore) Renew(ctx context.Context, _ string, _, _ time.Duration) (bool, error) {
	s.started.Add(1)
	select {
	case <-s.release:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// A full queue drops renewals at once: a request never waits on renewal.
func TestRenewQueueFullDrops(t *testing.T) {
	store := &stuckStore{release: make(chan struct{})}
	m := newFilterMetrics(prometheus.NewRegistry(), "r")
	r := newRenewer(store, time.Hour, time.Hour, time.Minute, time.Minute, m, slog.New(slog.DiscardHandler))
	defer r.close()
	defer close(store.release)

	now := time.Now()
	// Both workers busy first, so that the queue alone takes what follows.
	for i := range renewWorkers {
		r.request("busy-"+strconv.Itoa(i), now)
	}
	deadline := time.Now().Add(5 * time.Second)
	for store.started.Load() < renewWorkers {
		if time.Now().After(deadline) {
			t.Fatal("the workers did not take their renewals")
		}
		time.Sleep(time.Millisecond)
	}
	n := renewQueueSize + 10
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			r.request("tok-"+strconv.Itoa(i), now)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("request blocked with the renewal queue full")
	}
	if dropped := value(m.renewals[renewDropped]); dropped != 10 {
		t.Errorf("dropped %v, want 10", dropped)
	}
	if q := value(m.renewQueue); q != renewQueueSize {
		t.Errorf("queue gauge %v, want %d", q, renewQueueSize)
	}
	// A dropped token is forgotten, so a later request may try again.
	r.mu.RLock()
	tracked := len(r.recent)
	r.mu.RUnlock()
	if want := renewWorkers + renewQueueSize; tracked != want {
		t.Errorf("tracking %d tokens, want %d", tracked, want)
	}
}

func TestRenewDeduplicatesAndBoundsTracking(t *testing.T) {
	store := &stuckStore{release: make(chan struct{})}
	close(store.release) // renewals succeed at once
	m := newFilterMetrics(prometheus.NewRegistry(), "r")
	r := newRenewer(store, time.Hour, time.Hour, time.Minute, time.Minute, m, slog.New(slog.DiscardHandler))
	defer r.close()

	t0 := time.Now()
	r.request("a", t0)
	r.request("a", t0.Add(30*time.Second))
	if got := value(m.renewals[renewDeduplicated]); got != 1 {
		t.Errorf("deduplicated %v within the interval, want 1", got)
	}
	r.request("a", t0.Add(61*time.Second)) // a new interval
	if got := value(m.renewals[renewDeduplicated]); got != 1 {
		t.Errorf("deduplicated %v after the interval, want still 1", got)
	}

	// The tracking map is bounded: full of recent tokens, new ones are
	// dropped; once those are older than the interval they make room.
	r.mu.Lock()
	for i := range maxRecentTokens {
		r.recent["fill-"+strconv.Itoa(i)] = t0.UnixNano()
	}
	r.mu.Unlock()
	r.request("new", t0.Add(time.Second))
	if got := value(m.renewals[renewDropped]); got != 1 {
		t.Errorf("dropped %v with the map full, want 1", got)
	}
	r.request("new", t0.Add(2*time.Minute))
	r.mu.RLock()
	_, tracked := r.recent["new"]
	size := len(r.recent)
	r.mu.RUnlock()
	if !tracked || size > 10 {
		t.Errorf("after the interval: new tracked %v, %d entries", tracked, size)
	}
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}
