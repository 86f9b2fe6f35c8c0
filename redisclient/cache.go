package redisclient

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// cacheStore is the client-side cache of one Redis connection (a rueidis
// CacheStore, which the default store is not fit for at the edge: it
// keeps the answer "no such key" like any other, so a client sending
// random tokens fills it with misses and evicts the hot tokens; and it
// moves an entry to the back of its list only every 1024th hit, so even a
// hot entry is evicted about in insertion order).
//
// Here the answers come in two parts with their own bounds:
//
//   - found: replies about keys that exist, within maxBytes minus the
//     absent part's share. Evicted by CLOCK (second chance): a hit marks
//     its entry (an atomic store under the read lock, no list move), and
//     eviction passes a marked entry over once, clearing the mark; so a
//     key used since the hand last passed is never evicted while an unused
//     one is left.
//   - absent: replies saying a key does not exist (nil, PTTL -2), within
//     maxBytes/absentShare, oldest out first. A flood of random keys
//     churns this part only, and a client repeating one unknown token
//     still costs no round trip while the entry lasts.
//
// Redis tracks every key read with caching (existing or not) and
// invalidates it on change, so an absent entry goes as soon as its key is
// created. Concurrent lookups of a key share one round trip (its pending
// entry), as in rueidis's own store.
type cacheStore struct {
	mu      sync.RWMutex
	keys    map[string]map[string]*cacheEntry // key → command → entry; nil once closed
	parts   [2]cachePart                      // found, absent
	gauges  *cacheGauges
	maxSize [2]int
}

// Parts of the cache.
const (
	partFound  = 0
	partAbsent = 1
)

// absentShare: the absent part gets 1/absentShare of the cache's bytes.
const absentShare = 16

// entryOverhead approximates what an entry costs beyond its key, command
// and reply: the entry, its list element and its map slots.
const entryOverhead = 200

// cachePart is one part's entries, oldest first, and their size.
type cachePart struct {
	order list.List // of *cacheEntry
	size  int
}

// cacheEntry is one command's reply for one key, or its pending fetch.
type cacheEntry struct {
	key, cmd string
	ch       chan struct{} // closed once val or err is set; nil for an entry made ready at once
	val      rueidis.RedisMessage
	err      error
	xat      int64 // Unix ms: the client-side expiry (the smaller of the server's and the cache TTL)
	pending  bool  // guarded by the store's mutex
	part     int
	size     int
	elem     *list.Element // in its part's order; nil while pending
	used     atomic.Bool   // hit since the CLOCK hand last passed
}

// Wait waits for the pending fetch another caller started.
func (e *cacheEntry) Wait(ctx context.Context) (rueidis.RedisMessage, error) {
	select {
	case <-ctx.Done():
		return rueidis.RedisMessage{}, ctx.Err()
	case <-e.ch:
		return e.val, e.err
	}
}

// cacheGauges export every connection's cache, by part.
type cacheGauges struct {
	entries, bytes [2]prometheus.Gauge
}

// newCacheStore returns a rueidis.NewCacheStoreFn making stores of
// CacheSizeEachConn bytes that report to g.
func newCacheStore(g *cacheGauges) rueidis.NewCacheStoreFn {
	return func(opt rueidis.CacheStoreOption) rueidis.CacheStore {
		absent := max(opt.CacheSizeEachConn/absentShare, 1)
		return &cacheStore{
			keys:    map[string]map[string]*cacheEntry{},
			gauges:  g,
			maxSize: [2]int{max(opt.CacheSizeEachConn-absent, 1), absent},
		}
	}
}

// Flight answers a cached reply (a hit), or the entry of a fetch already
// pending for key and cmd, or neither: then the caller fetches, and Update
// or Cancel ends its pending entry.
func (s *cacheStore) Flight(key, cmd string, ttl time.Duration, now time.Time) (rueidis.RedisMessage, rueidis.CacheEntry) {
	ms := now.UnixMilli()
	s.mu.RLock()
	e := s.keys[key][cmd]
	if e != nil && !e.pending && e.xat > ms {
		if !e.used.Load() { // no write (and no cache line bouncing) when marked already
			e.used.Store(true)
		}
		v := e.val
		s.mu.RUnlock()
		return v, nil
	}
	s.mu.RUnlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		return rueidis.RedisMessage{}, nil // closed: fetch without caching
	}
	cmds := s.keys[key]
	if e := cmds[cmd]; e != nil {
		switch {
		case e.pending:
			return rueidis.RedisMessage{}, e
		case e.xat > ms:
			e.used.Store(true)
			return e.val, nil
		}
		s.remove(e)        // expired
		cmds = s.keys[key] // gone if e was its key's last entry
	}
	if cmds == nil {
		cmds = make(map[string]*cacheEntry, 2)
		s.keys[key] = cmds
	}
	cmds[cmd] = &cacheEntry{key: key, cmd: cmd, ch: make(chan struct{}), xat: ms + ttl.Milliseconds(), pending: true}
	return rueidis.RedisMessage{}, nil
}

// Update ends the pending fetch of key and cmd with its reply, keeping it
// in the part it belongs to, and returns the reply's client-side expiry.
func (s *cacheStore) Update(key, cmd string, val rueidis.RedisMessage) (pxat int64) {
	s.mu.Lock()
	e := s.keys[key][cmd]
	if e == nil || !e.pending {
		s.mu.Unlock()
		return 0
	}
	pxat = e.xat
	if server := val.CachePXAT(); server > 0 && server < pxat {
		pxat = server // the key expires before the cache TTL
	}
	kept, err := withExpiry(val, pxat)
	if err != nil {
		// Not kept: the waiters get the reply as it came.
		e.val, e.pending = val, false
		s.drop(e)
		s.mu.Unlock()
		close(e.ch)
		return pxat
	}
	e.val, e.xat, e.pending = kept, pxat, false
	e.part = partFound
	if keyAbsent(cmd, val) {
		e.part = partAbsent
	}
	e.size = entryOverhead + len(key) + len(cmd) + kept.CacheSize()
	p := &s.parts[e.part]
	e.elem = p.order.PushBack(e)
	p.size += e.size
	s.count(e, 1)
	s.evict(e.part, e)
	ch := e.ch
	s.mu.Unlock()
	close(ch)
	return pxat
}

// Cancel ends the pending fetch of key and cmd with err.
func (s *cacheStore) Cancel(key, cmd string, err error) {
	s.mu.Lock()
	e := s.keys[key][cmd]
	if e == nil || !e.pending {
		s.mu.Unlock()
		return
	}
	e.err, e.pending = err, false
	s.drop(e)
	s.mu.Unlock()
	close(e.ch)
}

// Delete drops the replies of keys Redis invalidated (nil: all of them),
// leaving pending fetches be.
func (s *cacheStore) Delete(keys []rueidis.RedisMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keys == nil {
		for _, cmds := range s.keys {
			s.deleteKey(cmds)
		}
		return
	}
	for _, k := range keys {
		if name, err := k.ToString(); err == nil {
			s.deleteKey(s.keys[name])
		}
	}
}

func (s *cacheStore) deleteKey(cmds map[string]*cacheEntry) {
	for _, e := range cmds {
		if !e.pending {
			s.remove(e)
		}
	}
}

// Close drops everything and fails the pending fetches with err: the
// connection is gone, and with it Redis's tracking of these keys.
func (s *cacheStore) Close(err error) {
	s.mu.Lock()
	var pending []*cacheEntry
	for _, cmds := range s.keys {
		for _, e := range cmds {
			if e.pending {
				e.err, e.pending = err, false
				pending = append(pending, e)
			} else {
				s.count(e, -1)
			}
		}
	}
	s.keys = nil
	s.parts = [2]cachePart{}
	s.mu.Unlock()
	for _, e := range pending {
		close(e.ch)
	}
}

// evict removes entries of part from the front until it fits, sparing
// keep (the entry just added) and, once, every entry used since.
func (s *cacheStore) evict(part int, keep *cacheEntry) {
	p := &s.parts[part]
	for p.size > s.maxSize[part] && p.order.Len() > 1 {
		front := p.order.Front()
		e := front.Value.(*cacheEntry)
		if e == keep {
			p.order.MoveToBack(front)
			continue
		}
		if part == partFound && e.used.Swap(false) {
			p.order.MoveToBack(front) // a second chance
			continue
		}
		s.remove(e)
	}
}

// remove forgets a ready entry.
func (s *cacheStore) remove(e *cacheEntry) {
	p := &s.parts[e.part]
	p.order.Remove(e.elem)
	p.size -= e.size
	s.count(e, -1)
	s.drop(e)
}

// drop takes e out of the key index.
func (s *cacheStore) drop(e *cacheEntry) {
	if cmds := s.keys[e.key]; cmds[e.cmd] == e {
		if delete(cmds, e.cmd); len(cmds) == 0 {
			delete(s.keys, e.key)
		}
	}
}

func (s *cacheStore) count(e *cacheEntry, sign int) {
	if s.gauges == nil {
		return
	}
	s.gauges.entries[e.part].Add(float64(sign))
	s.gauges.bytes[e.part].Add(float64(sign * e.size))
}

// keyAbsent reports whether a reply says its key does not exist.
func keyAbsent(cmd string, val rueidis.RedisMessage) bool {
	if val.IsNil() {
		return true
	}
	if cmd != "PTTL" {
		return false
	}
	n, err := val.ToInt64()
	return err == nil && n == -2
}

// withExpiry returns a copy of val, marked as a cached reply, that expires
// at pxat (Unix ms): what rueidis's own store does with an unexported
// setter, done through the cache serialization rueidis offers stores.
func withExpiry(val rueidis.RedisMessage, pxat int64) (rueidis.RedisMessage, error) {
	buf := val.CacheMarshal(nil)
	for i := range 7 { // the first 7 bytes are the expiry, little-endian
		buf[i] = byte(pxat >> (8 * i))
	}
	var out rueidis.RedisMessage
	err := out.CacheUnmarshalView(buf)
	return out, err
}
