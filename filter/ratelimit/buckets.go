package ratelimit

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// bucketKey identifies a bucket. Exactly one kind of key is used by a
// filter: addr (client_ip, anonymous users), name (user id, header value)
// or neither (the route's single bucket, a missing header, an unknown
// client address). A user id and an address can never be equal.
type bucketKey struct {
	addr netip.Addr
	name string
}

// decision is the answer for one request.
type decision struct {
	allowed    bool
	remaining  int64         // requests that may follow at once
	retryAfter time.Duration // denied: when the next request may pass
	reset      time.Duration // when the bucket is full again
}

// buckets are the local token buckets (GCRA), at most maxKeys of them,
// split into shards that each drop their least recently used bucket to
// make room.
type buckets struct {
	shards    []shard
	seed      maphash.Seed
	interval  int64 // emission interval: nanoseconds per request
	limit     int64 // interval × burst: how far ahead of now a bucket's TAT may go
	evictions prometheus.Counter
}

// shardedAbove is the key bound from which buckets are split into shards;
// below, one lock is cheap enough and eviction is exact LRU.
const (
	shardedAbove = 1024
	numShards    = 16
)

func newBuckets(maxKeys int, interval, limit int64, evictions prometheus.Counter) *buckets {
	n := 1
	if maxKeys >= shardedAbove {
		n = numShards
	}
	b := &buckets{
		shards:    make([]shard, n),
		seed:      maphash.MakeSeed(),
		interval:  interval,
		limit:     limit,
		evictions: evictions,
	}
	for i := range b.shards {
		s := &b.shards[i]
		s.capacity = maxKeys / n
		if i < maxKeys%n {
			s.capacity++
		}
		s.byKey = make(map[bucketKey]*bucket)
		s.lru.next, s.lru.prev = &s.lru, &s.lru
	}
	return b
}

// take spends one request of key's bucket at now (nanoseconds since the
// filter started) if it has one left.
func (b *buckets) take(key bucketKey, now int64) decision {
	s := &b.shards[0]
	if len(b.shards) > 1 {
		a := key.addr.As16()
		h := maphash.String(b.seed, key.name) ^ maphash.Bytes(b.seed, a[:])
		s = &b.shards[h%uint64(len(b.shards))]
	}
	d, evicted := s.take(key, now, b.interval, b.limit)
	if evicted {
		b.evictions.Inc()
	}
	return d
}

// bucket is one key's state: its theoretical arrival time (TAT), the time
// at which its bucket is full again.
type bucket struct {
	key        bucketKey
	tat        int64
	prev, next *bucket
}

type shard struct {
	mu       sync.Mutex
	byKey    map[bucketKey]*bucket
	lru      bucket // list head: lru.next is the most, lru.prev the least recently used
	capacity int
}

func (s *shard) take(key bucketKey, now, interval, limit int64) (d decision, evicted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.byKey[key]
	if b != nil {
		s.unlink(b)
	} else {
		if len(s.byKey) >= s.capacity {
			b = s.lru.prev // reused: a full shard allocates nothing
			s.unlink(b)
			delete(s.byKey, b.key)
			evicted = true
		} else {
			b = new(bucket)
		}
		*b = bucket{key: key, tat: now} // a new key starts with a full bucket
		s.byKey[key] = b
	}
	b.prev, b.next = &s.lru, s.lru.next
	b.prev.next, b.next.prev = b, b
	return gcra(&b.tat, now, interval, limit), evicted
}

func (s *shard) unlink(b *bucket) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
}

// gcra is the generic cell rate algorithm: a request at now passes when it
// leaves the TAT at most limit ahead of now; each request moves the TAT on
// by interval.
func gcra(tat *int64, now, interval, limit int64) decision {
	t := max(*tat, now)
	next := t + interval
	if ahead := next - now; ahead > limit {
		return decision{retryAfter: time.Duration(ahead - limit), reset: time.Duration(t - now)}
	}
	*tat = next
	return decision{
		allowed:   true,
		remaining: (limit - (next - now)) / interval,
		reset:     time.Duration(next - now),
	}
}
