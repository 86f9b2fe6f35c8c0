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

// snapshotCache keeps what was computed for the last two provider snapshots
// (two, so that calls still retrying on the previous snapshot during a
// registry update do not evict the current one). Loads are lock-free; mu
// serialises builders, which check the cache again under it.
type snapshotCache[T any] struct {
	mu      sync.Mutex
	entries [2]atomic.Pointer[cacheEntry[T]]
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

// store caches val for providers, keeping the previous entry as the second one.
// The caller holds c.mu.
func (c *snapshotCache[T]) store(providers []*Provider, val T) {
	c.entries[1].Store(c.entries[0].Load())
	c.entries[0].Store(&cacheEntry[T]{key: keyOf(providers), val: val})
}
