package redisclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/rueidis"
)

// reply builds a RESP3 reply as rueidis would hand it to a store: typ is
// '$' (a string s), ':' (the integer n) or '_' (nil); pxat is the server's
// expiry the pipe puts on it (0: none).
func reply(t testing.TB, typ byte, s string, n int64, pxat int64) rueidis.RedisMessage {
	t.Helper()
	buf := make([]byte, 7, 16+len(s))
	for i := range 7 {
		buf[i] = byte(pxat >> (8 * i))
	}
	buf = append(buf, typ)
	size := uint64(n)
	if typ == '$' {
		size = uint64(len(s))
	}
	buf = binary.BigEndian.AppendUint64(buf, size)
	buf = append(buf, s...)
	var m rueidis.RedisMessage
	if err := m.CacheUnmarshalView(buf); err != nil {
		t.Fatal(err)
	}
	return m
}

func testStore(t testing.TB, size int) (*cacheStore, *cacheGauges) {
	g := &cacheGauges{}
	for i := range 2 {
		g.entries[i] = prometheus.NewGauge(prometheus.GaugeOpts{Name: fmt.Sprintf("e%d", i)})
		g.bytes[i] = prometheus.NewGauge(prometheus.GaugeOpts{Name: fmt.Sprintf("b%d", i)})
	}
	return newCacheStore(g)(rueidis.CacheStoreOption{CacheSizeEachConn: size}).(*cacheStore), g
}

// fetch looks key up as GET; on a miss it "fetches" val and stores it. It
// says whether the store answered.
func fetch(t testing.TB, s *cacheStore, key string, val rueidis.RedisMessage) bool {
	t.Helper()
	now := time.Now()
	v, e := s.Flight(key, "GET", time.Minute, now)
	switch {
	case e != nil:
		t.Fatalf("%s: a pending entry with no fetch running", key)
	case !isEmpty(v):
		if !v.IsCacheHit() {
			t.Errorf("%s: a hit not marked as one", key)
		}
		return true
	}
	s.Update(key, "GET", val)
	return false
}

func isEmpty(v rueidis.RedisMessage) bool {
	_, err := v.ToAny()
	return err != nil && !v.IsNil()
}

func entries(s *cacheStore) (found, absent int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.parts[partFound].order.Len(), s.parts[partAbsent].order.Len()
}

// TestCacheStoreMissesDoNotEvictFound: 100,000 lookups of keys that do not
// exist leave every found key cached, and the absent part within its share.
func TestCacheStoreMissesDoNotEvictFound(t *testing.T) {
	const size = 256 << 10
	s, g := testStore(t, size)
	for i := range 100 {
		fetch(t, s, fmt.Sprintf("token:real-%d", i), reply(t, '$', `{"userId":"u"}`, 0, 0))
	}
	for i := range 100_000 {
		if fetch(t, s, fmt.Sprintf("token:random-%d", i), reply(t, '_', "", 0, 0)) {
			t.Fatal("a random key was a hit")
		}
	}
	for i := range 100 {
		if !fetch(t, s, fmt.Sprintf("token:real-%d", i), reply(t, '$', "x", 0, 0)) {
			t.Fatalf("real-%d was evicted by misses", i)
		}
	}
	found, absent := entries(s)
	if found != 100 || absent == 0 || s.parts[partAbsent].size > size/absentShare {
		t.Errorf("found %d, absent %d entries of %d bytes (share %d)", found, absent, s.parts[partAbsent].size, size/absentShare)
	}
	// A repeated unknown key is answered from the absent part while it lasts.
	fetch(t, s, "token:expired", reply(t, '_', "", 0, 0))
	if !fetch(t, s, "token:expired", reply(t, '_', "", 0, 0)) {
		t.Error("a repeated absent key was not cached")
	}
	if v := gaugeValue(t, g.entries[partFound]); v != 100 {
		t.Errorf("found entries gauge = %v, want 100", v)
	}
	s.Close(errors.New("closed"))
	if v := gaugeValue(t, g.entries[partFound]) + gaugeValue(t, g.entries[partAbsent]) + gaugeValue(t, g.bytes[partFound]); v != 0 {
		t.Errorf("gauges after Close sum to %v, want 0", v)
	}
}

// TestCacheStoreKeepsUsedKeys: when found keys overflow, a key used since
// the last pass of the hand survives keys nobody used.
func TestCacheStoreKeepsUsedKeys(t *testing.T) {
	s, _ := testStore(t, 64<<10)
	fetch(t, s, "hot", reply(t, '$', "v", 0, 0))
	for i := range 10_000 {
		fetch(t, s, "hot", reply(t, '$', "v", 0, 0)) // a hit each time
		fetch(t, s, fmt.Sprintf("cold-%d", i), reply(t, '$', "v", 0, 0))
	}
	if !fetch(t, s, "hot", reply(t, '$', "v", 0, 0)) {
		t.Error("the hot key was evicted")
	}
	if s.parts[partFound].size > s.maxSize[partFound] {
		t.Errorf("found part %d bytes, over its %d", s.parts[partFound].size, s.maxSize[partFound])
	}
}

// TestCacheStoreExpiryAndInvalidation: an entry expires at the sooner of
// the cache TTL and the key's own expiry, which the hit carries (Get
// derives the key's TTL from it); Delete drops a key's replies.
func TestCacheStoreExpiryAndInvalidation(t *testing.T) {
	s, _ := testStore(t, 1<<20)
	now := time.Now()
	soon := now.Add(2 * time.Second).UnixMilli()
	if _, e := s.Flight("k", "GET", time.Minute, now); e != nil {
		t.Fatal("pending entry")
	}
	if pxat := s.Update("k", "GET", reply(t, '$', "v", 0, soon)); pxat != soon {
		t.Errorf("Update = %d, want the key's expiry %d", pxat, soon)
	}
	v, _ := s.Flight("k", "GET", time.Minute, now)
	if got := v.CachePXAT(); got != soon {
		t.Errorf("hit expires at %d, want %d", got, soon)
	}
	if v, _ := s.Flight("k", "GET", time.Minute, now.Add(3*time.Second)); !isEmpty(v) {
		t.Error("an expired entry was a hit")
	}
	s.Update("k", "GET", reply(t, '$', "v", 0, 0))
	later := now.Add(time.Minute).UnixMilli()
	if v, _ := s.Flight("k", "GET", time.Minute, now); isEmpty(v) {
		t.Fatal("no hit")
	} else if got := v.CachePXAT(); got < later-5000 || got > later+5000 {
		t.Errorf("hit of a key without TTL expires at %d, want about now+1m (%d)", got, later)
	}
	key := reply(t, '$', "k", 0, 0)
	s.Delete([]rueidis.RedisMessage{key})
	if v, _ := s.Flight("k", "GET", time.Minute, now); !isEmpty(v) {
		t.Error("an invalidated key was a hit")
	}
}

// TestCacheStoreSharesPendingFetch: lookups during a fetch wait for it
// and get its reply or its error, absent replies included.
func TestCacheStoreSharesPendingFetch(t *testing.T) {
	s, _ := testStore(t, 1<<20)
	now := time.Now()
	s.Flight("k", "GET", time.Minute, now)
	_, waiter := s.Flight("k", "GET", time.Minute, now)
	if waiter == nil {
		t.Fatal("a second lookup during the fetch did not wait for it")
	}
	s.Update("k", "GET", reply(t, '_', "", 0, 0))
	v, err := waiter.Wait(context.Background())
	if err != nil || !v.IsNil() {
		t.Errorf("waiter got %v, %v; want the nil reply", v, err)
	}
	s.Flight("c", "GET", time.Minute, now)
	_, waiter = s.Flight("c", "GET", time.Minute, now)
	boom := errors.New("boom")
	s.Cancel("c", "GET", boom)
	if _, err := waiter.Wait(context.Background()); !errors.Is(err, boom) {
		t.Errorf("waiter of a canceled fetch got %v", err)
	}
	if v, e := s.Flight("c", "GET", time.Minute, now); e != nil || !isEmpty(v) {
		t.Error("a canceled fetch left an entry")
	}
}

func gaugeValue(t testing.TB, g prometheus.Gauge) float64 {
	t.Helper()
	return testutil.ToFloat64(g)
}

// BenchmarkCacheStoreHit is the store's part of a cached Get (GET and
// PTTL, both hits), alone and from every CPU at once.
func BenchmarkCacheStoreHit(b *testing.B) {
	s, _ := testStore(b, 64<<20)
	for i := range 10_000 {
		fetch(b, s, fmt.Sprintf("token:%d", i), reply(b, '$', `{"userId":"u-123456"}`, 0, 0))
	}
	for _, cmd := range []string{"GET", "PTTL"} {
		s.Flight("token:hot", cmd, time.Hour, time.Now())
		s.Update("token:hot", cmd, reply(b, '$', `{"userId":"u-123456"}`, 0, 0))
	}
	hit := func() {
		now := time.Now()
		for _, cmd := range []string{"GET", "PTTL"} {
			if v, _ := s.Flight("token:hot", cmd, 30*time.Second, now); !v.IsCacheHit() {
				b.Fatal("miss")
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hit()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				hit()
			}
		})
	})
}
