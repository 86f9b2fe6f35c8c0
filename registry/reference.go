package registry

import (
	"container/list"
	"sync"
	"time"
)

// RefKey identifies a reference: a service and the call settings bound to
// it, as Dubbo caches its ReferenceConfigs.
type RefKey struct {
	Service ServiceKey
	Timeout time.Duration
}

// Reference binds a service key and call settings to the service's
// directory. It is what a consumer needs to call a service; the gateway
// keeps one per RefKey, never one per request.
type Reference struct {
	Key RefKey
	// Dir is the service's directory. It stays readable (its last
	// snapshot) after the reference is evicted.
	Dir *Directory

	el     *list.Element
	pins   int
	cached bool // taken with Get at least once: kept when unpinned
	last   time.Time
}

// References is a bounded cache of the references made on one registry.
// Routes pin theirs for as long as they live; references made on demand
// (the generic pass-through) are kept while used and evicted when more
// than Max are unpinned, least recently used first, or when idle for
// IdleTTL. Eviction releases the reference's directory, which lets the
// registry drop the subscription after its grace period: repeated calls to
// services nobody serves cost one reference and one subscription each, and
// nothing more.
type References struct {
	reg Registry

	mu       sync.Mutex
	max      int
	idle     time.Duration
	refs     map[RefKey]*Reference
	unpinned list.List // of *Reference, most recently used at the front
	sweep    *time.Timer
	closed   bool
}

// Default limits of a References cache.
const (
	DefaultMaxReferences = 1024
	DefaultReferenceIdle = 10 * time.Minute
)

// NewReferences makes the reference cache of reg. max ≤ 0 and idle ≤ 0
// take the defaults.
func NewReferences(reg Registry, max int, idle time.Duration) *References {
	c := &References{reg: reg, refs: make(map[RefKey]*Reference)}
	c.SetLimits(max, idle)
	return c
}

// SetLimits changes the bounds (on reload); the cache shrinks at once if
// needed.
func (c *References) SetLimits(max int, idle time.Duration) {
	if max <= 0 {
		max = DefaultMaxReferences
	}
	if idle <= 0 {
		idle = DefaultReferenceIdle
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max, c.idle = max, idle
	c.trim()
	if c.sweep != nil {
		c.sweep.Reset(c.idle / 2)
	}
}

// Get returns k's reference, making it on first use, and marks it used.
// It never blocks on the network. After Close it returns nil.
func (c *References) Get(k RefKey) *Reference {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	r := c.lookup(k)
	r.cached = true
	if r.pins == 0 {
		c.unpinned.MoveToFront(r.el)
		c.trim()
	}
	return r
}

// Pin returns k's reference held until Unpin: never evicted meanwhile.
// After Close it returns nil.
func (c *References) Pin(k RefKey) *Reference {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	r := c.lookup(k)
	if r.pins == 0 {
		c.unpinned.Remove(r.el)
		r.el = nil
	}
	r.pins++
	return r
}

// Unpin gives back a reference taken with Pin. Unpinned, a reference that
// Get also handed out becomes an ordinary cached one, evicted when idle or
// crowded out; one only routes used is released at once (a route removed
// by a reload releases its subscription).
func (c *References) Unpin(r *Reference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || r.pins == 0 || c.refs[r.Key] != r {
		return
	}
	if r.pins--; r.pins > 0 {
		return
	}
	if !r.cached {
		delete(c.refs, r.Key)
		r.Dir.Release()
		return
	}
	r.last = time.Now()
	r.el = c.unpinned.PushFront(r)
	c.trim()
}

// lookup finds or makes k's reference; the lock is held.
func (c *References) lookup(k RefKey) *Reference {
	now := time.Now()
	if r, ok := c.refs[k]; ok {
		r.last = now
		return r
	}
	r := &Reference{Key: k, Dir: c.reg.Subscribe(k.Service), last: now}
	r.el = c.unpinned.PushFront(r)
	c.refs[k] = r
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.idle/2, c.sweepIdle)
	}
	return r
}

// trim evicts unpinned references beyond max; the lock is held.
func (c *References) trim() {
	for c.unpinned.Len() > c.max {
		c.evict(c.unpinned.Back().Value.(*Reference))
	}
}

func (c *References) evict(r *Reference) {
	c.unpinned.Remove(r.el)
	r.el = nil
	delete(c.refs, r.Key)
	r.Dir.Release()
}

// sweepIdle evicts unpinned references idle for longer than the TTL.
func (c *References) sweepIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	cutoff := time.Now().Add(-c.idle)
	for el := c.unpinned.Back(); el != nil; {
		r := el.Value.(*Reference)
		if r.last.After(cutoff) {
			break // the rest were used more recently
		}
		el = el.Prev()
		c.evict(r)
	}
	c.sweep.Reset(c.idle / 2)
}

// Len is the number of references, pinned or not.
func (c *References) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refs)
}

// Close releases every reference; Get and Pin return nil afterwards.
func (c *References) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.sweep != nil {
		c.sweep.Stop()
	}
	for _, r := range c.refs {
		r.Dir.Release()
	}
	c.refs = nil
	c.unpinned.Init()
}
