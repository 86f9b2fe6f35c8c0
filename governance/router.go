package governance

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dubbogw/dubbogw/cluster"
)

// Bounds of the per-snapshot cache of a Router.
const (
	// maxCached bounds the results cached for one snapshot: requests with
	// more distinct (method, tag, argument conditions) are routed without
	// the cache, at O(providers × conditions) each.
	maxCached = 256
	// maxDynamic bounds the conditions on arguments and attachments whose
	// outcome is part of the cache key; a router with more is not cached.
	maxDynamic = 64
	// cachedSnapshots is how many snapshots results are kept for: the
	// registry's current one and the previous (calls still on it), and the
	// protocol subsets routes of different protocols hand.
	cachedSnapshots = 4
)

// Router narrows the providers of one service by its rules, in Dubbo 3's
// order: tag router, then condition rules. It is immutable and safe for
// concurrent use. A nil *Router leaves every snapshot as it is: the
// registry hands none for a service without rules whose providers have no
// static tag.
type Router struct {
	consumer Consumer
	tag      *TagRule
	conds    []*Condition
	force    []bool // force of each condition's rule
	dynamic  []int  // indexes in conds of the dynamic conditions
	cached   bool   // the dynamic conditions fit the cache key

	mu     sync.Mutex // serialises cache writers
	caches [cachedSnapshots]atomic.Pointer[routeCache]
	next   int // the entry a new snapshot takes (under mu)
}

// routeCache holds the results for one snapshot. Its map is replaced,
// never changed, once stored: readers load it without a lock.
type routeCache struct {
	snap []*cluster.Provider // kept, so its identity cannot be reused
	m    map[routeKey][]*cluster.Provider
}

type routeKey struct {
	method, tag string
	dyn         uint64 // the dynamic conditions whose when side matched
}

// NewRouter returns the router of one service for consumer c: the tag
// rule of its providers' application (nil: static tags alone) and its
// condition rules in order (nil entries and disabled rules are skipped).
func NewRouter(c Consumer, tag *TagRule, conds ...*ConditionRule) *Router {
	r := &Router{consumer: c, tag: tag}
	for _, cr := range conds {
		if cr == nil || !cr.Enabled {
			continue
		}
		for _, cond := range cr.Conditions {
			if cond.dynamic {
				r.dynamic = append(r.dynamic, len(r.conds))
			}
			r.conds = append(r.conds, cond)
			r.force = append(r.force, cr.Force)
		}
	}
	r.cached = len(r.dynamic) <= maxDynamic
	return r
}

// Empty reports whether r has no rule at all (static tags still apply).
func (r *Router) Empty() bool {
	return r == nil || (len(r.conds) == 0 && (r.tag == nil || !r.tag.Enabled || len(r.tag.Tags) == 0))
}

// Route returns the providers of ps the request may go to: ps itself
// when the rules leave every one, else a slice cached for the snapshot ps
// (and the method, the tag and the outcome of the conditions on arguments
// and attachments), empty when the rules leave none. ps must be a
// registry snapshot, never mutated.
func (r *Router) Route(ps []*cluster.Provider, req *Request) []*cluster.Provider {
	if r == nil || len(ps) == 0 {
		return ps
	}
	var dyn uint64
	if r.cached {
		for j, i := range r.dynamic {
			if r.conds[i].matchesWhen(&r.consumer, req) {
				dyn |= 1 << j
			}
		}
		key := routeKey{method: req.Method, tag: req.Tag, dyn: dyn}
		if c := r.cacheOf(ps); c != nil {
			if out, ok := c.m[key]; ok {
				return out
			}
		}
		out := r.route(ps, req, dyn)
		r.store(ps, key, out)
		return out
	}
	return r.route(ps, req, 0)
}

func sameSnapshot(a, b []*cluster.Provider) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// cacheOf returns the cache of snapshot ps, nil when there is none.
func (r *Router) cacheOf(ps []*cluster.Provider) *routeCache {
	for i := range r.caches {
		if c := r.caches[i].Load(); c != nil && sameSnapshot(c.snap, ps) {
			return c
		}
	}
	return nil
}

// store caches out for ps and key; a new snapshot takes the entry of the
// oldest one.
func (r *Router) store(ps []*cluster.Provider, key routeKey, out []*cluster.Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.caches {
		c := r.caches[i].Load()
		if c == nil || !sameSnapshot(c.snap, ps) {
			continue
		}
		if len(c.m) >= maxCached {
			return
		}
		m := make(map[routeKey][]*cluster.Provider, len(c.m)+1)
		for k, v := range c.m {
			m[k] = v
		}
		m[key] = out
		r.caches[i].Store(&routeCache{snap: ps, m: m})
		return
	}
	r.caches[r.next].Store(&routeCache{snap: ps, m: map[routeKey][]*cluster.Provider{key: out}})
	r.next = (r.next + 1) % cachedSnapshots
}

// route computes the providers of ps for req; dyn holds the outcome of the
// dynamic conditions when cached (else they are evaluated here).
func (r *Router) route(ps []*cluster.Provider, req *Request, dyn uint64) []*cluster.Provider {
	cur := routeTag(r.tag, req.Tag, ps, make([]*cluster.Provider, 0, len(ps)))
	for i, c := range r.conds {
		var matched bool
		if j := slices.Index(r.dynamic, i); j >= 0 && r.cached {
			matched = dyn&(1<<j) != 0
		} else {
			matched = c.matchesWhen(&r.consumer, req)
		}
		if !matched {
			continue
		}
		if c.block {
			cur = cur[:0:0]
			continue
		}
		next := make([]*cluster.Provider, 0, len(cur))
		for _, p := range cur {
			if c.matchesThen(&r.consumer, p) {
				next = append(next, p)
			}
		}
		if len(next) == 0 && !r.force[i] {
			continue // a condition that leaves none is ignored without force (Dubbo's ConditionStateRouter)
		}
		cur = next
	}
	if slices.Equal(cur, ps) {
		return ps // every provider: the cluster's caches stay on the registry's snapshot
	}
	return slices.Clip(cur)
}

// NeedsRouter reports whether a service whose snapshot is ps needs a
// Router without rules: some provider has a static tag.
func NeedsRouter(ps []*cluster.Provider) bool {
	for _, p := range ps {
		if staticTag(p) != "" {
			return true
		}
	}
	return false
}
