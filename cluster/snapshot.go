package cluster

import (
	"sync"
	"sync/atomic"
)

// snapshotKey identifies a provider snapshot by its backing array and length.
// Snapshots are replaced, never mutated, so the identity of the slice stands
// for its content. A cache entry holding the key keeps the backing array
// alive, so its address cannot be reused by another snapshot meanwhile.
type snapshotKey struct {
	first **Provider
	n     int
}

func keyOf(providers []*Provider) snapshotKey {
	if len(providers) == 0 {
		return snapshotKey{}
	}
	return snapshotKey{&providers[0], len(providers)}
}

// cachedSnapshots is how many provider snapshots a cache keeps: the
// current one and the previous (calls still retrying on it during a
// registry update), and, when governance rules narrow a service's
// snapshot per call (a tag, a method), the few subsets a route's calls
// alternate between.
const cachedSnapshots = 4

// snapshotCache keeps what was computed for the last cachedSnapshots
// provider snapshots. Loads are lock-free; mu serialises builders, which
// check the cache again under it.
type snapshotCache[T any] struct {
	mu      sync.Mutex
	entries [cachedSnapshots]atomic.Pointer[cacheEntry[T]]
}

type cacheEntry[T any] struct {
	key snapshotKey
	val T
}

// load returns the value cached for providers.
func (c *snapshotCache[T]) load(providers []*Provider) (val T, ok bool) {
	key := keyOf(providers)
	for i := range c.entries {
		if e := c.entries[i].Load(); e != nil && e.key == key {
			return e.val, true
		}
	}
	return val, false
}

// latest returns the most recently stored value, if any.
func (c *snapshotCache[T]) latest() (val T, ok bool) {
	if e := c.entries[0].Load(); e != nil {
		return e.val, true
	}
	return val, false
}

// store caches val for providers, first, the older entries moving down
// (the oldest dropped). The caller holds c.mu.
func (c *snapshotCache[T]) store(providers []*Provider, val T) {
	for i := len(c.entries) - 1; i > 0; i-- {
		c.entries[i].Store(c.entries[i-1].Load())
	}
	c.entries[0].Store(&cacheEntry[T]{key: keyOf(providers), val: val})
}
