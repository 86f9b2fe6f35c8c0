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
	// maxDistinct bounds the different results kept per snapshot for
	// interning (Route): as many as the rules can make, which no client
	// chooses.
	maxDistinct = 64
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

// routeCache holds the results for one snapshot. It is replaced, never
// changed, once stored: readers load it without a lock.
type routeCache struct {
	snap []*cluster.Provider // kept, so its identity cannot be reused
	m    map[routeKey][]*cluster.Provider
	// known are the tags that can choose providers of snap: the tag
	// rule's names and the providers' static tags. Every other tag routes
	// as any unknown tag does (its providers: none; then force decides),
	// so all share one key: a client sending a new tag at each request
	// fills no cache entry.
	known map[string]bool
	// distinct are the different results computed for snap, each once:
	// a result equal to one of them is that slice, so the cluster's
	// per-snapshot caches (views, rings, breakers) see as many subsets as
	// the rules make, whatever the number of keys, and even for results
	// computed past the cache's bound.
	distinct [][]*cluster.Provider
}

// unknownTag is the key of every tag not in routeCache.known: no real tag
// holds a NUL byte.
const unknownTag = "\x00unknown"

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
// when the rules leave every one, else a slice kept for the snapshot ps
// (one per distinct result: the same providers are the same slice), empty
// when the rules leave none. ps must be a registry snapshot, never
// mutated.
func (r *Router) Route(ps []*cluster.Provider, req *Request) []*cluster.Provider {
	if r == nil || len(ps) == 0 {
		return ps
	}
	c := r.cacheOf(ps)
	if c == nil {
		c = r.newCache(ps)
	}
	if !r.cached {
		return r.intern(ps, nil, r.route(ps, req, 0))
	}
	var dyn uint64
	for j, i := range r.dynamic {
		if r.conds[i].matchesWhen(&r.consumer, req) {
			dyn |= 1 << j
		}
	}
	key := routeKey{method: req.Method, tag: req.Tag, dyn: dyn}
	if key.tag != "" && !c.known[key.tag] {
		key.tag = unknownTag
	}
	if out, ok := c.m[key]; ok {
		return out
	}
	return r.intern(ps, &key, r.route(ps, req, dyn))
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

// newCache makes the cache of a new snapshot ps in the entry of the
// oldest one (or returns the one another call just made).
func (r *Router) newCache(ps []*cluster.Provider) *routeCache {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.cacheOf(ps); c != nil {
		return c
	}
	c := &routeCache{snap: ps, m: map[routeKey][]*cluster.Provider{}, known: map[string]bool{}}
	if r.tag != nil && r.tag.Enabled {
		for _, t := range r.tag.Tags {
			c.known[t.Name] = true
		}
	}
	for _, p := range ps {
		if t := staticTag(p); t != "" {
			c.known[t] = true
		}
	}
	r.caches[r.next].Store(c)
	r.next = (r.next + 1) % cachedSnapshots
	return c
}

// intern returns the slice kept for snapshot ps with the providers of
// out (out itself, kept, when it is a new result), caching it under key
// when key is set and the cache has room.
func (r *Router) intern(ps []*cluster.Provider, key *routeKey, out []*cluster.Provider) []*cluster.Provider {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c *routeCache
	var at int
	for i := range r.caches {
		if e := r.caches[i].Load(); e != nil && sameSnapshot(e.snap, ps) {
			c, at = e, i
			break
		}
	}
	if c == nil {
		return out // the snapshot's cache was just replaced: a call on an old snapshot
	}
	found := false
	if !sameSnapshot(out, ps) {
		for _, d := range c.distinct {
			if slices.Equal(d, out) {
				out, found = d, true
				break
			}
		}
	}
	addDistinct := !found && !sameSnapshot(out, ps) && len(c.distinct) < maxDistinct
	addKey := key != nil && len(c.m) < maxCached
	if !addDistinct && !addKey {
		return out
	}
	next := &routeCache{snap: c.snap, m: c.m, known: c.known, distinct: c.distinct}
	if addDistinct {
		next.distinct = append(slices.Clip(c.distinct), out)
	}
	if addKey {
		if _, ok := c.m[*key]; !ok {
			next.m = make(map[routeKey][]*cluster.Provider, len(c.m)+1)
			for k, v := range c.m {
				next.m[k] = v
			}
			next.m[*key] = out
		}
	}
	r.caches[at].Store(next)
	return out
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
