package cluster

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy picks the provider of one attempt.
//
// Select returns one of providers, or nil when providers is empty or every
// provider is excluded by call.Excludes. providers is a registry snapshot:
// policies may cache what they derive from it (keyed by its identity), so
// a snapshot must never be mutated. Select is safe for concurrent use and
// allocates nothing once it has seen a snapshot.
type Policy interface {
	Select(providers []*Provider, call *Call) *Provider
}

// Call describes the call a provider is being chosen for.
type Call struct {
	// Method is the Dubbo method name.
	Method string
	// Service is the service key the call reaches ("group/interface:version"):
	// with Options.ServiceBreaker, Invoke checks and feeds that service's
	// breaker. Empty: no service breaker.
	Service string
	// HashKey is what consistenthash hashes: the chosen arguments rendered as
	// Java's String.valueOf would and concatenated (Dubbo's hash.arguments,
	// by default the first argument only).
	HashKey string
	// Exclude, when set, reports providers the caller knows are unavailable
	// (e.g. one that announced it is shutting down). Cluster.Invoke asks it
	// about the chosen provider first and chooses again when refused, so
	// it is usually called once per attempt.
	Exclude func(p *Provider) bool
	// Snapshot, when set, is the registry's whole snapshot the providers
	// given to Invoke were narrowed from (by Dubbo's governance rules):
	// the breakers and call statistics of its addresses are kept while
	// calls choose among different subsets of it. nil: the providers are
	// the snapshot.
	Snapshot []*Provider

	excl *exclusion // set by Cluster.Invoke: tried providers, open breakers
}

// Excludes reports whether providers[i] must not be chosen for this call:
// the caller's Exclude says so, or (inside Cluster.Invoke) it was already
// tried or its circuit breaker is open. providers must be the slice given
// to Select. A nil Call excludes nothing.
func (c *Call) Excludes(providers []*Provider, i int) bool {
	if c == nil {
		return false
	}
	if c.Exclude != nil && c.Exclude(providers[i]) {
		return true
	}
	return c.excl != nil && c.excl.excludes(providers, i)
}

// snapshot is c's Snapshot (nil for a nil Call).
func (c *Call) snapshot() []*Provider {
	if c == nil {
		return nil
	}
	return c.Snapshot
}

// excludesNone reports that no provider can be excluded, so a policy may
// take its fast path.
func (c *Call) excludesNone() bool {
	return c == nil || (c.Exclude == nil && c.excl == nil)
}

// Policy names accepted by NewPolicy.
const (
	PolicyRandom         = "random"
	PolicyRoundRobin     = "roundrobin"
	PolicyLeastActive    = "leastactive"
	PolicyConsistentHash = "consistenthash"
	PolicyP2C            = "p2c"
)

// PolicyNames lists the policy names NewPolicy accepts, for configuration
// checks and messages.
func PolicyNames() []string {
	return []string{PolicyRandom, PolicyRoundRobin, PolicyLeastActive, PolicyConsistentHash, PolicyP2C}
}

// DefaultHashNodes is Java Dubbo's default hash.nodes: virtual nodes per provider on the consistent hash ring.
const DefaultHashNodes = 160

// PolicyOptions configures NewPolicy. The zero value is valid for random,
// roundrobin and consistenthash.
type PolicyOptions struct {
	// Stats are read by leastactive and p2c (required by them): they must be
	// the Stats that Start/Done wrap the calls with.
	Stats *Stats
	// HashNodes is consistenthash's virtual nodes per provider. Default 160.
	HashNodes int
	// IntN returns a random int in [0, n); default math/rand/v2.IntN. Tests
	// inject a seeded source (used from one goroutine at a time).
	IntN func(n int) int
	// Now is the clock for warm-up weights; default time.Now.
	Now func() time.Time
}

// NewPolicy returns the policy called name ("" is random, Dubbo's default):
//
//   - random: weighted random (RandomLoadBalance)
//   - roundrobin: smooth weighted round-robin (RoundRobinLoadBalance)
//   - leastactive: fewest calls in flight, ties by weight (LeastActiveLoadBalance)
//   - consistenthash: Dubbo's MD5 ring on Call.HashKey (ConsistentHashLoadBalance)
//   - p2c: power of two choices on peak EWMA latency × calls in flight
//
// Weights include warm-up (EffectiveWeight). A Policy keeps per-snapshot
// state: give each service (or route) its own.
func NewPolicy(name string, opts PolicyOptions) (Policy, error) {
	if opts.IntN == nil {
		opts.IntN = rand.IntN
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch name {
	case "", PolicyRandom:
		return &weightedRandom{intN: opts.IntN, now: opts.Now}, nil
	case PolicyRoundRobin:
		return newSmoothRoundRobin(opts.Now, maxCycle), nil
	case PolicyLeastActive:
		if opts.Stats == nil {
			return nil, fmt.Errorf("policy %s needs Stats", name)
		}
		return newLeastActive(opts.Stats, opts.IntN, opts.Now), nil
	case PolicyConsistentHash:
		nodes := opts.HashNodes
		if nodes == 0 {
			nodes = DefaultHashNodes
		}
		if nodes < 4 {
			return nil, fmt.Errorf("policy %s: hash nodes %d: want at least 4 (Dubbo puts them on the ring 4 at a time)", name, nodes)
		}
		return &consistentHash{nodes: nodes}, nil
	case PolicyP2C:
		if opts.Stats == nil {
			return nil, fmt.Errorf("policy %s needs Stats", name)
		}
		return &powerOfTwo{stats: opts.Stats, intN: opts.IntN}, nil
	default:
		return nil, fmt.Errorf("unknown policy %q: want random, roundrobin, leastactive, consistenthash or p2c", name)
	}
}

// weightTable is what the weighted policies derive from a snapshot: the
// static weights, their running sums, and until when warm-up may make the
// effective weights differ from them.
type weightTable struct {
	static    []int // max(Weight, 0), index by index
	prefix    []int // running sums of static
	total     int
	same      bool  // all static weights are equal
	warmUntil int64 // unix ms; 0 when no provider has a start timestamp
}

func newWeightTable(providers []*Provider) *weightTable {
	t := &weightTable{static: make([]int, len(providers)), prefix: make([]int, len(providers)), same: true}
	for i, p := range providers {
		w := max(p.Weight, 0)
		t.static[i] = w
		t.total += w
		t.prefix[i] = t.total
		t.same = t.same && w == t.static[0]
		if w > 0 && !p.Timestamp.IsZero() {
			// A start in the future weighs 1 until it passes, then warm-up runs.
			t.warmUntil = max(t.warmUntil, p.Timestamp.UnixMilli()+max(p.Warmup.Milliseconds(), 0))
		}
	}
	return t
}

// weightTables caches the weight table of recent snapshots.
type weightTables struct{ cache snapshotCache[*weightTable] }

func (c *weightTables) get(providers []*Provider) *weightTable {
	if t, ok := c.cache.load(providers); ok {
		return t
	}
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	if t, ok := c.cache.load(providers); ok {
		return t
	}
	t := newWeightTable(providers)
	c.cache.store(providers, t)
	return t
}

// weigher gives the effective weights of one selection: the static ones,
// or while some provider warms up, EffectiveWeight at one clock reading.
type weigher struct {
	table   *weightTable
	warming bool
	now     time.Time
}

func newWeigher(table *weightTable, clock func() time.Time) weigher {
	w := weigher{table: table}
	if table.warmUntil != 0 {
		if now := clock(); now.UnixMilli() < table.warmUntil {
			w.warming, w.now = true, now
		}
	}
	return w
}

// weight returns the effective weight of providers[i] (p).
func (w *weigher) weight(i int, p *Provider) int {
	if !w.warming {
		return w.table.static[i]
	}
	return EffectiveWeight(p, w.now)
}
